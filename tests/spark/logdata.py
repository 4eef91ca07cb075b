"""Test data and the two views the reader is checked against.

* ``write_partition``: a partition directory written by our Log writer (real .index and
  .timeindex files, rolled segments).
* ``dump_log_rows``: what ``kafkawire dump-log --json`` finds in files, as row tuples.
* ``spark_rows``: a DataFrame's rows as the same tuples.

A row tuple: (topic, partition, offset, key, value, timestamp ms, timestampType, headers,
leaderEpoch, baseOffset, producerId, producerEpoch, baseSequence, isTransactional,
isControl, controlType); headers are a tuple of (key, value) or None when there are none.
"""
from __future__ import annotations

import base64
import contextlib
import io
import json
import os
import re
from pathlib import Path

from kafkawire.records import build_batch
from kafkawire.storage.log import Log

ROW_COLUMNS = ("topic", "partition", "offset", "key", "value", "timestamp", "timestampType",
               "headers", "leaderEpoch", "baseOffset", "producerId", "producerEpoch",
               "baseSequence", "isTransactional", "isControl", "controlType")
_TS_TYPES = {"CreateTime": 0, "LogAppendTime": 1, "NoTimestampType": -1}
T0 = 1_700_000_000_000
# Whether Spark found format kafkawire by name before register() was called (filled in by
# the session fixture in conftest; here so that the tests see the same dict).
DISCOVERY: dict = {}


def write_partition(path, batches, *, segment_bytes: int = 1 << 30, leader_epoch: int = 0,
                    index_interval_bytes: int = 4096, roll: bool = False, **batch_fields) -> Path:
    """Append each batch (a list of ``(key, value[, headers[, timestamp]])``, or bytes of a
    built batch) with offsets assigned by the log; ``roll`` starts a new segment first."""
    path = Path(path)
    log = Log(path, segment_bytes=segment_bytes, index_interval_bytes=index_interval_bytes)
    try:
        if roll:
            log.roll()
        for batch in batches:
            data = batch if isinstance(batch, (bytes, bytearray)) else build_batch(batch, **batch_fields)
            log.append(data, assign_offsets=True, leader_epoch=leader_epoch)
        log.flush()
    finally:
        log.close()
    return path


def numbered_batches(count: int, per_batch: int, *, value_size: int = 40, start: int = 0):
    """Batches of records with increasing timestamps (10 ms apart) and recognisable keys."""
    out = []
    n = start
    for _ in range(count):
        batch = []
        for _ in range(per_batch):
            headers = [("n", b"%d" % n)] if n % 5 == 0 else []
            batch.append((b"key-%d" % n, (b"value-%d-" % n).ljust(value_size, b"x"), headers, T0 + 10 * n))
            n += 1
        out.append(batch)
    return out


def _b64(text):
    return None if text is None else base64.b64decode(text)


def topic_partition_of(file: str) -> tuple[str, int]:
    m = re.match(r"^(.+)-(\d+)(\.[0-9a-f]{32}-(delete|future|stray))?$", Path(file).parent.name)
    return (m.group(1), int(m.group(2))) if m else ("__cluster_metadata", 0)


def dump_log_json(files, *, metadata: bool = False, allow_errors: bool = False) -> list[dict]:
    """``kafkawire dump-log --json`` over ``files``, run in this process. ``allow_errors``:
    records it cannot decode are expected (they come back as payload error strings)."""
    from kafkawire.tools.cli import main
    args = ["dump-log", "--files", ",".join(map(str, files)), "--json", "--print-data-log"]
    if metadata:
        args.append("--cluster-metadata-decoder")
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = main(args)
    assert status == 0 or allow_errors, f"dump-log reported problems: {err.getvalue()[:2000]}"
    return [json.loads(line) for line in out.getvalue().splitlines() if line]


def dump_log_rows(objs) -> list[tuple]:
    """Row tuples from dump-log's JSON objects. dump-log shows a control record decoded
    (its type and value), not its raw key and value, so those are None in control rows."""
    rows = []
    topic = partition = batch = None
    for obj in objs:
        kind = obj["type"]
        if kind == "file":
            topic, partition = topic_partition_of(obj["file"])
        elif kind == "batch":
            batch = obj
        elif kind == "record":
            control = obj.get("control")
            control_type = None
            if control is not None:
                control_type = control["type"] if control["type"] != "UNKNOWN" else f"UNKNOWN({control['typeId']})"
            headers = tuple((h["key"], _b64(h["valueBase64"])) for h in obj.get("headers", ())) or None
            rows.append((topic, partition, obj["offset"], _b64(obj.get("keyBase64")),
                         _b64(obj.get("valueBase64")), obj["timestamp"], _TS_TYPES[batch["timestampType"]],
                         headers, batch["partitionLeaderEpoch"], batch["baseOffset"], batch["producerId"],
                         batch["producerEpoch"], batch["baseSequence"], batch["isTransactional"],
                         batch["isControl"], control_type))
    return rows


def without_control_bytes(rows) -> list[tuple]:
    """Rows with the raw key and value of control records blanked (see dump_log_rows)."""
    return [r[:3] + (None, None) + r[5:] if r[14] else r for r in rows]


def dump_log_metadata(objs) -> list[tuple]:
    """(offset, recordType, recordVersion, data) per record of a --cluster-metadata-decoder
    run; (offset, None, None, None) for a record it could not decode."""
    out = []
    for obj in objs:
        if obj["type"] != "record":
            continue
        control = obj.get("control")
        if control is not None:
            data = control.get("data")
            version = None if data is None else data.get("version")
            if control["type"] in ("ABORT", "COMMIT"):
                data, version = {"coordinatorEpoch": control["coordinatorEpoch"]}, 0
            out.append((obj["offset"], control["type"], version, data))
        else:
            p = obj["payload"]
            if isinstance(p, str):   # "Error at <offset>, skipping. <why>"
                out.append((obj["offset"], None, None, None))
            else:
                out.append((obj["offset"], p["type"], p["version"], p["data"]))
    return out


def spark_rows(df) -> list[tuple]:
    """The DataFrame's rows as row tuples (through Arrow: fast for many rows)."""
    from pyspark.sql import functions as F
    cols = [F.unix_micros("timestamp").alias("timestamp") if c == "timestamp" else c for c in ROW_COLUMNS]
    table = df.select(*cols).toArrow()
    rows = []
    for r in table.to_pylist():
        headers = None if r["headers"] is None else tuple((h["key"], h["value"]) for h in r["headers"])
        ts = r["timestamp"]
        rows.append((r["topic"], r["partition"], r["offset"], r["key"], r["value"],
                     None if ts is None else ts // 1000, r["timestampType"], headers,
                     r["leaderEpoch"], r["baseOffset"], r["producerId"], r["producerEpoch"],
                     r["baseSequence"], r["isTransactional"], r["isControl"], r["controlType"]))
    return rows


def segment_files(directory) -> list[str]:
    return sorted(os.path.join(directory, n) for n in os.listdir(directory)
                  if re.match(r"^\d{20}\.log$", n))


def read_direct(path, pushed=None, **options) -> list[dict]:
    """What a batch read returns, planned and read in this process (no Spark): the same
    code Spark's tasks run, for fast tests of planning and reading."""
    from kafkawire.spark.filters import PushedFilters
    from kafkawire.spark.options import parse_options
    from kafkawire.spark.plan import plan_batch
    from kafkawire.spark.reader import default_names, read_task, settings_for
    opts = parse_options({"path": str(path), **{k: str(v) for k, v in options.items()}}, streaming=False)
    pushed = pushed or PushedFilters()
    settings = settings_for(default_names(opts), opts, pushed)
    rows = []
    for task in plan_batch(opts, pushed):
        for batch in read_task(task, settings):
            rows += batch.to_pylist()
    return rows
