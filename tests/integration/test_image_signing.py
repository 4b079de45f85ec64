"""Signed images with the real Apptainer: ``afkit image sign`` / ``afkit image verify`` and a
campaign that verifies its image before any job runs (docs/image-builder.md, "Signing").

Runs inside the testbed (scripts/testbed run). A key pair is made with ``apptainer key newpair`` in
a private keyring and exported as an armored, passphrase-protected private key file, as a CI file
variable would hold it. Checks: the signature round trip; an unsigned, a modified and a
wrongly-signed image are refused with exit 6; a campaign with ``image.fingerprint`` records the
fingerprint in every job row and refuses an unsigned image with exit 6 before any job runs.
"""

from __future__ import annotations

import csv
import os
import re
import shutil
import subprocess
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

import itsupport
import pytest
from itsupport import origin_dataset, steps_campaign
from waitsupport import wait_until

pytestmark = pytest.mark.testbed
PASS = "it-Passphrase"


def afkit(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return itsupport.afkit(*args, env=env, timeout=600)


def _newpair(keysdir: Path, name: str, out: Path) -> str:
    """A passphrase-protected key pair in KEYSDIR, its private key exported (armored) to OUT."""
    env = {**os.environ, "APPTAINER_KEYSDIR": str(keysdir)}
    gen = subprocess.run(["apptainer", "key", "newpair", f"--password={PASS}", f"--name={name}",
                          "--email=it@example.invalid", "--comment=afkit test", "--push=false"],
                         env=env, capture_output=True, text=True, check=True)  # fmt: skip
    listed = subprocess.run(["apptainer", "key", "list", "--secret"], env=env, capture_output=True,
                            text=True, check=True)  # fmt: skip
    fp = re.search(r"Fingerprint:\s*([0-9A-F]{40})", listed.stdout)
    assert fp, gen.stderr + listed.stdout
    # two answers on stdin (key index, then passphrase), read by separate prompts: the first one's
    # buffered read of a pipe takes all there is (apptainer internal/pkg/util/interactive
    # askQuestionUsingGenericDescr), so the passphrase goes in once its prompt is out
    pipe = subprocess.PIPE
    exp = subprocess.Popen(["apptainer", "key", "export", "--secret", "--armor", str(out)], env=env,
                           stdin=pipe, stdout=pipe, stderr=pipe, text=True)  # fmt: skip
    assert exp.stdin is not None and exp.stdout is not None
    shown = PromptReader(exp.stdout.fileno())
    exp.stdin.write("0\n")
    exp.stdin.flush()
    wait_until(lambda: "Enter key passphrase" in shown.text(), 60, what="apptainer's passphrase prompt",
               proc=exp)  # fmt: skip
    exp.stdin.write(PASS + "\n")
    exp.stdin.close()
    exp.wait(timeout=60)
    shown.thread.join(timeout=10)
    assert exp.stderr is not None
    assert exp.returncode == 0 and out.is_file(), exp.stderr.read() + shown.text()
    return fp.group(1)


class PromptReader:
    """Collects what a program writes to the pipe FD as it comes (a prompt ends in no newline), in a
    thread of its own, until the pipe closes."""

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self._chunks: list[bytes] = []
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self) -> None:
        while chunk := os.read(self._fd, 4096):
            self._chunks.append(chunk)

    def text(self) -> str:
        return b"".join(self._chunks).decode(errors="replace")


@pytest.fixture(scope="module")
def work() -> Iterator[Path]:
    d = Path(tempfile.mkdtemp(prefix="afkit-signing-", dir="/tmp"))
    os.chmod(d, 0o755)
    try:
        yield d
    finally:
        shutil.rmtree(d, ignore_errors=True)  # the directory this fixture made


@pytest.fixture(scope="module")
def keys(work: Path) -> dict[str, tuple[Path, str]]:
    out = {}
    for who in ("release", "stranger"):
        (work / who).mkdir(mode=0o700)
        out[who] = (work / f"{who}.asc", _newpair(work / who, f"afkit {who}", work / f"{who}.asc"))
    return out


@pytest.fixture(scope="module")
def tiny_sif(work: Path) -> Path:
    sandbox = work / "sandbox"
    (sandbox / "etc").mkdir(parents=True)
    (sandbox / "etc" / "afkit-test").write_text("payload\n" * 1000)
    sif = work / "tiny.sif"
    subprocess.run(["apptainer", "build", str(sif), str(sandbox)], capture_output=True, check=True)
    return sif


def _signed(src: Path, dest: Path, key: Path, public: Path | None = None) -> str:
    shutil.copyfile(src, dest)
    extra = ["--export-public", str(public)] if public else []
    proc = afkit(
        "image", "sign", "--key", str(key), *extra, str(dest), env={"AFKIT_SIGNING_PASSPHRASE": PASS}
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip()


def _fs_offset(sif: Path) -> int:
    """Start of the image's file-system partition ('apptainer sif list')."""
    out = subprocess.run(["apptainer", "sif", "list", str(sif)], capture_output=True, text=True, check=True)
    m = re.search(r"\|(\d+)-\d+\s*\|FS", out.stdout)
    assert m, out.stdout
    return int(m.group(1))


def test_sign_then_verify(work: Path, keys: dict[str, tuple[Path, str]], tiny_sif: Path) -> None:
    key, fp = keys["release"]
    assert _signed(tiny_sif, work / "a.sif", key, work / "release.pub") == fp
    proc = afkit(
        "image", "verify", "--fingerprint", fp, "--key", str(work / "release.pub"), str(work / "a.sif")
    )
    assert proc.returncode == 0 and proc.stdout.strip() == fp, proc.stderr


def test_unsigned_modified_and_foreign_images_are_refused(
    work: Path, keys: dict[str, tuple[Path, str]], tiny_sif: Path
) -> None:
    key, fp = keys["release"]
    _signed(tiny_sif, work / "b.sif", key, work / "b.pub")
    shutil.copyfile(work / "b.sif", work / "modified.sif")
    with (work / "modified.sif").open("r+b") as fh:
        fh.seek(_fs_offset(work / "modified.sif") + 100)
        byte = fh.read(1)
        fh.seek(-1, 1)
        fh.write(bytes([byte[0] ^ 0xFF]))
    stranger_key, stranger_fp = keys["stranger"]
    _signed(tiny_sif, work / "foreign.sif", stranger_key, work / "stranger.pub")
    cases = {
        "unsigned": (tiny_sif, work / "b.pub", "is not signed"),
        "modified": (work / "modified.sif", work / "b.pub", "does not match the content"),
        "foreign, key unknown": (work / "foreign.sif", work / "b.pub", "not in the keyring"),
        "foreign": (work / "foreign.sif", work / "stranger.pub", f"signed by {stranger_fp}, not by"),
    }
    for what, (image, pub, message) in cases.items():
        proc = afkit("image", "verify", "--fingerprint", fp, "--key", str(pub), str(image))
        assert proc.returncode == 6, f"{what}: {proc.returncode} {proc.stderr}"
        assert message in proc.stderr, f"{what}: {proc.stderr}"


def _campaign(work: Path, name: str, image: dict[str, str], data_dir: str) -> Path:
    return steps_campaign(work, name, image, data_dir, results=str(work / "results"))


def test_campaign_verifies_its_image_and_records_the_signer(
    work: Path, keys: dict[str, tuple[Path, str]], bench_sif: Path
) -> None:
    key, fp = keys["release"]
    _signed(bench_sif, work / "bench-signed.sif", key, work / "bench.pub")
    env = {"XRD_CONNECTIONRETRY": "1", "XRD_REQUESTTIMEOUT": "20"}
    with origin_dataset("afkit-signing-it", ("uproot-HZZ.root",)) as data_dir:
        # unsigned: refused with exit 6 before any job runs
        bad = _campaign(work, "it-unsigned", {"sif": str(bench_sif), "fingerprint": fp, "key": "bench.pub"},
                        data_dir)  # fmt: skip
        proc = afkit("campaign", "run", str(bad), env=env)
        assert proc.returncode == 6, proc.stderr[-3000:]
        assert f"{bench_sif} is not signed" in proc.stderr
        [results] = (work / "results").glob("it-unsigned-*")
        assert not (results / "image" / "image.json").exists()
        assert not list(results.glob("job/**/*.json"))

        good = _campaign(work, "it-signed", {"sif": "bench-signed.sif", "fingerprint": fp.lower(),
                                             "key": "bench.pub"}, data_dir)  # fmt: skip
        proc = afkit("campaign", "run", str(good), env=env)
        assert proc.returncode == 0, proc.stderr[-3000:]
        [results] = (work / "results").glob("it-signed-*")
        assert afkit("campaign", "aggregate", str(good)).returncode == 0
        with (results / "aggregate" / "jobs.csv").open() as fh:
            rows = list(csv.DictReader(fh))
        assert rows and all(r["status"] == "ok" and r["image_fingerprint"] == fp for r in rows), rows
