"""Real bytes written by Kafka 3.4-4.3 brokers and controllers (../shared/reference).

Every batch of every log segment and snapshot parses and its CRC verifies; every
uncompressed batch re-encodes from its decoded fields and records to its exact bytes;
compressed batches decompress and their records re-encode to the decompressed bytes.
"""

from __future__ import annotations


import pytest

from kafkawire.records import iter_batches
from kafkawire.records.legacy import iter_kafka07_messages
from records_testlib import REFERENCE, reference_dir
from tests.kafka_data_checks import check_batches_reencode


def data_files():
    root = REFERENCE / "kraft-data"
    if not root.is_dir():
        return []
    files = [p for p in sorted(root.rglob("*")) if p.is_file()
             and (p.suffix == ".log" or p.name.endswith(".checkpoint"))
             and not p.name.endswith("-checkpoint") and p.stat().st_size > 0]
    return files


FILES = data_files()


def _id(path):
    return str(path.relative_to(REFERENCE)) if path else "absent"


@pytest.mark.parametrize("path", FILES or [None], ids=_id)
def test_every_batch_parses_verifies_and_reencodes(path):
    if path is None:
        reference_dir("kraft-data")
        pytest.skip("no data files in ../shared/reference/kraft-data")
    assert sum(check_batches_reencode(path).values()) > 0


@pytest.mark.parametrize("path", [p for p in FILES if p.name.endswith(".checkpoint")] or [None], ids=_id)
def test_snapshots_are_framed_by_header_and_footer(path):
    if path is None:
        pytest.skip("no snapshot files in ../shared/reference/kraft-data")
    batches = list(iter_batches(path.read_bytes()))
    first, last = batches[0], batches[-1]
    assert first.is_control and first.records()[0].control_key.name == "SNAPSHOT_HEADER"
    assert last.is_control and last.records()[0].control_key.name == "SNAPSHOT_FOOTER"


def test_metadata_logs_have_leader_change_markers():
    root = reference_dir("kraft-data")
    seen = set()
    for path in root.rglob("__cluster_metadata-0/*.log"):
        for batch in iter_batches(path.read_bytes()):
            if batch.is_control:
                seen.update(r.control_key.name for r in batch)
            else:
                assert batch.producer_id == -1
    if not seen:
        pytest.skip("no non-empty metadata log segments")
    assert "LEADER_CHANGE" in seen


def test_kafka_0_7_log_fixture_parses():
    root = reference_dir("kafka-fixtures")
    path = root / "legacy-0.7-log" / "00000000000000000000.kafka"
    if not path.is_file():
        pytest.skip(f"{path} is absent")
    data = path.read_bytes()
    messages = list(iter_kafka07_messages(data, file=str(path)))
    assert messages and all(m.is_valid for m in messages)
    assert messages[0].magic == 0 and messages[0].crc == 0x5E0E5D8F
    assert bytes(messages[0].payload) == b"x" * 100
    end = messages[-1].position + 4 + 5 + len(messages[-1].payload)
    assert end == len(data)
