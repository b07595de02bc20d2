"""Command line: ``python -m <site> migrate | serve | dev | worker | maintain | audit | tasks inspect
| create-user | grant-credits | operator grant|revoke``.

Every command reads the same settings (site.toml + environment); a service
the environment names no URL for is the one of the ``dev`` running on the
state folder, if one runs (``dev_services``). Expected failures (bad
settings, a refused migration, a bad argument) print one line and exit with
status 2; they never print a traceback.
"""

from __future__ import annotations

import argparse
import asyncio
import getpass
import logging
import os
import sys
from collections.abc import Callable

from .db.migrate import MigrationError, migrate_database
from .dev_services import DevAlreadyRunning, DevPortInUse, state_folder, with_dev_services
from .settings import Settings, SettingsError, load_settings

PACKAGE = __package__
log = logging.getLogger(PACKAGE)


class CommandError(Exception):
    """A command could not do what was asked; the message is for the operator."""


class OneLineErrors(logging.Filter):
    """The web server logs an exception that leaves the app (a download cut at its deadline, a
    client gone mid-response) with its traceback, whose frames hold request data: keep the
    message and the exception's type, in one line."""

    def filter(self, record: logging.LogRecord) -> bool:
        error = record.exc_info[1] if record.exc_info else None
        if error is not None:
            causes = [type(error).__name__]
            while (error := _cause(error)) is not None and len(causes) < 6:
                causes.append(type(error).__name__)
            record.msg, record.args = f"{record.getMessage().strip()}: {' from '.join(causes)}", ()
            record.exc_info, record.exc_text = None, None
        return True


def _cause(error: BaseException) -> BaseException | None:
    if isinstance(error, BaseExceptionGroup):  # the stream's task group wraps what its body raised
        return error.exceptions[0]
    return error.__cause__


def configure_logging(verbose: bool = False) -> None:
    logging.basicConfig(
        level=logging.DEBUG if verbose else logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    for noisy in ("botocore", "aiobotocore", "pika", "asyncio"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    logging.getLogger("uvicorn.error").addFilter(OneLineErrors())


# --- commands --------------------------------------------------------------------


def cmd_migrate(settings: Settings, args: argparse.Namespace) -> int:
    applied = asyncio.run(migrate_database(settings.require_database_url()))
    print(f"applied {len(applied)} migration(s)" + (": " + ", ".join(applied) if applied else ""))
    return 0


def cmd_serve(settings: Settings, args: argparse.Namespace) -> int:
    from .metrics.web_group import join_web_group, leave_web_group

    port = args.port or settings.site.port
    # First: the app imports prometheus_client, which reads the directory's variable at import.
    metrics_directory = join_web_group(settings.site.slug, args.host, port)

    import uvicorn

    from .web.app import create_app

    app = create_app(settings)
    sockets = None
    if args.reuse_port:
        # Several web processes on one port, the kernel spreading connections among them.
        import socket

        # IPPROTO_TCP, and the socket object itself rather than its fd: asyncio turns
        # Nagle's algorithm off only on connections it knows are TCP. Without that, a
        # response written as headers then body waits for the client's delayed ACK:
        # 40 ms on every request of a kept-alive connection (docs/benchmarks.md).
        sock = socket.socket(socket.AF_INET6 if ":" in args.host else socket.AF_INET, socket.SOCK_STREAM,
                             socket.IPPROTO_TCP)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        sock.bind((args.host, port))
        sockets = [sock]
    server = uvicorn.Server(uvicorn.Config(
        app,
        host=args.host,
        port=port,
        log_config=None,
        access_log=True,
        # X-Forwarded-For is believed only from the site's own proxies (site.toml [web]).
        proxy_headers=bool(settings.policy.web.trusted_proxies),
        forwarded_allow_ips=list(settings.policy.web.trusted_proxies) or None,
        server_header=False,
        timeout_graceful_shutdown=10,
    ))
    try:
        server.run(sockets=sockets)
    finally:
        leave_web_group(metrics_directory)
    return 0 if server.started else 3  # 3: uvicorn's own exit code for a failed start-up


def cmd_create_user(settings: Settings, args: argparse.Namespace) -> int:
    from .auth.accounts import normalise_email, register
    from .auth.passwords import hash_password
    from .db.pool import create_pool, transaction
    from .errors import SiteError

    password = sys.stdin.readline().rstrip("\n") if args.password_stdin else getpass.getpass("Password: ")

    async def run() -> str:
        email = normalise_email(args.email)
        password_hash = await hash_password(password)
        async with await create_pool(settings.require_database_url(), max_size=1) as pool, \
                transaction(pool) as conn:
            account = await register(conn, email, password_hash)
        return str(account.id)

    if not 8 <= len(password) <= 256:
        raise CommandError("password must be 8 to 256 characters")
    try:
        account_id = asyncio.run(run())
    except SiteError as error:
        raise CommandError(error.message) from None
    print(f"created account {account_id} for {args.email.strip().lower()}")
    return 0


def cmd_worker(settings: Settings, args: argparse.Namespace) -> int:
    from .worker import run_worker

    if not 1 <= args.threads <= 64:
        raise CommandError("--threads must be between 1 and 64")
    return run_worker(settings, args.threads)


def cmd_maintain(settings: Settings, args: argparse.Namespace) -> int:
    import signal

    from .maintenance import run_loop, run_once
    from .runtime import open_runtime

    async def run() -> int:
        async with open_runtime(settings, pool_size=2) as runtime:
            if args.loop is None:
                summary = await run_once(runtime)
                print(", ".join(f"{name}: {count}" for name, count in summary.items()))
                return 1 if -1 in summary.values() else 0  # a failed step shows in cron's mail
            stop = asyncio.Event()
            loop = asyncio.get_running_loop()
            for sig in (signal.SIGTERM, signal.SIGINT):
                loop.add_signal_handler(sig, stop.set)
            await run_loop(runtime, args.loop, stop)
            return 0

    if args.loop is not None and args.loop <= 0:
        raise CommandError("--loop needs a positive number of seconds")
    return asyncio.run(run())


def cmd_audit(settings: Settings, args: argparse.Namespace) -> int:
    import msgspec

    from .audit import run_audit

    report = asyncio.run(run_audit(settings))
    if args.json:
        print(msgspec.json.encode(report).decode())
    else:
        for finding in report.findings:
            print(finding.line())
        storage = "" if report.storage_checked else " (storage not configured: objects not checked)"
        print(f"audit: clean{storage}" if report.clean else f"audit: {len(report.findings)} finding(s){storage}")
    return 0 if report.clean else 1


def cmd_tasks_inspect(settings: Settings, args: argparse.Namespace) -> int:
    from uuid import UUID

    from .db.pool import connect
    from .tasks.describe import describe_task

    try:
        task_id = UUID(args.task_id)
    except ValueError:
        raise CommandError(f"{args.task_id!r} is not a task id") from None

    async def run() -> str | None:
        conn = await connect(settings.require_database_url())
        try:
            return await describe_task(conn, task_id)
        finally:
            await conn.close()

    text = asyncio.run(run())
    if text is None:
        raise CommandError(f"no task {task_id}")
    print(text)
    return 0


def cmd_grant_credits(settings: Settings, args: argparse.Namespace) -> int:
    from .auth.accounts import normalise_email
    from .charges.ledger import grant_by_email
    from .db.pool import create_pool
    from .errors import SiteError

    if not 1 <= args.amount <= 1_000_000_000:
        raise CommandError("AMOUNT must be a whole number from 1 to 1000000000")
    reason = args.reason.strip()
    if not 1 <= len(reason) <= 200:
        raise CommandError("--reason must be 1 to 200 characters")
    try:
        email = normalise_email(args.email)
    except SiteError as error:
        raise CommandError(error.message) from None

    async def run() -> int | None:
        async with await create_pool(settings.require_database_url(), max_size=1) as pool:
            return await grant_by_email(pool, email, args.amount, reason)

    balance = asyncio.run(run())
    if balance is None:
        raise CommandError(f"no account {email}")
    print(f"granted {args.amount} credits to {email}; balance {balance}")
    return 0


def cmd_operator(settings: Settings, args: argparse.Namespace) -> int:
    """The only way to become an operator (or stop being one): there is no web path to it."""
    from .auth.accounts import normalise_email, set_operator
    from .db.pool import create_pool, transaction
    from .errors import SiteError

    granting = args.operator_command == "grant"
    try:
        email = normalise_email(args.email)
    except SiteError as error:
        raise CommandError(error.message) from None

    async def run() -> bool:
        pool = await create_pool(settings.require_database_url(), max_size=1)
        try:
            async with transaction(pool) as conn:
                return await set_operator(conn, email, granting)
        finally:
            await pool.close()

    if not asyncio.run(run()):
        raise CommandError(f"no account {email}")
    print(f"{email} is an operator now" if granting else f"{email} is no longer an operator")
    return 0


def cmd_dev(settings: Settings, args: argparse.Namespace) -> int:
    from .dev import run_dev

    return run_dev(settings, args)


# --- parser ----------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=f"python -m {PACKAGE}",
        description="The site's commands. Each reads site.toml and the environment; without service URLs, "
                    "the services of the `dev` running on the state folder.")
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    # On every command, after its name: where `dev` keeps its data and its record.
    state = argparse.ArgumentParser(add_help=False)
    state.add_argument("--state", default=None, metavar="DIR",
                       help="dev's state folder: its embedded data, and the services a command uses when "
                            "the environment names none (default: .state in the site)")

    def add(name: str, handler: Callable[[Settings, argparse.Namespace], int], help: str):
        sub = commands.add_parser(name, help=help, description=help, parents=[state])
        sub.set_defaults(handler=handler)
        return sub

    add("migrate", cmd_migrate, "apply pending migrations (safe to run concurrently)")

    serve = add("serve", cmd_serve, "run the web process")
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=int, default=None, help="default: the site's port from site.toml")
    serve.add_argument("--reuse-port", action="store_true",
                       help="share the port with other serve processes (SO_REUSEPORT)")

    dev = add("dev", cmd_dev, "start everything locally with embedded services and print the URL")
    dev.add_argument("--port", type=int, default=None)

    worker = add("worker", cmd_worker, "run the task worker (Dramatiq) on the site's queues")
    worker.add_argument("--threads", type=int, default=4)

    maintain = add("maintain", cmd_maintain, "run the maintenance sweeps once, or every N seconds with --loop")
    maintain.add_argument("--loop", type=float, default=None, metavar="SECONDS")

    audit = add("audit", cmd_audit, "check the books: every broken invariant, one line each (read-only; exit 1 if any)")
    audit.add_argument("--json", action="store_true", help="one JSON document: clean, started_at, findings")

    tasks = commands.add_parser("tasks", help="operator commands for tasks")
    task_commands = tasks.add_subparsers(dest="tasks_command", required=True, metavar="TASKS_COMMAND")
    inspect = task_commands.add_parser("inspect", help="print a task's state, attempts and dead letters",
                                       parents=[state])
    inspect.add_argument("task_id")
    inspect.set_defaults(handler=cmd_tasks_inspect)

    grant = add("grant-credits", cmd_grant_credits, "add credits to an account (operators)")
    grant.add_argument("email")
    grant.add_argument("amount", type=int, metavar="AMOUNT")
    grant.add_argument("--reason", required=True, help="recorded in the ledger and shown to the owner")

    operator = commands.add_parser("operator", help="grant or revoke the operator console (/ops)")
    operator_commands = operator.add_subparsers(dest="operator_command", required=True, metavar="OPERATOR_COMMAND")
    for name, verb in (("grant", "make the account with EMAIL an operator"),
                       ("revoke", "take the operator console from the account with EMAIL")):
        sub = operator_commands.add_parser(name, help=verb, description=verb, parents=[state])
        sub.add_argument("email")
        sub.set_defaults(handler=cmd_operator)

    user = add("create-user", cmd_create_user, "create a personal account")
    user.add_argument("email")
    user.add_argument("--password-stdin", action="store_true", help="read the password from stdin")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    configure_logging(args.verbose)
    try:
        # dev starts its own services, or refuses to run beside the dev that runs them
        environ = os.environ if args.command == "dev" else with_dev_services(os.environ, state_folder(args.state))
        settings = load_settings(environ=environ)
        return args.handler(settings, args)
    except (SettingsError, MigrationError, CommandError, DevAlreadyRunning, DevPortInUse) as error:
        print(f"{PACKAGE}: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    except Exception as error:
        # Provider and driver messages can carry internals: one line with the type, the rest with -v.
        if args.verbose:
            raise
        hint = " (is the database reachable?)" if isinstance(error, OSError) else ""
        print(f"{PACKAGE}: {args.command} failed: {type(error).__name__}{hint}; run with -v for details",
              file=sys.stderr)
        return 1
