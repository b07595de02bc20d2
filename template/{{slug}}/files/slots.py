"""Upload slots: how many bodies one web process receives at once, and how many of them one account may hold.

A slot is taken before a byte of the body is read and held until the object is stored, so at
most ``[files] concurrent_uploads`` temporary files exist per process, whatever storage's
speed. One account holds at most half of them (at least one): its stalled or slow bodies
can never take every slot and refuse everyone else until ``receive_seconds`` ends them.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from uuid import UUID

from .errors import UploadsBusy

ACCOUNT_SHARE = 2  # an account holds at most 1/ACCOUNT_SHARE of the process's slots


class UploadSlots:
    """The slots of one web process. Taking one never waits: no slot answers 503 BUSY at once."""

    def __init__(self, total: int) -> None:
        self.total = total
        self.per_account = max(1, total // ACCOUNT_SHARE)
        self._taken = 0
        self._by_account: Counter[UUID] = Counter()

    @contextmanager
    def take(self, account_id: UUID) -> Iterator[None]:
        # No await between the check and the count: one event loop, so no other request slips in.
        if self._taken >= self.total or self._by_account[account_id] >= self.per_account:
            raise UploadsBusy()
        self._taken += 1
        self._by_account[account_id] += 1
        try:
            yield
        finally:
            self._taken -= 1
            self._by_account[account_id] -= 1
            if not self._by_account[account_id]:
                del self._by_account[account_id]
