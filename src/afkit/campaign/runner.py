"""``afkit campaign run``: the snakemake command lines for a campaign, one per executor.

A campaign whose sites all use one executor is one snakemake call. Sites with different executors
run one after another (``--config afkit_site=SITE`` with that executor's profile); the report is
then made locally from whatever records exist, with missing cells marked.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from afkit.campaign.config import Campaign
from afkit.paths import workflows_dir


def profile_dir(executor: str) -> Path:
    return workflows_dir() / "profiles" / executor


def snakemake_cmd(
    campaign_file: Path,
    *,
    profile: Path,
    target: str | None = None,
    site: str | None = None,
    dry_run: bool = False,
    extra: list[str] | None = None,
) -> list[str]:
    cmd = [sys.executable, "-m", "snakemake", "-s", str(workflows_dir() / "Snakefile"),
           "--configfile", str(campaign_file), "--profile", str(profile)]  # fmt: skip
    if site:
        cmd += ["--config", f"afkit_site={site}"]
    if dry_run:
        cmd += ["--dry-run", "--quiet", "rules"]
    cmd += extra or []
    if target:
        cmd[5:5] = [target]  # before any option that takes a variable number of values
    return cmd


def plan_calls(
    campaign: Campaign, campaign_file: Path, *, dry_run: bool = False, extra: list[str] | None = None
) -> list[list[str]]:
    executors = {s["executor"] for s in campaign.config["sites"].values()}
    if len(executors) == 1:
        return [
            snakemake_cmd(campaign_file, profile=profile_dir(executors.pop()), dry_run=dry_run, extra=extra)
        ]
    calls = []
    for name, site in campaign.config["sites"].items():
        target = str(campaign.results_dir / "site" / f"{name}.done")
        profile = profile_dir(site["executor"])
        calls.append(
            snakemake_cmd(
                campaign_file, profile=profile, target=target, site=name, dry_run=dry_run, extra=extra
            )
        )
    return calls


def run(
    campaign: Campaign, campaign_file: Path, *, dry_run: bool = False, extra: list[str] | None = None
) -> int:
    """Run the campaign; return the worst snakemake exit code (0 when every call succeeded).

    Apptainer is needed where the jobs run (checked there), not necessarily on this submit host.
    """
    worst = 0
    for cmd in plan_calls(campaign, campaign_file, dry_run=dry_run, extra=extra):
        print("afkit: $ " + " ".join(cmd), file=sys.stderr)
        worst = max(worst, subprocess.run(cmd, check=False).returncode)
    return worst
