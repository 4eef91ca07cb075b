"""``kafkawire dump-log``: Kafka's kafka-dump-log (DumpLogSegments), line for line.

Reads ``.log`` segments, KRaft snapshots (``<offset>-<epoch>.checkpoint``),
``bootstrap.checkpoint``, ``.index``, ``.timeindex``, producer-state ``.snapshot`` and
``.txnindex`` files and prints what Kafka's tool prints (the 4.x text: batch lines, ``| offset:``
record lines, control records as ``LeaderChange: {...}``, ``SnapshotHeader {...}`` and so on,
metadata payloads as ``{"type":"TOPIC_RECORD","version":0,"data":{...}}``).

Where Kafka's tool would crash or say nothing, this one reports on stderr, naming the file and
the byte position, and goes on where the framing allows it:

* a size below 14 bytes (the smallest message): the rest of the file cannot be framed; stop;
* a batch that runs past the end of the file (a torn write): stop, and print Kafka's
  ``Found N invalid bytes at the end of <name>``;
* an unknown magic, a v2 batch shorter than its 61-byte header, an unknown codec: skip that
  batch (its size is known) and go on;
* a CRC mismatch: print the batch (``isvalid: false``), as Kafka does, and its records if they
  decode;
* a record or metadata payload that does not decode: report it and go on with the next batch
  (Kafka prints ``Error at <offset>, skipping. ...`` as the payload; so does this tool).

The exit status is 1 if anything was invalid (Kafka's own tool exits 0 for ``isvalid: false``).

``--json`` writes one JSON object per line instead of Kafka's text (documented in README.md,
"Tools: dump-log and metadata-shell"), with a ``type`` of ``file``, ``batch``, ``record``,
``trailingBytes``, ``indexEntry``, ``timeIndexEntry``, ``indexSanity``, ``producerState``,
``abortedTxn``, ``finding`` or ``error``.
"""
from __future__ import annotations

import argparse
import base64
import json
import os
import struct
import sys
from json.encoder import encode_basestring as _json_str

from crc32c import crc32c

from kafkawire.controller.java_order import string_hashmap_order
from kafkawire.metadata.frame import kafka_read_error
from kafkawire.metadata.java_text import jackson_json, java_utf8
from kafkawire.metadata.record_json import PayloadDecoder
from kafkawire.records import CorruptRecordError
from kafkawire.records.batch import (CONTROL_FLAG_MASK, DELETE_HORIZON_FLAG_MASK, RECORD_BATCH_OVERHEAD,
                                     TIMESTAMP_TYPE_MASK, RecordBatch)
from kafkawire.records.compression import CODEC_NAMES
from kafkawire.records.control import ControlRecordType, control_type_name, decode_control_value, parse_control_key
from kafkawire.records.kraft_control import value_json
from kafkawire.records.legacy import LegacyRecordBatch
from kafkawire.storage.snapshot import BOOTSTRAP_FILE_NAME, parse_snapshot_file_name
from kafkawire.tools.dump_log_coordinators import CoordinatorDecoder, MissingKeyError, add_decoder_arguments, chosen_folder

COMMAND = "dump-log"
HELP = "print the batches and records of log segments, snapshots and indexes, as kafka-dump-log does"

INT_MAX = 0x7FFFFFFF
from kafkawire.records.layout import LOG_OVERHEAD  # noqa: E402
HEADER_SIZE_UP_TO_MAGIC = 17
MIN_MESSAGE_SIZE = 14          # LegacyRecord.RECORD_OVERHEAD_V0, Java's FileLogInputStream limit
RECORD_INDENT = "|"
# A file of something else dumped with a decoder fails on every record; say so a few times.
MAX_ERRORS_SHOWN_PER_FILE = 20
_OFFSET_AND_SIZE = struct.Struct(">qi")
_INDEX_ENTRY = struct.Struct(">ii")
_TIME_INDEX_ENTRY = struct.Struct(">qi")
TIMESTAMP_TYPE_NAMES = {0: "CreateTime", 1: "LogAppendTime", -1: "NoTimestampType"}
# The JSON name each control value's class prints under (DumpLogSegments.printControlRecord).
_CONTROL_LABELS = {
    ControlRecordType.LEADER_CHANGE: " LeaderChange: ",
    ControlRecordType.SNAPSHOT_HEADER: " SnapshotHeader ",
    ControlRecordType.SNAPSHOT_FOOTER: " SnapshotFooter ",
    ControlRecordType.KRAFT_VERSION: " KRaftVersion ",
    ControlRecordType.KRAFT_VOTERS: " KRaftVoters ",
}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--files", required=True, metavar="file1,file2,...",
                        help="REQUIRED: the comma separated list of data and index log files to be dumped")
    parser.add_argument("--print-data-log", action="store_true",
                        help="print the record contents (implied by the decoder options)")
    parser.add_argument("--deep-iteration", action="store_true",
                        help="print every record, not only the batches (implied by --print-data-log)")
    parser.add_argument("--cluster-metadata-decoder", action="store_true",
                        help="decode the values as __cluster_metadata records")
    add_decoder_arguments(parser)
    parser.add_argument("--skip-record-metadata", action="store_true",
                        help="leave out the per-record metadata (and the control records)")
    parser.add_argument("--verify-index-only", action="store_true",
                        help="check index entries against the log without printing them")
    parser.add_argument("--index-sanity-check", action="store_true",
                        help="only run Kafka's start-up sanity check on index files")
    parser.add_argument("--max-bytes", type=int, default=INT_MAX, metavar="size",
                        help="read at most this many bytes of each .log/.checkpoint file")
    parser.add_argument("--max-message-size", type=int, default=5 * 1024 * 1024, metavar="size",
                        help="the largest batch an index entry may point at (default 5 MiB)")
    parser.add_argument("--json", action="store_true",
                        help="one JSON object per line instead of Kafka's text (see README)")


class Options:
    def __init__(self, args):
        files = args.files.split(",")
        while files and not files[-1]:
            files.pop()  # Java's String.split drops trailing empty strings
        self.files = files
        # Kafka's precedence: offsets, transaction log, cluster metadata, share group state.
        self.coordinator = chosen_folder(args)
        self.cluster_metadata = args.cluster_metadata_decoder and self.coordinator is None
        self.print_data = args.print_data_log or self.cluster_metadata or self.coordinator is not None
        self.deep = args.deep_iteration or self.print_data
        self.skip_record_metadata = args.skip_record_metadata
        self.verify_only = args.verify_index_only
        self.index_sanity_only = args.index_sanity_check
        self.max_bytes = args.max_bytes
        self.max_message_size = args.max_message_size
        self.json = args.json


def run(args: argparse.Namespace) -> int:
    opts = Options(args)
    out = JsonOutput(sys.stdout) if opts.json else TextOutput(sys.stdout)
    dumper = Dumper(opts, out, sys.stderr)
    try:
        for name in opts.files:
            dumper.dump_file(name)
        dumper.print_findings()
    finally:
        out.flush()
    return 1 if dumper.failed else 0


def _utf8(data) -> str:
    """Java's ``new String(bytes, UTF_8)``: ill-formed sequences become U+FFFD by Java's rule."""
    return java_utf8(data)


def _kafka_payload_error(offset: int, value) -> str:
    # Kafka's own words (the class of failure); ours, with field and byte, go to stderr
    return f"Error at {offset}, skipping. {kafka_read_error(value)}"


def _json_b64(data) -> str:
    return "null" if data is None else f'"{base64.b64encode(bytes(data)).decode()}"'


def _json_header(key, value) -> str:
    return f'{{"key":{_json_str(_header_key(key))},"valueBase64":{_json_b64(value)}}}'


def _header_key(key: str) -> str:
    # The reader keeps invalid UTF-8 in header keys as surrogate escapes; Java shows U+FFFD.
    if key.isascii():
        return key
    return java_utf8(key.encode("utf-8", "surrogateescape"))


# --- outputs --------------------------------------------------------------------------------

class _BufferedLines:
    """Lines gathered and written in blocks (a 100 MB log is millions of lines)."""

    def __init__(self, stream):
        self._stream = stream
        self._lines: list[str] = []

    def flush(self):
        if self._lines:
            self._lines.append("")
            self._stream.write("\n".join(self._lines))
            self._lines.clear()
        self._stream.flush()

    def maybe_flush(self):
        if len(self._lines) > 4096:
            self.flush()


class TextOutput(_BufferedLines):
    """Kafka's text; ``line`` ignores the JSON object."""

    def __init__(self, stream):
        super().__init__(stream)
        self.add = self._lines.append

    def line(self, text: str, obj=None):
        self.add(text)


class JsonOutput(_BufferedLines):
    """One JSON object per line; ``line`` ignores Kafka's text, ``raw`` takes ready JSON."""

    def __init__(self, stream):
        super().__init__(stream)
        self.raw = self._lines.append
        self._dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode

    def line(self, text: str, obj=None):
        if obj is not None:
            self._lines.append(self._dumps(obj))


# --- the dumper -----------------------------------------------------------------------------

class Dumper:
    def __init__(self, opts: Options, out, err):
        self.opts = opts
        self.out = out
        self.err = err
        self.failed = False
        self.errors_in_file = 0
        self.decode_payload = PayloadDecoder()
        self.coordinator = CoordinatorDecoder(opts.coordinator) if opts.coordinator else None
        self.json = opts.json
        # Kafka's end-of-run reports, keyed by absolute path.
        self.non_consecutive: dict[str, dict[int, int]] = {}
        self.index_mismatches: dict[str, dict[int, int]] = {}
        self.time_index_mismatches: dict[str, list] = {}
        self.time_index_out_of_order: dict[str, list] = {}
        self.time_index_not_found: dict[str, list] = {}

    # -- reporting --

    def error(self, file: str, position, message: str) -> None:
        self.failed = True
        self.errors_in_file += 1
        if self.errors_in_file > MAX_ERRORS_SHOWN_PER_FILE:
            return  # counted, and summed up once the file is done
        where = f" at byte {position}" if position is not None else ""
        self.out.flush()
        print(f"Error: {file}{where}: {message}", file=self.err, flush=True)
        if self.json:
            self.out.line("", {"type": "error", "file": file, "position": position, "message": message})

    def _end_file(self, name: str) -> None:
        hidden = self.errors_in_file - MAX_ERRORS_SHOWN_PER_FILE
        if hidden > 0:
            self.out.flush()
            print(f"Error: {name}: {hidden} more errors not shown ({self.errors_in_file} in all)",
                  file=self.err, flush=True)
            if self.json:
                self.out.line("", {"type": "error", "file": name, "position": None,
                                   "message": f"{hidden} more errors not shown", "errors": self.errors_in_file})

    def dump_file(self, name: str) -> None:
        self.errors_in_file = 0
        self.out.line(f"Dumping {name}", {"type": "file", "file": name})
        base = os.path.basename(name)
        suffix = base[base.rfind("."):] if "." in base else ""
        if suffix in (".log", ".checkpoint"):
            self.dump_log(name)
        elif suffix == ".index":
            self.dump_index(name)
        elif suffix == ".timeindex":
            self.dump_time_index(name)
        elif suffix == ".snapshot":
            self.dump_producer_snapshot(name)
        elif suffix == ".txnindex":
            self.dump_txn_index(name)
        else:
            self.out.flush()
            print(f"Ignoring unknown file {name}", file=self.err, flush=True)
            if self.json:
                self.out.line("", {"type": "ignored", "file": name})
        self._end_file(name)
        self.out.maybe_flush()

    def _read(self, name: str, limit: int | None = None) -> bytes | None:
        try:
            with open(name, "rb") as f:
                return f.read() if limit is None else f.read(max(limit, 0))
        except OSError as exc:
            self.error(name, None, f"cannot read the file: {exc.strerror or exc}")
            return None

    # -- .log and .checkpoint --

    def dump_log(self, name: str) -> None:
        base = os.path.basename(name)
        if base.endswith(".log"):
            stem = base.split(".")[0]
            if stem.isdigit():
                self.out.line(f"Log starting offset: {int(stem)}",
                              {"type": "logStartOffset", "file": name, "offset": int(stem)})
            else:
                self.error(name, None, f"a segment name must be its base offset (20 digits), not {base!r}")
        elif base == BOOTSTRAP_FILE_NAME:
            self.out.line("KRaft bootstrap snapshot", {"type": "bootstrapSnapshot", "file": name})
        else:
            parsed = parse_snapshot_file_name(base)
            if parsed is None:
                self.error(name, None, "a snapshot name must be <20-digit end offset>-<10-digit epoch>.checkpoint")
            else:
                sid = parsed[0]
                self.out.line(f"Snapshot end offset: {sid.end_offset}, epoch: {sid.epoch}",
                              {"type": "snapshot", "file": name, "endOffset": sid.end_offset, "epoch": sid.epoch})
        limit = None if self.opts.max_bytes == INT_MAX else self.opts.max_bytes
        data = self._read(name, limit)
        if data is None:
            return
        # With --max-bytes the read stops where it was told to, usually inside a batch: that
        # batch is left out, as Kafka's slice leaves it out, and is no error.
        cut = limit is not None and len(data) == limit and os.path.getsize(name) > limit
        self._dump_batches(name, data, cut)

    def _dump_batches(self, name: str, data: bytes, cut: bool = False) -> None:
        end = len(data)
        pos = 0
        valid_bytes = 0
        last_offset = [-1]      # as Kafka's: a segment starting past 0 is "-1 is followed by <base>"
        out = self.out
        while True:
            if end - pos <= HEADER_SIZE_UP_TO_MAGIC:
                if pos < end and not cut:
                    self.error(name, pos, f"the file ends inside a batch: {end - pos} bytes left, "
                                          f"fewer than the {HEADER_SIZE_UP_TO_MAGIC + 1} needed to read a batch header")
                break
            _, size = _OFFSET_AND_SIZE.unpack_from(data, pos)
            if size < MIN_MESSAGE_SIZE:
                self.error(name, pos + 8, f"found record size {size} smaller than minimum record overhead "
                                          f"({MIN_MESSAGE_SIZE}); the rest of the file cannot be framed")
                break
            if pos > end - LOG_OVERHEAD - size:
                if cut:
                    break
                self.error(name, pos, f"truncated batch: it declares {size + LOG_OVERHEAD} bytes but only "
                                      f"{end - pos} are left in the file")
                break
            batch_end = pos + LOG_OVERHEAD + size
            magic = data[pos + 16]
            try:
                if magic == 2:
                    batch = RecordBatch.from_buffer(data, pos, file=name)
                    if batch.attributes & 0x07 not in CODEC_NAMES:
                        raise CorruptRecordError(f"unknown compression codec id {batch.attributes & 0x07}",
                                                 pos + 21, name)
                    self._dump_v2_batch(batch, name, pos, last_offset)
                elif magic < 2:
                    batch = LegacyRecordBatch.from_buffer(data, pos, file=name)
                    self._dump_legacy_batch(batch, name, pos, last_offset)
                else:
                    raise CorruptRecordError(f"unknown magic {magic - 256 if magic > 127 else magic}; "
                                             f"skipping this batch of {size + LOG_OVERHEAD} bytes", pos + 16, name)
            except CorruptRecordError as exc:
                self.error(name, exc.position if exc.position is not None else pos, exc.reason)
            pos = batch_end
            valid_bytes = pos
            out.maybe_flush()
        trailing = end - valid_bytes
        if trailing > 0 and self.opts.max_bytes == INT_MAX:
            out.line(f"Found {trailing} invalid bytes at the end of {os.path.basename(name)}",
                     {"type": "trailingBytes", "file": name, "position": valid_bytes, "bytes": trailing})

    def _batch_line(self, batch, position: int, v2: bool, valid: bool) -> None:
        ts_type = TIMESTAMP_TYPE_NAMES[batch.timestamp_type]
        codec = CODEC_NAMES[batch.compression_type]
        if v2:
            horizon = batch.base_timestamp if batch.attributes & DELETE_HORIZON_FLAG_MASK else None
            horizon_text = "OptionalLong.empty" if horizon is None else f"OptionalLong[{horizon}]"
            head = (f"baseOffset: {batch.base_offset} lastOffset: {batch.last_offset} "
                    f"count: {batch.records_count} baseSequence: {batch.base_sequence} "
                    f"lastSequence: {batch.last_sequence} producerId: {batch.producer_id} "
                    f"producerEpoch: {batch.producer_epoch} partitionLeaderEpoch: {batch.partition_leader_epoch} "
                    f"isTransactional: {'true' if batch.is_transactional else 'false'} "
                    f"isControl: {'true' if batch.is_control else 'false'} deleteHorizonMs: {horizon_text}")
            max_ts = batch.max_timestamp
        else:
            head = f"offset: {batch.last_offset}"
            max_ts = batch.timestamp
        text = (f"{head} position: {position} {ts_type}: {max_ts} size: {batch.size_in_bytes} "
                f"magic: {batch.magic} compresscodec: {codec} crc: {batch.crc} "
                f"isvalid: {'true' if valid else 'false'}")
        obj = None
        if self.json:
            obj = {"type": "batch", "position": position, "magic": batch.magic,
                   "baseOffset": batch.base_offset if v2 else batch.last_offset,
                   "lastOffset": batch.last_offset, "count": batch.records_count if v2 else None,
                   "baseSequence": batch.base_sequence, "lastSequence": batch.last_sequence,
                   "producerId": batch.producer_id, "producerEpoch": batch.producer_epoch,
                   "partitionLeaderEpoch": batch.partition_leader_epoch,
                   "isTransactional": batch.is_transactional, "isControl": batch.is_control,
                   "deleteHorizonMs": horizon if v2 else None, "timestampType": ts_type,
                   "maxTimestamp": max_ts, "size": batch.size_in_bytes, "compresscodec": codec,
                   "crc": batch.crc, "isValid": valid}
        self.out.line(text, obj)

    def _dump_v2_batch(self, batch: RecordBatch, name: str, position: int, last_offset: list) -> None:
        valid = batch.is_valid
        self._batch_line(batch, position, True, valid)
        if not valid:
            self.error(name, position + 17, f"batch CRC-32C mismatch: stored {batch.crc}, "
                                            f"computed {batch.compute_crc()} (isvalid: false)")
        if not self.opts.deep:
            return
        if batch.attributes & CONTROL_FLAG_MASK:
            self._dump_control_records(batch, name, position, last_offset)
        elif self.json:
            self._dump_records_json(batch, name, position, last_offset)
        else:
            self._dump_records_text(batch, name, position, last_offset)

    def _dump_records_text(self, batch: RecordBatch, name: str, position: int, last_offset: list) -> None:
        """The hot loop: one ``| offset: ...`` line per record, written without detours."""
        add = self.out.add
        ts_name = TIMESTAMP_TYPE_NAMES[1 if batch.attributes & TIMESTAMP_TYPE_MASK else 0]
        no_sequence = batch.base_sequence < 0
        skip_metadata = self.opts.skip_record_metadata
        print_data = self.opts.print_data
        metadata = self.opts.cluster_metadata
        decode = self.decode_payload
        prefix = "| " if skip_metadata else " "
        for r in _records(self, batch, name, position, last_offset):
            offset = r.offset
            key, value, headers = r.key, r.value, r.headers
            if skip_metadata:
                line = ""
            else:
                line = (f"| offset: {offset} {ts_name}: {r.timestamp} "
                        f"keySize: {-1 if key is None else len(key)} valueSize: {-1 if value is None else len(value)} "
                        f"sequence: {-1 if no_sequence else r.sequence} "
                        f"headerKeys: [{','.join([_header_key(k) for k, _ in headers]) if headers else ''}]")
            if print_data:
                if metadata:
                    payload = decode(value)
                    if payload.error is None:
                        line = f"{line}{prefix}payload: {payload.text}"
                    else:
                        line = f"{line}{prefix}payload: {self._payload_failure(name, position, offset, value, payload)}"
                elif self.coordinator is not None:
                    key, value = self._coordinator_parse(name, position, offset, key, value)
                    sep = prefix
                    if key is not None:
                        line = f"{line}{sep}key: {key}"
                        sep = " "
                    if value is not None:
                        line = f"{line}{sep}payload: {value}"
                else:
                    sep = prefix
                    if key is not None:
                        line = f"{line}{sep}key: {_utf8(key)}"
                        sep = " "
                    if value is not None:
                        line = f"{line}{sep}payload: {_utf8(value)}"
            add(line)

    def _coordinator_parse(self, name, position, offset, key, value):
        """The key and payload texts Kafka's coordinator decoders print (None: not printed)."""
        try:
            parsed = self.coordinator.parse(offset, key, value)
        except MissingKeyError as exc:
            self.error(name, position, f"{exc} (Kafka's tool dies here; ours goes on)")
            return None, None
        if parsed.problem is not None:
            self.error(name, position, f"the record at offset {offset} (in the batch at this position) does not "
                                       f"decode: {parsed.problem}")
        return parsed.key, parsed.payload

    def _payload_failure(self, name, position, offset, value, payload) -> str:
        """Report a value the metadata decoder cannot read (on stderr, with our reason) and
        return the payload text Kafka prints for it."""
        self.error(name, position, f"the record at offset {offset} (in the batch at this position) is not "
                                   f"a metadata record: {payload.error}")
        return _kafka_payload_error(offset, value)

    def _record_obj(self, batch, r, ts_name):
        key, value = r.key, r.value
        return {"type": "record", "offset": r.offset, "timestampType": ts_name, "timestamp": r.timestamp,
                "keySize": -1 if key is None else len(key), "valueSize": -1 if value is None else len(value),
                "sequence": r.sequence, "headerKeys": [_header_key(k) for k, _ in r.headers]}

    def _dump_records_json(self, batch: RecordBatch, name: str, position: int, last_offset: list) -> None:
        """The --json hot loop: the record objects are written as text directly (the metadata
        payload is already JSON), the same keys as ``_record_obj`` plus ``_add_contents``."""
        raw = self.out.raw
        ts_name = TIMESTAMP_TYPE_NAMES[1 if batch.attributes & TIMESTAMP_TYPE_MASK else 0]
        no_sequence = batch.base_sequence < 0
        print_data = self.opts.print_data
        metadata = self.opts.cluster_metadata
        decode = self.decode_payload
        for r in _records(self, batch, name, position, last_offset):
            offset = r.offset
            key, value, headers = r.key, r.value, r.headers
            text = (f'{{"type":"record","offset":{offset},"timestampType":"{ts_name}","timestamp":{r.timestamp},'
                    f'"keySize":{-1 if key is None else len(key)},"valueSize":{-1 if value is None else len(value)},'
                    f'"sequence":{-1 if no_sequence else r.sequence},"headerKeys":['
                    f'{",".join([_json_str(_header_key(k)) for k, _ in headers]) if headers else ""}]')
            if print_data:
                if metadata:
                    payload = decode(value)
                    if payload.error is None:
                        text = f'{text},"payload":{payload.text}'
                    else:
                        text = f'{text},"payload":{_json_str(self._payload_failure(name, position, offset, value, payload))}'
                elif self.coordinator is not None:
                    shown_key, shown = self._coordinator_parse(name, position, offset, key, value)
                    text = (f'{text},"key":{"null" if shown_key is None else _json_str(shown_key)},'
                            f'"payload":{"null" if shown is None else _json_str(shown)}')
                else:
                    text = (f'{text},"key":{"null" if key is None else _json_str(_utf8(key))},'
                            f'"payload":{"null" if value is None else _json_str(_utf8(value))}')
                text = f'{text},"keyBase64":{_json_b64(key)},"valueBase64":{_json_b64(value)}'
                if headers:
                    text = f'{text},"headers":[{",".join(_json_header(k, v) for k, v in headers)}]'
            raw(text + "}")

    def _add_contents(self, obj, r, name, position):
        if self.coordinator is not None:
            obj["key"], obj["payload"] = self._coordinator_parse(name, position, r.offset, r.key, r.value)
        elif self.opts.cluster_metadata:
            payload = self.decode_payload(r.value)
            if payload.error is None:
                obj["payload"] = payload.obj
            else:
                obj["payload"] = self._payload_failure(name, position, r.offset, r.value, payload)
        else:
            obj["key"] = None if r.key is None else _utf8(r.key)
            obj["payload"] = None if r.value is None else _utf8(r.value)
        obj["keyBase64"] = None if r.key is None else base64.b64encode(bytes(r.key)).decode()
        obj["valueBase64"] = None if r.value is None else base64.b64encode(bytes(r.value)).decode()
        if r.headers:
            obj["headers"] = [{"key": _header_key(k), "valueBase64": None if v is None else base64.b64encode(bytes(v)).decode()}
                              for k, v in r.headers]

    def _dump_control_records(self, batch: RecordBatch, name: str, position: int, last_offset: list) -> None:
        ts_name = TIMESTAMP_TYPE_NAMES[1 if batch.attributes & TIMESTAMP_TYPE_MASK else 0]
        for r in _records(self, batch, name, position, last_offset):
            if self.opts.skip_record_metadata:
                # Kafka prints neither the metadata nor the contents of control records then.
                self.out.line("", None)
                continue
            key, value = r.key, r.value
            text = (f"| offset: {r.offset} {ts_name}: {r.timestamp} "
                    f"keySize: {-1 if key is None else len(key)} valueSize: {-1 if value is None else len(value)} "
                    f"sequence: {r.sequence} headerKeys: [{','.join(_header_key(k) for k, _ in r.headers)}]")
            control_text, control_obj = self._control_text(r, name, position)
            obj = None
            if self.json:
                obj = self._record_obj(batch, r, ts_name)
                obj["control"] = control_obj
            self.out.line(text + control_text, obj)

    def _control_text(self, record, name, position):
        try:
            key = parse_control_key(record.key)
            type_id = key.type
            if type_id in (ControlRecordType.ABORT, ControlRecordType.COMMIT):
                marker = decode_control_value(type_id, record.value)
                type_name = control_type_name(type_id)
                return (f" endTxnMarker: {type_name} coordinatorEpoch: {marker.coordinator_epoch}",
                        {"type": type_name, "coordinatorEpoch": marker.coordinator_epoch})
            label = _CONTROL_LABELS.get(type_id)
            if label is None:
                # Kafka's ControlRecordType.fromTypeId maps unknown ids to UNKNOWN.
                return (f" controlType: UNKNOWN({type_id})", {"type": "UNKNOWN", "typeId": type_id})
            message = decode_control_value(type_id, record.value)
            data = value_json(message)
            return f"{label}{jackson_json(data)}", {"type": control_type_name(type_id), "data": data}
        except CorruptRecordError as exc:
            self.error(name, position, f"control record at offset {record.offset} (in the batch at this "
                                       f"position): {exc.reason}")
            return f" controlType: undecodable ({exc.reason})", {"type": "undecodable", "error": exc.reason}

    def _dump_legacy_batch(self, batch: LegacyRecordBatch, name: str, position: int, last_offset: list) -> None:
        valid = batch.is_valid
        self._batch_line(batch, position, False, valid)
        if not valid:
            self.error(name, position + 12, f"message CRC-32 mismatch: stored {batch.crc}, "
                                            f"computed {batch.compute_crc()} (isvalid: false)")
        if not self.opts.deep:
            return
        ts_name = TIMESTAMP_TYPE_NAMES[batch.timestamp_type]
        compressed = batch.compression_type != 0
        for r in _records(self, batch, name, position, last_offset):
            if compressed:
                record_valid, crc = _legacy_inner_valid(r), r.crc
            else:
                record_valid, crc = valid, batch.crc
            parts = []
            prefix = "| "
            if not self.opts.skip_record_metadata:
                parts.append(f"| offset: {r.offset} {ts_name}: {r.timestamp} "
                             f"keySize: {-1 if r.key is None else len(r.key)} "
                             f"valueSize: {-1 if r.value is None else len(r.value)} "
                             f"isValid: {'true' if record_valid else 'false'} crc: {crc}")
                prefix = " "
            obj = None
            if self.json:
                obj = {"type": "record", "offset": r.offset, "timestampType": ts_name, "timestamp": r.timestamp,
                       "keySize": -1 if r.key is None else len(r.key),
                       "valueSize": -1 if r.value is None else len(r.value), "isValid": record_valid, "crc": crc}
                if self.opts.print_data:
                    self._add_contents(obj, r, name, position)
            elif self.opts.print_data:
                if self.coordinator is not None:
                    key, value = self._coordinator_parse(name, position, r.offset, r.key, r.value)
                    if key is not None:
                        parts.append(f"{prefix}key: {key}")
                        prefix = " "
                    if value is not None:
                        parts.append(f"{prefix}payload: {value}")
                elif self.opts.cluster_metadata:
                    payload = self.decode_payload(r.value)
                    parts.append(f"{prefix}payload: " + (payload.text if payload.error is None else
                                                         _kafka_payload_error(r.offset, r.value)))
                else:
                    if r.key is not None:
                        parts.append(f"{prefix}key: {_utf8(r.key)}")
                        prefix = " "
                    if r.value is not None:
                        parts.append(f"{prefix}payload: {_utf8(r.value)}")
            self.out.line("".join(parts), obj)

    # -- indexes --

    def _log_for_index(self, name: str) -> tuple[int, bytes] | None:
        base = os.path.basename(name)
        stem = base.split(".")[0]
        if not stem.isdigit():
            self.error(name, None, f"an index name must be its segment's base offset (20 digits), not {base!r}")
            return None
        log_name = os.path.join(os.path.dirname(os.path.abspath(name)), stem + ".log")
        data = self._read(log_name)
        if data is None:
            return None
        return int(stem), data

    def _first_batch_at(self, name: str, data: bytes, position: int, limit: int):
        """The batch at ``position``, or None if no whole batch of at most ``limit`` bytes starts there."""
        end = min(len(data), position + limit)
        if position < 0 or end - position <= HEADER_SIZE_UP_TO_MAGIC:
            return None
        _, size = _OFFSET_AND_SIZE.unpack_from(data, position)
        if size < MIN_MESSAGE_SIZE or position + LOG_OVERHEAD + size > end:
            return None
        if data[position + 16] == 2:
            batch = RecordBatch.from_buffer(data, position, file=name)
        else:
            batch = LegacyRecordBatch.from_buffer(data, position, file=name)
        return batch

    def dump_index(self, name: str) -> None:
        found = self._log_for_index(name)
        raw = self._read(name)
        if found is None or raw is None:
            return
        base_offset, log = found
        entries = [(base_offset + rel, pos) for rel, pos in _INDEX_ENTRY.iter_unpack(raw[:len(raw) - len(raw) % 8])]
        if not entries:
            self.out.line(f"{name} is empty.", {"type": "indexEmpty", "file": name})
            return
        if self.opts.index_sanity_only:
            # OffsetIndex.sanityCheck: the check a broker runs at start-up.
            if entries[-1][0] < base_offset:
                self.error(name, len(raw) - 8, f"Corrupt index found, index file ({os.path.abspath(name)}) has "
                                               f"non-zero size but the last offset is {entries[-1][0]} which is "
                                               f"less than the base offset {base_offset}.")
            elif len(raw) % 8:
                self.error(name, len(raw) - len(raw) % 8, f"Index file {os.path.abspath(name)} is corrupt, found "
                                                          f"{len(raw)} bytes which is neither positive nor a multiple of 8.")
            else:
                self.out.line(f"{name} passed sanity check.", {"type": "indexSanity", "file": name, "passed": True})
            return
        for i, (offset, position) in enumerate(entries):
            if offset == base_offset and i > 0:
                break  # preallocated zero entries of a sparse file
            try:
                batch = self._first_batch_at(name, log, position, self.opts.max_message_size)
            except CorruptRecordError as exc:
                batch = None
                self.error(name, i * 8, f"index entry {i} points at byte {position} of the log, where there is no "
                                        f"readable batch: {exc.reason}")
            if batch is None:
                self.error(name, i * 8, f"index entry {i} (offset {offset}) points at byte {position} of the log, "
                                        f"where no whole batch of at most {self.opts.max_message_size} bytes starts")
            elif batch.last_offset != offset:
                self.index_mismatches.setdefault(os.path.abspath(name), {})[offset] = batch.last_offset
            if not self.opts.verify_only:
                self.out.line(f"offset: {offset} position: {position}",
                              {"type": "indexEntry", "offset": offset, "position": position})

    def dump_time_index(self, name: str) -> None:
        found = self._log_for_index(name)
        raw = self._read(name)
        if found is None or raw is None:
            return
        base_offset, log = found
        index_name = name[: -len(".timeindex")] + ".index"
        if not os.path.exists(index_name):
            # Kafka's tool opens the offset index first in every mode, and a missing one kills it
            # (IllegalArgumentException: Invalid max index size: -1), so nothing is checked.
            self.error(name, None, f"its offset index {os.path.basename(index_name)} does not exist, so the time "
                                   f"index cannot be checked (Kafka's DumpLogSegments dies here: "
                                   f"java.lang.IllegalArgumentException: Invalid max index size: -1)")
            return
        entries = [(ts, base_offset + rel) for ts, rel in _TIME_INDEX_ENTRY.iter_unpack(raw[:len(raw) - len(raw) % 12])]
        if self.opts.index_sanity_only:
            self._time_index_sanity(name, raw, entries, base_offset)
            return
        index_raw = self._read(index_name) or b""
        offset_entries = [(base_offset + rel, pos) for rel, pos in
                          _INDEX_ENTRY.iter_unpack(index_raw[:len(index_raw) - len(index_raw) % 8])]
        key = os.path.abspath(name)
        previous_ts = -1
        for i, (timestamp, offset) in enumerate(entries):
            if offset == base_offset and i > 0:
                break
            position = _index_lookup(offset_entries, offset, base_offset)
            batch = _find_batch(log, position, offset, name)
            if batch is None:
                self.time_index_not_found.setdefault(key, []).append((offset, -1))
            elif batch.last_offset != offset:
                self.time_index_not_found.setdefault(key, []).append((offset, batch.last_offset))
            else:
                max_ts = max((r.timestamp for r in batch), default=-1)
                if max_ts != timestamp:
                    self.time_index_mismatches.setdefault(key, []).append((timestamp, max_ts))
                if previous_ts >= timestamp:
                    self.time_index_out_of_order.setdefault(key, []).append((timestamp, previous_ts))
            if not self.opts.verify_only:
                self.out.line(f"timestamp: {timestamp} offset: {offset}",
                              {"type": "timeIndexEntry", "timestamp": timestamp, "offset": offset})
            previous_ts = timestamp

    def _time_index_sanity(self, name, raw, entries, base_offset):
        path = os.path.abspath(name)
        if entries and entries[-1][0] < entries[0][0]:
            self.error(name, len(raw) - 12, f"Corrupt time index found, time index file ({path}) has non-zero size "
                                            f"but the last timestamp is {entries[-1][0]} which is less than the "
                                            f"first timestamp {entries[0][0]}")
        elif entries and entries[-1][1] < base_offset:
            self.error(name, len(raw) - 12, f"Corrupt time index found, time index file ({path}) has non-zero size "
                                            f"but the last offset is {entries[-1][1]} which is less than the first "
                                            f"offset {base_offset}")
        elif len(raw) % 12:
            self.error(name, len(raw) - len(raw) % 12, f"Time index file {path} is corrupt, found {len(raw)} bytes "
                                                       f"which is not positive or not a multiple of 12.")
        else:
            self.out.line(f"{name} passed sanity check.", {"type": "indexSanity", "file": name, "passed": True})

    # -- producer state and transaction index --

    def dump_producer_snapshot(self, name: str) -> None:
        data = self._read(name)
        if data is None:
            return
        try:
            entries = parse_producer_snapshot(data)
        except ValueError as exc:
            # Kafka prints CorruptSnapshotException's message and carries on.
            self.error(name, getattr(exc, "position", None), str(exc))
            return
        for e in entries:
            text = (f"producerId: {e['producerId']} producerEpoch: {e['producerEpoch']} "
                    f"coordinatorEpoch: {e['coordinatorEpoch']} currentTxnFirstOffset: "
                    f"{'OptionalLong.empty' if e['currentTxnFirstOffset'] < 0 else 'OptionalLong[%d]' % e['currentTxnFirstOffset']} "
                    f"lastTimestamp: {e['timestamp']}")
            if e["lastOffset"] >= 0:
                text += (f" firstSequence: {e['firstSequence']} lastSequence: {e['lastSequence']} "
                         f"lastOffset: {e['lastOffset']} offsetDelta: {e['offsetDelta']} timestamp: {e['timestamp']}")
            self.out.line(text, dict(type="producerState", **e))

    def dump_txn_index(self, name: str) -> None:
        data = self._read(name)
        if data is None:
            return
        usable = len(data) - len(data) % 34
        if usable != len(data):
            self.error(name, usable, f"transaction index size {len(data)} is not a multiple of 34 bytes")
        for version, pid, first, last, lso in struct.iter_unpack(">hqqqq", data[:usable]):
            self.out.line(f"version: {version} producerId: {pid} firstOffset: {first} lastOffset: {last} "
                          f"lastStableOffset: {lso}",
                          {"type": "abortedTxn", "version": version, "producerId": pid, "firstOffset": first,
                           "lastOffset": last, "lastStableOffset": lso})

    # -- the end-of-run reports Kafka prints on stderr --

    def print_findings(self) -> None:
        self.out.flush()
        err = self.err
        findings = []
        for path, pairs in _in_hashmap_order(self.index_mismatches):
            self.failed = True
            findings.append(f"Mismatches in :{path}")
            for index_offset in sorted(pairs, reverse=True):
                findings.append(f"  Index offset: {index_offset}, log offset: {pairs[index_offset]}")
        for path, pairs in _in_hashmap_order(self.time_index_mismatches):
            self.failed = True
            findings.append(f"Found timestamp mismatch in :{path}")
            findings += [f"  Index timestamp: {a}, log timestamp: {b}" for a, b in pairs]
        for path, pairs in _in_hashmap_order(self.time_index_out_of_order):
            self.failed = True
            findings.append(f"Found out of order timestamp in :{path}")
            findings += [f"  Index timestamp: {a}, Previously indexed timestamp: {b}" for a, b in pairs]
        for path, pairs in _in_hashmap_order(self.time_index_not_found):
            self.failed = True
            findings.append(f"The following indexed offsets are not found in :{path}")
            findings += [f"Indexed offset: {a}, found log offset: {b}" for a, b in pairs]
        for path, pairs in _in_hashmap_order(self.non_consecutive):
            findings.append(f"Non-consecutive offsets in {path}")
            findings += [f"  {a} is followed by {pairs[a]}" for a in sorted(pairs)]
        if findings:
            print("\n".join(findings), file=err, flush=True)
            if self.json:
                self.out.line("", {"type": "findings", "lines": findings})
                self.out.flush()


def _in_hashmap_order(by_path: dict):
    """Kafka keeps each report in a HashMap keyed by the file's absolute path."""
    return [(path, by_path[path]) for path in string_hashmap_order(by_path)]


def _records(dumper: Dumper, batch, name: str, position: int, last_offset: list):
    """The records of a batch, noting offsets that do not follow the previous record's (Kafka's
    "Non-consecutive offsets" report); a record that does not decode is reported and ends the
    batch."""
    previous = last_offset[0]
    try:
        for record in batch:
            offset = record.offset
            if offset != previous + 1:
                dumper.non_consecutive.setdefault(os.path.abspath(name), {})[previous] = offset
            previous = last_offset[0] = offset
            yield record
    except CorruptRecordError as exc:
        dumper.error(name, exc.position if exc.position is not None else position,
                     f"{exc.reason} (while reading the records of the batch at byte {position})")


def _legacy_inner_valid(record) -> bool:
    """Whether an inner message of a compressed legacy wrapper matches its CRC-32, rebuilt from
    its fields (the reader keeps fields, not bytes)."""
    import zlib
    body = bytearray((record.magic, record.attributes))
    if record.magic == 1:
        body += struct.pack(">q", record.timestamp)
    for part in (record.key, record.value):
        if part is None:
            body += struct.pack(">i", -1)
        else:
            body += struct.pack(">i", len(part)) + bytes(part)
    return zlib.crc32(body) == record.crc


def _index_lookup(entries, offset: int, base_offset: int) -> int:
    """OffsetIndex.lookup: the position of the largest entry offset <= ``offset``, else 0."""
    position = 0
    for i, (entry_offset, entry_position) in enumerate(entries):
        if entry_offset == base_offset and i > 0:
            break
        if entry_offset > offset:
            break
        position = entry_position
    return position


def _find_batch(log: bytes, position: int, offset: int, name: str):
    """The first batch from ``position`` whose last offset is >= ``offset`` (None if none)."""
    pos, end = position, len(log)
    while end - pos > HEADER_SIZE_UP_TO_MAGIC:
        _, size = _OFFSET_AND_SIZE.unpack_from(log, pos)
        if size < MIN_MESSAGE_SIZE or pos + LOG_OVERHEAD + size > end:
            return None
        try:
            if log[pos + 16] == 2:
                batch = RecordBatch.from_buffer(log, pos, file=name)
            else:
                batch = LegacyRecordBatch.from_buffer(log, pos, file=name)
        except CorruptRecordError:
            return None
        if batch.last_offset >= offset:
            return batch
        pos += LOG_OVERHEAD + size
    return None


# --- producer-state snapshots (ProducerStateManager.readSnapshot) ---------------------------

_PRODUCER_SNAPSHOT_VERSION = 1
_PRODUCER_ENTRY = struct.Struct(">qhiqiqiq")


class ProducerSnapshotError(ValueError):
    def __init__(self, message: str, position: int | None):
        super().__init__(message)
        self.position = position


def parse_producer_snapshot(data: bytes) -> list[dict]:
    """``version int16, crc uint32 (CRC-32C of what follows), entries: int32 count, then
    (producerId int64, epoch int16, lastSequence int32, lastOffset int64, offsetDelta int32,
    timestamp int64, coordinatorEpoch int32, currentTxnFirstOffset int64)``."""
    if len(data) < 10:
        raise ProducerSnapshotError(f"Snapshot of {len(data)} bytes is too short for its 10-byte header", 0)
    version, crc, count = struct.unpack_from(">hIi", data, 0)
    if version != _PRODUCER_SNAPSHOT_VERSION:
        raise ProducerSnapshotError(f"Snapshot contained an unknown file version {version}", 0)
    computed = crc32c(memoryview(data)[6:])
    if computed != crc:
        raise ProducerSnapshotError(f"Snapshot is corrupt (CRC is no longer valid). Stored crc: {crc}. "
                                    f"Computed crc: {computed}", 2)
    if count < 0 or count * _PRODUCER_ENTRY.size != len(data) - 10:
        raise ProducerSnapshotError(f"Snapshot declares {count} entries but holds {len(data) - 10} bytes of "
                                    f"entries ({_PRODUCER_ENTRY.size} bytes each)", 6)
    entries = []
    for pid, epoch, last_seq, last_offset, offset_delta, ts, coordinator_epoch, txn_first in \
            _PRODUCER_ENTRY.iter_unpack(data[10:]):
        first_seq = last_seq - offset_delta
        if first_seq < 0:
            first_seq += 0x80000000  # DefaultRecordBatch.decrementSequence wraps
        entries.append({"producerId": pid, "producerEpoch": epoch, "coordinatorEpoch": coordinator_epoch,
                        "currentTxnFirstOffset": txn_first, "timestamp": ts, "lastSequence": last_seq,
                        "firstSequence": first_seq, "lastOffset": last_offset, "offsetDelta": offset_delta})
    return entries
