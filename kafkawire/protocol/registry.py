"""Look-up of generated message classes, importing each module only when it is first asked for."""
from __future__ import annotations

import importlib


class Registry:
    """The index of a generated package (``kafkawire.messages.REGISTRY``): message name, module, kind
    ("request", "response", "header", "metadata", "data", coordinator key/value) and API key or
    record type of every schema; each class is imported only when first asked for.
    """
    def __init__(self, package: str, index: list[tuple[str, str, str, int | None]]):
        self.package = package
        self.index = index
        self._by_name = {name: module for name, module, _, _ in index}
        self._by_key: dict[tuple[int, str], str] = {}
        self._classes: dict[str, type] = {}      # name -> class, once imported
        for name, module, kind, api_key in index:
            if api_key is not None:
                self._by_key.setdefault((api_key, kind), name)

    def by_name(self, name: str):
        """The generated class of a message by its schema name (``"FetchRequest"``, ``"TopicRecord"``),
        importing its module on first use. Raises KeyError for a name without a schema.
        """
        cls = self._classes.get(name)
        if cls is not None:      # import_module on every call costs a codec round trip a few percent
            return cls
        module = self._by_name.get(name)
        if module is None:
            raise KeyError(f"no message named {name!r} in {self.package}")
        cls = self._classes[name] = getattr(importlib.import_module(f"{self.package}.{module}"), name)
        return cls

    def by_api_key(self, api_key: int, kind: str):
        """The request or response class of an API key (kind is "request" or "response")."""
        name = self._by_key.get((api_key, kind))
        if name is None:
            raise KeyError(f"no {kind} with API key {api_key} in {self.package}")
        return self.by_name(name)

    def metadata_record(self, api_key: int):
        """The metadata-log record class of a record type (the apiKey of a "metadata" schema)."""
        return self.by_api_key(api_key, "metadata")

    def all_messages(self):
        """Every generated class, in the index's order (this imports all of them)."""
        return [self.by_name(name) for name, _, _, _ in self.index]


# The registry the runtime frames with. kafkawire.messages installs its own when imported; when
# nothing has been installed yet, the first look-up imports it (so importing any module of the
# package is enough to frame and decode: there is no import order to get right). That one import
# goes up the layers on purpose, inside the function, and tests/test_layering.py lists it as
# the one allowed exception: kafkawire.protocol still loads without the generated code, and a
# test or tool may install another registry first.
_installed: Registry | None = None


def install(registry: Registry) -> None:
    """Make ``registry`` the one framing and the API table look messages up in."""
    global _installed
    _installed = registry


def installed() -> Registry:
    """The installed registry; the generated codecs' (kafkawire.messages) when none was installed.

    Raises LookupError only if kafkawire.messages itself cannot be imported.
    """
    if _installed is None:
        _install_generated()
    if _installed is None:
        raise LookupError("no message registry is installed and kafkawire.messages did not install one")
    return _installed


def _install_generated() -> None:
    """Import the generated codecs, which install their registry as they load."""
    from kafkawire import messages  # noqa: F401 - the allowed upward import (see above)
