"""The services of a running ``dev``, recorded in its state folder for the site's other commands.

``dev`` holds ``dev.lock`` in its state folder for as long as it runs (a second ``dev`` on the
folder stops at once), and writes ``dev.json`` (mode 0600: it holds the S3 secret key) with
the URLs its processes use. A command run with no service URL in its environment takes them
from the record while the ``dev`` that wrote it runs: the recorded pid is alive and started at
the recorded time, since a pid is given to another process once its own has gone.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Iterator, Mapping
from pathlib import Path

import msgspec
import psutil

from .settings import PROJECT_ROOT

RECORD = "dev.json"
LOCK = "dev.lock"


class DevServices(msgspec.Struct, frozen=True):
    pid: int
    started_at: float  # the process's start time, as psutil gives it
    database_url: str | None = None
    broker_url: str | None = None
    s3_endpoint_url: str | None = None
    s3_access_key_id: str | None = None
    s3_secret_access_key: str | None = None
    smtp_url: str | None = None


class DevAlreadyRunning(Exception):
    """Another ``dev`` runs on this state folder; the message names its pid."""

    def __init__(self, pid: int | None) -> None:
        super().__init__(f"dev is already running (pid {pid if pid else 'unknown'}) on this state folder; "
                         "stop it (Ctrl-C, or kill -INT PID) before starting another")
        self.pid = pid


class DevPortInUse(Exception):
    """The port dev's web process is to serve on is held by another process."""

    def __init__(self, host: str, port: int) -> None:
        super().__init__(f"port {port} on {host} is in use; stop what holds it, or choose another with --port")


def state_folder(given: str | None) -> Path:
    return Path(given or PROJECT_ROOT / ".state").resolve()


@contextlib.contextmanager
def hold_state(state: Path) -> Iterator[None]:
    """Hold the state folder for this ``dev``: the kernel releases the lock when the process ends,
    however it ends, so a killed ``dev`` never keeps the next one out."""
    fd = os.open(state / LOCK, os.O_RDWR | os.O_CREAT, 0o600)  # not inherited by the children
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.read(fd, 32).decode(errors="replace").strip()
            raise DevAlreadyRunning(int(holder) if holder.isdigit() else None) from None
        os.ftruncate(fd, 0)
        os.write(fd, str(os.getpid()).encode())
        yield
    finally:
        os.close(fd)


def record(state: Path, env: Mapping[str, str]) -> None:
    """Record this process's services (taken from ``env``, the environment of its children)."""
    services = DevServices(
        pid=os.getpid(),
        started_at=psutil.Process().create_time(),
        database_url=env.get("DATABASE_URL"),
        broker_url=env.get("BROKER_URL"),
        s3_endpoint_url=env.get("S3_ENDPOINT_URL"),
        s3_access_key_id=env.get("S3_ACCESS_KEY_ID"),
        s3_secret_access_key=env.get("S3_SECRET_ACCESS_KEY"),
        smtp_url=env.get("SMTP_URL"),
    )
    staging = state / f".{RECORD}.tmp"
    fd = os.open(staging, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as out:
        os.fchmod(fd, 0o600)  # a file left by a killed dev keeps its mode through O_CREAT
        out.write(msgspec.json.encode(services))
    staging.replace(state / RECORD)


def forget(state: Path) -> None:
    """Remove the record, first thing when ``dev`` stops: no command starts on a server going away."""
    with contextlib.suppress(FileNotFoundError):
        (state / RECORD).unlink()


def running_dev(state: Path) -> DevServices | None:
    """The services of the ``dev`` running on ``state``, or None."""
    try:
        services = msgspec.json.decode((state / RECORD).read_bytes(), type=DevServices)
    except (OSError, msgspec.DecodeError):
        return None
    try:
        process = psutil.Process(services.pid)
        if process.create_time() != services.started_at or process.status() == psutil.STATUS_ZOMBIE:
            return None
    except psutil.Error:
        return None
    return services


def with_dev_services(environ: Mapping[str, str], state: Path) -> dict[str, str]:
    """``environ``, with the running ``dev``'s URL for each service it names none of."""
    env = dict(environ)
    services = running_dev(state)
    if services is None:
        return env
    if not env.get("DATABASE_URL") and services.database_url:
        env["DATABASE_URL"] = services.database_url
    if not env.get("BROKER_URL") and services.broker_url:
        env["BROKER_URL"] = services.broker_url
    if not env.get("SMTP_URL") and services.smtp_url:
        env["SMTP_URL"] = services.smtp_url
    if not env.get("S3_ENDPOINT_URL") and services.s3_endpoint_url:
        # the keys belong to that server: never mixed with keys meant for another
        env.update(S3_ENDPOINT_URL=services.s3_endpoint_url, S3_ACCESS_KEY_ID=services.s3_access_key_id or "",
                   S3_SECRET_ACCESS_KEY=services.s3_secret_access_key or "")
    return env
