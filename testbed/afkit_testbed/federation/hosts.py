"""The federation's names in the testbed's /etc/hosts: the site DNS a real facility has.

A site's daemons look names up: slurmd reverse-resolves the controller's address on every RPC
(a PTR query for the peer, seen with strace), and finds its own node by name. The testbed has no
DNS server, and inside a site's namespace a query to the host's resolver is not refused but lost:
each lookup waited the resolver's 5 s timeout, so every SLURM job on a federation node started
5-10 s late and the next one was allocated 6-13 s after it ended. With the submit host, every
site's node and every client node in /etc/hosts (``hosts: files dns``) each lookup is answered at
once, forward and reverse, as a site's DNS would.

The entries sit between two marker lines: ``up`` replaces that block, ``down`` removes it, and
every other line of the file is kept as it was.
"""

from __future__ import annotations

from pathlib import Path

from afkit.atomic import write_atomic
from afkit_testbed.federation import batch, net
from afkit_testbed.federation.links import Federation

HOSTS = Path("/etc/hosts")
BEGIN = "# afkit federation: begin (written by afkit federation up, removed by down)"
END = "# afkit federation: end"
SUBMIT_NAME = "afkit-submit"


def entries(fed: Federation) -> list[tuple[str, str]]:
    """(address, name) of the submit host, each site (its SLURM node's name) and each client node."""
    pairs = [(net.submit_address(), SUBMIT_NAME)]
    pairs += [(site.address, batch.slurm_node(site)) for site in fed.sites.values()]
    pairs += [(node.address, f"afkit-{node.namespace}") for node in fed.nodes.values()]
    return pairs


def without_block(text: str) -> str:
    """TEXT with the federation's block (markers included) taken out; everything else kept."""
    kept: list[str] = []
    inside = False
    for line in text.splitlines(keepends=True):
        if line.rstrip("\n") == BEGIN:
            inside = True
        elif inside and line.rstrip("\n") == END:
            inside = False
        elif not inside:
            kept.append(line)
    return "".join(kept)


def with_block(text: str, pairs: list[tuple[str, str]]) -> str:
    """TEXT with the federation's block replaced by one holding PAIRS (appended at the end)."""
    base = without_block(text)
    if base and not base.endswith("\n"):
        base += "\n"
    lines = [BEGIN, *(f"{address}\t{name}" for address, name in pairs), END]
    return base + "\n".join(lines) + "\n"


def add(fed: Federation, path: Path = HOSTS) -> None:
    write_atomic(path, with_block(path.read_text() if path.exists() else "", entries(fed)), mode=0o644)


def remove(path: Path = HOSTS) -> None:
    if path.exists():
        text = path.read_text()
        if BEGIN in text:
            write_atomic(path, without_block(text), mode=0o644)
