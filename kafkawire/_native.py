"""Whether kafkawire runs its hot paths natively or in pure Python, for ``kafkawire --version``.

There is no native path yet: everything is pure Python. A native path reports itself here, so
``--version`` (and a bug report quoting it) says which path ran.
"""
from __future__ import annotations

__all__ = ["status"]


def status() -> str:
    """'pure Python', or the native path's name once there is one."""
    return "pure Python"
