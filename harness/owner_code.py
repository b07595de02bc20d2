"""The code a site's owner adds, as docs/processors.md tells them to: its worked example.

The harness adds it to every site it renders, so the run proves the documented processor
deploys and runs beside the shipped one (site_tests/test_processors.py, and the fault campaign's
mixed load), and the kit's tests add it the same way before a ``copier update``. The code comes
from the document's own blocks: what the docs say is what is tested.
"""

from __future__ import annotations

import re
from pathlib import Path

from . import KIT_ROOT

DOC = KIT_ROOT / "docs" / "processors.md"
NAME = "word-count"
_BLOCK = re.compile(r"```python\n(.*?)```", re.DOTALL)


class DocumentedCodeError(RuntimeError):
    """docs/processors.md no longer has the blocks the harness adds."""


def documented_files(slug: str, doc: Path = DOC) -> dict[str, str]:
    """The files the worked example has the owner create, by path inside the site."""
    blocks = _BLOCK.findall(doc.read_text(encoding="utf-8"))
    if len(blocks) < 2:
        raise DocumentedCodeError(f"{doc}: expected the processor's module and its test as python blocks")
    return {
        f"{slug}/processors/word_count.py": blocks[0],
        "tests/test_word_count.py": blocks[1].replace("{package}", slug),
    }


def add_documented_processor(site_dir: Path, slug: str) -> list[str]:
    """Create the worked example's files in a rendered site; returns their paths."""
    written = []
    for relative, text in documented_files(slug).items():
        target = site_dir / relative
        if target.exists():
            raise DocumentedCodeError(f"{target} exists already: the template must never write it")
        target.write_text(text, encoding="utf-8")
        written.append(relative)
    return written
