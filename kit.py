#!/usr/bin/env python3
"""Bootstrap for a fresh machine with only Python: make ``.venv``, install the kit, run a command.

    python3 kit.py verify [ARGS]   # python -m harness verify --sites 2 [ARGS]
    python3 kit.py test [ARGS]     # python -m pytest -n auto [ARGS]
    python3 kit.py harness ARGS    # python -m harness ARGS (up, down, report, bench, ...)

Standard library only. The virtualenv is reinstalled when pyproject.toml changes.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent
VENV = ROOT / ".venv"
PYTHON = VENV / "bin" / "python"
STAMP = VENV / ".sitekit-installed"


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


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in ("verify", "test", "harness"):
        print(__doc__, file=sys.stderr)
        return 2
    ensure_venv()
    command, rest = argv[0], argv[1:]
    if command == "verify":
        args = ["-m", "harness", "verify", *([] if "--sites" in rest else ["--sites", "2"]), *rest]
    elif command == "test":
        args = ["-m", "pytest", *([] if any(a.startswith("-n") for a in rest) else ["-n", "auto"]), *rest]
    else:
        args = ["-m", "harness", *rest]
    os.chdir(ROOT)
    os.execv(str(PYTHON), [str(PYTHON), *args])
    return 0  # not reached


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
