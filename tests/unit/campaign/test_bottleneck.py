"""The bottleneck verdict on synthetic monitor samples: one test per verdict and per rule edge."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

from afkit.campaign import bottleneck
from afkit.campaign.bottleneck import JobCounters, Sample, verdict

LINK = 125e6  # 1 Gb/s
OK = JobCounters("ok", 100_000_000, 10.0)  # 10 MB/s


def monitor(i: int, net: float, busy: float, cores: tuple[float, ...]) -> dict[str, object]:
    """A host-monitor record as afkit.bench.monitor writes it (the fields the verdict reads)."""
    return {"type": "monitor", "t": 100.0 + i, "net_recv_bps": net, "net_sent_bps": 1e3,
            "disk_busy_percent": busy, "cpu_percent_per_core": list(cores)}  # fmt: skip


def samples(
    n: int = 5, *, net: float = 1e6, busy: float = 5.0, cores: tuple[float, ...] = (20.0, 10.0)
) -> list[Sample]:
    out = [Sample.from_record(monitor(i, net, busy, cores)) for i in range(n)]
    return [s for s in out if s is not None]


def test_a_link_near_its_rate_is_network() -> None:
    name, reason = verdict(samples(net=110e6), replace(OK, bytes=1_100_000_000), LINK)
    assert name == "network"
    assert "88% of the link" in reason


def test_a_busy_device_is_disk() -> None:
    name, reason = verdict(samples(busy=97.0), OK, LINK)
    assert (name, reason) == ("disk", "busiest block device busy 97 % of the time")


def test_a_full_core_with_low_bytes_per_second_is_cpu() -> None:
    name, reason = verdict(samples(cores=(99.0, 12.0)), OK, LINK)
    assert name == "cpu"
    assert "busiest core at 99 %" in reason and "10.0 MB/s" in reason


def test_a_full_core_while_the_link_is_used_well_is_not_cpu() -> None:
    # 75 MB/s is 60 % of the link: above the 'low' limit, below 'near the rate'
    name, _ = verdict(samples(net=75e6, cores=(99.0,)), replace(OK, bytes=750_000_000), LINK)
    assert name == "none"


def test_a_full_core_without_a_known_link_rate_is_cpu() -> None:
    name, reason = verdict(samples(cores=(95.0,)), OK, None)
    assert name == "cpu"
    assert "link rate unknown" in reason


def test_nothing_near_a_limit_is_none() -> None:
    name, reason = verdict(samples(), OK, LINK)
    assert name == "none"
    assert reason == "network 1.0 MB/s (1% of the link), disk busy 5 %, busiest core 20 %"


def test_one_busy_second_does_not_make_a_job_disk_bound() -> None:
    s = samples()
    s[2] = replace(s[2], disk_busy_percent=100.0)
    assert verdict(s, OK, LINK)[0] == "none"


def test_network_is_checked_before_disk_and_cpu() -> None:
    assert verdict(samples(net=120e6, busy=99.0, cores=(100.0,)), OK, LINK)[0] == "network"


def test_without_samples_or_success_the_verdict_is_unknown() -> None:
    assert verdict([], OK, LINK) == ("unknown", "no monitor sample during the processing step")
    assert verdict(samples(busy=99.0), replace(OK, status="failed"), LINK)[0] == "unknown"


def test_samples_count_when_their_second_is_mostly_inside_the_step() -> None:
    s = samples(6)  # t = 100 .. 105, each covering (t-1, t]
    assert [x.t for x in bottleneck.in_window(s, 101.2, 103.4)] == [102.0, 103.0]


def test_the_sites_link_rate_wins_over_the_interfaces() -> None:
    assert bottleneck.link_rate("1.25GB/s") == 1.25e9


def test_a_monitor_record_is_read_as_its_sample(tmp_path: Path) -> None:
    rec = monitor(0, 2e6, 40.0, (30.0, 70.0))
    lines = [json.dumps({**rec, "net_sent_bps": 3e6}), "", json.dumps({"type": "monitor"}), json.dumps(rec)]
    (tmp_path / "m.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    # received or sent, whichever is larger; the busiest core; a record without its time is no sample
    assert bottleneck.read_samples(tmp_path / "m.jsonl") == [Sample(100.0, 3e6, 40.0, 70.0),
                                                              Sample(100.0, 2e6, 40.0, 70.0)]  # fmt: skip
    assert bottleneck.read_samples(tmp_path / "absent.jsonl") == []
    assert Sample.from_record({"t": 5, "cpu_percent_per_core": []}) == Sample(5.0)
