"""The site's processors: every module in this package is imported at start-up, and every
processor it declares is deployed (``tasks/registry.py``).

Add yours as a module of its own here (docs/processors.md): the template writes only this file
and ``text_normalize.py``, so ``copier update`` never conflicts with your modules.
"""
