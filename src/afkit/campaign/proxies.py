"""What an X.509 proxy says: until when it is valid.

A grid proxy file (RFC 3820; what ``xrdgsiproxy init`` and ``voms-proxy-init`` write, the file
``X509_USER_PROXY`` names) holds the proxy certificate first, its private key, then the user's
certificate. The proxy is valid until its certificate's notAfter; afkit reads that with
``openssl x509`` (on every grid host; the job core on a worker without the submit host's files
imports nothing beyond the standard library) to refuse a campaign whose proxy has expired
(afkit.campaign.credentials) and to name an expired proxy as the cause of a job's failure
(afkit.campaign.job). Never prints the file: the key is in it.
"""

from __future__ import annotations

import calendar
import shutil
import subprocess
import time
from pathlib import Path

from afkit.errors import InvalidError, PrereqError

HINT = "make a new one in the same file: xrdgsiproxy init -out FILE (or voms-proxy-init -out FILE)"


def not_after(path: Path) -> float:
    """The end of the validity of the proxy in PATH (its first certificate's notAfter), as a Unix
    time; InvalidError when PATH holds no PEM certificate."""
    openssl = shutil.which("openssl")
    if openssl is None:
        raise PrereqError("openssl is not on PATH: cannot read the X.509 proxy's validity",
                          hint="install openssl (Debian: apt-get install openssl)")  # fmt: skip
    proc = subprocess.run([openssl, "x509", "-noout", "-enddate", "-in", str(path)],
                          capture_output=True, text=True, check=False, timeout=30)  # fmt: skip
    _, sep, when = proc.stdout.strip().partition("notAfter=")
    try:
        if proc.returncode != 0 or not sep:
            raise ValueError(when)
        return float(calendar.timegm(time.strptime(when.replace(" GMT", ""), "%b %d %H:%M:%S %Y")))
    except ValueError:
        # openssl's reason, never the file's text
        reason = proc.stderr.strip().splitlines()[0] if proc.stderr.strip() else "no certificate"
        raise InvalidError(f"{path}: not an X.509 proxy (a PEM certificate): {reason}", hint=HINT) from None


def expired_by(path: Path, when: float) -> float | None:
    """The end of the proxy in PATH when it is at or before WHEN, else None (also when the file is
    gone or holds no certificate: the job's own error then stands)."""
    try:
        end = not_after(path)
    except (OSError, InvalidError, PrereqError, subprocess.SubprocessError):
        return None
    return end if end <= when else None
