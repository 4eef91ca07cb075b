"""The columns a read produces, as Spark DDL and as the Arrow schema Spark expects.

The first eight are those of Spark's own Kafka source (``includeHeaders=true``), with its
types and conventions, so an existing job's queries keep working: ``timestamp`` is the
record's milliseconds as a Spark timestamp (-1, "no timestamp", becomes 1969-12-31
23:59:59.999 UTC, as Spark's source shows it), ``timestampType`` is Kafka's id (0 create
time, 1 log append time, -1 none for magic 0 messages), ``headers`` is null for a record
without headers. Then what a consumer does not see: the batch's leader epoch, base
offset, producer id/epoch, base sequence, transactional and control flags, and the
control record type (ABORT, COMMIT, LEADER_CHANGE, ...; null for data records).

``decode=metadata`` adds ``recordType`` (Kafka's MetadataRecordType name, e.g.
TOPIC_RECORD, or the control record type), ``recordVersion`` and ``record`` (the record in
Kafka's JsonConverter form). ``failOnCorruption=false`` adds ``corruption``: one row per
skipped corrupt region says what and where; data rows have it null.
"""
from __future__ import annotations

from kafkawire._extras import require

require("pyarrow", "spark", "reading Kafka logs into Arrow batches (kafkawire.spark)")
import pyarrow as pa

__all__ = ["SPARK_KAFKA_COLUMNS", "column_types", "ddl", "arrow_schema"]

HEADERS_TYPE = pa.list_(pa.field("element", pa.struct([("key", pa.string()), ("value", pa.binary())])))

# name -> (Spark DDL type, Arrow type)
_COLUMNS = {
    "key": ("binary", pa.binary()),
    "value": ("binary", pa.binary()),
    "topic": ("string", pa.string()),
    "partition": ("int", pa.int32()),
    "offset": ("bigint", pa.int64()),
    "timestamp": ("timestamp", pa.timestamp("us", tz="UTC")),
    "timestampType": ("int", pa.int32()),
    "headers": ("array<struct<key:string,value:binary>>", HEADERS_TYPE),
    "leaderEpoch": ("int", pa.int32()),
    "baseOffset": ("bigint", pa.int64()),
    "producerId": ("bigint", pa.int64()),
    "producerEpoch": ("smallint", pa.int16()),
    "baseSequence": ("int", pa.int32()),
    "isTransactional": ("boolean", pa.bool_()),
    "isControl": ("boolean", pa.bool_()),
    "controlType": ("string", pa.string()),
    "recordType": ("string", pa.string()),
    "recordVersion": ("int", pa.int32()),
    "record": ("string", pa.string()),
    "corruption": ("string", pa.string()),
}

SPARK_KAFKA_COLUMNS = ("key", "value", "topic", "partition", "offset", "timestamp",
                       "timestampType", "headers")
_BATCH_COLUMNS = ("leaderEpoch", "baseOffset", "producerId", "producerEpoch", "baseSequence",
                  "isTransactional", "isControl", "controlType")
METADATA_COLUMNS = ("recordType", "recordVersion", "record")


def column_names(*, include_headers: bool = True, decode_metadata: bool = False,
                 corruption: bool = False) -> list[str]:
    names = [c for c in SPARK_KAFKA_COLUMNS if include_headers or c != "headers"]
    names += _BATCH_COLUMNS
    if decode_metadata:
        names += METADATA_COLUMNS
    if corruption:
        names.append("corruption")
    return names


def column_types() -> dict[str, str]:
    """Every column this source can produce, with its Spark DDL type."""
    return {name: spark for name, (spark, _) in _COLUMNS.items()}


def ddl(names) -> str:
    return ", ".join(f"`{n}` {_COLUMNS[n][0]}" for n in names)


def arrow_schema(names) -> pa.Schema:
    return pa.schema([pa.field(n, _COLUMNS[n][1]) for n in names])
