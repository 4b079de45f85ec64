"""The ``local`` executor: a site's jobs run as threads of snakemake's own process on the submit
host (workflows/profiles/local, snakemake's built-in ``local`` executor); a wave is one snakemake
job (rule ``wave_local_N``). Only here may a site run its jobs in a named network namespace
(``netns``, a federation site's): a batch worker already runs in its site's namespace."""

from __future__ import annotations

from collections.abc import Mapping

from afkit.campaign.executors.base import Plain, SiteKey


class Local(Plain):
    name = "local"
    plugin = "local"
    batch = False
    site_keys: Mapping[str, SiteKey] = {
        "netns": SiteKey(
            used=bool,
            refusal="sites.{site}.netns: only for executor '{owner}'; a {executor} worker already runs "
            "in its site's network namespace (remove netns)",
            schema={
                "type": "string",
                "pattern": "^[a-z][a-z0-9]{0,11}$",
                "description": "run the site's jobs in this named network namespace (/run/netns/NAME; "
                "the testbed federation's sites, docs/federation.md); needs root on the worker node; "
                "local executor only (a batch worker already runs in its site's namespace)",
            },
        ),
    }

    def identity(self, env: Mapping[str, str]) -> str | None:
        return ""  # any process: checked after the batch executors


EXECUTOR = Local()
