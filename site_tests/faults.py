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

from harness.identifiers import quote_ident
from harness.state import SiteRecord

from . import db


class Fault:
    def __init__(self, site: SiteRecord, name: str) -> None:
        self.site = site
        self.name = name
        self.trigger, self.counter = quote_ident(name), quote_ident(f"{name}_hits")

    def hits(self) -> int:
        return db.fetchval(self.site, f"SELECT CASE WHEN is_called THEN last_value ELSE 0 END FROM {self.counter}")

    def remove(self) -> None:
        db.execute(
            self.site,
            f"DROP TRIGGER IF EXISTS {self.trigger} ON task; DROP FUNCTION IF EXISTS {self.trigger}(); "
            f"DROP SEQUENCE IF EXISTS {self.counter};",
        )


@contextmanager
def _task_trigger(site: SiteRecord, account_id: str, when: str, message: str) -> Iterator[Fault]:
    owner = uuid.UUID(account_id)  # validated before it goes into DDL
    fault = Fault(site, f"fault_{secrets.token_hex(5)}")
    # The function counts in the sequence named after the trigger that fired it (TG_NAME). Both are the
    # harness's (the administrator's), fired by the site's own role: the function runs as its definer.
    db.execute(
        site,
        f"""
        CREATE SEQUENCE {fault.counter};
        CREATE FUNCTION {fault.trigger}() RETURNS trigger LANGUAGE plpgsql
        SECURITY DEFINER SET search_path = public AS $$
        BEGIN
            PERFORM nextval(quote_ident(TG_NAME || '_hits'));
            RAISE EXCEPTION '{message}';
        END $$;
        CREATE TRIGGER {fault.trigger} BEFORE UPDATE ON task FOR EACH ROW
        WHEN ({when} AND NEW.owner_id = '{owner}')
        EXECUTE FUNCTION {fault.trigger}();
        """,
    )
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
