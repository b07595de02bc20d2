"""sitekit harness: provision services, render N sites, run them side by side, verify, report."""

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

KIT_ROOT = Path(__file__).resolve().parent.parent


def template_module(relative: str, name: str) -> ModuleType:
    """A standalone module of the site template (``template/<relative>``), imported as ``name``:
    one implementation for generated sites and for the kit."""
    spec = importlib.util.spec_from_file_location(name, KIT_ROOT / "template" / relative)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module
