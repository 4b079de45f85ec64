"""The disk-server study's run (prague-diskserver): on the disk server itself, as root.

1. The device: a directory on the server's filesystem (``params.data_dir``), or in the box a loop
   device afkit makes over a file (afkit.bench.blockdev) with ext4 on it.
2. The data: ``files`` generated files of ``file_mb`` (``afkit bench gen random``), served by an
   XRootD origin (``afkit storage up origin``) on loopback port ``port``.
3. Table 2's runs: per repetition both settings (default, tuned; the order alternating), each: the
   device's read-ahead and scheduler set and read back, the files' pages dropped (and what was
   left of them in the page cache recorded), then every file read whole through the origin in
   ``block_kb`` requests (``afkit bench read``), timed. The device's own settings are set back at
   the end, also after an error or an interrupt.
4. Figures 10-12's pattern: the image's ROOT writes afkit's ESD-shaped file onto the device
   (``afkit bench gen esd``) and reads it twice (``afkit bench analysis --engine root
   --trace-out``), without a tree cache and with ROOT's default one, its pages dropped before each.

Records go to RESULTS/data: ``runs.jsonl`` (one line per timed run), ``pattern-nocache.jsonl`` and
``pattern-cache.jsonl`` (every read), ``pattern.json`` (the two readers' summaries, the file's
size) and ``setup.json`` (device, settings before, kernel, image). Everything afkit made (files,
the origin, the loop device) is taken away at the end.
"""

from __future__ import annotations

import contextlib
import json
import os
import platform
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from afkit.atomic import write_atomic
from afkit.bench import blockdev, devinfo
from afkit.bench.disk import drop_cache
from afkit.errors import AfkitError, NotFoundError, PrereqError, UsageError
from afkit.storage import daemon as dmn
from afkit.study import serve
from afkit.study.model import Study
from afkit.study.recipe import Facility
from afkit.study.writes import Write

MARK = ".afkit-diskserver"  # in the data directory afkit makes on a user's filesystem
# the loop device's backing file and mount, the origin's state: where the xrootd user (the origin's
# daemon runs as it) can reach them, whatever the study's working directory is (a private /root)
PLACE = Path("/var/lib/afkit/study")
SETTINGS = ("default", "tuned")
DROP_CACHES = Path("/proc/sys/vm/drop_caches")


# a scheduler parameter's value for the scheduler the device had when the study began: on the box's
# new loop device the kernel's own default for it (block/elevator.c picks it as the device appears)
KERNEL = "kernel"


def settings(fac: Facility, queue: Path, found: blockdev.QueueSettings) -> dict[str, blockdev.QueueSettings]:
    """The two settings the timed runs alternate, each scheduler one the kernel offers for QUEUE
    (``kernel``: FOUND's, the one the device had before the study touched it). A scheduler this
    kernel does not offer is a missing prerequisite (PrereqError, exit 3), raised before anything is
    written: kernels differ (one without ``CONFIG_IOSCHED_BFQ`` offers none, mq-deadline, kyber)."""
    offered = blockdev.schedulers(queue)
    out = {}
    for which in SETTINGS:
        asked = str(fac.params[f"{which}_scheduler"])
        name = found.scheduler if asked == KERNEL else asked
        if name not in offered:
            raise PrereqError(
                f"I/O scheduler {name!r} ({which}_scheduler) is not offered by this kernel for "
                f"{queue.parent.name}",
                hint=f"this kernel offers: {', '.join(offered)}; give one of them "
                f"(--set {which}_scheduler=NAME, or the sites file's params) or '{KERNEL}' for the "
                "device's own",
            )
        out[which] = blockdev.QueueSettings(serve.whole(fac, f"{which}_read_ahead_kb"), name)
    return out


@contextlib.contextmanager
def _device(fac: Facility, work: Path, need: int) -> Iterator[tuple[Path, dict[str, object]]]:
    """(a new directory for the data on the device, what the device is)."""
    given = str(fac.params.get("data_dir") or "")
    if given:
        top = Path(given)
        if not top.is_dir():
            raise NotFoundError(
                f"params.data_dir: {top} is not a directory",
                hint="give a directory on the disk server's filesystem to tune",
            )
        data = top / "afkit-prague-diskserver"
        if data.exists() and not (data / MARK).exists():
            raise UsageError(f"{data} exists and afkit did not make it", hint="move it away")
        free = shutil.disk_usage(top).free // 2**20
        if free < need:
            raise PrereqError(f"{top} has {free} MB free; the study writes {need} MB there")
        dmn.check_reachable(dmn.service_user(), top)  # the origin's daemon reads the files there
        shutil.rmtree(data, ignore_errors=True)  # afkit's own, from a run that was killed
        data.mkdir()
        (data / MARK).write_text("made by afkit study run prague-diskserver\n")
        try:
            yield data, {"kind": "given", "data_dir": str(top), **devinfo.describe(top)}
        finally:
            shutil.rmtree(data, ignore_errors=True)
        return
    size_mb = _box_size_mb(fac, need)
    disk = work / "disk"
    with blockdev.loop_filesystem(disk / "disk.img", size_mb << 20, disk / "mnt") as name:
        data = disk / "mnt" / "data"
        data.mkdir()
        yield (
            data,
            {
                "kind": "loop",
                "loop": name,
                "backing": str(disk / "disk.img"),
                "size_mb": size_mb,
                "direct_io": True,
                **devinfo.describe(data),
            },
        )


def _dropped(files: list[Path], within: float = 5.0) -> int:
    """Drop FILES' pages from the page cache; the bytes of them still cached afterwards.

    The kernel skips a page something still holds, and the origin sends with sendfile(2): the pages
    of a read that just ended can stay referenced by socket buffers a moment longer. So the drop is
    tried again until nothing is left or WITHIN seconds have passed; then, as admins do before a
    cold read, the whole page cache is dropped (``echo 1 > /proc/sys/vm/drop_caches``). What is left
    after that is recorded with the run."""
    deadline = time.monotonic() + within
    while True:
        for f in files:
            drop_cache(f)
        left = sum(blockdev.resident_bytes(f) for f in files)
        if left == 0:
            return 0
        if time.monotonic() >= deadline:
            break
        time.sleep(0.1)
    serve.say(f"{left} bytes of the files stayed cached for {within:.0f} s: dropping the whole page cache")
    with contextlib.suppress(OSError):
        DROP_CACHES.write_text("1\n")
    return sum(blockdev.resident_bytes(f) for f in files)


def _timed_runs(
    fac: Facility,
    queue: Path,
    wanted: dict[str, blockdev.QueueSettings],
    files: list[Path],
    base: str,
    out: Path,
) -> None:
    reps, block = serve.whole(fac, "repetitions"), serve.whole(fac, "block_kb")
    urls = [base + f.name for f in files]  # root://host:port//NAME
    total = reps * len(SETTINGS)
    done = 0
    with (out / "runs.jsonl").open("w", encoding="utf-8") as fh:
        for rep in range(reps):
            for which in SETTINGS if rep % 2 == 0 else SETTINGS[::-1]:
                want = wanted[which]
                got = blockdev.apply(queue, want)
                left = _dropped(files)
                start = time.time()
                text = serve.afkit("bench", "read", "--no-monitor", "--block", f"{block}KiB", *urls)
                summary = serve.summary(text)
                record = {
                    "type": "run",
                    "rep": rep,
                    "setting": which,
                    "seconds": summary["seconds"],
                    "bytes": summary["bytes"],
                    "wall_s": round(time.time() - start, 3),
                    "read_ahead_kb": got.read_ahead_kb,
                    "scheduler": got.scheduler,
                    "asked": {"read_ahead_kb": want.read_ahead_kb, "scheduler": want.scheduler},
                    "cached_bytes_before": left,
                    "files": len(files),
                    "block_kb": block,
                }
                fh.write(json.dumps(record) + "\n")
                fh.flush()
                done += 1
                serve.say(
                    f"run {done}/{total}: {which} (read-ahead {got.read_ahead_kb} KiB, {got.scheduler}): "
                    f"{summary['seconds']:.2f} s for {summary['bytes'] / 2**20:.0f} MiB"
                )


def _in_image(image: Path, binds: list[Path], *argv: str) -> str:
    from afkit.campaign.job import AUTO_PYTHON, CONTAINER_PACKAGE, package_dir
    from afkit.image import apptainer

    cmd = apptainer.exec_command(
        image,
        ["/bin/sh", "-c", AUTO_PYTHON, "python", "-m", "afkit", *argv],
        options=["--cleanenv", "--no-home", "--contain", "--pwd", "/"],
        binds=[f"{package_dir()}:{CONTAINER_PACKAGE}:ro", *[f"{b}:{b}" for b in binds]],
        global_options=["-q"],
    )
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise AfkitError(f"in {image.name}: afkit {' '.join(argv[:3])} failed: {proc.stderr.strip()[-500:]}")
    return proc.stdout


def _pattern(fac: Facility, image: Path, data: Path, out: Path) -> None:
    where = data / "pattern"
    serve.say(f"pattern: the image's ROOT writes a {fac.params['pattern_mb']} MB ESD-shaped file")
    _in_image(
        image,
        [data],
        "bench",
        "gen",
        "esd",
        "--size",
        f"{serve.whole(fac, 'pattern_mb')}MB",
        "--outdir",
        str(where),
    )
    (esd,) = sorted(where.glob("*.root"))
    summaries: dict[str, Any] = {"file": esd.name, "size": esd.stat().st_size}
    for name, cache in (("nocache", ["--cache-mb", "0"]), ("cache", [])):
        left = _dropped([esd])
        trace = out / f"pattern-{name}.jsonl"
        text = _in_image(
            image,
            [data, out],
            "bench",
            "analysis",
            "--engine",
            "root",
            *cache,
            "--trace-out",
            str(trace),
            "--no-monitor",
            str(esd),
        )
        summary = serve.summary(text)
        summaries[name] = {"summary": summary, "cached_bytes_before": left}
        serve.say(f"pattern: {name}: {summary.get('trace', {}).get('reads', 0)} reads recorded")
    write_atomic(out / "pattern.json", json.dumps(summaries, indent=2) + "\n", mode=0o644)


def need_mb(fac: Facility, image: Path | None) -> int:
    """MB the study's files take on the device: the generated files, and the pattern's ESD file
    (with room for ROOT's temporary) when an image reads it."""
    files_n, file_mb = serve.whole(fac, "files"), serve.whole(fac, "file_mb")
    return files_n * file_mb + (serve.whole(fac, "pattern_mb") * 2 if image else 0)


def _box_size_mb(fac: Facility, need: int) -> int:
    return serve.whole(fac, "device_mb") or need + max(64, need // 4)


def writes(study: Study, fac: Facility, image: Path | None, work: Path | None = None) -> list[Write]:
    """What a run writes (afkit.study.writes): the loop device's backing file in the box, else its
    files in a folder of its own in params.data_dir."""
    need = need_mb(fac, image)
    given = str(fac.params.get("data_dir") or "")
    if given:
        what = f"the generated files ({need} MB) on the tuned device, removed after the run"
        return [Write(what, Path(given) / "afkit-prague-diskserver", need * 2**20)]
    size = _box_size_mb(fac, need)
    what = f"the loop device's backing file ({size} MB, for {need} MB of files), removed after the run"
    return [Write(what, (work or PLACE / study.name) / "disk", size * 2**20)]


def run(study: Study, fac: Facility, out: Path, image: Path | None, work: Path | None = None) -> None:
    """The study's measurements (module docstring) into OUT; WORK (default PLACE/NAME) holds the
    loop device's file and mount and the origin's state."""
    if os.geteuid() != 0:
        raise PrereqError(
            f"study {study.name} runs as root on the disk server",
            hint="it sets the block device's read-ahead and scheduler: run it with sudo",
        )
    if image is not None and not image.is_file():
        raise NotFoundError(
            f"no image at {image} for the read pattern",
            hint="make demo links build/alice-root.sif, or give --image SIF",
        )
    work = (work or PLACE / study.name).absolute()  # named in xrootd's config
    out = out.absolute()  # bound into the image
    files_n, file_mb = serve.whole(fac, "files"), serve.whole(fac, "file_mb")
    need = need_mb(fac, image)
    out.mkdir(parents=True, exist_ok=True)
    for old in out.glob("*.json*"):
        old.unlink()  # a new run: no record of an earlier one stays beside this run's
    with serve.interruptible(), _device(fac, work, need) as (data, device):
        queue = blockdev.queue_dir(data)
        before = blockdev.read(queue)
        wanted = settings(fac, queue, before)
        setup = {
            "device": device,
            "queue": str(queue),
            "before": before.__dict__,
            "offered": blockdev.schedulers(queue),
            "settings": {
                which: {**want.__dict__, "asked_scheduler": str(fac.params[f"{which}_scheduler"])}
                for which, want in wanted.items()
            },
            "kernel": platform.release(),
            "host": platform.node(),
            "image": str(image) if image else None,
        }
        write_atomic(out / "setup.json", json.dumps(setup, indent=2, default=str) + "\n", mode=0o644)
        try:
            serve.say(f"{files_n} files of {file_mb} MB on {device.get('device') or device.get('loop')}")
            serve.afkit(
                "bench",
                "gen",
                "random",
                "--size",
                f"{file_mb}MB",
                "--copies",
                str(files_n),
                "--outdir",
                str(data),
                "--prefix",
                "table2",
            )
            os.sync()
            files = sorted(data.glob("table2*"))
            with serve.origin(data, work / "storage", serve.whole(fac, "port")) as base:
                _timed_runs(fac, queue, wanted, files, base + "/", out)
            for f in files:
                f.unlink()
            # back from the xrootd user: the image's ROOT writes there
            os.chown(data, os.getuid(), os.getgid())
            if image is not None:
                _pattern(fac, image, data, out)
        finally:
            blockdev.apply(queue, before)
