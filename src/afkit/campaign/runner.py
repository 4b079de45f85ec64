"""``afkit campaign run`` / ``retry``: the snakemake command lines for a campaign, one per executor.

A campaign whose sites all use one executor (and no site options: requirements, partition,
shared_fs false) is one snakemake call. Otherwise the sites that have jobs run one after another
(``--config afkit_site=SITE`` with that executor's profile and the site's options: the workflow's
default target is then that site's job records, no marker file; a site no benchmark runs at gets
no call, which would start snakemake to make nothing); the report is then made locally from
whatever records exist, with missing cells marked. ``retry`` passes the job records to redo as
the targets.

Interrupts: snakemake runs in its own process group; a Ctrl-C (SIGINT) or SIGTERM to afkit is
passed to that group as one SIGINT, so snakemake stops submitting, cancels its batch jobs
(condor_rm, scancel) and its local jobs stop; afkit waits for it (SIGKILL after STOP_WAIT_S), then
cancels every batch job marked with the campaign's tag and waits until none is left
(afkit.campaign.stop), says which jobs have no record, runs no further site and returns 130.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import IO

from afkit.campaign import executors, stop, watchdog
from afkit.campaign.config import Campaign, SiteConfig
from afkit.campaign.runplan import RunPlan
from afkit.errors import ExitCode
from afkit.paths import workflow_files


def profile_dir(executor: str) -> Path:
    """The snakemake profile of EXECUTOR (a registered executor's name): workflows/profiles/NAME."""
    return workflow_files().profile(executors.get(executor).name)


def snakemake_cmd(
    campaign_file: Path,
    *,
    profile: Path,
    targets: list[str] | None = None,
    site: str | None = None,
    plan_file: Path | None = None,
    dry_run: bool = False,
    extra: list[str] | None = None,
) -> list[str]:
    """The snakemake command line of one call: the workflow on CAMPAIGN_FILE with PROFILE; SITE's
    jobs only (else all); the campaign as planned in PLAN_FILE (afkit.campaign.runplan: the
    workflow then neither validates nor expands it)."""
    cmd = [sys.executable, "-m", "snakemake", "-s", str(workflow_files().snakefile),
           "--configfile", str(campaign_file), "--profile", str(profile)]  # fmt: skip
    control = [f"afkit_site={site}"] if site else []
    if plan_file is not None:
        control.append(f"afkit_plan={plan_file}")
    if control:
        cmd += ["--config", *control]
    if dry_run:
        cmd += ["--dry-run", "--quiet", "rules"]
    cmd += extra or []
    if targets:
        cmd[5:5] = targets  # before any option that takes a variable number of values
    return cmd


def site_options(site: SiteConfig, tag: str = "") -> list[str]:
    """Snakemake options of a site's own call, from its executor (afkit.campaign.executors): where
    its batch jobs go (HTCondor requirements, the SLURM partition) and, for a site without the
    submit host's files, HTCondor file transfer; with TAG, the mark on its batch jobs."""
    executor = executors.get(site["executor"])
    resources, options = executor.site_call(site)
    if tag:
        marks, more = executor.tagged(tag)
        resources, options = [*resources, *marks], [*options, *more]
    return (["--set-resources", *resources] if resources else []) + options


def tag_options(executor: str, tag: str) -> list[str]:
    """The snakemake options that mark a call's batch jobs with the campaign's TAG."""
    resources, options = executors.get(executor).tagged(tag)
    return (["--set-resources", *resources] if resources else []) + options


def executor_options(executor: str, sites: list[SiteConfig]) -> list[str]:
    """Options of the executor for a call running SITES (HTCondor's held-job grace: the shortest
    of the sites' held_grace)."""
    return executors.get(executor).call_options(sites)


@dataclass(frozen=True)
class Call:
    """One snakemake call of a run: the site whose jobs it runs (None: every site), its command
    line, and the job records it is to make (the watchdog's list)."""

    site: str | None
    argv: list[str]
    records: tuple[Path, ...]


def plan_calls(
    run: RunPlan,
    campaign_file: Path,
    *,
    plan_file: Path | None = None,
    dry_run: bool = False,
    extra: list[str] | None = None,
    targets: dict[str, list[str]] | None = None,
) -> list[Call]:
    """The snakemake calls of the campaign planned as RUN; TARGETS: site → files to make (retry),
    None = the whole campaign (each site's call then makes its job records: a site without jobs
    gets none). PLAN_FILE: where RUN is written, handed to every call."""
    campaign = run.campaign
    sites = campaign.config["sites"]
    executors = {s["executor"] for s in sites.values()}
    tag = campaign.layout.batch_tag
    if len(executors) == 1 and not any(site_options(s) for s in sites.values()):
        files = None if targets is None else [f for fs in targets.values() for f in fs]
        if files == []:
            return []
        executor = executors.pop()
        argv = snakemake_cmd(
            campaign_file,
            profile=profile_dir(executor),
            targets=files,
            plan_file=plan_file,
            dry_run=dry_run,
            extra=[
                *tag_options(executor, tag),
                *executor_options(executor, [*sites.values()]),
                *(extra or []),
            ],
        )
        return [Call(None, argv, _records(run, None, targets))]
    busy = set(targets) if targets is not None else {j.site for j in run.jobs}
    calls = []
    for name, site in sites.items():
        files = None if targets is None else targets.get(name, [])
        if files == [] or name not in busy:
            continue
        argv = snakemake_cmd(
            campaign_file,
            profile=profile_dir(site["executor"]),
            targets=files,
            site=name,
            plan_file=plan_file,
            dry_run=dry_run,
            extra=[*site_options(site, tag), *executor_options(site["executor"], [site]), *(extra or [])],
        )
        calls.append(Call(name, argv, _records(run, name, targets)))
    return calls


def _records(run: RunPlan, site: str | None, targets: dict[str, list[str]] | None) -> tuple[Path, ...]:
    """The job records a call of SITE (None: every site) is to make: the retry's TARGETS, else
    every planned job's of the site."""
    if targets is not None:
        return tuple(Path(f) for name, files in targets.items() if site in (None, name) for f in files)
    layout = run.campaign.layout
    return tuple(Path(layout.record(j.bench, j.id)) for j in run.jobs if site in (None, j.site))


class _Interrupt:
    """SIGINT/SIGTERM to afkit while snakemake runs: one SIGINT to snakemake's process group."""

    def __init__(self) -> None:
        self.pgid: int | None = None
        self.received = False
        self.at = 0.0  # time.monotonic() of the first signal

    def __call__(self, signum: int, frame: FrameType | None) -> None:
        if not self.received and self.pgid is not None:
            print(f"afkit: {signal.Signals(signum).name}: stopping snakemake (it cancels its jobs)",
                  file=sys.stderr)  # fmt: skip
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.pgid, signal.SIGINT)
        if not self.received:
            self.at = time.monotonic()
        self.received = True


@contextmanager
def _forwarding(handler: _Interrupt) -> Iterator[None]:
    old = {s: signal.signal(s, handler) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for s, h in old.items():
            signal.signal(s, h)


POLL_S = 2.0  # how often the watchdog looks while snakemake runs
STOP_WAIT_S = 30.0  # after the watchdog's SIGINT, before SIGKILL


def _tee(stream: IO[str], dog: watchdog.Watchdog) -> None:
    """Snakemake's stderr to afkit's, each line shown to the watchdog."""
    for line in stream:
        sys.stderr.write(line)
        sys.stderr.flush()
        dog.feed(line)


def _stop(proc: subprocess.Popen[str], dog: watchdog.Watchdog) -> int:
    """SIGINT to snakemake's process group (it cancels its jobs); SIGKILL when it does not end,
    then afkit cancels the batch jobs it submitted (the executors' cancel: condor_rm, scancel)."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGINT)
    with contextlib.suppress(subprocess.TimeoutExpired):
        return proc.wait(timeout=STOP_WAIT_S)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    dog.cancel_submitted()
    return proc.wait()


def _watch(proc: subprocess.Popen[str], dog: watchdog.Watchdog, handler: _Interrupt) -> int:
    """Wait for snakemake; the watchdog stops it when it can no longer finish (then 0 when every
    record of the call exists, else 1)."""
    while True:
        with contextlib.suppress(subprocess.TimeoutExpired):
            return proc.wait(timeout=POLL_S)
        if handler.received and time.monotonic() - handler.at > STOP_WAIT_S:
            print(f"afkit: snakemake did not stop within {STOP_WAIT_S:.0f} s of the interrupt; killing it",
                  file=sys.stderr)  # fmt: skip
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            return proc.wait()
        cause = None if handler.received else dog.cause()
        if cause is None:
            continue
        print(f"afkit: watchdog: {cause}; stopping snakemake", file=sys.stderr)
        _stop(proc, dog)
        missing = dog.missing()
        if missing:
            print(f"afkit: watchdog: {len(missing)} of {len(dog.records)} job(s) of the call left no record "
                  f"(e.g. {missing[0]}); exit 1 (cause: {cause})", file=sys.stderr)  # fmt: skip
            return 1
        print(f"afkit: watchdog: all {len(dog.records)} job records of the call exist; the campaign is "
              "finished from them", file=sys.stderr)  # fmt: skip
        return 0


def run(
    planned: RunPlan,
    campaign_file: Path,
    *,
    plan_file: Path | None = None,
    dry_run: bool = False,
    extra: list[str] | None = None,
    targets: dict[str, list[str]] | None = None,
) -> int:
    """Run the campaign as PLANNED (afkit.campaign.runplan; PLAN_FILE: where it is written, which
    every snakemake call reads instead of planning again); return the worst snakemake exit code (0
    when every call succeeded).

    A call that ends with more than "some jobs failed" (1) — refused, invalid, not found,
    interrupted — stops the run: no later site starts; so does a failed call that left no image
    (the image rule failed). An interrupt returns 130.
    Apptainer is needed where the jobs run (checked there), not necessarily on this submit host.
    The watchdog (afkit.campaign.watchdog) stops a call that can no longer finish.
    """
    worst = 0
    handler = _Interrupt()
    campaign = planned.campaign
    calls = plan_calls(
        planned, campaign_file, plan_file=plan_file, dry_run=dry_run, extra=extra, targets=targets
    )
    with _forwarding(handler):
        for call in calls:
            cmd = call.argv
            if handler.received:
                return int(ExitCode.INTERRUPTED)
            print("afkit: $ " + " ".join(cmd), file=sys.stderr)
            if dry_run:
                plain = subprocess.Popen(cmd, process_group=0)
                handler.pgid = plain.pid
                code = plain.wait()
            else:
                # AFKIT_RUNNER: the workflow's onerror leaves the word on missing records to afkit,
                # which says it once the campaign's batch jobs are gone (interrupted below)
                proc = subprocess.Popen(cmd, process_group=0, stderr=subprocess.PIPE, text=True,
                                        errors="replace", bufsize=1,
                                        env={**os.environ, "AFKIT_RUNNER": "1"})  # fmt: skip
                handler.pgid = proc.pid
                dog = watchdog.Watchdog(list(call.records))
                assert proc.stderr is not None
                tee = threading.Thread(target=_tee, args=(proc.stderr, dog), daemon=True)
                tee.start()
                code = _watch(proc, dog, handler)
                tee.join(timeout=STOP_WAIT_S)
                if handler.received or code < 0:
                    # the word counts the whole campaign's (or retry's) jobs, not only this call's site
                    return interrupted(campaign, list(_records(planned, None, targets)))
            handler.pgid = None
            if handler.received or code < 0:
                return int(ExitCode.INTERRUPTED)
            worst = max(worst, code)
            if code > 1:
                break
            if code and not dry_run and not image_made(campaign):
                log = campaign.results_dir / "image" / "image.log"
                print(f"afkit: the campaign's image was not made (see {log}); no later site starts",
                      file=sys.stderr)  # fmt: skip
                break
    return worst


def interrupted(campaign: Campaign, records: list[Path]) -> int:
    """After an interrupted call: the campaign's batch jobs cancelled and gone (afkit.campaign.stop),
    then the word on the RECORDS that are missing; 130."""
    from afkit.campaign.rules import interrupted_message

    stop.settle(campaign)
    print(interrupted_message([str(r) for r in records]), file=sys.stderr)
    return int(ExitCode.INTERRUPTED)


def image_made(campaign: Campaign) -> bool:
    """The image rule's output exists (a call that failed without it failed at the image: a tag
    build; the next site's call would only fail the same way)."""
    return (campaign.results_dir / "image" / "image.json").is_file()
