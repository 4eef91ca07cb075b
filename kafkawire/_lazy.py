"""Lazy package attributes: a package names what it exports, and each name's module is imported
only when the name is first used (PEP 562's module ``__getattr__``).

``import kafkawire`` or ``import kafkawire.capture`` stays cheap this way (no codecs, no dpkt),
while ``kafkawire.read_capture`` still works without importing anything else first.
"""
from __future__ import annotations

import importlib


def lazy_exports(package: str, table: dict[str, str]):
    """``(__getattr__, __dir__)`` for ``package`` whose public ``name`` is ``table[name]``:
    ``"module:attribute"``, or ``"module"`` for a module itself (module names relative to the
    package when they start with a dot).

    The ``__getattr__`` caches each value in the package's namespace, so it runs once per name;
    an unknown name raises AttributeError as for any module.
    """

    def __getattr__(name: str):
        target = table.get(name)
        if target is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        module_name, _, attribute = target.partition(":")
        module = importlib.import_module(module_name, package)
        value = getattr(module, attribute) if attribute else module
        setattr(importlib.import_module(package), name, value)
        return value

    def __dir__():
        return sorted(set(vars(importlib.import_module(package))) | set(table))

    return __getattr__, __dir__
