#!/usr/bin/env python3
"""Bootstrap for a fresh machine with only Python: make ``.venv``, install the kit, run a command.

    python3 kit.py verify [ARGS]   # python -m harness verify --sites 2 [ARGS]
    python3 kit.py verify --proxy  # the production lane: 3 sites behind nginx over https (installs nginx, Chromium)
    python3 kit.py test [ARGS]     # python -m pytest -n auto [ARGS] (installs Chromium first where it can)
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
CHROMIUM = Path("/usr/bin/chromium")
NGINX = Path("/usr/sbin/nginx")


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


def ensure_debian_package(package: str, binary: Path, purpose: str) -> None:
    """Install a Debian package when its binary is missing and this machine can (root with apt-get);
    otherwise say what is missing."""
    if binary.exists():
        return
    if os.geteuid() == 0 and shutil.which("apt-get"):
        print(f"kit: installing {package} for {purpose} (apt-get install {package})", flush=True)
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        quiet = {"stdout": subprocess.DEVNULL, "env": env, "check": False}
        if subprocess.run(["apt-get", "install", "-y", "-q", package], **quiet).returncode != 0:
            subprocess.run(["apt-get", "update", "-q"], **quiet)
            subprocess.run(["apt-get", "install", "-y", "-q", package], **quiet)
    if not binary.exists():
        print(f"kit: {binary} is missing and could not be installed; {purpose} will fail "
              f"(install Debian's {package} package)", file=sys.stderr, flush=True)


def ensure_chromium() -> None:
    """The page tests drive Debian's Chromium (playwright never downloads a browser)."""
    ensure_debian_package("chromium", CHROMIUM, "the page tests")


def ensure_nginx() -> None:
    """The production lane (verify --proxy) puts Debian's nginx in front of the sites. Only its
    binary is used, run by the harness with its own configuration; a system nginx the package may
    have started is neither needed nor touched."""
    ensure_debian_package("nginx", NGINX, "verify --proxy")


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in ("verify", "test", "harness"):
        print(__doc__, file=sys.stderr)
        return 2
    ensure_venv()
    command, rest = argv[0], argv[1:]
    if command == "verify" and "--proxy" in rest:
        ensure_nginx()
        ensure_chromium()
        os.environ["SITEKIT_REQUIRE_BROWSER"] = "1"  # the lane proves the pages in Chromium too: never a skip
        args = ["-m", "harness", "verify", *rest]  # --sites: the harness's own default for the lane (3)
    elif command == "verify":
        chosen = {"--sites", "--site", "--answers"} & {a.split("=", 1)[0] for a in rest}  # the sites are given
        args = ["-m", "harness", "verify", *([] if chosen else ["--sites", "2"]), *rest]
    elif command == "test":
        ensure_chromium()
        os.environ["SITEKIT_REQUIRE_BROWSER"] = "1"  # in the test command a missing browser fails, not skips
        args = ["-m", "pytest", *([] if any(a.startswith("-n") for a in rest) else ["-n", "auto"]), *rest]
    else:
        args = ["-m", "harness", *rest]
    os.chdir(ROOT)
    os.execv(str(PYTHON), [str(PYTHON), *args])
    return 0  # not reached


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
