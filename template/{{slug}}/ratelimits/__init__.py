"""Rate limits in the database (docs/security.md): fixed-window counters by key, in one table.

``hit`` counts; each caller owns its keys and policy: per-account requests in ``requests``, the
sign-in and registration throttles in ``auth.throttle``. ``purge`` is maintenance's.
"""

from .counters import hit, purge

__all__ = ["hit", "purge"]
