"""kit.py, the bootstrap a new user runs first: it installs what its commands need, and `.ci/run` adds
nothing to it (so CI proves the README's test command on a fresh machine on its own)."""

from __future__ import annotations

import importlib.util
from types import ModuleType

import pytest

from harness import KIT_ROOT


@pytest.fixture
def kit(monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    """kit.py with its side effects recorded instead of done: the venv, the installs and the exec."""
    spec = importlib.util.spec_from_file_location("kit_under_test", KIT_ROOT / "kit.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.installed = []
    module.executed = []
    monkeypatch.setattr(module, "ensure_venv", lambda: None)
    monkeypatch.setattr(module, "ensure_debian_tools", lambda packages: module.installed.extend(packages))
    monkeypatch.setattr(module.os, "chdir", lambda path: None)
    monkeypatch.setattr(module.os, "execv", lambda path, args: module.executed.append(args))
    monkeypatch.delenv(module.REQUIRE_TOOLS, raising=False)
    return module


def test_the_test_command_installs_every_debian_tool_a_test_needs(kit: ModuleType) -> None:
    kit.main(["test", "-k", "proxy"])
    assert set(kit.installed) == {"chromium", "nginx", "prometheus"} == set(kit.DEBIAN_TOOLS)
    assert kit.os.environ[kit.REQUIRE_TOOLS] == "1"  # and a test missing one fails instead of skipping
    assert kit.executed[0][1:] == ["-m", "pytest", "-n", "auto", "-k", "proxy"]


def test_the_production_lane_installs_nginx_and_chromium(kit: ModuleType) -> None:
    kit.main(["verify", "--proxy"])
    assert set(kit.installed) == {"chromium", "nginx"}
    assert kit.executed[0][1:] == ["-m", "harness", "verify", "--proxy"]


def test_help_answers_and_exits_zero(kit: ModuleType, capsys: pytest.CaptureFixture[str]) -> None:
    for flag in ("--help", "-h", "help"):
        assert kit.main([flag]) == 0
        assert "python3 kit.py test" in capsys.readouterr().out
    assert kit.main(["nonsense"]) == 2
    assert kit.main([]) == 2
    assert not kit.executed


def test_ci_installs_nothing_itself() -> None:
    """CI runs the README's test command on its own: an install step in .ci/run would hide one missing
    from kit.py (as nginx was)."""
    ci = (KIT_ROOT / ".ci" / "run").read_text()
    assert "apt-get" not in ci and "pip install" not in ci
    assert "python3 kit.py test" in ci

