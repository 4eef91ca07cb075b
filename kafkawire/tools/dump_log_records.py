"""dump-log's batch and record lines.

A record is seen once, as a ``RecordView`` (the fields Kafka prints before the contents: offset,
timestamp, sizes, then the sequence and header keys of a v2 record or the validity and CRC of a
legacy message) and, with --print-data-log or a decoder, its ``Contents`` (the key and payload
as shown). Each is rendered as Kafka's text or as our JSON by one function per form.

``RecordPrinter`` is a mixin of dump-log's Dumper, which supplies the options, the output, the
decoders and ``error``.
"""
from __future__ import annotations

import os
import struct
import zlib
from typing import NamedTuple

from kafkawire.metadata.frame import kafka_read_error
from kafkawire.metadata.java_text import jackson_json
from kafkawire.records import CorruptRecordError
from kafkawire.records.batch import CONTROL_FLAG_MASK, DELETE_HORIZON_FLAG_MASK, TIMESTAMP_TYPE_MASK
from kafkawire.records.compression import CODEC_NAMES
from kafkawire.records.control import ControlRecordType, control_type_name, decode_control_value, parse_control_key
from kafkawire.records.kraft_control import value_json
from kafkawire.tools.dump_log_coordinators import MissingKeyError
from kafkawire.tools.dump_log_output import header_key, java_string, json_b64, json_header, json_str

TIMESTAMP_TYPE_NAMES = {0: "CreateTime", 1: "LogAppendTime", -1: "NoTimestampType"}
# The JSON name each control value's class prints under (DumpLogSegments.printControlRecord).
_CONTROL_LABELS = {
    ControlRecordType.LEADER_CHANGE: " LeaderChange: ",
    ControlRecordType.SNAPSHOT_HEADER: " SnapshotHeader ",
    ControlRecordType.SNAPSHOT_FOOTER: " SnapshotFooter ",
    ControlRecordType.KRAFT_VERSION: " KRaftVersion ",
    ControlRecordType.KRAFT_VOTERS: " KRaftVoters ",
}


class RecordView(NamedTuple):
    """What Kafka prints about a record before its contents."""

    offset: int
    timestamp_type: str
    timestamp: int
    key_size: int
    value_size: int
    sequence: int | None        # v2 records: the producer sequence
    header_keys: list[str]      # v2 records (legacy messages have no headers)
    is_valid: bool | None       # legacy messages: the CRC-32 check
    crc: int | None             # legacy messages


class Contents(NamedTuple):
    """A record's key and payload as shown (None: not shown in the text, null in JSON)."""

    key: str | None
    payload: str | None
    payload_json: str | None    # a decoded metadata record: the payload as JSON text


# Views are made per record on the hot path: tuple.__new__ skips the NamedTuple's Python-level
# __new__ (a fifth of dump-log --deep-iteration's time otherwise).
_new_view = tuple.__new__
_NO_HEADER_KEYS: list[str] = []


def v2_view(record, timestamp_type: str, sequence: int) -> RecordView:
    key, value, headers = record.key, record.value, record.headers
    return _new_view(RecordView, (record.offset, timestamp_type, record.timestamp, -1 if key is None else len(key),
                                  -1 if value is None else len(value), sequence,
                                  [header_key(k) for k, _ in headers] if headers else _NO_HEADER_KEYS, None, None))


def legacy_view(record, timestamp_type: str, is_valid: bool, crc: int) -> RecordView:
    key, value = record.key, record.value
    return _new_view(RecordView, (record.offset, timestamp_type, record.timestamp, -1 if key is None else len(key),
                                  -1 if value is None else len(value), None, _NO_HEADER_KEYS, is_valid, crc))


def view_text(v: RecordView) -> str:
    offset, timestamp_type, timestamp, key_size, value_size, sequence, header_keys, is_valid, crc = v
    if sequence is not None:
        return (f"| offset: {offset} {timestamp_type}: {timestamp} keySize: {key_size} valueSize: {value_size} "
                f"sequence: {sequence} headerKeys: [{','.join(header_keys)}]")
    return (f"| offset: {offset} {timestamp_type}: {timestamp} keySize: {key_size} valueSize: {value_size} "
            f"isValid: {'true' if is_valid else 'false'} crc: {crc}")


def view_json(v: RecordView) -> str:
    """The record's JSON object, still open (the contents follow, then ``}``)."""
    offset, timestamp_type, timestamp, key_size, value_size, sequence, header_keys, is_valid, crc = v
    if sequence is not None:
        return (f'{{"type":"record","offset":{offset},"timestampType":{json_str(timestamp_type)},'
                f'"timestamp":{timestamp},"keySize":{key_size},"valueSize":{value_size},"sequence":{sequence},'
                f'"headerKeys":[{",".join(map(json_str, header_keys))}]')
    return (f'{{"type":"record","offset":{offset},"timestampType":{json_str(timestamp_type)},'
            f'"timestamp":{timestamp},"keySize":{key_size},"valueSize":{value_size},'
            f'"isValid":{"true" if is_valid else "false"},"crc":{crc}')


def contents_text(c: Contents, prefix: str) -> str:
    text = ""
    if c.key is not None:
        text = f"{prefix}key: {c.key}"
        prefix = " "
    if c.payload is not None:
        text = f"{text}{prefix}payload: {c.payload}"
    return text


def contents_json(c: Contents, record, with_key: bool) -> str:
    """``,"key":..,"payload":..,"keyBase64":..,"valueBase64":..[,"headers":[..]]``; a metadata
    record has no ``key``."""
    if c.payload_json is not None:
        payload = c.payload_json
    else:
        payload = "null" if c.payload is None else json_str(c.payload)
    text = f',"key":{"null" if c.key is None else json_str(c.key)},"payload":{payload}' if with_key \
        else f',"payload":{payload}'
    text = f'{text},"keyBase64":{json_b64(record.key)},"valueBase64":{json_b64(record.value)}'
    if record.headers:
        text = f'{text},"headers":[{",".join(json_header(k, v) for k, v in record.headers)}]'
    return text


def legacy_inner_valid(record) -> bool:
    """Whether an inner message of a compressed legacy wrapper matches its CRC-32, rebuilt from
    its fields (the reader keeps fields, not bytes)."""
    body = bytearray((record.magic, record.attributes))
    if record.magic == 1:
        body += struct.pack(">q", record.timestamp)
    for part in (record.key, record.value):
        if part is None:
            body += struct.pack(">i", -1)
        else:
            body += struct.pack(">i", len(part)) + bytes(part)
    return zlib.crc32(body) == record.crc


def _plain_contents(r, name: str, position: int, report_failure: bool, legacy_json: bool = False) -> Contents:
    return _new_view(Contents, (None if r.key is None else java_string(r.key),
                                None if r.value is None else java_string(r.value), None))


class RecordPrinter:
    """The batch line and the record lines of one batch (see the module docstring)."""

    def _records(self, batch, name: str, position: int, last_offset: list):
        """The records of a batch, noting offsets that do not follow the previous record's
        (Kafka's "Non-consecutive offsets" report); a record that does not decode is reported
        and ends the batch."""
        previous = last_offset[0]
        try:
            for record in batch:
                offset = record.offset
                if offset != previous + 1:
                    self.non_consecutive.setdefault(os.path.abspath(name), {})[previous] = offset
                previous = last_offset[0] = offset
                yield record
        except CorruptRecordError as exc:
            self.error(name, exc.position if exc.position is not None else position,
                       f"{exc.reason} (while reading the records of the batch at byte {position})")

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

    def _dump_v2_batch(self, batch, name: str, position: int, last_offset: list) -> None:
        if self.native_lines is not None and self.opts.deep and not batch.attributes & CONTROL_FLAG_MASK:
            ts_name = TIMESTAMP_TYPE_NAMES[1 if batch.attributes & TIMESTAMP_TYPE_MASK else 0]
            done = self.native_lines.batch_lines(batch, ts_name, last_offset[0], with_batch_line=True)
            if done is not None:
                self.out.add_block(done[0])
                last_offset[0] = done[1]
                return
        valid = batch.is_valid
        self._batch_line(batch, position, True, valid)
        if not valid:
            self.error(name, position + 17, f"batch CRC-32C mismatch: stored {batch.crc}, "
                                            f"computed {batch.compute_crc()} (isvalid: false)")
        if not self.opts.deep:
            return
        if batch.attributes & CONTROL_FLAG_MASK:
            self._dump_control_records(batch, name, position, last_offset)
        else:
            self._dump_data_records(batch, name, position, last_offset)

    def _dump_data_records(self, batch, name: str, position: int, last_offset: list) -> None:
        """The hot loop: one line per record."""
        ts_name = TIMESTAMP_TYPE_NAMES[1 if batch.attributes & TIMESTAMP_TYPE_MASK else 0]
        no_sequence = batch.base_sequence < 0
        print_data = self.opts.print_data
        with_key = not self.opts.cluster_metadata
        contents = self._contents_reader()
        if self.json:
            raw = self.out.raw
            for r in self._records(batch, name, position, last_offset):
                text = view_json(v2_view(r, ts_name, -1 if no_sequence else r.sequence))
                if print_data:
                    text += contents_json(contents(r, name, position, True), r, with_key)
                raw(text + "}")
            return
        if self.native_lines is not None:
            done = self.native_lines.batch_lines(batch, ts_name, last_offset[0])
            if done is not None:
                self.out.add_block(done[0])
                last_offset[0] = done[1]
                return
        add = self.out.add
        skip_metadata = self.opts.skip_record_metadata
        prefix = "| " if skip_metadata else " "
        for r in self._records(batch, name, position, last_offset):
            line = "" if skip_metadata else view_text(v2_view(r, ts_name, -1 if no_sequence else r.sequence))
            if print_data:
                line += contents_text(contents(r, name, position, True), prefix)
            add(line)

    def _contents_reader(self):
        """The function giving a record's Contents in this run's mode (chosen once per batch):
        ``(record, file, batch position, report_failure, legacy_json=False) -> Contents``."""
        if self.opts.cluster_metadata:
            return self._metadata_contents
        if self.coordinator is not None:
            return self._coordinator_contents
        return _plain_contents

    def _metadata_contents(self, r, name: str, position: int, report_failure: bool,
                           legacy_json: bool = False) -> Contents:
        payload = self.decode_payload(r.value)
        if payload.error is None:
            # A legacy message's payload has always been written from the decoded object.
            shown = self.out.dumps(payload.obj) if legacy_json else payload.text
            return _new_view(Contents, (None, payload.text, shown))
        if report_failure:
            self.error(name, position, f"the record at offset {r.offset} (in the batch at this position) is not "
                                       f"a metadata record: {payload.error}")
        # Kafka's own words (the class of failure); ours, with field and byte, go to stderr
        return Contents(None, f"Error at {r.offset}, skipping. {kafka_read_error(r.value)}", None)

    def _coordinator_contents(self, r, name: str, position: int, report_failure: bool,
                              legacy_json: bool = False) -> Contents:
        key, payload = self._coordinator_parse(name, position, r.offset, r.key, r.value)
        return _new_view(Contents, (key, payload, None))

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

    def _dump_control_records(self, batch, name: str, position: int, last_offset: list) -> None:
        ts_name = TIMESTAMP_TYPE_NAMES[1 if batch.attributes & TIMESTAMP_TYPE_MASK else 0]
        for r in self._records(batch, name, position, last_offset):
            if self.opts.skip_record_metadata:
                # Kafka prints neither the metadata nor the contents of control records then.
                self.out.line("", None)
                continue
            view = v2_view(r, ts_name, r.sequence)
            control_text, control_obj = self._control_text(r, name, position)
            if self.json:
                self.out.raw(f'{view_json(view)},"control":{self.out.dumps(control_obj)}}}')
            else:
                self.out.add(view_text(view) + control_text)

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

    def _dump_legacy_batch(self, batch, name: str, position: int, last_offset: list) -> None:
        valid = batch.is_valid
        self._batch_line(batch, position, False, valid)
        if not valid:
            self.error(name, position + 12, f"message CRC-32 mismatch: stored {batch.crc}, "
                                            f"computed {batch.compute_crc()} (isvalid: false)")
        if not self.opts.deep:
            return
        ts_name = TIMESTAMP_TYPE_NAMES[batch.timestamp_type]
        compressed = batch.compression_type != 0
        print_data, skip_metadata = self.opts.print_data, self.opts.skip_record_metadata
        with_key = not self.opts.cluster_metadata
        contents = self._contents_reader()
        for r in self._records(batch, name, position, last_offset):
            view = legacy_view(r, ts_name, *((legacy_inner_valid(r), r.crc) if compressed else (valid, batch.crc)))
            if self.json:
                text = view_json(view)
                if print_data:
                    text += contents_json(contents(r, name, position, True, legacy_json=True), r, with_key)
                self.out.raw(text + "}")
                continue
            line = "" if skip_metadata else view_text(view)
            if print_data:
                # Unlike a v2 record's, a legacy message's undecodable metadata payload has never
                # been reported on stderr in the text form.
                line += contents_text(contents(r, name, position, False), " " if line else "| ")
            self.out.add(line)
