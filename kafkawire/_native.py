"""Which data path runs: the native one (a C extension) or the pure-Python one (issue 26).

The C extension (``kafkawire._native_records``) is optional: ``pip install`` builds
it when a C compiler and the Python headers are there and installs without it otherwise.
The pure-Python code does everything it does and is its oracle (the tests require both to
give the same records, bytes and errors). ``KAFKAWIRE_PURE=1`` forces the pure path;
``KAFKAWIRE_REQUIRE_NATIVE=1`` makes a missing extension an ImportError (for CI legs that
must test the native path, not silently the pure one).
"""
from __future__ import annotations

import os
import warnings
from types import ModuleType

from ._native_digest import source_digest

__all__ = ["status", "records", "native_codecs", "FORCED_PURE", "NativeUnavailableWarning"]


class NativeUnavailableWarning(RuntimeWarning):
    """The C extension is not built: kafkawire runs its pure-Python path (slower, same results)."""

FORCED_PURE = os.environ.get("KAFKAWIRE_PURE", "") not in ("", "0")


def _load() -> ModuleType | None:
    if FORCED_PURE:
        return None
    try:
        from kafkawire import _native_records
    except ImportError:
        if os.environ.get("KAFKAWIRE_REQUIRE_NATIVE", "") not in ("", "0"):
            raise
        # Said once per process (pip hides the build's warning): set KAFKAWIRE_PURE=1 to silence it.
        warnings.warn("kafkawire's C extension is not built (no C compiler at install?): running the "
                      "pure-Python record path, same results, slower", NativeUnavailableWarning, stacklevel=2)
        return None
    built_from, beside = getattr(_native_records, "SOURCE_DIGEST", ""), source_digest()
    if beside is not None and built_from != beside:
        message = ("kafkawire's C extension was built from other sources than the ones beside it (rebuild it: "
                   "pip install -e . or python setup.py build_ext --inplace): running the pure-Python record "
                   "path, same results, slower")
        if os.environ.get("KAFKAWIRE_REQUIRE_NATIVE", "") not in ("", "0"):
            raise ImportError(message)
        warnings.warn(message, NativeUnavailableWarning, stacklevel=2)
        return None
    return _native_records


records: ModuleType | None = _load()
"""The native record-batch module, or None when the pure path runs."""


_CODEC_NAMES = {1: "gzip", 2: "snappy", 3: "lz4", 4: "zstd"}


def native_codecs() -> tuple[int, ...]:
    """The compression codecs (Kafka's ids) the C extension decompresses: those whose library
    the build found (setup.py); the others are decompressed in Python."""
    return tuple(getattr(records, "CODECS", ())) if records is not None else ()


def status() -> str:
    """"native (C extension; codecs in C: gzip, snappy, lz4, zstd)" when the native record path
    is in use (naming the codecs it decompresses, "none" when the build found no library),
    else "pure Python" (no extension built, or KAFKAWIRE_PURE=1)."""
    if records is None:
        return "pure Python"
    return f"native (C extension; codecs in C: {', '.join(_CODEC_NAMES[c] for c in native_codecs()) or 'none'})"
