"""One maintenance pass and one audit of a site, timed inside the site's own interpreter.

Run as a script by the site's interpreter with the site's environment and folder (the rendered
package is installed there, the harness is not), so only the standard library and the site are
used here; the interpreter's start is left out of both times:

    <site venv>/bin/python history_probe.py --slug alpha

Prints one JSON object: the pass's seconds and rows per step, the audit's seconds and findings.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import json
import time


async def probe(slug: str) -> dict:
    settings = importlib.import_module(f"{slug}.settings").load_settings()
    open_runtime = importlib.import_module(f"{slug}.runtime").open_runtime
    run_once = importlib.import_module(f"{slug}.maintenance").run_once
    run_audit = importlib.import_module(f"{slug}.audit").run_audit
    async with open_runtime(settings) as runtime:
        began = time.perf_counter()
        steps = await run_once(runtime)
        maintenance_s = time.perf_counter() - began
    began = time.perf_counter()
    report = await run_audit(settings)
    audit_s = time.perf_counter() - began
    return {"maintenance_s": round(maintenance_s, 3), "steps": steps, "audit_s": round(audit_s, 3),
            "audit_clean": report.clean, "findings": [f"{f.rule} {f.subject}: {f.detail}" for f in report.findings]}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--slug", required=True)
    args = parser.parse_args()
    print(json.dumps(asyncio.run(probe(args.slug))))


if __name__ == "__main__":
    main()
