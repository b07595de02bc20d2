"""Maintenance passes and one audit of a site, timed inside the site's own interpreter.

Run as a script by the site's interpreter with the site's environment and folder (the rendered
package is installed there, the harness is not), so only the standard library and the site are
used here; the interpreter's start is left out of both times:

    <site venv>/bin/python history_probe.py --slug alpha

Prints one JSON object: the first pass's seconds, the median of three passes after it, the rows
each step found in the last, each step's seconds when run once more on its own, the audit's
seconds and findings.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import json
import statistics
import time

PASSES = 4  # the first, then three whose median is the pass's time


async def probe(slug: str) -> dict:
    settings = importlib.import_module(f"{slug}.settings").load_settings()
    open_runtime = importlib.import_module(f"{slug}.runtime").open_runtime
    maintenance = importlib.import_module(f"{slug}.maintenance")
    run_audit = importlib.import_module(f"{slug}.audit").run_audit
    async with open_runtime(settings) as runtime:
        # The first pass also opens the pool's connections and prepares every statement: timed apart.
        passes = []
        for _ in range(PASSES):
            began = time.perf_counter()
            steps = await maintenance.run_once(runtime)
            passes.append(time.perf_counter() - began)
        # Where a pass spends its time: each step once more on its own (finding what the pass left).
        step_s = {}
        for name, step, _, _ in maintenance.STEPS:
            began = time.perf_counter()
            try:
                await step(runtime, maintenance.BATCH)
            except Exception as error:  # the pass above logged it; the time is still the step's
                step_s[name + " (failed: " + type(error).__name__ + ")"] = round(time.perf_counter() - began, 3)
                continue
            step_s[name] = round(time.perf_counter() - began, 3)
    began = time.perf_counter()
    report = await run_audit(settings)
    audit_s = time.perf_counter() - began
    return {"first_pass_s": round(passes[0], 3), "maintenance_s": round(statistics.median(passes[1:]), 3),
            "steps": steps, "step_s": step_s, "audit_s": round(audit_s, 3),
            "audit_clean": report.clean, "findings": [f"{f.rule} {f.subject}: {f.detail}" for f in report.findings]}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--slug", required=True)
    args = parser.parse_args()
    print(json.dumps(asyncio.run(probe(args.slug))))


if __name__ == "__main__":
    main()
