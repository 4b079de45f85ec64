"""The campaign planned once: validated, expanded, and written down for everything that runs after.

``afkit campaign run`` (and ``retry``) validates the campaign file once and expands its jobs once
(:meth:`RunPlan.make`), then writes the result, the **plan file** ``RESULTS/plan/campaign.plan.json``
(:meth:`RunPlan.write`: the validated campaign with its defaults filled in, where its relative paths
are taken from, and every job). The workflow reads it (``--config afkit_plan=PATH``), the rules'
step commands read it (``afkit campaign image|dataset|aggregate PLAN``: a step's campaign argument
may be a plan file or a campaign YAML), retry and the report use the same object: nothing validates
or expands the campaign again. A batch job reads only its own spec (afkit.campaign.contract.JobSpec).

``snakemake`` run directly (no ``afkit campaign run``) plans in the workflow itself and writes the
same file (not on a dry run), so its steps read it too.

The file is keyed by the campaign's digest (``campaign_hash``, with afkit's version and the plan
format): it is rewritten only when one of them changed, and a file of another format is refused
with what to do. Its path stays the same across edits of the campaign: it is a parameter of the
rules, and a parameter that changes reruns them.
"""

from __future__ import annotations

import functools
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import cast

from afkit import __version__
from afkit.atomic import write_if_changed
from afkit.campaign.config import Campaign, CampaignConfig
from afkit.campaign.contract import Job
from afkit.errors import InvalidError, NotFoundError

FORMAT = 1
KIND = "afkit campaign plan"
SUFFIX = ".plan.json"


@dataclass(frozen=True)
class RunPlan:
    """A campaign and its jobs, planned once (validated, defaults filled, expanded)."""

    campaign: Campaign
    jobs: tuple[Job, ...]

    @classmethod
    def make(cls, campaign: Campaign) -> RunPlan:
        """CAMPAIGN (validated) expanded into its jobs: the one expansion of a run."""
        from afkit.campaign import plan

        return cls(campaign, tuple(plan.expand(campaign)))

    @classmethod
    def load(cls, path: str | Path, base_dir: Path | None = None) -> RunPlan:
        """The plan in PATH: a plan file as read, or a campaign YAML validated and expanded (its
        relative paths beside BASE_DIR, default its folder)."""
        if is_plan_file(path):
            return cls.read(Path(path))
        from afkit.campaign import config

        return cls.make(config.load(path, base_dir))

    @property
    def path(self) -> Path:
        """Where this plan's file is: ``RESULTS/plan/campaign.plan.json``."""
        return Path(self.campaign.layout.plan_file)

    @functools.cached_property
    def digests(self) -> dict[tuple[str, str], str]:
        """(bench, id) → the SHA-256 of the job's spec as planning makes it (afkit.campaign.current)."""
        from afkit.campaign import plan

        return plan.digests(self.campaign, list(self.jobs))

    def to_json(self) -> str:
        c = self.campaign
        data = {
            "kind": KIND,
            "format": FORMAT,
            "afkit": __version__,
            "campaign_hash": c.hash,
            "base_dir": str(c.base_dir),
            "config": c.config,
            "jobs": [j.as_dict() for j in self.jobs],
        }
        return json.dumps(data, separators=(",", ":"), sort_keys=True) + "\n"

    def write(self, path: str | Path | None = None) -> Path:
        """Write the plan to PATH (default :attr:`path`) unless the file already holds it."""
        out = Path(path) if path is not None else self.path
        write_if_changed(out, self.to_json(), mode=0o644)
        return out

    @classmethod
    def read(cls, path: Path) -> RunPlan:
        """The plan written to PATH by :meth:`write` (not validated again: planning did)."""
        sys.audit("afkit.campaign.plan_read", str(path))
        hint = "plan again: afkit campaign run CAMPAIGN.yaml (or give the campaign YAML)"
        try:
            data = json.loads(Path(path).read_text(encoding="utf-8"))
        except FileNotFoundError as err:
            hint = ("the workflow writes it when it runs (not on a dry run): run it first, or give "
                    "the campaign YAML instead of the plan file")  # fmt: skip
            raise NotFoundError(f"plan file not found: {path}", hint=hint) from err
        except (OSError, ValueError) as err:
            raise InvalidError(f"plan file {path}: unreadable: {err}", hint=hint) from err
        if not isinstance(data, dict) or data.get("kind") != KIND:
            raise InvalidError(f"{path}: not an afkit campaign plan", hint=hint)
        if data.get("format") != FORMAT or data.get("afkit") != __version__:
            raise InvalidError(f"{path}: written by afkit {data.get('afkit')} (plan format "
                               f"{data.get('format')}); this is afkit {__version__} (format {FORMAT})",
                               hint=hint)  # fmt: skip
        config, jobs, base = data.get("config"), data.get("jobs"), data.get("base_dir")
        if (not isinstance(config, dict) or not isinstance(base, str) or not isinstance(jobs, list)
                or not all(isinstance(j, dict) for j in jobs)):  # fmt: skip
            raise InvalidError(f"{path}: a plan needs config, base_dir and jobs (objects)", hint=hint)
        # the config was validated (defaults filled in) when the plan was made
        campaign = Campaign(cast(CampaignConfig, config), Path(base))
        return cls(campaign, tuple(Job.from_dict(cast(dict[str, object], j)) for j in jobs))


def is_plan_file(path: str | Path) -> bool:
    """PATH names a plan file (``*.plan.json``), not a campaign YAML."""
    return str(path).endswith(SUFFIX)
