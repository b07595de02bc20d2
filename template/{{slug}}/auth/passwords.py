"""Password hashing with argon2id, off the event loop and at most one hash per core at a time.

Each hash takes 64 MiB and tens of milliseconds of a core. Its own thread pool
queues a flood of registrations or logins instead of letting them take every
core and the default executor from the rest of the site: one core is left to
the event loop that answers everyone else.
"""

from __future__ import annotations

import asyncio
import os
from concurrent.futures import ThreadPoolExecutor

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError

_hasher = PasswordHasher()
_hashing = ThreadPoolExecutor(max_workers=max(1, len(os.sched_getaffinity(0)) - 1), thread_name_prefix="argon2")

# Verifying against this for unknown emails makes a failed login take as long
# whether or not the account exists.
_DUMMY_HASH = _hasher.hash("sitekit dummy password for unknown accounts")


async def _in_hashing_pool(work, *args):
    return await asyncio.get_running_loop().run_in_executor(_hashing, work, *args)


async def hash_password(password: str) -> str:
    return await _in_hashing_pool(_hasher.hash, password)


async def verify_password(password_hash: str | None, password: str) -> bool:
    def check() -> bool:
        try:
            return _hasher.verify(password_hash or _DUMMY_HASH, password) and password_hash is not None
        except (VerificationError, InvalidHashError):
            return False

    return await _in_hashing_pool(check)
