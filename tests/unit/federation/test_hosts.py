"""The federation's names in /etc/hosts: its own block replaced or removed, every other line kept."""

from __future__ import annotations

import stat
from pathlib import Path

from afkit_testbed.federation import batch, hosts, links

TESTBED_HOSTS = "127.0.0.1\tlocalhost vm\n::1\tlocalhost ip6-localhost ip6-loopback\n"


def test_every_daemon_address_of_the_shipped_federation_has_one_name() -> None:
    fed = links.load()
    pairs = hosts.entries(fed)
    addresses = [a for a, _ in pairs]
    assert len(set(addresses)) == len(addresses) and len({n for _, n in pairs}) == len(pairs)
    assert ("10.77.0.10", "afkit-submit") in pairs  # the controller, which slurmd reverse-resolves
    for site in fed.sites.values():
        assert (site.address, batch.slurm_node(site)) in pairs  # the NodeName of the site's slurmd
    for node in fed.nodes.values():
        assert (node.address, f"afkit-{node.namespace}") in pairs


def test_add_then_remove_gives_the_file_back_byte_for_byte(tmp_path: Path) -> None:
    path = tmp_path / "hosts"
    path.write_text(TESTBED_HOSTS)
    hosts.add(links.load(), path)
    text = path.read_text()
    assert text.startswith(TESTBED_HOSTS) and "10.77.1.10\tafkit-gsi\n" in text
    assert stat.S_IMODE(path.stat().st_mode) == 0o644  # every user's lookups read it
    hosts.remove(path)
    assert path.read_text() == TESTBED_HOSTS


def test_a_second_up_replaces_the_block_instead_of_adding_one() -> None:
    once = hosts.with_block(TESTBED_HOSTS, [("10.77.0.10", "afkit-submit")])
    twice = hosts.with_block(once, [("10.77.0.10", "afkit-submit"), ("10.77.1.10", "afkit-gsi")])
    assert twice.count(hosts.BEGIN) == 1 and twice.count("afkit-submit") == 1 and "afkit-gsi" in twice


def test_lines_after_the_block_are_kept_and_a_missing_final_newline_does_not_join_lines() -> None:
    text = hosts.with_block("127.0.0.1\tlocalhost", [("10.77.0.10", "afkit-submit")]) + "192.0.2.1\tother\n"
    assert hosts.without_block(text) == "127.0.0.1\tlocalhost\n192.0.2.1\tother\n"


def test_remove_leaves_a_file_without_the_block_untouched(tmp_path: Path) -> None:
    path = tmp_path / "hosts"
    path.write_text(TESTBED_HOSTS)
    before = path.stat().st_mtime_ns
    hosts.remove(path)
    assert path.stat().st_mtime_ns == before
