"""The operator console's own errors."""

from __future__ import annotations

from datetime import datetime

from ..errors import RequestError


class AuditRunning(RequestError):
    """An audit of this site is already running (in this web process or another); the answer says
    since when (``startedAt``), so the operator can wait for it instead of starting another."""

    code = "AUDIT_RUNNING"
    status = 409
    default_message = "An audit of this site is already running. Wait for it to finish, then run it again."

    @classmethod
    def since(cls, started_at: datetime | None) -> AuditRunning:
        if started_at is None:
            return cls(startedAt=None)
        return cls(f"An audit of this site has been running since {started_at:%H:%M:%S} UTC. Wait for it to "
                   "finish, then run it again.", startedAt=started_at.isoformat())
