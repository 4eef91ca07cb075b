"""Reading answers in tests: every error code anywhere in a decoded response."""
from __future__ import annotations


def error_codes(value, *, named_suffix: bool = False) -> set[int]:
    """Every ``error_code`` anywhere in a decoded message (nested structs and arrays too);
    ``named_suffix``: every field whose name ends in ``error_code`` too (PartitionErrorCode,
    TopicConfigErrorCode)."""
    found: set[int] = set()
    if isinstance(value, list):
        for item in value:
            found |= error_codes(item, named_suffix=named_suffix)
    elif hasattr(type(value), "_FIELDS"):
        for f in type(value)._FIELDS:
            item = getattr(value, f.py_name, None)
            is_code = f.py_name.endswith("error_code") if named_suffix else f.py_name == "error_code"
            if is_code and isinstance(item, int):
                found.add(item)
            else:
                found |= error_codes(item, named_suffix=named_suffix)
    return found
