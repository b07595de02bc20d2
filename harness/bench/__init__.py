"""``python -m harness bench``: speed measured side by side in one run, reported as ratios.

run.py drives the phases; loop.py is the closed loop sites and baseline share;
endtoend.py, api.py, listing.py, baseline.py (+ bare_worker.py), naive.py
(+ naive_site.py; both references share reference.py), ceiling.py
(+ commits.py) and normalize_speed.py measure one thing each; measure.py does
the arithmetic, results.py holds the numbers (and their JSON), tables.py prints
them as tables and plot.py draws them.
"""
