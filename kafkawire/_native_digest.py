"""The digest of the C extension's sources (kafkawire/_native_src), stamped into the extension
when setup.py builds it (``SOURCE_DIGEST``) and compared by kafkawire._native when it loads it:
an extension built from other sources (a checkout updated without a rebuild) is not used, since
its functions may not match the Python code that calls them. Imports nothing of kafkawire, so
that setup.py can load it before kafkawire is built."""
from __future__ import annotations

import hashlib
import os

__all__ = ["SOURCE_DIR", "source_digest"]

SOURCE_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_native_src")


def source_digest(directory: str = SOURCE_DIR) -> str | None:
    """A hex digest of every ``.c`` and ``.h`` file of ``directory`` (names and contents, in name
    order); None when there are none (an installed wheel carries the extension, not its sources)."""
    try:
        names = sorted(n for n in os.listdir(directory) if n.endswith((".c", ".h")))
    except OSError:
        return None
    if not names:
        return None
    digest = hashlib.sha256()
    for name in names:
        with open(os.path.join(directory, name), "rb") as f:
            data = f.read()
        digest.update(f"{name}\0{len(data)}\0".encode())
        digest.update(data)
    return digest.hexdigest()[:16]
