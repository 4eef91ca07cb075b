"""dump-log's coordinator decoders (--offsets-decoder, --transaction-log-decoder,
--share-group-state-decoder) on checked-in
segments, without Java: our output must equal, text for text, what Kafka 4.3.1's DumpLogSegments
printed for the same files (tests/data/dump_log_coordinators: records a Kafka broker wrote,
re-written by our writer, and records Kafka's decoders cannot read; make.py says how)."""
from __future__ import annotations

import json
import re
import struct

import pytest

from kafkawire.records import build_batch
from tests.data.dump_log_coordinators import make
from tests.tools.dumplog_testlib import REPO, dump

RUNS = make.golden_runs(REPO)


def test_the_segments_are_what_our_writer_makes_of_the_captured_records():
    captured = json.loads(make.RECORDS.read_text())
    assert set(captured) == {"__consumer_offsets-0", "__transaction_state-0", "__share_group_state-0"}
    for partition, batches in captured.items():
        assert (make.HERE / partition / make.SEGMENT).read_bytes() == make.build(batches), partition
    broken = make.HERE / "__consumer_offsets-broken" / make.SEGMENT
    assert broken.read_bytes() == make.build(make.broken_batches())


@pytest.mark.parametrize("args,golden", RUNS, ids=[f"{g.parent.name}/{g.name}" for _, g in RUNS])
def test_text_equals_kafkas(capsys, monkeypatch, args, golden):
    monkeypatch.chdir(REPO)
    status, out, err = dump(capsys, *args)
    assert out == golden.read_text()
    if "broken" in golden.parent.name:
        assert status == 1
        # each record that does not decode is reported on stderr with its offset
        broken = [int(n) for n in re.findall(r"at offset (\d+), skipping", out)]
        assert broken == [0, 1, 2, 3, 4, 5, 9, 10, 11, 12], out
        for offset in broken:
            assert f"the record at offset {offset} " in err, (offset, err)
    else:
        assert (status, err) == (0, "")


def test_the_golden_text_covers_the_record_kinds():
    offsets = (make.HERE / "__consumer_offsets-0" / "00000000000000000000.kafka.txt").read_text()
    for expected in ('key: {"type":"1","data":{"group":"classic-group"', '"subscription":{"topics":',
                     'key: {"type":"3"', 'key: {"type":"5"', 'key: {"type":"6"', 'key: {"type":"7"',
                     'key: {"type":"8"', 'key: {"type":"10"', 'key: {"type":"11"', 'key: {"type":"12"',
                     'key: {"type":"13"', 'key: {"type":"14"', 'key: {"type":"15"', "payload: <DELETE>",
                     "endTxnMarker: COMMIT"):
        assert expected in offsets, expected
    txn = (make.HERE / "__transaction_state-0" / "00000000000000000000.kafka.txt").read_text()
    assert txn.count('key: {"type":"0","data":{"transactionalId":"txn-producer"}}') >= 6
    share = (make.HERE / "__share_group_state-0" / "00000000000000000000.kafka.txt").read_text()
    assert 'key: {"type":"0","data":{"groupId":"share-group"' in share
    assert '"stateBatches":[{"firstOffset":0,"lastOffset":5,"deliveryState":2,"deliveryCount":1}' in share


def test_json_carries_the_same_key_and_payload_texts(capsys, monkeypatch):
    monkeypatch.chdir(REPO)
    args, golden = RUNS[0]
    status, out, _ = dump(capsys, *args, "--json")
    assert status == 0
    records = [json.loads(line) for line in out.splitlines() if '"type":"record"' in line]
    texts = [line for line in golden.read_text().splitlines() if line.startswith("| offset:") and " key: " in line]
    shown = [r for r in records if "key" in r and r["key"] is not None]
    assert len(shown) == len(texts) > 0
    for record, text in zip(shown, texts):
        assert text.endswith(f" key: {record['key']} payload: {record['payload']}")


def test_a_record_without_a_key_is_reported_and_the_dump_goes_on(capsys, tmp_path):
    # Kafka's tool dies on it (RuntimeException: ... message had a missing key)
    segment = tmp_path / make.SEGMENT
    tombstone_key = struct.pack(">hh", 2, 1) + b"g"
    segment.write_bytes(build_batch([(None, b"\x00\x03", (), 1), (tombstone_key, None, (), 2)]))
    status, out, err = dump(capsys, "--offsets-decoder", "--files", segment)
    assert status == 1
    lines = out.splitlines()
    assert lines[3] == "| offset: 0 CreateTime: 1 keySize: -1 valueSize: 2 sequence: -1 headerKeys: []"
    assert lines[4].endswith('key: {"type":"2","data":{"group":"g"}} payload: <DELETE>')
    assert "Failed to decode message at offset 0 using the specified decoder (message had a missing key)" in err


def test_the_offsets_decoder_wins_over_the_metadata_decoder_as_in_kafka(capsys, monkeypatch):
    monkeypatch.chdir(REPO)
    args, golden = RUNS[0]
    status, out, _ = dump(capsys, "--cluster-metadata-decoder", *args)
    assert (status, out) == (0, golden.read_text())
