"""Build the coordinator segments of tests/data/dump_log_coordinators with our own writer.

``records.json`` holds, batch by batch, the header fields and records that a Kafka 4.3.1 broker
wrote to ``__consumer_offsets``, ``__transaction_state`` and ``__share_group_state`` (captured from the segments that
tests/interop/test_dump_log_decoders_vs_kafka.py keeps with KAFKAWIRE_KEEP_COORDINATOR_LOGS=<dir>:
``python -m tests.data.dump_log_coordinators.make --capture <dir>``), plus records made here that
Kafka's decoders cannot read (``broken_records``). ``python -m tests.data.dump_log_coordinators.make``
writes the ``.log`` files from them; the ``*.kafka.txt`` files beside them are what Kafka 4.3.1's
DumpLogSegments printed for those files (``--offsets-decoder`` / ``--transaction-log-decoder`` /
``--share-group-state-decoder``,
with and without ``--skip-record-metadata``; ``make --kafka-text`` runs it), the golden text of
tests/tools/test_dump_log_decoders.py. The segments written from ``records.json`` are byte for
byte the broker's.
"""
from __future__ import annotations

import base64
import json
import struct
import sys
from pathlib import Path

from kafkawire.records import RecordBatchBuilder, iter_batches

HERE = Path(__file__).resolve().parent
RECORDS = HERE / "records.json"
TS = 1_700_000_000_000
SEGMENT = "00000000000000000000.log"


def _b64(data) -> str | None:
    return None if data is None else base64.b64encode(bytes(data)).decode()


def _unb64(text: str | None) -> bytes | None:
    return None if text is None else base64.b64decode(text)


def capture(source: Path) -> dict:
    """partition directory name -> list of batches (header fields and records)."""
    out = {}
    for segment in sorted(source.glob(f"*/{SEGMENT}")):
        batches = []
        for batch in iter_batches(segment.read_bytes()):
            records = [{"key": _b64(r.key), "value": _b64(r.value), "timestampDelta": r.timestamp_delta,
                        "offsetDelta": r.offset_delta, "attributes": r.attributes,
                        "headers": [[k, _b64(v)] for k, v in r.headers]} for r in batch]
            batches.append({"header": batch.header_fields(), "records": records})
        out[segment.parent.name] = batches
    return out


def build(batches: list[dict]) -> bytes:
    data = bytearray()
    for batch in batches:
        builder = RecordBatchBuilder(**batch["header"])
        for r in batch["records"]:
            builder.append(_unb64(r["key"]), _unb64(r["value"]), [(k, _unb64(v)) for k, v in r["headers"]],
                           timestamp_delta=r["timestampDelta"], offset_delta=r["offsetDelta"],
                           attributes=r["attributes"])
        data += builder.build()
    return bytes(data)


def _key(record_type: int, *strings: str, tail: bytes = b"") -> bytes:
    body = b"".join(struct.pack(">h", len(s.encode())) + s.encode() for s in strings)
    return struct.pack(">h", record_type) + body + tail


def broken_records() -> list[tuple[bytes | None, bytes | None]]:
    """(key, value) pairs of __consumer_offsets records that do not decode, each in its own way."""
    offset_key = _key(1, "g", "t") + struct.pack(">i", 0)
    group_key = _key(2, "broken-group")

    def group_value(subscription: bytes, assignment: bytes) -> bytes:
        def s(text):
            return struct.pack(">h", len(text)) + text.encode()
        member = (s("m-1") + struct.pack(">h", -1) + s("c") + s("/h") + struct.pack(">ii", 1000, 1000)
                  + struct.pack(">i", len(subscription)) + subscription
                  + struct.pack(">i", len(assignment)) + assignment)
        return (struct.pack(">h", 3) + s("consumer") + struct.pack(">i", 1) + s("range") + s("m-1")
                + struct.pack(">q", TS) + struct.pack(">i", 1) + member)

    return [
        (struct.pack(">h", 99) + b"\x00\x01x", b"\x00\x00"),           # a record type the group coordinator lacks
        (offset_key, struct.pack(">h", 9) + b"\x00" * 8),                # OffsetCommitValue has no version 9
        (offset_key, struct.pack(">h", 3) + b"\x00\x00\x00"),            # the value stops inside its first field
        (b"\x00", b"\x00\x00"),                                          # a key too short for its record type
        (_key(2), b"\x00\x03"),                                          # a group name that is not there
        (group_key, b"\x00"),                                            # a value too short for its version
        (group_key, group_value(b"\x00\x00\x00\x00\x00\x05", b"\x00\x07")),  # undecodable subscription/assignment
        (group_key, group_value(struct.pack(">hi", 3, 1) + b"\x00\x01t" + struct.pack(">i", -1)
                                + struct.pack(">i", 0) + struct.pack(">i", 5) + struct.pack(">h", -1),
                                struct.pack(">hi", 0, 0) + struct.pack(">i", 2) + b"ud")),
        (offset_key + b"trailing", struct.pack(">h", 0) + struct.pack(">q", 5) + b"\x00\x00"
         + struct.pack(">q", TS) + b"extra"),                             # bytes left over in key and value
        (struct.pack(">hh", 2, -1), None),                               # a null where the group name must be
        (group_key, struct.pack(">h", 3) + b"\x00\x08consumer" + struct.pack(">i", 1) + b"\x00\x01r\x00\x01m"
         + struct.pack(">q", TS) + struct.pack(">i", 1000)),              # more members than bytes left
        (_key(2) + struct.pack(">h", 40) + b"short", None),            # a group name longer than the key
        (group_key, struct.pack(">h", 3) + b"\x00\x08consumer" + struct.pack(">i", 1) + b"\x00\x01r\x00\x01m"
         + struct.pack(">q", TS) + struct.pack(">i", 1) + struct.pack(">h", -1)),  # a member without its id
        (group_key, None),                                               # a tombstone
        (_key(2) + b"\x00\x03a\xffb", None),                            # a group name that is not UTF-8
        (_key(1, "g") + b"\x00\x02\xc3\x28" + struct.pack(">i", 0),       # ... a topic and metadata neither
         struct.pack(">hq", 0, 1) + b"\x00\x01\xff" + struct.pack(">q", TS)),
    ]


def broken_batches() -> list[dict]:
    records = [{"key": _b64(k), "value": _b64(v), "timestampDelta": i, "offsetDelta": i, "attributes": 0,
                "headers": []} for i, (k, v) in enumerate(broken_records())]
    header = {"base_offset": 0, "partition_leader_epoch": 0, "base_timestamp": TS}
    return [{"header": header, "records": records}]


def write_all() -> list[Path]:
    batches_of = json.loads(RECORDS.read_text())
    batches_of["__consumer_offsets-broken"] = broken_batches()
    written = []
    for partition, batches in batches_of.items():
        path = HERE / partition / SEGMENT
        path.parent.mkdir(exist_ok=True)
        path.write_bytes(build(batches))
        written.append(path)
    return written


DECODERS = {"__consumer_offsets": "--offsets-decoder", "__transaction_state": "--transaction-log-decoder",
            "__share_group_state": "--share-group-state-decoder"}
FLAG_SETS = {"": (), "-skip-record-metadata": ("--skip-record-metadata",)}


def golden_runs(repo: Path) -> list[tuple[tuple[str, ...], Path]]:
    """(dump-log arguments, the file holding Kafka's text for them); paths relative to the repo."""
    runs = []
    for segment in sorted(HERE.glob(f"*/{SEGMENT}")):
        decoder = DECODERS[segment.parent.name.rsplit("-", 1)[0]]
        for suffix, flags in FLAG_SETS.items():
            args = (decoder, *flags, "--files", str(segment.relative_to(repo)))
            runs.append((args, segment.parent / f"{segment.stem}{suffix}.kafka.txt"))
    return runs


def write_kafka_text() -> None:
    """Run Kafka 4.3.1's DumpLogSegments on each file (needs Java; see tests/interop/kafka_dist.py)."""
    import os
    from tests.interop.kafka_procs import DUMP_LOG_SEGMENTS, run_kafka_tool
    repo = HERE.parents[2]
    os.chdir(repo)
    for args, target in golden_runs(repo):
        target.write_text(run_kafka_tool(DUMP_LOG_SEGMENTS, *args, check=True).stdout)
        print(target.relative_to(HERE))


if __name__ == "__main__":
    if sys.argv[1:2] == ["--capture"]:
        RECORDS.write_text(json.dumps(capture(Path(sys.argv[2])), indent=1) + "\n")
    for path in write_all():
        print(path.relative_to(HERE))
    if "--kafka-text" in sys.argv:
        write_kafka_text()
