"""The check's and the summary's walks over decoded frames, without the JSON form (issue 26).

``check.first_bad_batch`` and ``tools.pcap``'s error codes read every field of every decoded
message (the latter through ``to_json``, which base64-encodes every records field). Here each
(message class, version) gets once the short list of fields that can lead to a records field or
to an ``errorCode``, and only those are read. A records field's batches are checked by the C
extension's ``check_records`` (the record parser's verdict, no record objects); a field it does
not call sound is read again by ``check.batch_problem``, whose words the report keeps, so both
paths always report the same thing.
"""
from __future__ import annotations

from functools import lru_cache

from kafkawire import _native
from kafkawire.protocol.message import tagged_value_is_default
from kafkawire.records import RecordBatch, iter_batches
from kafkawire.records.layout import TIMESTAMP_TYPE_MASK

from .check import batch_problem

__all__ = ["first_bad_batch_fast", "body_error_codes"]


def _leads_to(cls, version: int, wanted, seen: frozenset = frozenset()) -> tuple:
    """(field, plan of its struct or None, tagged in version) of the fields of cls present in
    version that are wanted themselves or hold, in their structs, fields that are."""
    plan = []
    for f in cls._FIELDS:
        if not f.present(version):
            continue
        if wanted(f):
            plan.append((f, None, f.tagged_in(version)))
        elif f.struct is not None and f.struct not in seen and (f.kind == "struct" or f.element == "struct"):
            inner = _leads_to(f.struct, version, wanted, seen | {cls})
            if inner:
                plan.append((f, inner, f.tagged_in(version)))
    return tuple(plan)


@lru_cache(maxsize=None)
def _records_plan(cls, version: int) -> tuple:
    return _leads_to(cls, version, lambda f: f.kind == "records")


@lru_cache(maxsize=None)
def _error_code_plan(cls, version: int) -> tuple:
    return _leads_to(cls, version, lambda f: f.json_name == "errorCode")


def _records_fields(obj, plan, path: str):
    """check._records_fields, along the plan: (dotted path, bytes) of every non-null records field."""
    for f, inner, _ in plan:
        value = getattr(obj, f.py_name)
        if value is None:
            continue
        if inner is None:
            yield f"{path}.{f.name}", value
        elif f.kind == "struct":
            yield from _records_fields(value, inner, f"{path}.{f.name}")
        else:
            for i, item in enumerate(value):
                yield from _records_fields(item, inner, f"{path}.{f.name}[{i}]")


def _sound(data) -> bool:
    """Whether every batch in data reads whole (the CRC, the records) on the fast way; False
    when one does not or is of a kind the fast way leaves to check.batch_problem."""
    check = _native.records.check_records if _native.records is not None else None
    try:
        for batch in iter_batches(data):
            if check is None or type(batch) is not RecordBatch or batch.is_control:
                return False
            records, start, end, count, _ = batch.records_range()
            if count and check(records, start, end, count, batch.base_offset, batch.base_timestamp,
                               batch.max_timestamp if batch.attributes & TIMESTAMP_TYPE_MASK else None) is not None:
                return False
    except Exception:                # a corrupt batch: check.batch_problem words it
        return False
    return True


def first_bad_batch_fast(body, version: int, name: str) -> str | None:
    """check.first_bad_batch's answer, reading only the records fields and no record objects."""
    for path, data in _records_fields(body, _records_plan(type(body), version), name):
        if not _sound(data):
            problem = batch_problem(path, data)
            if problem:
                return problem
    return None


def body_error_codes(obj, version: int) -> list[int]:
    """check.error_codes(obj.to_json(version)), without the JSON: the non-zero error codes anywhere
    in a decoded message (a tagged field at its default is left out, as to_json leaves it)."""
    found: list[int] = []
    _error_codes(obj, _error_code_plan(type(obj), version), version, found)
    return found


def _error_codes(obj, plan, version: int, found: list) -> None:
    for f, inner, tagged in plan:
        value = getattr(obj, f.py_name)
        if value is None or (tagged and tagged_value_is_default(f, value)):
            continue
        if inner is None:
            if isinstance(value, int) and value:
                found.append(value)
        elif f.kind == "struct":
            _error_codes(value, inner, version, found)
        elif len(inner) == 1 and inner[0][1] is None and not inner[0][2]:
            name = inner[0][0].py_name           # structs whose only error-bearing field is their own errorCode
            found += [code for item in value if isinstance(code := getattr(item, name), int) and code]
        else:
            for item in value:
                _error_codes(item, inner, version, found)
