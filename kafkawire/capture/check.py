"""Conformance: a decoded frame, encoded again, must give back the captured bytes exactly."""
from __future__ import annotations

from kafkawire import messages
from kafkawire.protocol import framing
from kafkawire.protocol.errors import DecodeError

from .kafka import Frame
from kafkawire.records import iter_batches


def check_frame(f: Frame, bad_batch=None) -> None:
    """Set f.check to "identical" or "differs" (with f.difference); frames not decoded are left alone.
    ``bad_batch`` is first_bad_batch or a function that gives what it gives, faster."""
    if f.status == "bad":
        f.check, f.difference = "differs", f.problem
        return
    if f.status != "decoded":
        return
    try:
        header_bytes, body_bytes, body_cls = _encoded(f)
    except Exception as exc:         # a decoded value that cannot be written again is a difference too
        f.check, f.difference = "differs", f"cannot encode the decoded frame again: {exc}"
        return
    again = header_bytes + body_bytes + f.trailing
    if again == f.payload:
        bad = (bad_batch or first_bad_batch)(f.body, f.api_version, body_cls.NAME)
        f.check, f.difference = ("differs", bad) if bad else ("identical", None)
        return
    at = next((i for i, (a, b) in enumerate(zip(again, f.payload)) if a != b), min(len(again), len(f.payload)))
    f.check = "differs"
    if at < len(header_bytes):
        where = f"header ({'RequestHeader' if f.role == 'request' else 'ResponseHeader'})"
    else:
        where = field_at(body_cls, f.payload[len(header_bytes):], f.api_version, at - len(header_bytes))
    f.difference = (f"field {where}, frame byte {at} (after the 4-byte size): captured "
                    f"{f.payload[at:at + 8].hex(' ') or 'nothing'}, re-encoded {again[at:at + 8].hex(' ') or 'nothing'}"
                    f" ({len(f.payload)} bytes captured, {len(again)} re-encoded)")


def _encoded(f: Frame):
    if f.role == "request":
        header_version = framing.request_header_version(f.api_key, f.api_version)
        body_cls = messages.by_api_key(f.api_key, "request")
    else:
        header_version = framing.response_header_version(f.api_key, f.api_version)
        body_cls = messages.by_api_key(f.api_key, "response")
    return f.header.encode(header_version), f.body.encode(f.api_version), body_cls


def _records_fields(obj, version: int, path: str):
    """(dotted field path, bytes) of every non-null records field in a decoded message."""
    for f in type(obj)._FIELDS:
        if not f.present(version):
            continue
        value = getattr(obj, f.py_name)
        if value is None:
            continue
        if f.kind == "records":
            yield f"{path}.{f.name}", value
        elif f.kind == "struct":
            yield from _records_fields(value, version, f"{path}.{f.name}")
        elif f.kind == "array" and f.element == "struct":
            for i, item in enumerate(value):
                yield from _records_fields(item, version, f"{path}.{f.name}[{i}]")


def first_bad_batch(body, version: int, name: str) -> str | None:
    """Re-encoding cannot see inside a records field (it is bytes to the message), so each batch
    in it is read whole, CRC checked: the first one that is not sound, with where it is."""
    for path, data in _records_fields(body, version, name):
        problem = batch_problem(path, data)
        if problem:
            return problem
    return None


def batch_problem(path: str, data) -> str | None:
    """What is wrong with the first unsound batch of one records field, or None."""
    try:
        for batch in iter_batches(bytes(data)):
            for _ in batch:
                pass
    except Exception as exc:         # a corrupt batch is a finding, not a crash
        return f"field {path}: record batch not sound: {exc}"
    return None


def field_at(cls, body: bytes, version: int, offset: int) -> str:
    """The field holding byte `offset` of a body: decoding the body cut just before that byte
    stops in the field being read there, and the decoder names it."""
    try:
        cls.decode(body[:offset], version)
    except DecodeError as exc:
        return f"{cls.NAME}.{exc.field}" if exc.field else f"{cls.NAME} (byte {offset} of the body)"
    except Exception:                # the cut itself confused the decoder: say where, at least
        return f"{cls.NAME} (byte {offset} of the body)"
    return f"{cls.NAME}, after its last field (byte {offset} of the body)"


def error_codes(obj) -> list[int]:
    """The non-zero error codes anywhere in a decoded message's JSON form."""
    found = []
    if isinstance(obj, dict):
        for key, value in obj.items():
            if key == "errorCode" and isinstance(value, int) and value:
                found.append(value)
            else:
                found += error_codes(value)
    elif isinstance(obj, list):
        for item in obj:
            found += error_codes(item)
    return found
