"""One campaign job on the worker node: run the payload inside the image, write the job record.

The payload (afkit.campaign.steps, on afkit's own package bound into the image: images built from
CVMFS tags do not contain afkit) runs under ``apptainer exec``; this wrapper times the container
start (part of the ``setup`` step), adds provenance (campaign hash, image digest and tag, site,
host) and writes the record atomically. What the payload prints and what the wrapper writes are
checked against the job-record contract (afkit.campaign.jobrecord): a mismatch is an error naming the
job, and no record is written. A payload that fails (unreachable storage, a bad
file) gives a record with ``status: failed`` and the message, so the rest of the campaign continues
and the report marks the cell; a wrapper that is killed (eviction, wall time) or whose payload is
killed by a signal (Ctrl-C, SIGTERM, condor_rm, scancel) leaves no record: Snakemake retries it, or,
after an interrupt, the rerun does.

While the payload runs, the wrapper samples the worker node once a second (afkit.bench.monitor)
and the record says what bounded the job: ``bottleneck`` and ``bottleneck_reason``
(afkit.campaign.bottleneck, docs/campaigns.md).

The record's ``executor`` is the one that really ran the job, read from the job's own environment
(HTCondor's job ad ``$_CONDOR_JOB_AD``, SLURM's ``$SLURM_JOB_ID``), with the batch job id.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import afkit
from afkit.bench.monitor import HostMonitor
from afkit.campaign import bottleneck, executors, interrupt
from afkit.campaign.contract import (
    CA_DIR_ENV,
    CREDENTIAL_ENV,
    CredentialSpec,
    ImageInfo,
    JobRecord,
    JobSpec,
    PayloadResult,
    PayloadSpec,
    SiteSpec,
    ca_variable,
)
from afkit.campaign.executors import htcondor
from afkit.errors import AfkitError, ExitCode, NotFoundError, PrereqError, one_line
from afkit.image import apptainer
from afkit.signals import signals_to_main_thread

# afkit's package inside the image: `python -m afkit.campaign.steps` from the working directory /
CONTAINER_PACKAGE = "/afkit"
PAYLOAD_MODULE = "afkit.campaign.steps"


def package_dir() -> Path:
    """afkit's package directory on this host: bound into the job, so the job runs this afkit."""
    return Path(afkit.__file__).resolve().parent


# python: auto = the afkit bench image's venv when the image has one, else the image's python3
AUTO_PYTHON = 'if [ -x /opt/afkit/bin/python3 ]; then exec /opt/afkit/bin/python3 "$@"; fi; exec python3 "$@"'


def apptainer_command(
    image: str,
    site: SiteSpec,
    scratch: Path,
    spec_path: Path,
    binds: list[str] | None = None,
    python: str = "auto",
) -> list[str]:
    """``apptainer exec`` of the payload; BINDS are extra host paths (local storage mounts)."""
    binds = [f"{package_dir()}:{CONTAINER_PACKAGE}:ro", f"{scratch}:{scratch}", *(binds or [])]
    interp = ["/bin/sh", "-c", AUTO_PYTHON, "python"] if python == "auto" else [python]
    # -q: no INFO chatter in the job logs (e.g. "gocryptfs not found"); --pwd /: the submit
    # directory or home does not exist inside the contained image ("chdir ...: no such file"),
    # and `python -m` puts the working directory first on the module path: /afkit is found there;
    # --pid: every process of the payload dies with the container's first one (an interrupt, a job
    # killed by its batch system: afkit.campaign.interrupt)
    options = ["--cleanenv", "--no-home", "--contain", "--pid", "--pwd", "/", *site.apptainer_args]
    command = [*interp, "-m", PAYLOAD_MODULE, str(spec_path)]
    return apptainer.exec_command(image, command, options=options, binds=binds, global_options=["-q"])


# a guarded storage's credential inside the job's container, mounted read-only (docs/campaigns.md,
# "Guarded storage"); the variables the field's clients read it from
CREDENTIALS_DIR = "/afkit-credentials"


def credential_binds(cred: CredentialSpec) -> tuple[list[str], dict[str, str]]:
    """The binds (host file -> container, read-only) and the payload's environment (paths, never
    the secret) of a job whose storage is guarded by CRED; none for an open storage."""
    if not cred.kind:
        return [], {}
    inside = f"{CREDENTIALS_DIR}/{cred.kind}"
    binds, env = [f"{cred.path}:{inside}:ro"], {CREDENTIAL_ENV[cred.kind]: inside}
    if cred.ca:
        variable = ca_variable(cred.ca)
        ca_inside = f"{CREDENTIALS_DIR}/{'certificates' if variable == CA_DIR_ENV else 'ca.pem'}"
        binds.append(f"{cred.ca}:{ca_inside}:ro")
        env[variable] = ca_inside
    return binds, env


def arrived(given: str, sandbox: Path, what: str, folder: bool = False) -> Path:
    """The file GIVEN (a submit host's path; a folder too when FOLDER) as HTCondor's file transfer
    placed it in the job's SANDBOX (a site without the submit host's files): by its name at the
    sandbox's top (snakemake_executor_plugin_afkit_htcondor lists such files as
    transfer_input_files). Raises NotFoundError naming WHAT when it did not arrive."""
    here = sandbox / Path(given).name
    if not (here.is_file() or (folder and here.is_dir())):
        hint = "HTCondor transfers it with the job: check its transfer_input_files (condor_q -l)"
        where = f"the job's sandbox {sandbox}"
        raise NotFoundError(f"the {what} file {Path(given).name} did not reach {where}", hint=hint)
    return here


def in_sandbox(cred: CredentialSpec, sandbox: Path) -> CredentialSpec:
    """CRED's files in the job's SANDBOX (:func:`arrived`), the token or proxy made readable by this
    job's user only (the rule XRootD's clients apply)."""
    if not cred.kind:
        return cred
    path = arrived(cred.path, sandbox, cred.kind)
    path.chmod(0o600)
    ca = str(arrived(cred.ca, sandbox, "CA", folder=True)) if cred.ca else ""
    return CredentialSpec(kind=cred.kind, path=str(path), ca=ca)


def credential_expired(cred: CredentialSpec, when: float, named: str = "") -> str:
    """ "token expired at T (FILE; ...): " (or "proxy expired at ...") when the job's credential had
    expired by WHEN (its failure is then the expiry's, not the network's: renew the file and
    retry), else "". FILE is NAMED, the user's file (default: the one read, CRED's: at a site
    without the shared filesystem that is its copy in the job's sandbox, which the user cannot
    renew)."""
    from afkit.campaign import proxies, tokens

    if cred.kind not in CREDENTIAL_ENV:
        return ""
    expired_by = tokens.expired_by if cred.kind == "token" else proxies.expired_by
    exp = expired_by(Path(cred.path), when)
    if exp is None:
        return ""
    return f"{cred.kind} expired at {tokens.expiry_text(exp)} ({named or cred.path}; renew it, then retry): "


# exit statuses of a payload cut off by a signal: killed (negative) or a shell's 128 + signal
KILLED = {-1, -2, -9, -15, 129, 130, 137, 143}


class JobInterrupted(AfkitError):
    code = ExitCode.INTERRUPTED


def batch_site(env: dict[str, str] | None = None) -> str:
    """The batch system's site of the worker running this job (afkit.campaign.executors: the
    HTCondor machine ad's AFKIT_SITE, the SLURM partition); empty for a local job."""
    return executors.worker_site(dict(os.environ if env is None else env))


def in_netns(netns: str, cmd: list[str]) -> list[str]:
    """CMD in network namespace NETNS (a federation site's, docs/federation.md); CMD when empty."""
    return ["nsenter", f"--net=/run/netns/{netns}", "--", *cmd] if netns else cmd


def worker_address(netns: str = "") -> str:
    """The worker node's first global IPv4 address (in network namespace NETNS when given)."""
    cmd = in_netns(netns, ["ip", "-4", "-o", "addr", "show", "scope", "global"])
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, check=False).stdout
    except OSError:
        return ""
    for line in out.splitlines():
        fields = line.split()
        if "inet" in fields:
            return fields[fields.index("inet") + 1].split("/")[0]
    return ""


# the pull's own Apptainer settings (cmd/internal/cli/pull.go: each flag's APPTAINER_ variable): no
# copy in Apptainer's cache in the worker's home (which may be a tmpfs: the image would sit in RAM),
# and overwrite the destination (the cache's pull writes into a temporary file made beforehand)
PULL_ENV = {"APPTAINER_DISABLE_CACHE": "1", "APPTAINER_FORCE": "1"}


def _registry_ref(image: ImageInfo) -> str:
    """The campaign image's oras:// reference: what a worker without the submit host's files pulls."""
    if not image.source.startswith("oras://"):
        raise PrereqError(
            f"this site has no shared filesystem, but the image {image.path} is not from a registry",
            hint="give image.sif as an oras:// reference (docs/federation.md)",
        )
    return image.source


def _pull(ref: str, dest: Path, env: dict[str, str], login: Path | None = None) -> None:
    """``apptainer pull`` of REF to DEST with the job's ENV (and :data:`PULL_ENV`), the registry
    LOGIN (the campaign's image.login, transferred with the job) when given."""
    from afkit.campaign.image import oras_pull_command

    cmd = oras_pull_command(ref, dest, env, login)
    proc = interrupt.run(cmd, {**env, **PULL_ENV})
    if proc.returncode != 0 or not dest.is_file() or dest.stat().st_size == 0:
        raise NotFoundError(f"cannot pull {ref} on the worker node: {one_line(proc.stderr + proc.stdout)}")


def _not_the_campaigns(ref: str) -> AfkitError:
    return AfkitError(f"{ref} pulled on the worker node is not the image of the campaign (sha256 differs)",
                      hint="the tag was pushed again during the campaign: rerun it")  # fmt: skip


def pull_on_worker(image: ImageInfo, scratch: Path, env: dict[str, str],
                   login: Path | None = None) -> tuple[str, float]:  # fmt: skip
    """A site without the submit host's files: pull the campaign's oras:// image into the job's
    SCRATCH with the job's ENV (the same sha256 as the submit host's pull, or the job fails);
    (path, seconds)."""
    from afkit.image.store import sha256_file

    ref = _registry_ref(image)
    sif = scratch / "image.sif"
    t0 = time.monotonic()
    _pull(ref, sif, env, login)
    seconds = time.monotonic() - t0
    if sha256_file(sif) != image.sha256:
        raise _not_the_campaigns(ref)
    return str(sif), seconds


def image_on_worker(
    image: ImageInfo, site: SiteSpec, scratch: Path, env: dict[str, str], log: Path, login: Path | None = None
) -> tuple[str, float, str]:
    """The campaign's image on a worker without the submit host's files: from the node's image
    cache (afkit.campaign.imagecache; pulled there by the first job that needs it), else (the
    site's ``image_cache: off``, or a cache directory this job cannot use: a warning in LOG)
    pulled into the job's SCRATCH; (path, seconds, the record's image_cache)."""
    from afkit.campaign import imagecache

    ref = _registry_ref(image)
    if site.image_cache == imagecache.OFF:
        return (*pull_on_worker(image, scratch, env, login), imagecache.OFF)
    cache = imagecache.directory(site.image_cache)
    t0 = time.monotonic()
    try:
        imagecache.prepare(cache, default=not site.image_cache)
        entry, state = imagecache.fetch(cache, image.sha256, lambda tmp: _pull(ref, tmp, env, login))
    except imagecache.CacheUnusable as err:
        warning = (f"afkit: warning: image cache {cache} unusable ({err}): this job pulls the image "
                   f"into its sandbox (set sites.{site.name}.image_cache, docs/campaigns.md)")  # fmt: skip
        print(warning, file=sys.stderr)
        log.parent.mkdir(parents=True, exist_ok=True)
        with log.open("a", encoding="utf-8") as fh:
            fh.write(warning + "\n")
        return (*pull_on_worker(image, scratch, env, login), imagecache.UNUSABLE)
    except imagecache.DigestMismatch as err:
        raise _not_the_campaigns(ref) from err
    return str(entry), time.monotonic() - t0, state


def batch_identity(env: dict[str, str] | None = None) -> tuple[str, str]:
    """(executor, batch job id) of the process running this job, from its own environment
    (afkit.campaign.executors: HTCondor's job ad, SLURM's job id; else local)."""
    return executors.identify(dict(os.environ if env is None else env))


def job_bottleneck(record: JobRecord, monitor: Path, site: SiteSpec) -> tuple[str, str]:
    """The verdict from MONITOR's samples inside the record's processing step."""
    steps = record.steps or {}
    start = float(record.processing_start or 0)
    processing = float(steps.get("processing", 0))
    counters = bottleneck.JobCounters(record.status or "", record.bytes or 0, processing)
    window = bottleneck.in_window(bottleneck.read_samples(monitor), start, start + processing)
    return bottleneck.verdict(window, counters, bottleneck.link_rate(site.link_rate))


def _run_payload(cmd: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """The payload in its own process group (so an interrupt can stop exactly it), dying with this
    job (afkit.campaign.interrupt.run), with ENV."""
    return interrupt.run(cmd, env)


def base_record(spec: JobSpec, image: ImageInfo) -> JobRecord:
    """The record's fields known before the job runs: the plan's, its spec's digest, the image's."""
    job = spec.job
    rec = JobRecord.planned(job)
    rec.url, rec.files = (job.urls[0] if job.urls else ""), len(job.urls)
    rec.campaign, rec.spec_sha256 = spec.campaign, spec.digest()
    rec.image_path, rec.image_sha256, rec.image_tag = image.path, image.sha256, image.tag
    rec.image_ref = image.reference
    rec.image_fingerprint = image.fingerprint
    rec.submit_host, rec.wn_site, rec.wn_address = socket.gethostname(), "", ""
    rec.submit_files = "shared" if spec.site.shared_fs else "transferred"
    return rec


def held_record(
    spec: JobSpec,
    *,
    image: ImageInfo,
    batch_job_id: str,
    reason: str,
    held_s: float,
    now: float | None = None,
) -> JobRecord:
    """The record of a batch job that was held longer than its grace and removed from the queue
    (snakemake_executor_plugin_afkit_htcondor): failed, with the batch system's hold reason."""
    end = time.time() if now is None else now
    record = base_record(spec, image)
    record.executor, record.batch_job_id = htcondor.NAME, batch_job_id
    record.status = "failed"
    record.error = f"held by HTCondor for {held_s:.0f} s, removed from the queue: {reason}"
    record.hold_reason = reason
    record.start, record.end = end - held_s, end
    record.bottleneck, record.bottleneck_reason = bottleneck.NOT_SUCCEEDED
    return record


def payload_result(proc: subprocess.CompletedProcess[str], path: Path, job_id: str) -> PayloadResult:
    """What the payload left at PATH (checked); a failed result naming the cause when it left none."""
    if path.is_file():
        return PayloadResult.read(path, job=job_id)
    return PayloadResult(status="failed", error=f"payload exited {proc.returncode}: {one_line(proc.stderr)}")


def run(spec: JobSpec, *, output: Path | None = None, log: Path | None = None) -> JobRecord:
    """Run the job of SPEC; return (and write to OUTPUT, the spec's record unless given) its record."""
    output = Path(spec.record) if output is None else output
    log = Path(spec.log) if log is None else log
    site, job_id = spec.site, spec.job.id
    # the site's variables for this job's commands only (a local wave runs jobs of several sites)
    env = {**os.environ, **site.env}
    if apptainer.command_name() is None:
        raise PrereqError("apptainer not found on PATH on the worker node", hint="install Apptainer there")
    image = ImageInfo.read(Path(spec.image))
    if site.shared_fs and not Path(image.path).exists():
        raise NotFoundError(f"image not found on the worker node: {image.path}")
    # without the submit host's files, the job works in its HTCondor sandbox
    sandbox = "" if site.shared_fs else os.environ.get("_CONDOR_SCRATCH_DIR", "")
    scratch_root = Path(sandbox or site.scratch or "/tmp")
    scratch_root.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix="afkit-job-", dir=scratch_root))
    record = base_record(spec, image)
    netns = site.job_netns(spec.job.index)  # the site's namespace, or this job's client node's
    record.wn_site, record.wn_address = batch_site(), worker_address(netns)
    record.executor, record.batch_job_id = batch_identity()
    # the credential's files: on the submit host's file system, else transferred into the sandbox
    here = Path(sandbox or ".")
    cred = spec.credential if site.shared_fs else in_sandbox(spec.credential, here)
    login = arrived(spec.registry_login, here, "registry login") if spec.registry_login else None
    copies = [Path(cred.path)] if cred is not spec.credential and cred.path else []
    copies += [login] if login else []
    try:
        image_path = image.path
        if not site.shared_fs:
            started = time.time()
            try:
                pulled = image_on_worker(image, site, scratch, env, log, login)
            except AfkitError as err:
                if interrupt.interrupted():  # the pull was cut off: no record, a rerun redoes it
                    hint = "rerun the campaign (or afkit campaign retry --missing)"
                    raise JobInterrupted(f"job {job_id}: interrupted pulling its image: no record written",
                                         hint=hint) from err  # fmt: skip
                return _written(_unpulled(record, err, started, log), output)
            image_path, record.image_pull_s, record.image_cache = pulled
            record.image_path = image_path
        result_path = scratch / "result.json"
        cred_binds, cred_env = credential_binds(cred)
        payload = PayloadSpec(
            job=spec.job, tree=spec.tree, scratch=str(scratch), stage_out=str(scratch / "stage-out.json"),
            result=str(result_path), t_launch=time.time(), root=spec.root,
            # apptainer runs the payload with --cleanenv: pass the XRootD client settings through,
            # and where its storage's credential is inside the container (paths, not the secret)
            env={**{k: v for k, v in os.environ.items() if k.startswith("XRD_")}, **cred_env},
        )  # fmt: skip
        spec_path = scratch / "spec.json"
        spec_path.write_text(payload.to_json(), encoding="utf-8")
        binds = [*(p for p in spec.binds if Path(p).is_dir()), *cred_binds]
        cmd = apptainer_command(image_path, site, scratch, spec_path, binds, image.python)
        cmd = in_netns(netns, cmd)  # a federation site (or its client node): the job's network
        record.start = payload.t_launch
        with HostMonitor(scratch / "monitor.jsonl"):
            proc = _run_payload(cmd, env)
        record.end = time.time()
        log.parent.mkdir(parents=True, exist_ok=True)
        with log.open("a", encoding="utf-8") as fh:
            fh.write("$ " + " ".join(cmd) + "\n" + proc.stderr)
        if proc.returncode in KILLED or interrupt.interrupted():
            raise JobInterrupted(
                f"job {job_id}: payload cut off (exit {proc.returncode}): no record written",
                hint="rerun the campaign (or afkit campaign retry --missing) to redo it",
            )
        record = record.updated(payload_result(proc, result_path, job_id))
        if record.status == "ok" and proc.returncode != 0:
            record.status = "failed"
            record.error = f"payload exited {proc.returncode}: {one_line(proc.stderr)}"
        if record.status != "ok":
            expired = credential_expired(cred, time.time(), spec.credential.path)  # the user's file
            record.error = expired + (record.error or "")
        record.bottleneck, record.bottleneck_reason = job_bottleneck(record, scratch / "monitor.jsonl", site)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)  # the directory mkdtemp made for this job
        for copy in copies:  # the copies of the secrets go now, not only with the sandbox
            copy.unlink(missing_ok=True)
    return _written(record, output)


def _written(record: JobRecord, output: Path) -> JobRecord:
    """RECORD, written to OUTPUT (its folder made)."""
    output.parent.mkdir(parents=True, exist_ok=True)
    record.write(output)
    return record


def _unpulled(record: JobRecord, err: AfkitError, started: float, log: Path) -> JobRecord:
    """The record of a job whose worker could not get the campaign's image (the pull failed, or
    the registry's is another): failed, naming why (also in LOG); the caller writes it, so that
    HTCondor returns it. Without it the job's output transfer fails ("SHADOW failed to receive
    file(s)"), the reason stays in the lost sandbox and the slot waits out the job lease (10
    minutes, measured) before the next job."""
    record.status, record.start, record.end = "failed", started, time.time()
    record.error = f"{err}" + (f" ({err.hint})" if err.hint else "")
    record.bottleneck, record.bottleneck_reason = bottleneck.NOT_SUCCEEDED
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("a", encoding="utf-8") as fh:
        fh.write(f"afkit: error: {record.error}\n")
    return record


def run_all(specs: list[JobSpec], outputs: list[Path], logs: list[Path]) -> list[JobRecord]:
    """The jobs of SPECS started together, one thread each (a wave at a local site); every job
    ends before the first error (if any) is raised."""
    from concurrent.futures import ThreadPoolExecutor

    if len(specs) == 1:
        return [run(specs[0], output=outputs[0], log=logs[0])]
    with ThreadPoolExecutor(max_workers=len(specs)) as pool, signals_to_main_thread():
        futures = [
            pool.submit(run, s, output=o, log=lg) for s, o, lg in zip(specs, outputs, logs, strict=True)
        ]
    errors = [err for err in (f.exception() for f in futures) if err is not None]
    if errors:
        raise errors[0]
    return [f.result() for f in futures]
