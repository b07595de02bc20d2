"""``python -m harness up | down | verify | report | bench | chaos``."""

from __future__ import annotations

import argparse
import logging
import sys
from datetime import UTC, datetime
from pathlib import Path

import msgspec

from . import KIT_ROOT, proxy, report, stand, state
from .bench import results as bench_results


def _default_state() -> Path:
    return KIT_ROOT / ".state" / "runs" / datetime.now(UTC).strftime("%Y%m%d-%H%M%S")


def cmd_up(args: argparse.Namespace) -> int:
    try:
        sites = stand.up(Path(args.state), args.sites, counts=process_counts(args), behind_proxy=args.proxy)
    except Exception:
        if state.sites_path(Path(args.state)).exists():
            stand.down(Path(args.state))
        raise
    for site in sites.sites:
        print(f"{site.slug:<9} {site.base_url}  ({site.site_dir})")
    print(f"state: {state.sites_path(Path(args.state).resolve())}")
    return 0


def process_counts(args: argparse.Namespace) -> state.ProcessCounts:
    return state.ProcessCounts(web=args.web_processes, worker=args.workers)


def cmd_down(args: argparse.Namespace) -> int:
    problems = stand.down(Path(args.state))
    for problem in problems:
        print(f"not removed: {problem}", file=sys.stderr)
    return 1 if problems else 0


def cmd_verify(args: argparse.Namespace) -> int:
    fleet = fleet_of(args)  # refused here, before anything starts
    state_dir = Path(args.state) if args.state else _default_state()
    ok, text = verify_run(state_dir, args, fleet)
    print(text, end="")
    print(f"report: {state_dir.resolve() / 'report.json'}")
    return 0 if ok else 1


def fleet_of(args: argparse.Namespace) -> list | None:
    """``--site``/``--answers``: the sites loaded, checked against each other and given ports; None
    for a run of fresh renders. Raises FleetError (one line per reason)."""
    if not (args.site or args.answers):
        return None
    from . import fleet, fleet_plan

    members = fleet.load(args.site or [], args.answers or [])
    fleet.check(members, run=True)
    if args.update and args.answers:
        raise fleet.FleetError("--update rehearses the upgrade of existing sites: give them with --site, not --answers")
    return fleet_plan.plan(members, free_ports=args.free_ports, update=args.update)


def verify_run(state_dir: Path, args: argparse.Namespace, fleet: list | None = None) -> tuple[bool, str]:
    from .verify import verify

    return verify(state_dir, args.sites, keep=args.keep, workers=args.pytest_workers, pytest_args=args.pytest_args,
                  counts=process_counts(args), behind_proxy=args.proxy, fleet=fleet,
                  require_privilege=getattr(args, "require_privilege", False),
                  service_faults=getattr(args, "service_faults", True),
                  fault_campaign=getattr(args, "fault_campaign", True))


def cmd_fleet_check(args: argparse.Namespace) -> int:
    from . import fleet

    members = fleet.load_paths(args.paths)
    fleet.check(members)
    for member in members:
        origin = member.commit or "this checkout"
        print(f"{member.answers['slug']:<12} {member.label}  ({member.kind}, template {origin})")
    print(f"fleet: {len(members)} site(s), no shared names, ports or origins")
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    path = Path(args.state) / "report.json"
    if not path.exists():
        print(f"{path}: no report (run `verify`)", file=sys.stderr)
        return 2
    print(report.summary(msgspec.json.decode(path.read_bytes(), type=report.Report)), end="")
    return 0


def cmd_bench(args: argparse.Namespace) -> int:
    from .bench import tables
    from .bench.measure import BenchError
    from .bench.run import run, write_outputs

    state_dir = Path(args.state) if args.state else KIT_ROOT / ".state" / "bench" / _default_state().name
    config = bench_config(args)
    try:
        result = run(config, state_dir)
    except BenchError as error:  # a number that could not be trusted: say which, logs stay in the state folder
        print(f"bench: {error} (logs: {state_dir.resolve()})", file=sys.stderr)
        return 1
    written = write_outputs(result, state_dir, Path(args.json) if args.json else None,
                            Path(args.plot) if args.plot else None)
    print(tables.text(result), end="")
    print("wrote: " + ", ".join(str(path) for path in written))
    return 0 if all(not api.problems for api in result.api) else 1


def cmd_bench_paired(args: argparse.Namespace) -> int:
    from .bench import paired
    from .bench.measure import BenchError

    state_dir = args.state
    if (args.pairs < 1 or args.seconds <= 0 or args.concurrency < 1 or min(args.worker_counts) < 1
            or (args.rate is not None and args.rate <= 0)):
        print("bench-paired: --pairs, --seconds, --concurrency, --workers and --rate must be positive", file=sys.stderr)
        return 2
    results = []
    try:
        for workers in args.worker_counts:
            results.append(paired.measure(state_dir, args.slug, workers=workers, pairs=args.pairs, seconds=args.seconds,
                                          concurrency=args.concurrency, logs=state_dir / "bench-paired",
                                          rate=args.rate))
            print(paired.text(results[-1:]), end="", flush=True)
    except BenchError as error:
        print(f"bench-paired: {error}", file=sys.stderr)
        return 1
    finally:
        if args.json and results:
            Path(args.json).write_bytes(msgspec.json.format(msgspec.json.encode(results)))
    return 0


def cmd_bench_compare(args: argparse.Namespace) -> int:
    from .bench import compare
    from .bench.measure import BenchError

    if len(args.runs) % 2:
        print("bench-compare: give runs in pairs, BEFORE.json AFTER.json", file=sys.stderr)
        return 2
    try:
        reports = [compare.load(Path(path)) for path in args.runs]
    except BenchError as error:
        print(f"bench-compare: {error}", file=sys.stderr)
        return 2
    pairs = list(zip(reports[::2], reports[1::2], strict=True))
    sites = sorted({e.site for report in reports for e in report.end_to_end})
    print(compare.text(pairs, sites), end="")
    if args.plot:
        compare.plot(pairs, sites, Path(args.plot))
        print(f"wrote: {args.plot}")
    return 0


def bench_config(args: argparse.Namespace) -> bench_results.BenchConfig:
    """The run's settings; ``--quick`` shrinks every phase (to check the method end to end, not to measure)."""
    config = bench_results.BenchConfig(
        sites=args.sites, tasks=args.tasks, concurrency=args.concurrency, rounds=args.rounds,
        batch_seconds=args.batch_seconds, statement_tasks=args.statement_tasks, scaling_tasks=args.scaling_tasks,
        wal_tasks=args.wal_tasks, floor_seconds=args.floor_seconds,
        history_tasks=bench_results.HISTORY_TASKS if args.history_tasks is None else args.history_tasks)
    if not args.quick:
        return config
    shrunk = bench_results.quick(config)
    return shrunk if args.history_tasks is None else msgspec.structs.replace(shrunk, history_tasks=args.history_tasks)


def bench_problem(args: argparse.Namespace) -> str | None:
    """Why these bench options cannot run, or None."""
    from .render import NAMES

    if not 1 <= args.sites <= len(NAMES):
        return f"--sites must be between 1 and {len(NAMES)}"
    if args.tasks < 1:
        return "--tasks must be at least 1"
    if not 1 <= args.concurrency <= 64:
        return "--concurrency must be between 1 and 64"
    if min(args.statement_tasks, args.wal_tasks, args.scaling_tasks, args.floor_seconds, args.history_tasks or 0) < 0:
        return ("--statement-tasks, --wal-tasks, --scaling-tasks, --floor-seconds and --history-tasks must be 0 (skip)"
                " or more")
    if args.rounds < 1:
        return "--rounds must be at least 1"
    if args.batch_seconds < 0:
        return "--batch-seconds must be 0 or more"
    return None


def cmd_chaos(args: argparse.Namespace) -> int:
    import random

    from .chaos.run import chaos

    state_dir = Path(args.state) if args.state else KIT_ROOT / ".state" / "chaos" / _default_state().name
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(1_000_000)
    faults = tuple(args.faults.split(",")) if args.faults else None
    ok, text = chaos(state_dir, args.sites, args.seconds, seed, keep=args.keep, counts=process_counts(args),
                     services=args.services or bool(faults), faults=faults)
    print(text, end="")
    print(f"report: {state_dir.resolve() / 'chaos.json'} (again with --seed {seed})")
    return 0 if ok else 1


CHAOS_SECONDS = (10, 3600)


def chaos_problem(args: argparse.Namespace) -> str | None:
    """Why these campaign options cannot run, or None."""
    from .chaos.run import MIN_WORKERS
    from .render import NAMES

    if not 1 <= args.sites <= len(NAMES):
        return f"--sites must be between 1 and {len(NAMES)}"
    if not CHAOS_SECONDS[0] <= args.seconds <= CHAOS_SECONDS[1]:
        return f"--seconds must be between {CHAOS_SECONDS[0]} and {CHAOS_SECONDS[1]}"
    if args.workers < MIN_WORKERS:
        return f"--workers must be at least {MIN_WORKERS}: a worker is killed while another carries on"
    if args.seed is not None and args.seed < 0:
        return "--seed must not be negative"
    if args.faults is not None:
        from .chaos.outages import KINDS

        if unknown := [kind for kind in args.faults.split(",") if kind not in KINDS]:
            return f"--faults: unknown {', '.join(unknown)} (known: {', '.join(KINDS)})"
    return None


def add_proxy_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--proxy", action="store_true",
                        help="the production lane: every site behind nginx over https (a test CA), at least 3 sites")


def add_process_options(parser: argparse.ArgumentParser, workers: int = 1) -> None:
    parser.add_argument("--web-processes", type=int, default=1, help="web processes per site (one port)")
    parser.add_argument("--workers", type=int, default=workers, help=f"worker processes per site (default {workers})")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m harness", description=__doc__)
    parser.add_argument("-v", "--verbose", action="store_true")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    up = commands.add_parser("up", help="provision services, render, install and start N sites")
    up.add_argument("--sites", type=int, default=None, help="default 2 (3 with --proxy)")
    up.add_argument("--state", required=True, help="folder for this run's state (sites.json, logs)")
    add_process_options(up)
    add_proxy_option(up)
    up.set_defaults(handler=cmd_up)

    down = commands.add_parser("down", help="stop what `up` started and drop its databases and buckets")
    down.add_argument("--state", required=True)
    down.set_defaults(handler=cmd_down)

    verify = commands.add_parser("verify", help="up + site_tests + report + down")
    verify.add_argument("--sites", type=int, default=None, help="default 2 (3 with --proxy)")
    verify.add_argument("--state", default=None, help="default: .state/runs/<timestamp>")
    verify.add_argument("--keep", action="store_true", help="leave the sites running afterwards")
    verify.add_argument("--pytest-workers", default="2", help="pytest-xdist workers for site_tests (default 2)")
    add_process_options(verify)
    add_proxy_option(verify)
    verify.add_argument("--site", action="append", metavar="DIR",
                        help="a site folder made by `copier copy` (repeat): verify these instead of fresh renders")
    verify.add_argument("--answers", action="append", metavar="FILE",
                        help="an answers file or a folder of them (repeat): render each from this checkout, verify")
    verify.add_argument("--free-ports", action="store_true",
                        help="run a fleet site whose port is busy here on another one (default: refuse)")
    verify.add_argument("--update", action="store_true",
                        help="upgrade rehearsal: run each --site's old version and give it data, "
                             "`copier update` a copy to this checkout, migrate, verify, and check the old data")
    verify.add_argument("--no-service-faults", dest="service_faults", action="store_false",
                        help="skip the short service-fault campaign (a run that proves something else: a fleet's "
                             "mechanics, an update; the report says it was skipped)")
    verify.add_argument("--no-fault-campaign", dest="fault_campaign", action="store_false",
                        help="skip the short fault campaign (process kills) likewise; the books still run")
    verify.add_argument("--require-privilege", action="store_true",
                        help="fail the run unless every service isolates the sites by privilege "
                             "(each site's own credentials reach only its own database, broker keys and bucket)")
    verify.add_argument("pytest_args", nargs="*", help="extra pytest arguments after --, e.g. -- -k cookies")
    verify.set_defaults(handler=cmd_verify)

    bench = commands.add_parser("bench", help="stand sites up and measure them against a bare actor and pgbench")
    bench.add_argument("--sites", type=int, default=2)
    bench.add_argument("--tasks", type=int, default=200,
                       help="at least this many tasks per end-to-end batch (per site, reference and worker count)")
    bench.add_argument("--batch-seconds", type=float, default=15.0,
                       help="each end-to-end batch goes on starting tasks until this much time passed")
    bench.add_argument("--rounds", type=int, default=3,
                       help="interleaved rounds (each site, the naive site, the bare actor in turn); ratios are "
                            "judged on their medians")
    bench.add_argument("--history-tasks", type=int, default=None,
                       help="tasks of history seeded into the first site for the cost-of-history row (0: skip; "
                            "default 1000000, with --quick 20000)")
    bench.add_argument("--quick", action="store_true",
                       help="every phase small and short: checks the method, measures nothing worth keeping")
    bench.add_argument("--concurrency", type=int, default=8, help="clients: tasks in flight, API submitters")
    bench.add_argument("--statement-tasks", type=int, default=20,
                       help="tasks of the batch whose round trips are counted from the statement log (0: skip)")
    bench.add_argument("--wal-tasks", type=int, default=200,
                       help="tasks of the batch per site whose WAL records are read back, a task (0: skip)")
    bench.add_argument("--scaling-tasks", type=int, default=100,
                       help="tasks per batch of the first site's scaling rows (0: skip the phase)")
    bench.add_argument("--floor-seconds", type=int, default=10,
                       help="seconds each pgbench script of the PostgreSQL floor runs a round, on the first site "
                            "(0: skip the phase)")
    bench.add_argument("--json", default=None, metavar="OUT", help="also write the results as JSON to OUT")
    bench.add_argument("--plot", default=None, metavar="PNG", help="where the plot goes (default: the state folder)")
    bench.add_argument("--state", default=None, help="default: .state/bench/<timestamp>")
    bench.set_defaults(handler=cmd_bench)

    compared = commands.add_parser("bench-compare", help="before and after: pairs of bench runs' --json files, "
                                                         "side by side (and a plot)")
    compared.add_argument("runs", nargs="+", metavar="BEFORE.json AFTER.json",
                          help="one or more pairs of `bench --json` files, each before then after")
    compared.add_argument("--plot", default=None, metavar="PNG", help="also draw the pairs into PNG")
    compared.set_defaults(handler=cmd_bench_compare)

    pairs = commands.add_parser("bench-paired", help="a stood-up site and the naive site in alternating slices: "
                                                     "their CPU a task, within pairs the machine's drift moves less")
    pairs.add_argument("--state", type=state.run_folder, required=True, help="the state folder of `up`")
    pairs.add_argument("--site", required=True, dest="slug", help="the site's slug")
    pairs.add_argument("--workers", type=int, nargs="+", default=[1, 2], dest="worker_counts",
                       help="worker processes of each side")
    pairs.add_argument("--pairs", type=int, default=8, help="pairs of slices, the order swapped each pair")
    pairs.add_argument("--seconds", type=float, default=6.0, help="each slice goes on starting tasks this long")
    pairs.add_argument("--concurrency", type=int, default=8, help="tasks in flight on each side")
    pairs.add_argument("--rate", type=float, default=None,
                       help="hold both sides to this many tasks a second (default: each as fast as it goes)")
    pairs.add_argument("--json", default=None, metavar="OUT", help="also write the measurements as JSON to OUT")
    pairs.set_defaults(handler=cmd_bench_paired)

    chaos = commands.add_parser("chaos", help="fault campaign: steady load while processes are SIGKILLed, "
                                              "then stuck work settled and the books checked")
    chaos.add_argument("--sites", type=int, default=2)
    chaos.add_argument("--seconds", type=float, default=60, help="seconds of load and kills (default 60)")
    chaos.add_argument("--seed", type=int, default=None, help="the kill plan's seed (default: a random one, printed)")
    chaos.add_argument("--state", default=None, help="default: .state/chaos/<timestamp>; a live run there is used")
    chaos.add_argument("--keep", action="store_true", help="leave the sites running afterwards")
    chaos.add_argument("--services", action="store_true",
                       help="fault the embedded services instead (PostgreSQL, the broker, S3), with Prometheus "
                            "watching the sites' alerts; the load lasts at least --seconds")
    chaos.add_argument("--faults", default=None, metavar="KIND,...",
                       help="with --services: only these service faults (default: every one)")
    add_process_options(chaos, workers=2)
    chaos.set_defaults(handler=cmd_chaos)

    fleet = commands.add_parser("fleet", help="check sites (folders or answers files) against each other")
    fleet_commands = fleet.add_subparsers(dest="fleet_command", required=True, metavar="ACTION")
    check = fleet_commands.add_parser("check", help="refuse shared database names, cookie namespaces, queues, broker "
                                                    "namespaces, bucket + prefix, ports or origins; exit 2")
    check.add_argument("paths", nargs="+", metavar="DIR|FILE",
                       help="site folders (with .copier-answers.yml), answers files, or folders of answers files")
    check.set_defaults(handler=cmd_fleet_check)

    show = commands.add_parser("report", help="print the summary of a finished run")
    show.add_argument("--state", required=True)
    show.set_defaults(handler=cmd_report)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.INFO,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    for noisy in ("botocore", "aiobotocore", "pika", "copier", "plumbum", "httpx", "matplotlib"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    if getattr(args, "proxy", None) is not None and args.sites is None:
        args.sites = proxy.MIN_SITES if args.proxy else 2
    for option in ("sites", "web_processes", "workers"):
        if getattr(args, option, 1) < 1:
            print(f"--{option.replace('_', '-')} must be at least 1", file=sys.stderr)
            return 2
    if getattr(args, "site", None) or getattr(args, "answers", None):
        if args.proxy or any(a.startswith("--sites") for a in (sys.argv[1:] if argv is None else argv)):
            print("--site/--answers choose the sites: not with --sites or --proxy", file=sys.stderr)
            return 2
    elif getattr(args, "free_ports", False) or getattr(args, "update", False):
        print("--free-ports and --update are for --site/--answers", file=sys.stderr)
        return 2
    if getattr(args, "proxy", False) and args.sites < proxy.MIN_SITES:
        print(f"--proxy needs --sites {proxy.MIN_SITES} or more: sites on hosts of their own and two sharing one host",
              file=sys.stderr)
        return 2
    if args.command == "chaos" and (problem := chaos_problem(args)):
        print(problem, file=sys.stderr)
        return 2
    if args.command == "bench" and (problem := bench_problem(args)):
        print(problem, file=sys.stderr)
        return 2
    from .fleet import FleetError

    try:
        return args.handler(args)
    except FleetError as refused:  # refused before anything started: one line per reason
        print(refused, file=sys.stderr)
        return 2
