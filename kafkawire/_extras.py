"""The optional features and the extras that bring them (pyproject.toml, [project.optional-dependencies]).

``pip install kafkawire`` installs only what the protocol, the log, KRaft and the main job need.
A feature that needs more imports its package through :func:`require` where it is used, so a
missing package is one clear error naming the extra to install, never an ImportError from deep
inside:

    reading pcap files needs dpkt: pip install 'kafkawire[pcap]'

tests/test_packaging.py checks that every ``require`` call names an extra that pyproject.toml
declares with the package's distribution in it.
"""
from __future__ import annotations

import importlib
from types import ModuleType

__all__ = ["MissingExtra", "require", "lazy_module", "DISTRIBUTIONS"]

# The distribution (what pip installs) of a top-level module, where the two names differ.
DISTRIBUTIONS = {"kafka": "kafka-python"}


class MissingExtra(ImportError):
    """An optional feature is used without its package; the message names the extra to install."""

    def __init__(self, module: str, extra: str, feature: str):
        self.extra = extra
        self.feature = feature
        distribution = DISTRIBUTIONS.get(module.partition(".")[0], module.partition(".")[0])
        super().__init__(f"{feature} needs {distribution}: pip install 'kafkawire[{extra}]'", name=module)


def require(module: str, extra: str, feature: str) -> ModuleType:
    """Import ``module`` for ``feature``; raise MissingExtra naming ``extra`` when it is not installed.

    Only the absence of the module itself (or of its top-level package) becomes MissingExtra: an
    installed package that fails to import for another reason is a broken install, and its own
    error says more than ours would."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        missing = exc.name or ""
        if missing and (module == missing or module.startswith(missing + ".")):
            raise MissingExtra(module, extra, feature) from None
        raise


class _LazyModule(ModuleType):
    """Stands for an optional module until its first attribute is read, which imports it through
    require(): a module can then name the package at its top and still be imported without it."""

    def __init__(self, module: str, extra: str, feature: str):
        super().__init__(module)
        self._kafkawire_wants = (module, extra, feature)

    def __getattr__(self, name: str):
        real = require(*self._kafkawire_wants)
        # later reads find the module's names here, without coming back through __getattr__
        self.__dict__.update({k: v for k, v in vars(real).items() if not k.startswith("__")})
        return getattr(real, name)


def lazy_module(module: str, extra: str, feature: str) -> ModuleType:
    """``module``, imported when first used; MissingExtra naming ``extra`` then if it is absent."""
    return _LazyModule(module, extra, feature)
