"""What the audit reports: one broken invariant of the site's books per finding.

Each package checks the tables it owns (``files/audit.py``, ``tasks/audit.py``,
``charges/audit.py``); ``audit.py`` runs them all. A rule name is stable: an
operator's script or the harness may match on it.
"""

from __future__ import annotations

import msgspec

# Every rule, with what it means; docs/operations.md lists the same.
RULES: dict[str, str] = {
    "OBJECT_MISSING": "a ready or deleting file whose object is not in the bucket",
    "OBJECT_ORPHANED": "an object under the site's prefix, older than the grace period, that no live file row holds",
    "USAGE_MISMATCH": "an account's storage_usage differs from the bytes of its uploading, ready and deleting files",
    "RESULT_UNREFERENCED": "a ready result file that no task references",
    "PIN_ON_TERMINAL": "an input pin held by a task that has finished",
    "RESULT_MISSING": "a succeeded task whose result file row is missing, unpublished or not its owner's",
    "ATTEMPTS_MISMATCH": "a task whose attempt rows differ from its attempt count",
    "SUCCEEDED_TWICE": "a task with more than one succeeded attempt",
    "HOLD_ON_TERMINAL": "credits held by a finished task that can no longer be retried",
    "BALANCE_MISMATCH": "an account's credit balance differs from the sum of its ledger",
}

BATCH = 500  # rows per statement: memory and statement time stay flat on large tables


class Finding(msgspec.Struct, frozen=True):
    rule: str
    subject: str  # what is broken: "file <id>", "object <key>", "task <id>", "account <id>"
    detail: str

    def __post_init__(self) -> None:
        if self.rule not in RULES:
            raise ValueError(f"unknown audit rule {self.rule!r}")

    def line(self) -> str:
        return f"{self.rule} {self.subject}: {self.detail}"
