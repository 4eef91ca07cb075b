"""Reading answers in tests: every error code anywhere in a decoded response."""
from __future__ import annotations


def error_codes(value) -> set[int]:
    """Every ``error_code`` anywhere in a decoded message (nested structs and arrays too)."""
    found: set[int] = set()
    if isinstance(value, list):
        for item in value:
            found |= error_codes(item)
    elif hasattr(type(value), "_FIELDS"):
        for f in type(value)._FIELDS:
            item = getattr(value, f.py_name, None)
            if f.py_name == "error_code" and isinstance(item, int):
                found.add(item)
            else:
                found |= error_codes(item)
    return found
