"""Rate limits in the database (docs/security.md): fixed-window counters by key, in one table.

``hit`` counts every hit, refused ones too; ``take`` counts a hit only within the limit, for limits
checked one after another. Each caller owns its keys and policy: per-account requests in
``requests``, the sign-in and registration throttles in ``auth.throttle``, both keyed per client
by ``client_key``. ``purge`` is maintenance's.
"""

from .clients import client_key
from .counters import hit, purge, take

__all__ = ["client_key", "hit", "purge", "take"]
