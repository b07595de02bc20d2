"""The processors this code runs, found at start-up in the site's ``processors`` package.

Every module of that package is imported once, and every ``Processor`` it holds is deployed
(a module may also re-export one from an installed package: that is how one processor package
serves a fleet). The template writes only ``processors/__init__.py`` and the shipped
``text_normalize.py``; an owner's processors live in modules of their own, so ``copier update``
never touches them (docs/processors.md).

A task records its processor's name and version at submit; an executor runs only a
``name@version`` deployed here. Another one is PROCESSOR_UNAVAILABLE at execution and
``reconciling`` when its lease is lost (SPEC §6.4).
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Iterable

from ..settings import SettingsError
from .contract import Processor
from .errors import ExecutionFailure
from .states import ErrorCode

PACKAGE = f"{__package__.rpartition('.')[0]}.processors"


class ProcessorConflict(SettingsError):
    """Two modules declare the same ``name@version``; the site refuses to start, naming both."""


class Registry:
    """The deployed processors by ``(name, version)``."""

    def __init__(self, processors: Iterable[Processor]) -> None:
        self._by_key: dict[tuple[str, int], Processor] = {}
        for found in processors:
            seen = self._by_key.get((found.name, found.version))
            if seen is not None and seen is not found:
                raise ProcessorConflict(f"processor {found.key} is declared twice: in {seen.module} and in "
                                        f"{found.module}; give one of them another name or version")
            self._by_key[(found.name, found.version)] = found

    def known(self, name: str, version: int) -> bool:
        return (name, version) in self._by_key

    def get(self, name: str, version: int) -> Processor:
        """The deployed processor, or PROCESSOR_UNAVAILABLE for an execution of one that is not."""
        try:
            return self._by_key[(name, version)]
        except KeyError:
            raise ExecutionFailure(ErrorCode.PROCESSOR_UNAVAILABLE) from None

    def current(self) -> list[Processor]:
        """What new tasks get: each name at the highest version deployed, by name."""
        newest: dict[str, Processor] = {}
        for found in self._by_key.values():
            if found.name not in newest or found.version > newest[found.name].version:
                newest[found.name] = found
        return [newest[name] for name in sorted(newest)]

    def newest(self, name: str) -> Processor | None:
        return next((found for found in self.current() if found.name == name), None)


def discover(package: str = PACKAGE) -> Registry:
    """Import every module of ``package`` and collect the processors they hold."""
    root = importlib.import_module(package)
    found: list[Processor] = []
    for module_info in sorted(pkgutil.iter_modules(root.__path__, prefix=f"{package}."), key=lambda m: m.name):
        module = importlib.import_module(module_info.name)
        found.extend(value for value in vars(module).values() if isinstance(value, Processor))
    registry = Registry(found)
    if not registry.current():
        raise SettingsError(f"no processor is declared in {package}; the site ships text_normalize.py there")
    return registry


REGISTRY = discover()
