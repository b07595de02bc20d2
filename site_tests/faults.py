"""Faults injected from outside a site: triggers in its own temporary database.

Each fault is scoped to one account, so it disturbs only the test that made
it. A sequence counts how often the fault fired: sequences are not rolled
back with the failing transaction, so the count survives the error the
trigger raises.
"""

from __future__ import annotations

import secrets
import uuid
from collections.abc import Iterator
from contextlib import contextmanager

from harness.state import SiteRecord

from . import db


class Fault:
    def __init__(self, site: SiteRecord, name: str) -> None:
        self.site = site
        self.name = name

    def hits(self) -> int:
        return db.fetchval(self.site, f"SELECT CASE WHEN is_called THEN last_value ELSE 0 END FROM {self.name}_hits")

    def remove(self) -> None:
        db.execute(
            self.site,
            f"DROP TRIGGER IF EXISTS {self.name} ON task; DROP FUNCTION IF EXISTS {self.name}(); "
            f"DROP SEQUENCE IF EXISTS {self.name}_hits;",
        )


@contextmanager
def _task_trigger(site: SiteRecord, account_id: str, when: str, message: str) -> Iterator[Fault]:
    owner = uuid.UUID(account_id)  # validated before it goes into DDL
    name = f"fault_{secrets.token_hex(5)}"
    db.execute(
        site,
        f"""
        CREATE SEQUENCE {name}_hits;
        CREATE FUNCTION {name}() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            PERFORM nextval('{name}_hits');
            RAISE EXCEPTION '{message}';
        END $$;
        CREATE TRIGGER {name} BEFORE UPDATE ON task FOR EACH ROW
        WHEN ({when} AND NEW.owner_id = '{owner}')
        EXECUTE FUNCTION {name}();
        """,
    )
    fault = Fault(site, name)
    try:
        yield fault
    finally:
        fault.remove()


def refuse_claims(site: SiteRecord, account_id: str):
    """Every claim of this account's tasks fails (the worker sees a database error)."""
    return _task_trigger(site, account_id, "NEW.status = 'running' AND OLD.status <> 'running'",
                         "injected fault: claim refused")


def refuse_publish(site: SiteRecord, account_id: str):
    """Claims work, but publishing a success fails: the executor loses the task, its lease runs out."""
    return _task_trigger(site, account_id, "NEW.status = 'succeeded' AND OLD.status = 'running'",
                         "injected fault: publish refused")
