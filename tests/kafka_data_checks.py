"""The checks every reader of ours makes of a data directory a real Kafka wrote.

Two corpora use them: ../shared/reference's (tests/records, tests/storage, tests/metadata;
optional) and the directories a Kafka 4.3.1 node writes during the run
(tests/interop/test_readers_on_kafka_written_data.py). Each function asserts and returns what it
saw, so a caller can require that something was checked.
"""
from __future__ import annotations

import shutil
from collections import Counter
from pathlib import Path

import cramjam

from kafkawire.metadata import MetadataRecordError, decode_metadata_record, encode_metadata_record
from kafkawire.records import LZ4, NONE, SNAPPY, RecordBatch, RecordBatchBuilder, iter_batches
from kafkawire.storage import LogSegment, OffsetIndex, SnapshotReader
from kafkawire.storage.snapshot import is_bootstrap_file, parse_snapshot_file_name

XERIAL_MAGIC = b"\x82SNAPPY\x00"      # the framing Kafka's Java SnappyOutputStream writes


def check_batches_reencode(path: Path) -> Counter:
    """Every batch parses, its CRC verifies, an uncompressed or LZ4 one re-encodes to its exact
    bytes, a compressed one's records re-encode to the decompressed bytes (and a raw snappy block
    is ours); returns the batches seen by compression type."""
    data = path.read_bytes()
    batches = iter_batches(data, file=str(path))
    seen = Counter()
    for batch in batches:
        seen[batch.compression_type] += 1
        assert isinstance(batch, RecordBatch) and batch.magic == 2
        assert batch.is_valid
        records = batch.records()
        assert len(records) == batch.records_count
        if records:
            assert records[-1].offset <= batch.last_offset
        rebuilt = RecordBatchBuilder.from_batch(batch)
        if batch.compression_type == NONE:
            assert rebuilt.build() == bytes(batch.raw)
        else:
            assert rebuilt.records_bytes() == bytes(batch.decompressed_records())
        if batch.compression_type == LZ4:
            # Our LZ4 framing and block compressor give back Kafka's exact bytes.
            assert rebuilt.build() == bytes(batch.raw)
        if batch.compression_type == SNAPPY and not bytes(batch.records_data).startswith(XERIAL_MAGIC):
            # Raw snappy (a non-Java producer): the block matches ours.
            assert bytes(cramjam.snappy.compress_raw(batch.decompressed_records())) == bytes(batch.records_data)
        for rec in records:
            if batch.is_control:
                assert rec.control_key.is_known
    assert batches.tail is None, f"{path}: torn tail {batches.tail}"
    assert batches.position == len(data)
    return seen


def metadata_records_round_trip(paths) -> tuple[Counter, list]:
    """Every metadata record of ``paths`` decodes and re-encodes to its bytes; returns the record
    types seen and the (path, error) of each record refused."""
    seen, refused = Counter(), []
    for path in paths:
        for batch in iter_batches(path.read_bytes(), file=str(path)):
            if batch.is_control:
                continue
            for record in batch:
                try:
                    decoded = decode_metadata_record(record.value)
                except MetadataRecordError as exc:
                    refused.append((path, str(exc)))
                    continue
                assert encode_metadata_record(decoded.message, decoded.version) == bytes(record.value), \
                    f"{path} offset {record.offset}: {decoded.type_name} v{decoded.version} re-encodes differently"
                seen[decoded.type_name] += 1
    return seen, refused


def check_segment_recovers(path: Path, scratch: Path) -> int:
    """A copy of the segment recovers with nothing cut, its rebuilt indexes point at batch
    boundaries, and every batch is found by offset; the copy is unchanged. Returns the batches."""
    shutil.copy(path, scratch / path.name)
    original = path.read_bytes()
    seg = LogSegment(scratch, int(path.name[:20]), load_indexes=False)
    report = seg.recover()
    assert not report.truncated, report
    assert report.valid_bytes == len(original)
    boundaries = {b.position: b for b in iter_batches(original)}
    for entry in seg.offset_index:
        batch = boundaries[entry.position]
        assert batch.base_offset <= entry.offset == batch.last_offset
    prev = None
    for entry in seg.time_index:
        assert prev is None or entry.timestamp > prev.timestamp and entry.offset >= prev.offset
        prev = entry
    for b in list(boundaries.values())[:50]:
        pos, found = seg.translate_offset(b.base_offset)
        assert pos == b.position
        r = seg.read(b.last_offset, 1)
        assert r.position == b.position and r.data == bytes(b.raw)
    seg.close()
    assert (scratch / path.name).read_bytes() == original
    return len(boundaries)


def check_index_against_log(path: Path, cls):
    """Kafka's .index or .timeindex loads; an offset index's entries sit at batch boundaries."""
    log_path = path.with_suffix(".log")
    base = int(path.name[:20])
    idx = cls.from_bytes(path.read_bytes(), base, file=str(path))
    if not log_path.exists():
        return idx
    boundaries = {b.position: b for b in iter_batches(log_path.read_bytes())}
    if cls is OffsetIndex:
        for e in idx:
            assert e.position in boundaries, f"{path}: {e} is not at a batch boundary"
            assert boundaries[e.position].base_offset <= e.offset
    return idx


def check_snapshot(path: Path) -> SnapshotReader:
    """A snapshot (or bootstrap.checkpoint) reads between its header and footer, every batch
    carrying the snapshot's epoch."""
    reader = SnapshotReader(path)
    assert reader.header is not None and reader.footer is not None
    assert reader.header.version == 0 and reader.footer.version == 0
    assert reader.batches[0].is_control and reader.batches[-1].is_control
    if path.name == "bootstrap.checkpoint":
        assert is_bootstrap_file(path)
    else:
        sid, kind = parse_snapshot_file_name(path.name)
        assert kind == "checkpoint"
        assert {b.partition_leader_epoch for b in reader.batches} == {sid.epoch}
    assert len(reader) == sum(1 for _ in reader.records())
    first, last = list(iter_batches(path.read_bytes()))[0], list(iter_batches(path.read_bytes()))[-1]
    assert first.records()[0].control_key.name == "SNAPSHOT_HEADER"
    assert last.records()[0].control_key.name == "SNAPSHOT_FOOTER"
    return reader
