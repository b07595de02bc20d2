"""What a benchmark run records: its settings, the machine, and each phase's measurements.

Written as JSON (``--json OUT``) exactly as these structs encode; the table,
the plot and docs/benchmarks.md are all made from a decoded ``BenchReport``.
"""

from __future__ import annotations

from pathlib import Path

import msgspec

from .measure import Latency

# Bench sites are rendered with this many active tasks per account (the harness's own
# runs use 3-6). The closed loops hold one active task per account and never come
# near it; the API phase submits at most SUBMITS_PER_ACCOUNT per account, and the
# limit check then fills one fresh account to exactly this limit.
MAX_ACTIVE = 50
SUBMITS_PER_ACCOUNT = 40
LIST_TASKS = 100_000
HISTORY_TASKS = 1_000_000


class BenchConfig(msgspec.Struct, frozen=True):
    sites: int = 2
    # End-to-end batches (each site, the naive site, the bare actor, at each worker count): at least
    # ``tasks`` tasks and at least ``batch_seconds`` of work each, so each is steady on a shared
    # machine; ``rounds`` interleaved rounds of them (rounds.py), ratios judged on their medians.
    tasks: int = 200
    batch_seconds: float = 15.0
    rounds: int = 3
    concurrency: int = 8  # closed-loop clients (tasks in flight) and API clients
    workers: tuple[int, ...] = (1, 2)  # worker processes per site, each with 4 threads
    list_tasks: int = LIST_TASKS
    list_samples: int = 30
    pgbench_seconds: int = 8
    input_bytes: int = 1 << 20  # normalisation throughput input
    # A small batch per site with the server's statement log on (embedded PostgreSQL only), to count
    # round trips per task (statements.py); 0: not counted.
    statement_tasks: int = 20
    # A batch per site whose WAL records are read back, a task (wal.py); 0: not read.
    wal_tasks: int = 200
    # The first site end to end at each (web, worker) process count, ``scaling_tasks`` a batch
    # (scaling.py); the web rows hold the workers at 2, where the worker is not the only limit.
    scaling: tuple[tuple[int, int], ...] = ((1, 1), (1, 2), (1, 4), (2, 2))
    scaling_tasks: int = 100  # 0: no scaling phase
    # The first site with this many tasks of history against the same site empty (history.py); 0: skipped.
    history_tasks: int = HISTORY_TASKS
    history_samples: int = 200  # submits and list requests timed at each size
    # The PostgreSQL floor (floor.py): each of its pgbench scripts this many seconds a round, on the first
    # site (embedded PostgreSQL only); 0: skipped.
    floor_seconds: int = 10


def quick(config: BenchConfig) -> BenchConfig:
    """``config`` with every phase small: the method runs end to end in minutes (tests, a check before a run)."""
    return msgspec.structs.replace(config, tasks=min(config.tasks, 40), batch_seconds=0.0, list_tasks=5_000,
                                   list_samples=10, pgbench_seconds=2, statement_tasks=min(config.statement_tasks, 10),
                                   wal_tasks=min(config.wal_tasks, 40), scaling_tasks=0,
                                   history_tasks=min(config.history_tasks, 20_000),
                                   history_samples=30, floor_seconds=min(config.floor_seconds, 2))


class Machine(msgspec.Struct, frozen=True):
    cpu: str
    cores: int
    memory_gib: float
    kernel: str
    python: str
    filesystem: str  # where PostgreSQL keeps its data
    postgres: str
    postgres_settings: dict[str, str]
    load_before: tuple[float, float, float]
    services: str  # embedded | external | mixed


class EndToEnd(msgspec.Struct, frozen=True):
    """Closed loop: ``concurrency`` clients, each its own account, submit over HTTP and wait for success."""

    site: str
    price: int
    workers: int
    tasks: int
    seconds: float
    tasks_per_s: float
    latency: Latency  # submit request sent -> task.finished_at (same clock)
    cpu_ms_per_task: dict[str, float] = msgspec.field(default_factory=dict)  # by process (cpu.py)
    round: int = 1  # of the interleaved rounds (rounds.py); reports before them had one
    unit_ms: float | None = None  # the speed probe's median unit during the batch (speed.py); older reports: None


class Commits(msgspec.Struct, frozen=True):
    """What one batch of tasks cost the site's database, counted by the server."""

    site: str
    tasks: int
    write_commits: int  # transaction ids assigned (server-wide; the other databases were idle)
    all_commits: int  # pg_stat_database.xact_commit of the site's database, read-only included
    poll_queries: int  # the driver's own completion polls, subtracted
    idle_noise: float  # commits an idle site made over the batch's duration, subtracted
    write_per_task: float
    all_per_task: float


class RoundTrips(msgspec.Struct, frozen=True):
    """Statements the site's own processes sent its database in a batch, as the server's statement
    log shows them (statements.py): each one a round trip. ``not_counted`` says why there are none."""

    site: str
    tasks: int
    statements: int = 0
    transactions: int = 0  # distinct virtual transaction ids: explicit BEGIN..COMMIT and single statements
    by_role: dict[str, int] = msgspec.field(default_factory=dict)  # statements by process role
    not_counted: str = ""


class WalCount(msgspec.Struct, frozen=True):
    kind: str  # resource manager / record type, e.g. "Heap/LOCK", "Btree/INSERT_LEAF"
    relation: str  # the relation of its first block; "-" for none (a commit)
    per_task: float


class WalAnatomy(msgspec.Struct, frozen=True):
    """The WAL records a batch of a site's tasks wrote, a task (wal.py). ``not_counted`` says why there are none."""

    site: str
    tasks: int
    records_per_task: float = 0.0
    bytes_per_task: float = 0.0  # records with their full-page images
    full_page_bytes_per_task: float = 0.0
    counts: list[WalCount] = msgspec.field(default_factory=list)  # most first
    not_counted: str = ""


class Scaled(msgspec.Struct, frozen=True):
    """One end-to-end batch of the scaling phase, at ``web`` web processes (``run.workers`` workers)."""

    web: int
    run: EndToEnd


class ApiSubmit(msgspec.Struct, frozen=True):
    """``concurrency`` clients sending new submits back to back, workers stopped; then the checks."""

    site: str
    clients: int
    accounts: int
    requests: int
    seconds: float
    requests_per_s: float
    latency: Latency
    created: int  # 201 answers
    rows: int  # task rows the database holds for those accounts afterwards
    resent: int  # request keys sent again after the timed part
    resent_same: int  # ... answered 200 with the same task
    max_active: int
    limit_burst: int  # concurrent submits at one fresh account
    limit_created: int
    limit_refused: int  # 409 ACTIVE_LIMIT
    limit_active_rows: int
    problems: list[str]


class Baseline(msgspec.Struct, frozen=True):
    """The same closed loop driving a bare Dramatiq actor: no HTTP, lifecycle or ledger."""

    workers: int
    tasks: int
    seconds: float
    tasks_per_s: float
    latency: Latency  # message sent -> result row's finished_at
    cpu_ms_per_task: dict[str, float] = msgspec.field(default_factory=dict)
    round: int = 1
    unit_ms: float | None = None  # the speed probe's median unit during the batch (speed.py)


class Naive(Baseline, frozen=True):
    """The same closed loop driving the naive site (naive_site.py): one bare Litestar endpoint that inserts
    a row and sends a message, one actor that does the work and marks the row; ``latency``: submit request
    sent -> the row's finished_at. CPU under web/worker is the naive site's own processes."""

    pace: float | None = None  # tasks/s it was held to (a site's rate that round); None: flat out
    paced_to: str = ""  # the site whose rate that was; '' in reports from before every site was paced: the first's


class Pgbench(msgspec.Struct, frozen=True):
    clients: int
    seconds: int
    tps: float


class FloorRun(msgspec.Struct, frozen=True):
    script: str  # naive | bare | rows | calls (floor.py)
    round: int
    tasks: int  # each script run is one task's statements
    ms_per_task: float  # the server's CPU, its own vacuum included
    clients: int = 1
    rate: float = 0.0  # tasks a second the run was held to, all clients together; 0: as fast as it went


class Floor(msgspec.Struct, frozen=True):
    """What one task's statements cost the server, by pgbench script (floor.py), in interleaved rounds."""

    site: str
    seconds: float
    runs: list[FloorRun]
    # Each run started from this many finished tasks on the site's schema, in a scratch database; 0: the
    # runs went on the site's own tables, as they had grown (reports before it).
    history: int = 0


class Normalize(msgspec.Struct, frozen=True):
    size: int
    normalize_mib_s: float
    normalize_trim_mib_s: float
    copy_mib_s: float


class Listing(msgspec.Struct, frozen=True):
    site: str
    tasks: int  # the account's tasks
    first_page: Latency
    deep_page: Latency
    deep_offset: int  # rows before the deep page's first row


class HistorySize(msgspec.Struct, frozen=True):
    """One site at one size of history (history.py)."""

    tasks: int  # rows of each table at this size
    attempts: int
    files: int
    submit: Latency  # one client after another, workers stopped
    list_first_page: Latency
    maintenance_s: float  # one pass of every step in the site's interpreter: the median of three
    maintenance_steps: dict[str, int]  # rows per step in the last pass
    audit_s: float
    audit_clean: bool
    audit_findings: list[str]  # the first few, if any
    first_pass_s: float = 0.0  # the pass before them, which also connects and prepares every statement
    step_s: dict[str, float] = msgspec.field(default_factory=dict)  # each step once more on its own


class History(msgspec.Struct, frozen=True):
    """The same site before and after ``seeded`` tasks of history were added: all but the audit should stay
    flat; the audit grows with the rows, ``audit_s_per_100k_tasks`` the slope."""

    site: str
    seeded: int
    seed_seconds: float
    empty: HistorySize
    full: HistorySize
    audit_s_per_100k_tasks: float | None
    submit_p99_ratio: float | None  # full / empty
    list_p99_ratio: float | None
    maintenance_ratio: float | None
    live_objects: int = 0  # of the seeded results, the newest ones still ready, each with its object


class BenchReport(msgspec.Struct):
    config: BenchConfig
    machine: Machine | None = None
    started_at: str = ""
    wall_seconds: float = 0.0
    template_commit: str | None = None
    template_dirty: bool | None = None
    end_to_end: list[EndToEnd] = msgspec.field(default_factory=list)
    commits: list[Commits] = msgspec.field(default_factory=list)
    api: list[ApiSubmit] = msgspec.field(default_factory=list)
    baseline: list[Baseline] = msgspec.field(default_factory=list)
    naive: list[Naive] = msgspec.field(default_factory=list)
    naive_paced: list[Naive] = msgspec.field(default_factory=list)  # held to each site's rate (run.py)
    pgbench: list[Pgbench] = msgspec.field(default_factory=list)
    normalize: Normalize | None = None
    listing: list[Listing] = msgspec.field(default_factory=list)
    round_trips: list[RoundTrips] = msgspec.field(default_factory=list)
    wal: list[WalAnatomy] = msgspec.field(default_factory=list)
    scaling: list[Scaled] = msgspec.field(default_factory=list)
    history: History | None = None
    floor: Floor | None = None
    # Per phase, the share of all cores that processes outside the run used meanwhile.
    other_load: dict[str, float] = msgspec.field(default_factory=dict)


def write_json(report: BenchReport, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(msgspec.json.format(msgspec.json.encode(report), indent=2) + b"\n")


def read_json(path: Path) -> BenchReport:
    return msgspec.json.decode(path.read_bytes(), type=BenchReport)
