"""The fault campaign's deterministic parts: the kill plan, the service-fault plan, the oracle, the checks,
the recovery figures, the report, the options."""

from __future__ import annotations

import time
from pathlib import Path

import msgspec
import pytest

from harness import cli
from harness.chaos import checks, inputs, outage_run, outages, prometheus, recovery, results, schedule
from harness.chaos.checks import Outcome, TaskRow
from harness.chaos.load import Heard
from harness.state import ProcessCounts, SiteRecord

COUNTS = ProcessCounts(web=1, worker=2)


def test_the_same_seed_gives_the_same_plan_and_another_seed_another() -> None:
    first = schedule.plan(7, 120, ["alpha", "bravo"], COUNTS)
    assert first == schedule.plan(7, 120, ["alpha", "bravo"], COUNTS)
    assert first != schedule.plan(8, 120, ["alpha", "bravo"], COUNTS)
    assert msgspec.json.encode(first) == msgspec.json.encode(schedule.plan(7, 120, ["alpha", "bravo"], COUNTS))


def test_the_plan_stays_within_the_campaign_and_its_processes() -> None:
    kills = schedule.plan(1, 120, ["alpha", "bravo"], COUNTS)
    assert [kill.at for kill in kills] == sorted(kill.at for kill in kills)
    for site in ("alpha", "bravo"):
        own = [kill for kill in kills if kill.site == site]
        assert len(own) >= 8  # a kill every few seconds
        assert {kill.role for kill in own} == {"web", "worker"}
        assert sum(kill.role == "worker" for kill in own) > sum(kill.role == "web" for kill in own)
    for kill in kills:
        assert 0 < kill.at < 120 and 0 < kill.down <= schedule.DOWN[1]
        assert 0 <= kill.index < getattr(COUNTS, kill.role)


@pytest.mark.parametrize("seed", range(20))
def test_a_short_campaign_kills_the_web_process_too(seed: int) -> None:
    kills = schedule.plan(seed, 40, ["alpha"], COUNTS)
    assert len(kills) >= 3
    assert any(kill.role == "web" for kill in kills)


def test_the_oracle_follows_the_specification() -> None:
    assert inputs.normalized(b"a \r\nb\t\rc  ", trim=False) == b"a \nb\t\nc  "
    assert inputs.normalized(b"a \r\nb\t\rc  ", trim=True) == b"a\nb\nc"
    assert inputs.normalized(b" \t  \t", trim=True) == b""  # a zero-byte result
    assert inputs.normalized("café \r\n—\t".encode(), trim=True) == "café\n—".encode()
    texts = inputs.texts("alpha", 0)
    assert len(set(texts[:3])) == 3 and texts[:3] != inputs.texts("alpha", 1)[:3] != inputs.texts("bravo", 0)[:3]


def row(**changes) -> TaskRow:
    good = dict(id="t1", request_key="k1", status="succeeded", error_code=None, attempt_count=1, max_attempts=3,
                attempt_rows=1, succeeded_attempts=1)
    return TaskRow(**{**good, **changes})


def outcome(**changes) -> Outcome:
    good = dict(request_key="k1", task_id="t1", expected=b"a\nb", row=row(), result=b"a\nb", resubmit_status=200,
                resubmit_task_id="t1")
    return Outcome(**{**good, **changes})


def found(*outcomes: Outcome, rows: list[TaskRow] | None = None, sent: set[str] | None = None) -> list[str]:
    rows = [o.row for o in outcomes if o.row] if rows is None else rows
    return checks.findings(list(outcomes), rows, {o.request_key for o in outcomes} if sent is None else sent)


def test_a_good_campaign_has_no_findings() -> None:
    lease_lost = row(status="failed", error_code="LEASE_EXPIRED", attempt_count=3, attempt_rows=3,
                     succeeded_attempts=0)
    dead = row(status="failed", error_code="DELIVERY_EXHAUSTED", attempt_count=0, attempt_rows=0,
               succeeded_attempts=0)
    assert found(outcome(), outcome(row=row(attempt_count=3, attempt_rows=3)),
                 outcome(row=lease_lost, result=None), outcome(row=dead, result=None)) == []


@pytest.mark.parametrize(("bad", "says"), [
    (outcome(row=None), "no row for request key"),
    (outcome(row=row(status="running", succeeded_attempts=0)), "still running after settling"),
    (outcome(row=row(status="queued", succeeded_attempts=0)), "still queued"),
    (outcome(row=row(attempt_count=2, succeeded_attempts=2, attempt_rows=2)), "succeeded with 2 succeeded attempts"),
    (outcome(row=row(attempt_rows=2)), "attempt_count 1, 2 attempt rows"),
    (outcome(result=b"a\r\nb"), "result is 4 bytes that differ from the expected 3 bytes"),
    (outcome(result=None, result_problem="content answered 410"), "result not downloaded: content answered 410"),
    (outcome(row=row(status="failed", error_code="LEASE_EXPIRED", succeeded_attempts=0)),
     "failed LEASE_EXPIRED after 1 of 3 attempts"),
    (outcome(row=row(status="failed", error_code="INPUT_INVALID", attempt_count=3, attempt_rows=3,
                     succeeded_attempts=0)), "failed INPUT_INVALID after 3 of 3"),
    (outcome(row=row(status="failed", error_code="LEASE_EXPIRED", attempt_count=3, attempt_rows=3)),
     "failed with 1 succeeded attempt"),
    (outcome(row=row(status="canceled", succeeded_attempts=0)), "canceled, though no client canceled it"),
    (outcome(resubmit_status=201, resubmit_task_id="t2"), "sent again answered 201 with task t2"),
    (outcome(resubmit_status=200, resubmit_task_id="t2"), "sent again answered 200 with task t2"),
    (outcome(row=row(id="t9")), "request key k1 belongs to task t9"),
])
def test_the_checks_flag_a_bad_outcome(bad: Outcome, says: str) -> None:
    problems = found(bad)
    assert problems and any(says in problem for problem in problems), problems


def test_a_task_no_client_asked_for_is_a_finding() -> None:
    stray = row(id="t2", request_key="k2")
    assert found(outcome(), rows=[row(), stray]) == ["task t2: request key k2 was never sent by a client"]
    # A key that was sent but never answered is not a stray (its missing answer is the load's finding).
    assert found(outcome(), rows=[row(), stray], sent={"k1", "k2"}) == []


def test_the_report_round_trips_and_summarises(tmp_path) -> None:
    site = results.SiteChaos(slug="alpha", accounts=4, in_flight=3, tasks=10, succeeded=9,
                             failed={"LEASE_EXPIRED": 1}, re_executions=4, audit_clean=True,
                             kills=[results.KillDone(site="alpha", role="web", index=0, planned_at=1.0, at=1.2),
                                    results.KillDone(site="alpha", role="worker", index=1, planned_at=9.0)])
    report = results.ChaosReport(ok=True, seed=3, seconds=40, started_at="s", finished_at="f", sites=[site],
                                 plan=schedule.plan(3, 40, ["alpha"], COUNTS))
    text = results.write(tmp_path, report)
    again = msgspec.json.decode((tmp_path / "chaos.json").read_bytes(), type=results.ChaosReport)
    assert again == report
    assert "seed 3, 40 s of load: PASS" in text and "1 LEASE_EXPIRED" in text
    assert site.killed("web") == 1 and site.killed("worker") == 0  # a kill the load outlasted did not happen
    assert site.ok and not msgspec.structs.replace(site, findings=["x"]).ok


@pytest.mark.parametrize(("argv", "message"), [
    (["--seconds", "0"], "--seconds must be between 10 and 3600"),
    (["--seconds", "5000"], "--seconds must be between 10 and 3600"),
    (["--sites", "0"], "--sites must be at least 1"),
    (["--sites", "11"], "--sites must be between 1 and 10"),
    (["--workers", "1"], "--workers must be at least 2"),
    (["--seed", "-1"], "--seed must not be negative"),
    (["--services", "--faults", "s3-kill,disk-full"], "--faults: unknown disk-full (known: broker-kill,"),
])
def test_bad_campaign_options_are_refused_in_one_line(argv: list[str], message: str,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["chaos", *argv]) == 2
    err = capsys.readouterr().err
    assert err.startswith(message) and err.count("\n") == 1


def test_counted_is_word_count_as_documented() -> None:
    text = "# Title\n\nTwo lines, é\n".encode()
    assert inputs.counted(text, "words") == b'{"unit":"words","count":5}'
    assert inputs.counted(text, "lines") == b'{"unit":"lines","count":3}'
    assert inputs.counted(text, "characters") == b'{"unit":"characters","count":22}'
    assert inputs.counted(b" \t  \t", "words") == b'{"unit":"words","count":0}'


# --- chaos --services: the fault plan, the recovery figures, the answers, the report --------------------


def test_every_service_fault_is_planned_once_in_a_seeded_order() -> None:
    first = outages.plan(7)
    assert first == outages.plan(7) and [o.kind for o in first] != [o.kind for o in outages.plan(8)]
    assert sorted(o.kind for o in first) == sorted(outages.KINDS)
    by_kind = {o.kind: o for o in first}
    assert by_kind["broker-empty"].empty and by_kind["broker-empty"].pause_workers >= outages.WORKER_PAUSE[0]
    assert not by_kind["broker-kill"].empty and not by_kind["broker-kill"].pause_workers
    # the long faults outlast the site's own limits: a pool's acquire wait, an object call
    assert by_kind["postgres-long"].down > outages.POOL_ACQUIRE_TIMEOUT > by_kind["postgres-short"].down
    assert by_kind["s3-freeze"].down > outages.OBJECT_TIMEOUT and by_kind["s3-freeze"].action == "freeze"
    assert outages.plan(1, ("s3-kill", "broker-kill"))[0].kind in ("s3-kill", "broker-kill")
    assert len(outages.plan(1, ("s3-kill", "broker-kill"))) == 2


def test_the_long_faults_track_the_sites_own_timeouts() -> None:
    template = Path(__file__).resolve().parent.parent / "template" / "{{slug}}"
    assert f"ACQUIRE_TIMEOUT = {outages.POOL_ACQUIRE_TIMEOUT}\n" in (template / "db" / "pool.py").read_text()
    assert f"OBJECT_TIMEOUT = {outages.OBJECT_TIMEOUT}\n" in (template / "services" / "storage.py").read_text()


def timed(status: str, created: float, finished: float | None) -> TaskRow:
    return row(status=status, created_at=created, finished_at=finished)


def test_recovery_is_measured_from_the_server_coming_back() -> None:
    rows = [timed("succeeded", 90, 95), timed("succeeded", 98, 104.5), timed("succeeded", 101, 103),
            timed("failed", 99, 130.25)]
    assert recovery.first_success(rows, 100) == 3.0  # 103: the first success after 100, not 95
    assert recovery.drained(rows, 100) == 30.25  # every task made by 100 ended by 130.25
    assert recovery.drained([timed("succeeded", 90, 95)], 100) == 0.0  # nothing was left waiting
    assert recovery.drained([*rows, timed("queued", 99, None)], 100) is None  # one never ended
    assert recovery.first_success([timed("succeeded", 90, 95)], 100) is None


def test_answers_are_counted_in_the_window_and_a_500_or_a_bare_503_is_a_finding() -> None:
    heard = [Heard(1.0, 201, False), Heard(2.0, 0, False), Heard(2.5, 503, True), Heard(3.0, 503, True),
             Heard(9.0, 200, False)]
    assert recovery.answers_between(heard, 2.0, 3.0) == {"503": 2, recovery.NO_ANSWER: 1}
    assert recovery.answer_findings(heard) == []
    bad = [*heard, Heard(4.0, 500, False), Heard(5.0, 503, False), Heard(6.0, 502, False)]
    assert recovery.answer_findings(bad) == ["1 request(s) answered 500",
                                             "1 request(s) answered 503 without Retry-After"]


def test_the_service_fault_table_reports_recovery_and_alerts(tmp_path) -> None:
    site = results.SiteChaos(slug="alpha", accounts=4, in_flight=3, tasks=10, succeeded=10, audit_clean=True)
    done = [outages.OutageDone(kind="broker-empty", down=2.0, started_at=1.0, back_at=9.0, first_success_s=1.5,
                               drained_s=74.0, answers={"201": 3, "503": 2}, alerts_fired=["TaskBacklogOld@alpha"]),
            outages.OutageDone(kind="s3-kill", down=3.0, error="EmbeddedError: s3 did not start")]
    report = results.ChaosReport(ok=False, seed=3, seconds=60, started_at="s", finished_at="f", sites=[site], plan=[],
                                 outage_plan=outages.plan(3), outages=done, alert_rules="2 rule file(s)",
                                 alerts_never_fired=["DeadLetters"], load_seconds=250.0)
    text = results.write(tmp_path, report)
    assert msgspec.json.decode((tmp_path / "chaos.json").read_bytes(), type=results.ChaosReport) == report
    assert "service-fault campaign, seed 3, 250 s of load: FAIL" in text
    line = next(line for line in text.splitlines() if line.strip().startswith("broker-empty"))
    assert "1.5 s" in line and "74.0 s" in line and "201: 3, 503: 2" in line
    assert "alerts fired: TaskBacklogOld@alpha; all resolved" in text
    assert "error: EmbeddedError" in text and "alert rules no fault fired: DeadLetters" in text
    assert "never" in next(line for line in text.splitlines() if line.strip().startswith("s3-kill"))


def test_prometheus_scrapes_each_site_with_its_token_and_loads_each_distinct_rules_file(tmp_path) -> None:
    sites = []
    for slug, rules in (("alpha", "groups: []\n"), ("bravo", "groups: []\n"), ("charlie", None), ("delta", "x\n")):
        folder = tmp_path / slug
        if rules is not None:
            (folder / "prometheus").mkdir(parents=True)
            (folder / "prometheus" / "alerts.yml").write_text(rules)
        sites.append(SiteRecord(slug=slug, name=slug, base_url="", upstream_url=f"http://127.0.0.1:40{len(sites)}",
                                origin="", cookie_name="", database_url="", broker_url="", broker_namespace="",
                                task_queue="", dead_queue="", s3_endpoint_url="", bucket="", object_prefix="",
                                site_dir=str(folder), venv_python=""))
    tokens = {site.slug: tmp_path / f"{site.slug}.token" for site in sites}
    config = prometheus.config(sites, tokens)
    assert config["rule_files"] == [str(tmp_path / "alpha" / "prometheus" / "alerts.yml"),
                                    str(tmp_path / "delta" / "prometheus" / "alerts.yml")]  # bravo's is alpha's
    jobs = {job["job_name"]: job for job in config["scrape_configs"]}
    assert jobs["charlie"]["static_configs"] == [{"targets": ["127.0.0.1:402"]}]
    assert jobs["charlie"]["authorization"] == {"type": "Bearer", "credentials_file": str(tokens["charlie"])}
    assert config["global"]["scrape_interval"] == config["global"]["evaluation_interval"] == "1s"


def test_a_5xx_but_503_anywhere_on_the_site_during_the_campaign_is_found_in_its_own_histogram() -> None:
    before = recovery.server_errors(
        '# HELP x\n'
        'sitekit_http_request_duration_seconds_count{method="GET",route="/metrics",status="503"} 2.0\n'
        'sitekit_http_request_duration_seconds_count{method="POST",route="/api/files",status="500"} 1.0\n'
        'sitekit_http_request_duration_seconds_count{method="GET",route="/api/tasks",status="200"} 90.0\n'
        'sitekit_http_request_duration_seconds_sum{method="POST",route="/api/files",status="500"} 1.5\n')
    assert before == {"GET /metrics 503": 2.0, "POST /api/files 500": 1.0}
    after = {**before, "GET /metrics 503": 40.0, "GET /api/files/{file_id}/content 500": 3.0}
    assert recovery.new_server_errors(before, after) == ["GET /api/files/{file_id}/content answered 500 3 time(s)"]
    assert recovery.new_server_errors(before, before) == []


def test_an_alert_counting_events_may_fire_for_its_window_after_the_last_fault() -> None:
    assert prometheus.window_seconds('max by (job) (increase(x{job="a"}[15m])) > 0') == 900
    assert prometheus.window_seconds("max_over_time(y[5m]) > 120 and z[30s]") == 300
    assert prometheus.window_seconds("up == 0") == 0
    windows = {"TaskLeaseRecoveries": 900.0, "SiteDown": 0.0}
    still = ["TaskLeaseRecoveries@alpha", "SiteDown@alpha"]
    assert outage_run.unresolved_findings(still, windows, last_back_at=1000.0, now=1300.0) == [
        "alert SiteDown@alpha still firing 120 s after every task ended"]
    assert len(outage_run.unresolved_findings(still, windows, last_back_at=1000.0, now=1900.0)) == 2


class _Alerts:
    """A Prometheus whose alerts fire as ``firing`` says, poll after poll (the rest as a run's would)."""

    def __init__(self, firing: list[list[str]], windows: dict[str, float]) -> None:
        self.firing, self.windows, self.polls = firing, windows, 0

    def firing_now(self) -> list[str]:
        self.polls += 1
        return self.firing[min(self.polls, len(self.firing)) - 1]

    def firing_between(self, start: float, end: float) -> list[str]:
        return sorted({name for polled in self.firing for name in polled})

    def rule_names(self) -> list[str]:
        return sorted(self.windows)

    def rule_windows(self) -> dict[str, float]:
        return self.windows


def _one_fault(back_at: float) -> results.ChaosReport:
    done = outages.OutageDone(kind="s3-freeze", down=20.0, started_at=back_at - 20, back_at=back_at)
    return results.ChaosReport(ok=False, seed=1, seconds=10, started_at="", finished_at="", sites=[], plan=[],
                               outages=[done])


def test_the_campaign_does_not_wait_for_an_alert_that_fires_over_its_range_by_design(monkeypatch) -> None:
    # StorageErrors counts events over 15 minutes: it fires that long after the fault, which no wait shortens.
    monkeypatch.setattr(outage_run, "RESOLVE_DEADLINE", 5.0)
    prom = _Alerts([["StorageErrors@alpha"]], {"StorageErrors": 900.0, "SiteDown": 0.0})
    report = _one_fault(back_at=time.time() - 30)
    assert outage_run._alerts(report, prom, campaign_end=time.time()) == []
    assert prom.polls == 1
    assert report.outages[0].alerts_fired == ["StorageErrors@alpha"]
    assert report.outages[0].alerts_unresolved == []
    assert report.outages[0].alerts_within_range == ["StorageErrors@alpha"]
    report.alert_rules = "1 rule file(s)"
    assert "alerts fired: StorageErrors@alpha; firing over its range: StorageErrors@alpha" in "\n".join(
        results.outage_lines(report))


def test_the_campaign_waits_for_an_alert_that_must_resolve_and_reports_one_that_does_not(monkeypatch) -> None:
    monkeypatch.setattr(outage_run, "RESOLVE_DEADLINE", 5.0)
    windows = {"StorageErrors": 900.0, "SiteDown": 0.0}
    resolving = _Alerts([["SiteDown@alpha", "StorageErrors@alpha"], ["StorageErrors@alpha"]], windows)
    report = _one_fault(back_at=time.time() - 30)
    assert outage_run._alerts(report, resolving, campaign_end=time.time()) == []
    assert resolving.polls == 2
    assert report.outages[0].alerts_unresolved == []

    stuck = _Alerts([["SiteDown@alpha"]], windows)
    report = _one_fault(back_at=time.time() - 30)
    assert outage_run._alerts(report, stuck, campaign_end=time.time()) == [
        "alert SiteDown@alpha still firing 5 s after every task ended"]
    assert stuck.polls >= 5
    assert report.outages[0].alerts_unresolved == ["SiteDown@alpha"]
