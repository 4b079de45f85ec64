"""The ``local`` executor: a site's jobs run as threads of snakemake's own process on the submit
host (workflows/profiles/local, snakemake's built-in ``local`` executor); a wave is one snakemake
job (rule ``wave_local_N``). Only here may a site run its jobs in a named network namespace
(``netns``, a federation site's), or spread the jobs of each wave over several (``node_netns``, a
federation site's client nodes: job ``i`` of a wave in ``node_netns[i mod len]``): a batch worker
already runs in its site's namespace."""

from __future__ import annotations

from collections.abc import Mapping

from afkit.campaign.executors.base import Plain, SiteKey

# a federation site (docs/federation.md) or one of its client nodes (SITE-nK)
NETNS_PATTERN = "^[a-z][a-z0-9]{0,11}(-n[1-9][0-9]{0,2})?$"


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
                "pattern": NETNS_PATTERN,
                "description": "run the site's jobs in this named network namespace (/run/netns/NAME; "
                "the testbed federation's sites, docs/federation.md); needs root on the worker node; "
                "local executor only (a batch worker already runs in its site's namespace)",
            },
        ),
        "node_netns": SiteKey(
            used=bool,
            refusal="sites.{site}.node_netns: only for executor '{owner}'; a {executor} site's jobs "
            "run on its batch workers (remove node_netns)",
            schema={
                "type": "array",
                "minItems": 1,
                "uniqueItems": True,
                "items": {"type": "string", "pattern": NETNS_PATTERN},
                "description": "the site's client nodes as named network namespaces (the testbed "
                "federation's SITE-n1, SITE-n2, ..., docs/federation.md): job i of a wave (a "
                "benchmark's nodes or jobs sweep) runs in node_netns[i mod len], a job outside a "
                "wave in the first; needs root; local executor only; not with netns",
            },
        ),
    }

    def identity(self, env: Mapping[str, str]) -> str | None:
        return ""  # any process: checked after the batch executors


EXECUTOR = Local()
