"""What a processor is: the declaration a site owner writes, and how the lifecycle runs one.

A processor turns an input file's bytes into a result's bytes. It declares everything the
lifecycle needs to treat it like any other (SPEC §6.0): its params Struct (the API validates
``params`` against it), the input types it accepts, its result's name and content type, an upper
bound of its output size (the claim reserves that much quota), the errors of its own that are
worth retrying, and a time limit the execution lease covers. The lifecycle itself — submit,
delivery, claim, leases, budget, cancel, dead letters, charges — is the same for every processor.

An owner declares one with the ``processor`` decorator in a module of the site's ``processors``
package (docs/processors.md)::

    @processor(name="word-count", version=1, title="Word count", params=NoParams,
               accepts=("text/plain",), result_type="application/json",
               result_name=lambda name: f"{name}.words.json", max_output=OutputBound(times_input=0, plus_bytes=64))
    def word_count(data: bytes, params: NoParams) -> bytes: ...
"""

from __future__ import annotations

import asyncio
import inspect
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import msgspec

from ..files.names import MAX_NAME_CHARS, clean_name
from ..settings import SettingsError
from .errors import ExecutionFailure
from .states import ErrorCode

NAME = re.compile(r"^[a-z][a-z0-9-]{0,62}$")
CONTENT_TYPE = re.compile(r"^[a-z0-9!#$&^_.+-]+/[a-z0-9!#$&^_.+-]+$")
# The execution lease is 120 s: reading the input and writing the result take up to 15 s each,
# so a processor's own time limit fits the rest with a margin.
MAX_TIME_LIMIT_SECONDS = 85
# A plain function's input below its ``inline_below_bytes`` runs on the worker's event loop, which
# nothing else runs on meanwhile: the bound keeps that stall short whatever a processor declares.
MAX_INLINE_BYTES = 1 << 20


class NoParams(msgspec.Struct, forbid_unknown_fields=True, frozen=True):
    """The params of a processor that takes none: ``{}``."""


class InputRejected(Exception):
    """Raised by a processor whose input is not something it can process (INPUT_INVALID, final).

    Its message is never shown or stored: the owner sees the stable code and its words."""


class ProcessorDeclarationError(SettingsError):
    """A processor's declaration is invalid; the site refuses to start, naming it."""


Function = Callable[[bytes, Any], bytes | Awaitable[bytes]]


@dataclass(frozen=True)
class OutputBound:
    """The most bytes a processor's output takes for an input of ``n`` bytes:
    ``times_input * n + plus_bytes``. Linear, so the database computes it in the submit's own
    call, for the input it locks there (tasks/submission.py)."""

    times_input: int = 1
    plus_bytes: int = 0

    def for_input(self, size: int) -> int:
        return self.times_input * size + self.plus_bytes


@dataclass(frozen=True)
class Processor:
    """One deployed ``name@version``. Build it with the ``processor`` decorator."""

    name: str
    version: int
    title: str
    params: type[msgspec.Struct]
    accepts: tuple[str, ...]
    result_type: str | None  # None: the input's own type
    result_name: Callable[[str], str]
    max_output: OutputBound
    retry_on: tuple[type[BaseException], ...]
    time_limit_seconds: float
    function: Function
    module: str
    inline_below_bytes: int = 0

    @property
    def key(self) -> str:
        """``name@version``: how prices and the console name it."""
        return f"{self.name}@{self.version}"

    def accepts_type(self, content_type: str) -> bool:
        return content_type in self.accepts

    def output_bound(self, input_size: int, largest_file: int) -> int:
        """The quota a claim reserves for the result: the declared bound, never above a file's limit."""
        return min(self.max_output.for_input(input_size), largest_file)

    def result_file(self, input_name: str, input_type: str) -> tuple[str, str]:
        """The result's name (within the files' name limit) and content type."""
        try:
            name = clean_name(str(self.result_name(input_name))[:MAX_NAME_CHARS])
        except Exception:  # a name the files cannot hold (or a failing name function): still a result
            name = "result"
        return name, self.result_type or input_type

    def parse_params(self, stored: Any) -> msgspec.Struct:
        """The params as the submit validated them; stored ones that no longer fit are INPUT_INVALID."""
        try:
            return msgspec.convert(stored, self.params)
        except msgspec.ValidationError:
            raise ExecutionFailure(ErrorCode.INPUT_INVALID) from None

    async def run(self, data: bytes, params: msgspec.Struct) -> bytes:
        """Run the function within its time limit, its errors mapped onto the lifecycle's classes.

        A synchronous function runs in a thread, so the worker's event loop (and every other
        task's lease) keeps going. A thread cannot be stopped: one past its limit runs on, and
        its output is discarded. An input smaller than ``inline_below_bytes`` is the exception: the
        function runs on the loop, where its quick work costs less than a thread's hop would.
        """
        try:
            if len(data) < self.inline_below_bytes:  # a plain function: the declaration says so
                output = self.function(data, params)
            else:
                if inspect.iscoroutinefunction(self.function):
                    call = self.function(data, params)
                else:
                    call = asyncio.to_thread(self.function, data, params)
                output = await asyncio.wait_for(call, self.time_limit_seconds)
        except ExecutionFailure:
            raise
        except InputRejected:
            raise ExecutionFailure(ErrorCode.INPUT_INVALID) from None
        except TimeoutError:
            raise ExecutionFailure(ErrorCode.PROCESSOR_TIMEOUT) from None
        except self.retry_on:
            raise ExecutionFailure(ErrorCode.SERVICE_UNAVAILABLE) from None
        except Exception:
            raise ExecutionFailure(ErrorCode.PROCESSOR_FAILED) from None
        if not isinstance(output, bytes | bytearray):
            raise ExecutionFailure(ErrorCode.PROCESSOR_FAILED)
        return bytes(output)


def processor(*, name: str, version: int, title: str, params: type[msgspec.Struct] = NoParams,
              accepts: tuple[str, ...] = ("text/plain",), result_type: str | None = None,
              result_name: Callable[[str], str], max_output: OutputBound,
              retry_on: tuple[type[BaseException], ...] = (), time_limit_seconds: float = 60,
              inline_below_bytes: int = 0) -> Callable[[Function], Processor]:
    """Declare a processor; the decorated function becomes a ``Processor`` the registry finds.

    ``inline_below_bytes``: a plain function whose input is smaller runs on the worker's event loop
    instead of in a thread (at most ``MAX_INLINE_BYTES``). Only for work that is quick and bounded
    by the input's size: meanwhile no other task of the worker moves, and the time limit cannot
    stop it."""

    def declare(function: Function) -> Processor:
        where = f"{function.__module__}.{function.__qualname__}"
        if not NAME.match(name):
            raise ProcessorDeclarationError(f"{where}: name {name!r} must match {NAME.pattern}")
        if not isinstance(version, int) or not 1 <= version <= 999_999:
            raise ProcessorDeclarationError(f"{where}: version must be an integer from 1 to 999999")
        if not (isinstance(params, type) and issubclass(params, msgspec.Struct)):
            raise ProcessorDeclarationError(f"{where}: params must be a msgspec Struct")
        if not accepts or not all(CONTENT_TYPE.match(kind) for kind in accepts):
            raise ProcessorDeclarationError(f"{where}: accepts must list content types such as 'text/plain'")
        if result_type is not None and not CONTENT_TYPE.match(result_type):
            raise ProcessorDeclarationError(f"{where}: result_type {result_type!r} is not a content type")
        if not (isinstance(max_output, OutputBound) and isinstance(max_output.times_input, int)
                and isinstance(max_output.plus_bytes, int) and max_output.times_input >= 0
                and max_output.plus_bytes >= 0):
            raise ProcessorDeclarationError(f"{where}: max_output must be an OutputBound of integers from 0")
        if not 0 < time_limit_seconds <= MAX_TIME_LIMIT_SECONDS:
            raise ProcessorDeclarationError(
                f"{where}: time_limit_seconds must be above 0 and at most {MAX_TIME_LIMIT_SECONDS}")
        if any(not (isinstance(kind, type) and issubclass(kind, Exception)) for kind in retry_on):
            raise ProcessorDeclarationError(f"{where}: retry_on must list exception classes")
        if not (type(inline_below_bytes) is int and 0 <= inline_below_bytes <= MAX_INLINE_BYTES):
            raise ProcessorDeclarationError(
                f"{where}: inline_below_bytes must be an integer from 0 to {MAX_INLINE_BYTES}")
        if inline_below_bytes and inspect.iscoroutinefunction(function):
            raise ProcessorDeclarationError(f"{where}: inline_below_bytes is for a plain function (an async one "
                                            "always runs on the event loop)")
        return Processor(name=name, version=version, title=title, params=params, accepts=tuple(accepts),
                         result_type=result_type, result_name=result_name, max_output=max_output,
                         retry_on=tuple(retry_on), time_limit_seconds=float(time_limit_seconds),
                         function=function, module=function.__module__, inline_below_bytes=inline_below_bytes)

    return declare
