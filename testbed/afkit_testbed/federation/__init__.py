"""afkit federation: testbed sites as network namespaces joined by shaped WAN links."""
