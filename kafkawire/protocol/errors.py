"""The errors of the message layer.

Decoding never raises anything but DecodeError, whatever the bytes: the generated code is
straight-line and does not track where it is, so the position is recovered afterwards from the
failing frame (its line tells the field, its `pos` the byte offset). That costs nothing on the
hot path and names the field exactly.
"""
from __future__ import annotations

import struct


class BadBytesError(ValueError):
    """The one base of every error kafkawire raises for input it cannot read, so that a caller
    catches "bad bytes" once: a message (DecodeError), its JSON form (JsonError), a record batch
    or message set (kafkawire.records.CorruptRecordError), a metadata record frame
    (kafkawire.metadata.frame.MetadataRecordError), an index file
    (kafkawire.storage.index.CorruptIndexError), a snapshot file
    (kafkawire.storage.snapshot.SnapshotFormatError) and a state file such as quorum-state or
    meta.properties (kafkawire.storage.state_files.StateFileError). A ValueError, because the
    input, not the program, is at fault. Errors of the program or of the caller's arguments
    (EncodeError, an offset out of range) are not BadBytesErrors."""


class Malformed(ValueError):
    """Raised by the primitives; turned into a DecodeError with the context filled in."""


class DecodeError(BadBytesError):
    """Bytes that do not decode as the message they should be: ``message`` and ``version`` name it,
    ``field`` the field being read (a dotted path), ``offset`` the byte where it failed, ``reason``
    what was wrong. A BadBytesError.
    """
    def __init__(self, message: str, version: int | None, field: str | None, offset: int | None, reason: str):
        self.message, self.version, self.field, self.offset, self.reason = message, version, field, offset, reason
        where = message if version is None else f"{message} v{version}"
        if field:
            where += f", field {field}"
        if offset is not None:
            where += f", at byte {offset}"
        super().__init__(f"{where}: {reason}")


class EncodeError(ValueError):
    """A message that cannot be written at a version: ``field`` names the value at fault, ``reason``
    says why. The caller's mistake, not bad input, so not a BadBytesError.
    """
    def __init__(self, message: str, version: int | None, field: str | None, reason: str):
        self.message, self.version, self.field, self.reason = message, version, field, reason
        where = message if version is None else f"{message} v{version}"
        if field:
            where += f", field {field}"
        super().__init__(f"{where}: {reason}")


class UnsupportedVersionError(EncodeError):
    """A version the message does not have, or a field set that the version cannot carry."""


class JsonError(BadBytesError):
    pass


def _generated_frames(tb):
    while tb is not None:
        table = tb.tb_frame.f_globals.get("_LINE_FIELDS")
        if table is not None:
            yield tb.tb_frame, table.get(tb.tb_lineno)
        tb = tb.tb_next


def locate(tb, data_len: int | None = None) -> tuple[str | None, int | None]:
    """The field path and byte offset where generated code failed, from its traceback.

    A line that packs or unpacks a run of fixed-width fields is labelled with the run; the
    failing field is then the first one that runs past the end of the data (decoding) or
    whose value does not fit its type (encoding).
    """
    names, offset = [], None
    for frame, label in _generated_frames(tb):
        locals_ = frame.f_locals
        if "pos" in locals_:
            offset = locals_["pos"]
        if isinstance(label, tuple):
            if data_len is not None and offset is not None:
                label, offset = _field_past_end(label, offset, data_len, locals_.get("data"))
            else:
                label = _field_not_fitting(label, locals_.get("self"))
        if label:
            names.append(label)
    return (".".join(names) or None), offset


def _field_past_end(run, offset, data_len, data=None):
    for name, attribute, code in run:
        size = struct.calcsize(">" + code)
        if offset + size > data_len:
            return name, offset
        if attribute is None and data is not None:
            # The length of an array read within the run (codegen's _decode_array_in_run): if the
            # array is not empty or null, the data ran out inside it, not in the fields after it.
            (length,) = struct.unpack_from(">" + code, data, offset)
            if length not in ((0, 1) if code == "B" else (0, -1)):
                return name, offset + size
        offset += size
    return run[-1][0], offset


def _field_not_fitting(run, obj):
    for name, attribute, code in run:
        try:
            struct.pack(">" + code, getattr(obj, attribute))
        except Exception:
            return name
    return ", ".join(name for name, _, _ in run)


def describe_failure(exc: BaseException, data_len: int, offset: int | None) -> str:
    if isinstance(exc, Malformed):
        return str(exc)
    if isinstance(exc, IndexError) or (isinstance(exc, struct.error) and "buffer" in str(exc)):
        return f"truncated: the data ends at byte {data_len}"
    if isinstance(exc, UnicodeDecodeError):
        return f"string is not valid UTF-8 ({exc.reason} at string byte {exc.start})"
    return f"{type(exc).__name__}: {exc}"
