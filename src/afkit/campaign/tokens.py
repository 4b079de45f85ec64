"""What a WLCG token says: its claims, scopes and expiry, read with PyJWT.

The signature is not checked: the storage does that; afkit reads what a token allows and until
when, to refuse a campaign that could not read its data (afkit.campaign.credentials) and to name an
expired token as the cause of a job's failure (afkit.campaign.job). Never prints the token.
"""

from __future__ import annotations

import posixpath
import time
from pathlib import Path

from afkit.errors import InvalidError


def claims(path: Path) -> dict[str, object]:
    """The claims of the token in PATH, its signature not checked (the storage checks it)."""
    import jwt

    text = path.read_text(encoding="utf-8").strip()
    try:
        data = jwt.decode(text, options={"verify_signature": False})
    except jwt.PyJWTError as err:
        raise InvalidError(f"{path}: not a WLCG token (a JWT): {type(err).__name__}",
                           hint="write the token itself into the file, nothing else") from err  # fmt: skip
    return dict(data)


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
