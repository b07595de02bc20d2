"""The tasks package's statements (``queries.sql``), loaded once for all its modules."""

from __future__ import annotations

from ..db.queries import Queries

Q = Queries.load(__package__)
