"""toxiproxy in the WAN namespace: one proxy in front of every site's storage, toxics at run time.

toxiproxy (github.com/Shopify/toxiproxy, v2.5.0; built by scripts/toxiproxy-install) is a TCP
proxy with an HTTP API on port 8474: ``POST /populate`` creates proxies, ``POST
/proxies/NAME/toxics`` adds a toxic (latency, bandwidth, reset_peer, timeout, ...), ``DELETE
/proxies/NAME/toxics/TOXIC`` removes it, ``POST /proxies/NAME`` with ``{"enabled": false}`` takes
the proxy down and ``POST /reset`` re-enables every proxy and removes every toxic (README.md,
"HTTP API" and "Toxics").
"""

from __future__ import annotations

import json
import os
import shutil
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any, TypedDict

from afkit.errors import AfkitError, PrereqError
from afkit_testbed.federation.links import GATEWAY, ORIGIN_PORT, SUBNET, TOXIPROXY_API_PORT, Federation, Site

VERSION = "v2.5.0"
LATENCY_TOXIC = "wan-latency"


def api_url() -> str:
    return os.environ.get("AFKIT_TOXIPROXY_API", f"http://{SUBNET}.0.{GATEWAY}:{TOXIPROXY_API_PORT}")


def server_binary() -> Path:
    """``$AFKIT_TOXIPROXY``, the copy the testbed holds, ``toxiproxy-server`` on PATH, or the cache."""
    from afkit.paths import cache_dir

    candidates = [
        os.environ.get("AFKIT_TOXIPROXY", ""),
        "/run/afkit-testbed/bin/toxiproxy-server",
        shutil.which("toxiproxy-server") or "",
        str(cache_dir() / "toxiproxy" / VERSION / "toxiproxy-server"),
    ]
    for c in candidates:
        if c and os.access(c, os.X_OK):
            return Path(c)
    raise PrereqError(
        "toxiproxy-server not found",
        hint="build it on the host with scripts/toxiproxy-install (scripts/testbed federation up does), "
        "or set AFKIT_TOXIPROXY",
    )


def proxy_name(site: Site) -> str:
    return f"{site.name}-storage"


class Proxy(TypedDict):
    """A proxy as ``POST /populate`` takes it (and proxies.json, toxiproxy's -config, holds it)."""

    name: str
    listen: str
    upstream: str
    enabled: bool


class Toxic(TypedDict):
    """A toxic as ``POST /proxies/NAME/toxics`` takes it."""

    name: str
    type: str
    stream: str  # downstream or upstream
    attributes: dict[str, int]  # e.g. latency, jitter (ms), rate (KB/s), timeout (ms)


def proxies(fed: Federation) -> list[Proxy]:
    """One proxy per site: the site's WAN address -> the site's origin."""
    return [
        {
            "name": proxy_name(s),
            "listen": f"{s.gateway}:{ORIGIN_PORT}",
            "upstream": f"{s.address}:{ORIGIN_PORT}",
            "enabled": True,
        }
        for s in fed.sites.values()
    ]


def latency_toxic(site: Site) -> Toxic:
    return {
        "name": LATENCY_TOXIC,
        "type": "latency",
        "stream": "downstream",
        "attributes": {"latency": int(site.link.latency_ms), "jitter": 0},
    }


def request(method: str, path: str, body: object = None, timeout: float = 10) -> Any:
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(api_url() + path, data=data, method=method)
    req.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            text = resp.read().decode()
    except urllib.error.HTTPError as err:
        raise AfkitError(
            f"toxiproxy {method} {path}: HTTP {err.code}: {err.read().decode().strip()}"
        ) from None
    except (urllib.error.URLError, OSError) as err:
        raise PrereqError(
            f"toxiproxy's API at {api_url()} does not answer: {err}",
            hint="is the federation up? (afkit federation status)",
        ) from None
    return json.loads(text) if text.strip() else None


def configure(fed: Federation) -> None:
    """Create the proxies and give each its site's WAN latency (idempotent)."""
    request("POST", "/populate", proxies(fed))
    for site in fed.sites.values():
        reset_site(site)


def reset_site(site: Site) -> None:
    """The proxy of SITE enabled, with only its latency toxic."""
    name = proxy_name(site)
    request("POST", f"/proxies/{name}", {"enabled": True})
    for toxic in request("GET", f"/proxies/{name}/toxics") or []:
        request("DELETE", f"/proxies/{name}/toxics/{toxic['name']}")
    if site.link.latency_ms > 0:
        request("POST", f"/proxies/{name}/toxics", latency_toxic(site))


def add_toxic(site: Site, toxic: Toxic) -> Any:
    return request("POST", f"/proxies/{proxy_name(site)}/toxics", toxic)


def remove_toxic(site: Site, name: str) -> None:
    request("DELETE", f"/proxies/{proxy_name(site)}/toxics/{name}")


def set_enabled(site: Site, enabled: bool) -> None:
    request("POST", f"/proxies/{proxy_name(site)}", {"enabled": enabled})


def show(site: Site) -> Any:
    return request("GET", f"/proxies/{proxy_name(site)}")
