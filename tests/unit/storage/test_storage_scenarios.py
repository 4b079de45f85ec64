"""Scenario definitions, client URLs and rendered xrootd configurations."""

from __future__ import annotations

import dataclasses
import os
import re
from pathlib import Path

import pytest

from afkit import cli
from afkit.errors import ExitCode, InvalidError, NotFoundError, UnsafeError, UsageError
from afkit.storage import manager
from afkit.storage.render import (
    X509,
    Guard,
    Settings,
    authdb_text,
    daemon_dirs,
    gridmap_entries,
    render,
    scitokens_config,
)
from afkit.storage.scenarios import SCENARIOS, default_origin, get_scenario, url


def _configs(name: str, tmp_path: Path, **kw: object) -> dict[str, str]:
    scenario = get_scenario(name)
    settings = Settings(tmp_path / name, **kw)  # type: ignore[arg-type]
    return {d.name: render(scenario, d, settings) for d in scenario.daemons}


def _directives(text: str) -> list[str]:
    return [ln.strip() for ln in text.splitlines() if ln.strip() and not ln.lstrip().startswith("#")]


def test_urls_use_distinct_loopback_ports_clear_of_1094() -> None:
    urls = {name: url(name, "/data/f.root") for name in SCENARIOS}
    assert urls["origin"] == "root://127.0.0.1:11094//data/f.root"
    assert urls["xcache"] == "root://127.0.0.1:11095//data/f.root"
    ports = {u.split(":")[2].split("/")[0] for u in urls.values()}
    assert len(ports) == 4 and "1094" not in ports


def test_url_base_port_from_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AFKIT_STORAGE_BASE_PORT", "20000")
    assert url("xcache-dca", "/x") == "root://127.0.0.1:20002//x"
    monkeypatch.setenv("AFKIT_STORAGE_BASE_PORT", "80")
    with pytest.raises(UsageError):
        url("xcache", "/x")


def test_url_errors() -> None:
    with pytest.raises(NotFoundError):
        url("memcache", "/x")
    with pytest.raises(UsageError):
        url("xcache", "relative/path")


def test_every_daemon_is_loopback_only_with_its_own_dirs(tmp_path: Path) -> None:
    seen_ports = set()
    for name in SCENARIOS:
        for daemon, text in _configs(name, tmp_path).items():
            lines = _directives(text)
            assert "xrd.allow host 127.0.0.1" in lines
            port = next(ln.split()[1] for ln in lines if ln.startswith("xrd.port"))
            assert port not in seen_ports
            seen_ports.add(port)
            assert f"all.adminpath {tmp_path / name / daemon / 'admin'}" in lines
            assert not re.search(r"\{\{|\}\}|\{%", text), "unrendered template text"


def test_xcache_is_a_proxy_file_cache(tmp_path: Path) -> None:
    (text,) = _configs("xcache", tmp_path, origin="10.0.0.5:1094").values()
    lines = _directives(text)
    for directive in (
        "ofs.osslib libXrdPss.so",
        "pss.cachelib libXrdPfc.so",
        "pss.origin 10.0.0.5:1094",
        "pss.setopt ReconnectWait 0",  # an origin back after an outage is reached again at once
        "pfc.ram 1g",
        f"oss.localroot {tmp_path / 'xcache' / 'cache'}",
    ):
        assert directive in lines
    assert "pss.dca world" not in lines


def test_dca_variant_has_direct_cache_access(tmp_path: Path) -> None:
    (text,) = _configs("xcache-dca", tmp_path).values()
    assert "pss.dca world" in _directives(text)


def test_dcotf_redirects_to_its_cache_which_shares_the_cache_dir(tmp_path: Path) -> None:
    configs = _configs("dcotf", tmp_path)
    redirector = _directives(configs["dcotf-redirector"])
    cache = _directives(configs["dcotf-cache"])
    cache_port = next(ln.split()[1] for ln in cache if ln.startswith("xrd.port"))
    assert f"xrootd.redirect 127.0.0.1:{cache_port} /" in redirector
    assert "pss.dca world" in cache
    shared = f"oss.localroot {tmp_path / 'dcotf' / 'cache'}"
    assert shared in redirector and shared in cache


def test_dcotf_redirects_to_the_given_host(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["storage", "render", "dcotf", "--redirect-host", "10.77.2.10", "--state-dir", str(tmp_path)]
    assert cli.main(argv) == 0
    redirects = [d for d in _directives(capsys.readouterr().out) if d.startswith("xrootd.redirect")]
    assert len(redirects) == 1 and redirects[0].startswith("xrootd.redirect 10.77.2.10:"), redirects


def test_a_relative_state_dir_becomes_absolute_in_the_configs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """xrootd refuses a relative adminpath ("XrdConfig: adminpath not absolute")."""
    monkeypatch.chdir(tmp_path)
    assert cli.main(["storage", "render", "origin", "--state-dir", "state"]) == 0
    paths = [
        d for d in _directives(capsys.readouterr().out) if d.startswith(("all.adminpath", "all.pidpath"))
    ]
    assert len(paths) == 2
    assert all(d.split()[1].startswith(f"{tmp_path}/state/origin/origin/") for d in paths), paths


@pytest.mark.parametrize(
    "argv", [["xcache", "--redirect-host", "10.77.2.10"], ["dcotf", "--redirect-host", "a b"]]
)
def test_redirect_host_is_for_dcotf_only_and_a_host(tmp_path: Path, argv: list[str]) -> None:
    assert cli.main(["storage", "render", *argv, "--state-dir", str(tmp_path)]) == ExitCode.USAGE


def test_origin_exports_the_data_dir(tmp_path: Path) -> None:
    (text,) = _configs("origin", tmp_path, data_dir=Path("/srv/data")).values()
    assert "oss.localroot /srv/data" in _directives(text)
    assert "ofs.trace open" in _directives(text)


def test_throttled_origin_loads_xrootds_throttle_plugin(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (plain,) = _configs("origin", tmp_path).values()
    assert not [d for d in _directives(plain) if d.startswith(("xrootd.fslib", "throttle."))]
    assert cli.main(["storage", "render", "origin", "--throttle", "20MB", "--state-dir", str(tmp_path)]) == 0
    directives = _directives(capsys.readouterr().out)
    assert "xrootd.fslib throttle default" in directives
    assert "throttle.throttle data 20000000" in directives


def test_throttle_is_for_the_origin_only(tmp_path: Path) -> None:
    for argv in (["xcache", "--throttle", "20MB"], ["origin", "--throttle", "0"]):
        assert cli.main(["storage", "render", *argv, "--state-dir", str(tmp_path)]) == ExitCode.USAGE


def test_pfc_ram_below_1g_is_refused(tmp_path: Path) -> None:
    with pytest.raises(UsageError):
        _configs("xcache", tmp_path, ram="512m")


def test_default_origin_from_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AFKIT_XROOTD_URL", "root://127.0.0.1:1094")
    assert default_origin() == "127.0.0.1:1094"
    monkeypatch.setenv("AFKIT_XROOTD_URL", "root://origin.example//")
    assert default_origin() == "origin.example:1094"
    monkeypatch.delenv("AFKIT_XROOTD_URL")
    assert default_origin() == "127.0.0.1:1094"


def test_state_dir_not_made_by_afkit_is_refused(tmp_path: Path) -> None:
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "precious").write_text("x")
    with pytest.raises(UnsafeError):
        manager.prepare_state(foreign)
    mine = tmp_path / "mine"
    manager.prepare_state(mine)
    (mine / "log").write_text("y")
    manager.prepare_state(mine)  # afkit's own: accepted again


def test_status_of_nothing_running(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = cli.main(["storage", "status", "xcache", "--state-dir", str(tmp_path)])
    assert code == ExitCode.FAILURE
    assert '"running": false' in capsys.readouterr().out


def test_down_when_nothing_runs_is_fine(tmp_path: Path) -> None:
    assert cli.main(["storage", "down", "all", "--state-dir", str(tmp_path)]) == 0


def test_stale_pidfile_never_kills_a_foreign_process(tmp_path: Path) -> None:
    from afkit.storage import daemon as dmn

    files = dmn.DaemonFiles(tmp_path / "x.cfg", tmp_path / "x.log", tmp_path / "x.pid")
    files.pidfile.write_text(f"{os.getpid()}\n")  # our own pid: not an xrootd with that config
    assert dmn.read_pid(files) is None
    assert dmn.stop(files) is False
    assert not files.pidfile.exists()


def test_the_listener_on_a_port_is_named_by_pid_and_command_line() -> None:
    import socket

    from afkit.storage import daemon as dmn

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        port = sock.getsockname()[1]
        holder = dmn.listener(port)
    own = Path("/proc/self/cmdline").read_bytes().split(b"\0")[0].decode()
    assert holder.startswith(f"pid {os.getpid()} ({own}"), holder
    assert dmn.listener(port) == ""  # closed: nobody listens there


def test_url_command(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["storage", "url", "dcotf", "/a/b.root"]) == 0
    assert capsys.readouterr().out.strip() == url("dcotf", "/a/b.root")


def test_every_scenario_is_documented_with_a_description() -> None:
    assert set(SCENARIOS) == {"origin", "xcache", "xcache-dca", "dcotf"}
    assert all(s.description for s in SCENARIOS.values())


def test_roots_default_state_is_one_the_xrootd_user_can_reach(monkeypatch: pytest.MonkeyPatch) -> None:
    from afkit.storage import manager

    monkeypatch.delenv("AFKIT_STORAGE_STATE", raising=False)
    monkeypatch.setattr(manager.os, "geteuid", lambda: 0)
    assert manager.default_state_root() == Path("/var/lib/afkit/storage")
    monkeypatch.setattr(manager.os, "geteuid", lambda: 1000)
    assert manager.default_state_root().parts[-3:] == (".cache", "afkit", "storage")


def test_a_state_dir_the_service_user_cannot_reach_is_refused_before_anything_starts() -> None:
    import shutil
    import tempfile

    from afkit.errors import PrereqError
    from afkit.storage import daemon

    top = Path(tempfile.mkdtemp(prefix="afkit-reach-"))  # under /tmp, made 0755 below
    try:
        top.chmod(0o755)
        private = top / "home"
        private.mkdir(mode=0o700)
        with pytest.raises(PrereqError, match=r"user 'nobody', who cannot reach .*home is mode 0700"):
            daemon.check_reachable("nobody", private / ".cache" / "storage")
        private.chmod(0o755)
        daemon.check_reachable("nobody", private / ".cache" / "storage")  # nothing raised
        daemon.check_reachable(None, Path("/root/x"))  # not root: no user to check for
    finally:
        shutil.rmtree(top)


GUARD = Guard(cert=Path("/pki/origin.pem"), key=Path("/pki/origin.key"), cafile=Path("/pki/ca-bundle.pem"),
              issuer="https://127.0.0.1:8443", audience="https://afkit.example")  # fmt: skip


def test_a_guarded_server_wants_tls_and_tokens_only(tmp_path: Path) -> None:
    [text] = _configs("origin", tmp_path, guard=GUARD).values()
    lines = _directives(text)
    daemon = tmp_path / "origin" / "origin"
    assert f"xrd.tls {daemon}/tls/cert.pem {daemon}/tls/key.pem" in lines
    assert "xrd.tlsca certfile /pki/ca-bundle.pem" in lines and "xrootd.tls all" in lines
    assert "sec.protocol ztn" in lines and "sec.protbind * only ztn" in lines
    assert f"ofs.authlib libXrdAccSciTokens.so config={daemon}/scitokens.cfg" in lines


def test_an_open_server_has_no_guard(tmp_path: Path) -> None:
    [text] = _configs("origin", tmp_path).values()
    assert not [ln for ln in _directives(text) if ln.startswith(("xrd.tls", "sec.", "ofs.auth"))]


def test_the_scitokens_configuration_names_the_issuer_and_denies_what_no_token_allows() -> None:
    text = scitokens_config(GUARD)
    assert "issuer = https://127.0.0.1:8443" in text and "audience = https://afkit.example" in text
    assert "onmissing = deny" in text and "base_path = /" in text


def test_guard_options_go_together(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["storage", "render", "origin", "--state-dir", str(tmp_path), "--tls-cert", "c.pem"]
    assert cli.main(argv) == ExitCode.USAGE
    err = capsys.readouterr().err
    assert "--tls-key, --tls-ca, --token-issuer, --token-audience" in err


def test_a_guarded_server_without_its_ca_file_is_not_started(tmp_path: Path) -> None:
    (tmp_path / "c.pem").write_text("cert")
    (tmp_path / "k.pem").write_text("key")
    guard = Guard(cert=tmp_path / "c.pem", key=tmp_path / "k.pem", cafile=tmp_path / "nope.pem",
                  issuer="https://i", audience="a")  # fmt: skip
    settings = Settings(tmp_path / "origin", guard=guard)
    with pytest.raises(NotFoundError, match="CA file not found"):
        manager._guarded(guard, daemon_dirs(settings, get_scenario("origin").daemons[0]))


GUARD_ARGS = ["--tls-cert", "c.pem", "--tls-key", "k.pem", "--tls-ca", "ca.pem", "--token-issuer", "https://i",
              "--token-audience", "a"]  # fmt: skip


def test_a_guarded_cache_fetches_from_its_origin_over_tls(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["storage", "render", "xcache", "--state-dir", str(tmp_path), "--origin", "roots://10.77.1.1:1094",
            *GUARD_ARGS, "--origin-token", "svc.token"]  # fmt: skip
    assert cli.main(argv) == ExitCode.OK
    assert "pss.origin roots://10.77.1.1:1094" in _directives(capsys.readouterr().out)


@pytest.mark.parametrize(
    ("extra", "said"),
    [
        (["--origin", "10.77.1.1:1094", *GUARD_ARGS], "--origin-token needs --origin roots://HOST:PORT"),
        (["--origin", "roots://10.77.1.1:1094"], "--origin-token is for a guarded cache"),
    ],
)
def test_an_origin_token_needs_tls_to_the_origin_and_a_guarded_cache(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: list[str], said: str
) -> None:
    argv = ["storage", "render", "xcache", "--state-dir", str(tmp_path), *extra, "--origin-token", "t"]
    assert cli.main(argv) == ExitCode.USAGE
    assert said in capsys.readouterr().err


def test_a_guarded_cache_gets_its_token_as_a_file_only_it_can_read(tmp_path: Path) -> None:
    """The copy the service user owns, named by BEARER_TOKEN_FILE in the daemon's environment (the
    token's text in no variable), the CA bundle by X509_CERT_FILE."""
    for name in ("c.pem", "k.pem", "ca.pem"):
        (tmp_path / name).write_text(name)
    (tmp_path / "svc.token").write_text("header.claims.signature")
    guard = Guard(cert=tmp_path / "c.pem", key=tmp_path / "k.pem", cafile=tmp_path / "ca.pem", issuer="https://i",
                  audience="a", origin_token=tmp_path / "svc.token")  # fmt: skip
    dirs = daemon_dirs(Settings(tmp_path / "xcache", guard=guard), get_scenario("xcache").daemons[0])
    env = manager._guarded(guard, dirs)
    assert env["BEARER_TOKEN_FILE"] == str(dirs["origin_token"])
    assert env["X509_CERT_FILE"] == str(tmp_path / "ca.pem")
    assert dirs["origin_token"].read_text() == "header.claims.signature"
    assert dirs["origin_token"].stat().st_mode & 0o777 == 0o600
    assert "header.claims.signature" not in "".join(env.values())


GRID = Path("/etc/grid-security")
X509_GUARD = dataclasses.replace(
    GUARD, x509=X509(certdir=GRID / "certificates", gridmap=GRID / "grid-mapfile")
)


def test_a_server_that_accepts_proxies_offers_gsi_after_ztn_and_chains_the_token_plugin(
    tmp_path: Path,
) -> None:
    [text] = _configs("origin", tmp_path, guard=X509_GUARD).values()
    lines = _directives(text)
    daemon = tmp_path / "origin" / "origin"
    [gsi] = [ln for ln in lines if ln.startswith("sec.protocol gsi")]
    assert "-certdir:/etc/grid-security/certificates" in gsi and "-gmapopt:2" in gsi
    assert f"-gridmap:{daemon}/grid-mapfile" in gsi and f"-key:{daemon}/tls/key.pem" in gsi
    assert "sec.protbind * only ztn gsi" in lines and f"acc.authdb {daemon}/authdb" in lines
    assert f"ofs.authlib ++ libXrdAccSciTokens.so config={daemon}/scitokens.cfg" in lines


def test_with_proxies_a_request_no_token_allows_goes_on_to_the_x509_accounts_grants() -> None:
    assert "onmissing = passthrough" in scitokens_config(X509_GUARD)
    assert authdb_text(X509_GUARD).splitlines()[1:] == ["u x509:users / a"]


def _server_pair(folder: Path, kind: str) -> tuple[Path, Path]:
    """A server certificate and key of KIND (rsa or ec) from a CA of the box's (afkit_testbed.pki)."""
    from afkit_testbed import pki

    pair = pki.server_certificate(pki.ensure_ca(folder / "ca"), folder, "server", ["127.0.0.1"], kind=kind)
    return pair.cert, pair.key


def test_the_servers_gridmap_maps_every_given_dn_to_the_one_x509_account(tmp_path: Path) -> None:
    cert, key = _server_pair(tmp_path, "rsa")
    (tmp_path / "c.pem").write_bytes(cert.read_bytes())
    (tmp_path / "k.pem").write_bytes(key.read_bytes())
    (tmp_path / "ca.pem").write_text("ca")
    given = tmp_path / "grid-mapfile"
    given.write_text('# users\n"/O=afkit federation/OU=users/CN=alice" alice\n"^/O=grid/OU=ops/" ops,ops2\n')
    guard = Guard(cert=tmp_path / "c.pem", key=tmp_path / "k.pem", cafile=tmp_path / "ca.pem", issuer="https://i",
                  audience="a", x509=X509(certdir=tmp_path, gridmap=given))  # fmt: skip
    dirs = daemon_dirs(Settings(tmp_path / "origin", guard=guard), get_scenario("origin").daemons[0])
    manager._guarded(guard, dirs)
    assert dirs["gridmap"].read_text().splitlines()[1:] == [
        '"/O=afkit federation/OU=users/CN=alice" x509:users', '"^/O=grid/OU=ops/" x509:users']  # fmt: skip


def test_an_ec_server_certificate_is_refused_for_x509_naming_why(tmp_path: Path) -> None:
    """gsi would start and fail every login later: refused before the daemon starts (exit 6)."""
    cert, key = _server_pair(tmp_path, "ec")
    (tmp_path / "ca.pem").write_text("ca")
    (tmp_path / "grid-mapfile").write_text('"/CN=a" a\n')
    guard = Guard(cert=cert, key=key, cafile=tmp_path / "ca.pem", issuer="https://i", audience="a",
                  x509=X509(certdir=tmp_path, gridmap=tmp_path / "grid-mapfile"))  # fmt: skip
    dirs = daemon_dirs(Settings(tmp_path / "origin", guard=guard), get_scenario("origin").daemons[0])
    with pytest.raises(InvalidError, match=r"X\.509 proxies need an RSA server certificate") as err:
        manager._guarded(guard, dirs)
    assert "--x509-certdir" in str(err.value.hint)


def test_a_gridmap_line_without_its_account_is_refused_naming_the_line() -> None:
    assert gridmap_entries('"/O=x/CN=a b" a\n/O=x/CN=b b\n') == ["/O=x/CN=a b", "/O=x/CN=b"]
    with pytest.raises(UsageError, match="grid-mapfile line 2: expected"):
        gridmap_entries('"/CN=a" a\n"/CN=b b\n')


@pytest.mark.parametrize(
    "given", [["--x509-certdir", "/etc/grid-security/certificates"], ["--x509-gridmap", "g"]]
)
def test_x509_options_go_together_and_with_the_guard(
    given: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["storage", "render", "origin", "--state-dir", str(tmp_path), *GUARD_ARGS, *given]
    assert cli.main(argv) == ExitCode.USAGE
    assert "X.509 proxies need --x509-certdir and --x509-gridmap together" in capsys.readouterr().err
    open_argv = ["storage", "render", "origin", "--state-dir", str(tmp_path), *given]
    assert cli.main(open_argv) == ExitCode.USAGE
    assert "is for a guarded server" in capsys.readouterr().err
