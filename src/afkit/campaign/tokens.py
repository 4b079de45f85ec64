"""What a WLCG token says: its claims, scopes and expiry.

A WLCG token is a JWT in compact serialisation (RFC 7519, 7515 section 7.1): three base64url
segments, the middle one the claims as JSON. afkit reads that segment with the standard library
(the job core on a worker without the submit host's files imports nothing else) and does not check
the signature: the storage does that; afkit reads what a token allows and until when, to refuse a
campaign that could not read its data (afkit.campaign.credentials) and to name an expired token as
the cause of a job's failure (afkit.campaign.job). Never prints the token.
"""

from __future__ import annotations

import base64
import binascii
import json
import posixpath
import time
from pathlib import Path

from afkit.errors import InvalidError


def claims(path: Path) -> dict[str, object]:
    """The claims of the token in PATH, its signature not checked (the storage checks it)."""
    text = path.read_text(encoding="utf-8").strip()
    segments = text.split(".")
    try:
        if len(segments) != 3 or not all(segments):
            raise ValueError(f"{len(segments)} segments, not header.claims.signature")
        body = segments[1]
        data = json.loads(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)))
        if not isinstance(data, dict):
            raise ValueError("its claims are not a JSON object")
    except (ValueError, binascii.Error) as err:
        # the reason, never the text: it may be a secret written wrongly
        reason = str(err) if "segments" in str(err) or "JSON object" in str(err) else type(err).__name__
        raise InvalidError(f"{path}: not a WLCG token (a JWT): {reason}",
                           hint="write the token itself into the file, nothing else") from None  # fmt: skip
    return data


def expired_by(path: Path, when: float) -> float | None:
    """The expiry of the token in PATH when it is at or before WHEN, else None (also when the file
    is gone or no token: the job's own error then stands)."""
    try:
        exp = claims(path).get("exp")
    except (OSError, InvalidError):
        return None
    return float(exp) if isinstance(exp, int | float) and exp <= when else None


def expiry_text(exp: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(exp))


def scopes(data: dict[str, object]) -> list[tuple[str, str]]:
    """The token's (operation, path) scopes, e.g. ("storage.read", "/data")."""
    value = data.get("scope", "")
    out = []
    for scope in str(value).split():
        op, _, path = scope.partition(":")
        out.append((op, posixpath.normpath(path or "/")))
    return out
