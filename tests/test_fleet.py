"""``harness fleet check``: sites and answers files loaded, held to copier's validators and to each other
before anything starts. A refusal is one line per reason (naming both sites of a collision), exit 2."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import yaml

from harness import KIT_ROOT, cli, fleet

from .conftest import render

HEAD = subprocess.run(["git", "-C", str(KIT_ROOT), "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                      check=True).stdout.strip()


def answers_of(slug: str, **changes) -> dict:
    return {"site_name": slug.capitalize(), "slug": slug, "port": 8400 + sum(map(ord, slug)) % 1000, **changes}


def write_answers(path: Path, answers: dict) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(answers), encoding="utf-8")
    return str(path)


def site_folder(root: Path, name: str, answers: dict, commit: str = HEAD, src: str = str(KIT_ROOT)) -> str:
    """A folder as ``copier copy`` leaves it, as far as the fleet reads it: its answers file."""
    write_answers(root / name / fleet.ANSWERS_FILE, {"_commit": commit, "_src_path": src, **answers})
    return str(root / name)


def run_check(capsys: pytest.CaptureFixture, *paths: str) -> tuple[int, list[str], str]:
    code = cli.main(["fleet", "check", *paths])
    out, err = capsys.readouterr()
    return code, err.splitlines(), out


def test_distinct_sites_pass(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    one = site_folder(tmp_path, "shop", answers_of("shop"))
    two = write_answers(tmp_path / "blog.yml", answers_of("blog"))
    code, err, out = run_check(capsys, one, two)
    assert (code, err) == (0, [])
    assert "2 site(s)" in out and "shop" in out and "blog" in out


COLLIDING = [
    ({"database_name": "agency"}, {"database_name": "agency"}, "database name 'agency'"),
    ({"auth_namespace": "agency"}, {"auth_namespace": "agency"}, "auth namespace"),
    ({"task_queue": "work"}, {"task_queue": "work"}, "queue 'work'"),
    ({"dead_queue": "dead"}, {"task_queue": "dead"}, "queue 'dead'"),  # one site's dead letters, another's tasks
    ({"broker_namespace": "agency"}, {"broker_namespace": "agency"}, "broker namespace 'agency'"),
    ({"bucket": "agency-files", "object_prefix": "p"}, {"bucket": "agency-files", "object_prefix": "p"},
     "bucket + object prefix 'agency-files/p'"),
    ({"port": 9000, "origin": "https://shop.example"}, {"port": 9000, "origin": "https://blog.example"},
     "port '9000'"),
    ({"origin": "https://files.example.com"}, {"origin": "https://files.example.com:443"},
     "origin 'https://files.example.com:443'"),
]


@pytest.mark.parametrize(("mine", "theirs", "shared"), COLLIDING, ids=[c[2].split(" '")[0] for c in COLLIDING])
def test_a_shared_name_is_refused_naming_both_sites(
    tmp_path: Path, capsys: pytest.CaptureFixture, mine: dict, theirs: dict, shared: str
) -> None:
    one = site_folder(tmp_path, "shop", answers_of("shop", **mine))
    two = site_folder(tmp_path, "blog", answers_of("blog", **theirs))
    other = write_answers(tmp_path / "wiki.yml", answers_of("wiki"))
    code, err, _ = run_check(capsys, one, two, other)
    assert code == 2
    assert err == [f"{one} and {two} share the {err[0].split(' share the ', 1)[1]}"]
    assert shared in err[0]


def test_one_bucket_with_two_prefixes_is_not_a_collision(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    one = write_answers(tmp_path / "a.yml", answers_of("shop", bucket="agency-files"))
    two = write_answers(tmp_path / "b.yml", answers_of("blog", bucket="agency-files"))
    assert run_check(capsys, one, two)[:2] == (0, [])


def test_a_folder_of_answers_files(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    write_answers(tmp_path / "fleet" / "a.yml", answers_of("shop"))
    write_answers(tmp_path / "fleet" / "b.yaml", answers_of("blog", database_name="shop"))
    code, err, _ = run_check(capsys, str(tmp_path / "fleet"))
    assert code == 2 and err == [f"{tmp_path}/fleet/a.yml and {tmp_path}/fleet/b.yaml share the database name 'shop'"]


def test_an_answer_copier_refuses_is_refused_with_copiers_message(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    bad = write_answers(tmp_path / "bad.yml", answers_of("shop", bucket="Upper_Case"))
    code, err, _ = run_check(capsys, bad)
    assert code == 2 and len(err) == 1
    assert err[0].startswith(f"{bad}: Validation error for question 'bucket': bucket must be 3-63 characters")


BAD_INPUT = [
    ("plain-folder", "not a generated site (no .copier-answers.yml)"),
    ("missing.yml", "no such answers file"),
    ("malformed.yml", "not a valid answers file (YAML error at line 3: expected ',' or ']'"),
    ("list.yml", "not a valid answers file (expected a mapping"),
    ("foreign-site", "rendered from an unknown template (gh:someone/other-template @ 0123abc)"),
    ("foreign.yml", "answers of an unknown template"),
    ("no-commit-site", "rendered from an unknown template"),
]


@pytest.mark.parametrize(("name", "message"), BAD_INPUT, ids=[b[0] for b in BAD_INPUT])
def test_bad_input_is_one_clear_line(tmp_path: Path, capsys: pytest.CaptureFixture, name: str, message: str) -> None:
    (tmp_path / "plain-folder").mkdir()
    (tmp_path / "plain-folder" / "README.md").write_text("not a site")
    (tmp_path / "malformed.yml").write_text("slug: shop\nport: [8410\n")
    (tmp_path / "list.yml").write_text("- slug\n- shop\n")
    site_folder(tmp_path, "foreign-site", answers_of("shop"), commit="0123abc", src="gh:someone/other-template")
    write_answers(tmp_path / "foreign.yml",
                  {"_src_path": "gh:someone/other-template", "_commit": "v9", **answers_of("x1")})
    write_answers(tmp_path / "no-commit-site" / fleet.ANSWERS_FILE,
                  {"_src_path": str(KIT_ROOT), **answers_of("x2")})
    good = write_answers(tmp_path / "good.yml", answers_of("good"))
    code, err, out = run_check(capsys, good, str(tmp_path / name))
    assert code == 2 and out == ""
    assert err == [f"{tmp_path / name}: {err[0].split(': ', 1)[1]}"]
    assert message in err[0]


def test_a_rendered_site_loads_with_its_template_commit(tmp_path: Path) -> None:
    site = render(tmp_path, slug="realsite", bucket="real-files")
    member = fleet.load_site(str(site))
    assert member.kind == "site" and member.template == str(KIT_ROOT)
    assert member.commit  # of this checkout's history, or of its uncommitted changes
    assert member.answers["bucket"] == "real-files" and member.answers["task_queue"] == "realsite_tasks"
    theirs = fleet.load_answers(write_answers(tmp_path / "b.yml", answers_of("other", bucket="real-files",
                                                                             object_prefix="realsite")))
    assert fleet.collisions([member, theirs]) == [
        f"{site} and {tmp_path}/b.yml share the bucket + object prefix 'real-files/realsite'"]


# --- verify --site/--answers: refused before anything starts; ports honoured or freed on request ---


def test_verify_refuses_before_anything_starts(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    one = write_answers(tmp_path / "a.yml", answers_of("shop", bucket="agency-files", object_prefix="p"))
    two = site_folder(tmp_path, "blog", answers_of("blog", bucket="agency-files", object_prefix="p"))
    state = tmp_path / "run"
    code = cli.main(["verify", "--answers", one, "--site", two, "--state", str(state)])
    assert code == 2
    assert capsys.readouterr().err.splitlines() == [
        f"{two} and {one} share the bucket + object prefix 'agency-files/p'",
        f"{two} and {one} share the bucket (a run gives each site its own) 'agency-files'"]
    assert not state.exists()
    assert cli.main(["verify", "--site", str(tmp_path / "nowhere"), "--state", str(state)]) == 2
    assert capsys.readouterr().err == f"{tmp_path / 'nowhere'}: no such folder\n"
    assert cli.main(["verify", "--sites", "2", "--site", two]) == 2
    assert not state.exists()


def test_a_busy_port_is_refused_unless_free_ports(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    import socket

    from harness import fleet_plan

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        busy = write_answers(tmp_path / "busy.yml", answers_of("shop", port=port))
        state = tmp_path / "run"
        assert cli.main(["verify", "--answers", busy, "--state", str(state)]) == 2
        assert capsys.readouterr().err == (f"{busy}: port {port} is busy on this machine "
                                           f"(free it, or pass --free-ports to run the site on another)\n")
        assert not state.exists()
        planned, = fleet_plan.plan(fleet.load(answers=[busy]), free_ports=True)
        assert planned.port != port and planned.overrides == {"port": f"{port} was busy: {planned.port}"}


def test_the_run_copies_a_site_and_raises_only_its_throttles(tmp_path: Path) -> None:
    from harness import fleet_plan

    site = render(tmp_path, slug="copied", writes_per_minute=30, reads_per_minute=50000)
    (site / ".venv").mkdir()
    (site / "copied" / "local_edit.py").write_text("EDITED = True\n")
    planned, = fleet_plan.plan([fleet.load_site(str(site))], free_ports=True)
    fleet_plan.place(planned, tmp_path / "run" / "site")
    copy = tmp_path / "run" / "site"
    assert (copy / "copied" / "local_edit.py").exists() and not (copy / ".venv").exists()
    toml = (copy / "site.toml").read_text()
    assert "writes_per_minute = 2000" in toml and "reads_per_minute = 50000" in toml
    assert planned.overrides["writes_per_minute"] == "30 raised to 2000" and "reads_per_minute" not in planned.overrides
    assert "writes_per_minute = 30" in (site / "site.toml").read_text()  # the user's folder is untouched


def test_verify_needs_a_bucket_per_site(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    one = write_answers(tmp_path / "a.yml", answers_of("shop", bucket="agency-files"))
    two = write_answers(tmp_path / "b.yml", answers_of("blog", bucket="agency-files"))
    assert cli.main(["verify", "--answers", one, "--answers", two, "--state", str(tmp_path / "run")]) == 2
    assert capsys.readouterr().err == (
        f"{one} and {two} share the bucket (a run gives each site its own) 'agency-files'\n")


def test_a_hand_edited_site_toml_is_what_counts(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    one = render(tmp_path, slug="edited")
    toml = one / "site.toml"
    toml.write_text(toml.read_text().replace('bucket = "edited-files"', 'bucket = "shared-files"'))
    two = write_answers(tmp_path / "b.yml", answers_of("other", bucket="shared-files", object_prefix="edited"))
    capsys.readouterr()  # what copier said while rendering
    code, err, _ = run_check(capsys, str(one), two)
    assert code == 2 and err == [f"{one} and {two} share the bucket + object prefix 'shared-files/edited'"]
    (one / "site.toml").write_text("[site\n")
    code, err, _ = run_check(capsys, str(one))
    assert code == 2 and len(err) == 1 and err[0].startswith(f"{one}/site.toml: not valid TOML")


def test_an_update_with_conflicts_is_reported_and_fails() -> None:
    from harness.rehearsal import Outcome
    from harness.report import update_line

    clean = Outcome(from_commit="1f183a8", to_commit="6991eea", migrations=["0007_task_charges.sql"], checked=True)
    assert clean.ok and update_line(clean).startswith("1f183a8 -> 6991eea, 1 new migration(s): old data intact")
    torn = Outcome(from_commit="1f183a8", to_commit="6991eea", conflicts=["site.toml.rej"], checked=True,
                   problems=["the old upload does not download byte-exact (404)"])
    assert not torn.ok
    assert update_line(torn) == ("1f183a8 -> 6991eea: conflicts in site.toml.rej; "
                                 "the old upload does not download byte-exact (404)")
    assert update_line(None) == "not reached"


# --- names read from a site's own site.toml are held to the answers' rules (#28) -------------

EDITED_NAMES = [
    ("slug", "../../../escaped-from-state", "slug must match ^[a-z][a-z0-9_]{1,30}$"),
    ("database_name", 'shop" TEMPLATE "victim" --', "database_name must match ^[a-z_][a-z0-9_]{0,62}$"),
    ("bucket", "../other-bucket", "bucket must be 3-63 characters"),
    ("object_prefix", "../up", "object_prefix must match"),
    ("task_queue", "q; x", "task_queue must match"),
    ("port", 80, "port must be between 1024 and 65535"),
]


@pytest.mark.parametrize(("key", "value", "rule"), EDITED_NAMES, ids=[e[0] for e in EDITED_NAMES])
def test_a_name_edited_into_site_toml_is_held_to_the_answers_rules(
    tmp_path: Path, capsys: pytest.CaptureFixture, key: str, value: object, rule: str
) -> None:
    folder = Path(site_folder(tmp_path, "shop", answers_of("shop")))
    quoted = f"{value}" if isinstance(value, int) else '"' + str(value).replace('"', '\\"') + '"'
    (folder / "site.toml").write_text(f"[site]\n{key} = {quoted}\n", encoding="utf-8")
    code, err, out = run_check(capsys, str(folder))
    assert (code, out) == (2, "")
    assert err == [f"{folder}/site.toml: Validation error for question '{key}': {err[0].split(': ', 2)[2]}"]
    assert rule in err[0]


def test_verify_refuses_a_site_toml_slug_that_leaves_the_state_folder(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    folder = Path(site_folder(tmp_path / "sites", "shop", answers_of("shop")))
    (folder / "site.toml").write_text('[site]\nslug = "../../../escaped-from-state"\n', encoding="utf-8")
    state = tmp_path / "a" / "b" / "run"
    assert cli.main(["verify", "--site", str(folder), "--state", str(state)]) == 2
    assert capsys.readouterr().err.startswith(f"{folder}/site.toml: Validation error for question 'slug'")
    assert not state.exists() and not (tmp_path / "a" / "escaped-from-state").exists()


def test_the_run_never_writes_through_a_link_in_the_users_folder(tmp_path: Path) -> None:
    """A site.toml linked to a production config, and a folder linked from elsewhere: the run's copy holds
    their contents as files of its own, so raising its throttles leaves the link targets as they were."""
    from harness import fleet_plan

    site = render(tmp_path, slug="linked", writes_per_minute=30)
    production = tmp_path / "production"
    production.mkdir()
    (site / "site.toml").rename(production / "site.toml")
    (site / "site.toml").symlink_to(production / "site.toml")
    (production / "assets").mkdir()
    (production / "assets" / "logo.txt").write_text("logo\n")
    (site / "assets").symlink_to(production / "assets")
    planned, = fleet_plan.plan([fleet.load_site(str(site))], free_ports=True)
    copy = tmp_path / "run" / "site"
    fleet_plan.place(planned, copy)
    assert "writes_per_minute = 30" in (production / "site.toml").read_text()  # the production file is untouched
    assert not (copy / "site.toml").is_symlink() and "writes_per_minute = 2000" in (copy / "site.toml").read_text()
    assert not (copy / "assets").is_symlink() and (copy / "assets" / "logo.txt").read_text() == "logo\n"
    (copy / "assets" / "logo.txt").write_text("changed by the run\n")
    assert (production / "assets" / "logo.txt").read_text() == "logo\n"


def test_a_link_to_a_folder_that_holds_it_is_refused_before_anything_starts(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    folder = Path(site_folder(tmp_path, "shop", answers_of("shop")))
    (folder / "docs").mkdir()
    (folder / "docs" / "up").symlink_to("..")
    code, err, _ = run_check(capsys, str(folder))
    assert (code, err) == (2, [f"{folder}: the link docs/up points at a folder that holds it "
                                "(the run copies what links point at)"])
