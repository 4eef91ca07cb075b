"""dump-log's record lines through the C extension (issue 26), when it is built.

``run`` hands the log from a position on to ``dump_run`` (kafkawire/_native_src/dump_lines.c),
which writes the batch and record lines of the batches there, in Kafka's text, up to the first
batch it does not take on (compressed, control, not v2, CRC mismatch, ...), which the pure loop
then does. ``batch_lines`` hands one v2 data batch (decompressed if it was) to
``dump_records``, which writes all its record lines at once; it returns None for anything out of
the ordinary (a record that does not parse, non-consecutive offsets, ill-formed UTF-8, a
metadata value the fast decoder does not take), and the pure loop of dump_log_records, the
oracle, then does the batch as it always did. ``KAFKAWIRE_PURE=1`` (or no extension) leaves
everything to the pure loop.

The metadata records' JSON writers (``JsonFormat``, dump_json.c) are built here from each
generated class's ``_FIELDS``, by the rules of kafkawire.metadata.fast_json (fields absent from
the version left out, tagged fields at their default left out, uuids as Kafka's base64url,
bytes as base64): the code generator's tables are the one source of the schema.
"""
from __future__ import annotations

from json.encoder import encode_basestring

from kafkawire import _native, messages
from kafkawire.protocol.message import version_in
from kafkawire.records import CorruptRecordError
from kafkawire.records.batch import TIMESTAMP_TYPE_MASK
from kafkawire.metadata.record_json import record_type_name

__all__ = ["NativeLines", "json_format"]

_native_module = _native.records if _native.records is not None and hasattr(_native.records, "dump_records") else None

# The value kinds of dump_text.h (J_*); float64 (Java's Double.toString) stays with the pure path.
JSON_KINDS = {"bool": 0, "int8": 1, "int16": 1, "uint16": 1, "int32": 1, "uint32": 1, "int64": 1,
              "float64": 2, "string": 3, "uuid": 4, "bytes": 5, "records": 5, "struct": 6, "array": 7}
_NOT_TAGGED, _NULL_DEFAULT, _EMPTY_DEFAULT, _EQUAL = 0, 1, 2, 3
MODE_DEEP, MODE_PLAIN, MODE_METADATA, MODE_BATCHES = 0, 1, 2, 3
# The text one dump_run call writes before it returns (then the output is flushed if it is due).
RUN_CHARS = 1 << 20


def _tag_mode(f) -> tuple[int, object]:
    """How the C writer recognises a tagged field's default (tagged_value_is_default's rule)."""
    if f.kind == "array":
        return (_NULL_DEFAULT if f.default is None else _EMPTY_DEFAULT), None
    if f.kind == "struct":
        return (_NULL_DEFAULT, None) if f.default is None else (_EQUAL, f.struct())
    return _EQUAL, f.default


def json_format(cls, version: int, _cache: dict = {}):  # noqa: B006 - a cache for the process
    """The C JSON writer of ``cls`` at ``version`` (fast_json's text form), or None when the
    extension is not built or a field is a double (the pure writer does those records)."""
    key = (cls, version)
    if key not in _cache:
        _cache[key] = _build_format(cls, version)
    return _cache[key]


def _build_format(cls, version: int):
    if _native_module is None:
        return None
    fields = []
    for f in cls._FIELDS:
        if not version_in(f.versions, version):
            continue
        kind, element = JSON_KINDS[f.kind], JSON_KINDS[f.element] if f.element else -1
        if 2 in (kind, element):
            return None
        sub = None
        if f.struct is not None:
            sub = json_format(f.struct, version)
            if sub is None:
                return None
        tag_mode, default = _tag_mode(f) if version_in(f.tagged_versions, version) else (_NOT_TAGGED, None)
        name = (encode_basestring(f.json_name) + ":").encode()
        fields.append((f.py_name, name, kind, element, sub, tag_mode, default))
    try:
        return _native_module.JsonFormat(cls, tuple(fields))
    except TypeError:
        return None  # a field not kept in a plain slot (the test counts the records written in C)


def metadata_table() -> dict:
    """api_key * 256 + version -> (decoder, the payload's opening text, JsonFormat) for every
    metadata record type and version (versions past 127 and api keys past 127 take more than a
    one-byte varint, and go to the pure path)."""
    table = {}
    for api_key in range(128):
        try:
            cls = messages.metadata_record(api_key)
        except KeyError:
            continue
        for version, decoder in cls._DECODERS.items():
            if version < 128:
                head = f'{{"type":"{record_type_name(cls.NAME)}","version":{version},"data":'.encode()
                table[api_key * 256 + version] = (decoder, head, json_format(cls, version))
    return table


class NativeLines:
    """The C text loop for one run's mode: ``batch_lines(batch, ts_name, previous_offset[,
    with_batch_line])`` is (text, last offset) or None (the pure loop does the batch)."""

    def __init__(self, mode: int):
        self.mode = mode
        self.table = metadata_table() if mode == MODE_METADATA else {}

    @classmethod
    def for_options(cls, opts, coordinator) -> NativeLines | None:
        if _native_module is None or opts.json or opts.skip_record_metadata or coordinator is not None:
            return None
        if opts.cluster_metadata:
            return cls(MODE_METADATA)
        if not opts.deep:
            return cls(MODE_BATCHES)
        return cls(MODE_PLAIN if opts.print_data else MODE_DEEP)

    def run(self, data, position: int, last_offset: list, out) -> int:
        """Write the lines of the batches from ``position`` on, as many as the C loop takes, to
        ``out``; the position of the first batch it left to the pure loop."""
        more = True
        while more:
            text, last_offset[0], position, more = _native_module.dump_run(
                data, position, last_offset[0], self.mode, self.table, RUN_CHARS)
            if text:
                out.add_block(text)
                out.maybe_flush()
        return position

    def batch_lines(self, batch, ts_name: str, previous_offset: int, with_batch_line: bool = False):
        """With ``with_batch_line``, the text starts with the batch's own line (and a batch whose
        CRC does not match is handed back, for the pure loop to report)."""
        try:
            data, start, end, count, _ = batch.records_range()
        except CorruptRecordError:
            return None  # the pure loop reports it
        if count == 0:
            return None
        return _native_module.dump_records(
            data, start, end, count, batch.base_offset, batch.base_timestamp,
            batch.max_timestamp if batch.attributes & TIMESTAMP_TYPE_MASK else None, previous_offset, ts_name,
            batch.base_sequence, self.mode, self.table, *((batch._buf, batch.position) if with_batch_line
                                                           else (None, None)))
