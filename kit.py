#!/usr/bin/env python3
"""Bootstrap for a fresh machine with only Python: make ``.venv``, install the kit, run a command.

    python3 kit.py verify [ARGS]   # python -m harness verify --sites 2 [ARGS]
    python3 kit.py verify --proxy  # the production lane: 3 sites behind nginx over https (installs nginx, Chromium)
    python3 kit.py test [ARGS]     # python -m pytest -n auto [ARGS] (installs Chromium, nginx and Prometheus first)
    python3 kit.py harness ARGS    # python -m harness ARGS (up, down, report, bench, ...)

Standard library only. The virtualenv is reinstalled when pyproject.toml changes.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent
VENV = ROOT / ".venv"
PYTHON = VENV / "bin" / "python"
STAMP = VENV / ".sitekit-installed"
# What the commands need from Debian, installed by the command itself (apt-get, as root) so that a
# fresh machine with only Python passes: package -> (binary, what needs it). Only the binaries are
# used; a system service a package may start is neither needed nor touched.
DEBIAN_TOOLS = {
    "chromium": (Path("/usr/bin/chromium"), "the page tests (playwright drives it; it never downloads a browser)"),
    "nginx": (Path("/usr/sbin/nginx"), "the production lane (verify --proxy) and its tests"),
    "prometheus": (Path("/usr/bin/promtool"), "the sites' alert rules' tests (promtool test rules)"),
}
# Set for commands that install the tools: a test that needs one fails without it instead of skipping.
REQUIRE_TOOLS = "SITEKIT_REQUIRE_TOOLS"

def ensure_venv() -> None:
    if sys.version_info < (3, 11):  # noqa: UP036 - kit.py runs on whatever python3 is there
        sys.exit(f"sitekit needs Python 3.11 or newer (this is {sys.version.split()[0]})")
    wanted = hashlib.sha256((ROOT / "pyproject.toml").read_bytes()).hexdigest()
    if STAMP.exists() and STAMP.read_text() == wanted and PYTHON.exists():
        return
    if not PYTHON.exists():
        print(f"kit: creating {VENV}", flush=True)
        venv.EnvBuilder(with_pip=True, clear=True).create(VENV)
    print("kit: installing the kit and its dependencies", flush=True)
    pip = [str(PYTHON), "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
    subprocess.run([*pip, "--upgrade", "pip"], check=True)
    subprocess.run([*pip, "-e", f"{ROOT}[dev]"], check=True)
    STAMP.write_text(wanted)


def missing_tools(packages: tuple[str, ...]) -> list[str]:
    return [package for package in packages if not DEBIAN_TOOLS[package][0].exists()]


def ensure_debian_tools(packages: tuple[str, ...]) -> None:
    """Install the Debian packages whose binaries are missing, when this machine can (root with
    apt-get: one install, an `apt-get update` first only if it fails); otherwise say what is missing."""
    missing = missing_tools(packages)
    if missing and os.geteuid() == 0 and shutil.which("apt-get"):
        print(f"kit: installing {' '.join(missing)} (apt-get install) for "
              + "; ".join(DEBIAN_TOOLS[p][1] for p in missing), flush=True)
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        quiet = {"stdout": subprocess.DEVNULL, "env": env, "check": False}
        if subprocess.run(["apt-get", "install", "-y", "-q", *missing], **quiet).returncode != 0:
            subprocess.run(["apt-get", "update", "-q"], **quiet)
            subprocess.run(["apt-get", "install", "-y", "-q", *missing], **quiet)
    for package in missing_tools(packages):
        binary, purpose = DEBIAN_TOOLS[package]
        print(f"kit: {binary} is missing and could not be installed; {purpose} will fail "
              f"(install Debian's {package} package)", file=sys.stderr, flush=True)


def main(argv: list[str]) -> int:
    if argv[:1] in (["-h"], ["--help"], ["help"]):
        print(__doc__)
        return 0
    if not argv or argv[0] not in ("verify", "test", "harness"):
        print(__doc__, file=sys.stderr)
        return 2
    ensure_venv()
    command, rest = argv[0], argv[1:]
    if command == "verify" and "--proxy" in rest:
        ensure_debian_tools(("nginx", "chromium"))
        os.environ[REQUIRE_TOOLS] = "1"  # the lane proves the pages in Chromium too: never a skip
        args = ["-m", "harness", "verify", *rest]  # --sites: the harness's own default for the lane (3)
    elif command == "verify":
        chosen = {"--sites", "--site", "--answers"} & {a.split("=", 1)[0] for a in rest}  # the sites are given
        args = ["-m", "harness", "verify", *([] if chosen else ["--sites", "2"]), *rest]
    elif command == "test":
        ensure_debian_tools(tuple(DEBIAN_TOOLS))  # every test runs here: nothing skips for a missing tool
        os.environ[REQUIRE_TOOLS] = "1"
        args = ["-m", "pytest", *([] if any(a.startswith("-n") for a in rest) else ["-n", "auto"]), *rest]
    else:
        args = ["-m", "harness", *rest]
    os.chdir(ROOT)
    os.execv(str(PYTHON), [str(PYTHON), *args])
    return 0  # not reached

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
