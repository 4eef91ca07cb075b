"""dump-log's coordinator decoders (--offsets-decoder, --transaction-log-decoder) against
Kafka 4.3.1's DumpLogSegments, text for text, on coordinator segments a real Kafka broker wrote
(tests/interop/coordinator_traffic.py: classic, consumer-protocol, manual and share groups, a
committed and an aborted transaction; --share-group-state-decoder too) and on the ``__consumer_offsets`` segments of
../shared/reference/kraft-data. Set KAFKAWIRE_KEEP_COORDINATOR_LOGS=<dir> to keep a copy of the
broker's segments (how tests/data/dump_log_coordinators was captured).
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.interop.coordinator_traffic import SHARE_STATE_PROPERTIES, fill_coordinator_topics
from tests.interop.kafka_procs import DUMP_LOG_SEGMENTS
from tests.conftest import REFERENCE as SHARED_REFERENCE

REPO = Path(__file__).resolve().parents[2]
REFERENCE = SHARED_REFERENCE / "kraft-data"
CLUSTER_ID = "Q29vcmRpbmF0b3JEdW1wMQ"
FLAG_SETS = [(), ("--skip-record-metadata",)]
DECODER_OF_TOPIC = {"__consumer_offsets": "--offsets-decoder", "__transaction_state": "--transaction-log-decoder",
                    "__share_group_state": "--share-group-state-decoder"}


def _segments(root: Path, topic: str) -> list[Path]:
    return sorted(p for p in root.glob(f"{topic}-*/*.log") if p.stat().st_size > 0)


def _ours(*args, check: bool = True) -> str:
    result = subprocess.run([sys.executable, "-m", "kafkawire.tools.cli", "dump-log", *map(str, args)], cwd=REPO,
                            capture_output=True, text=True, timeout=120)
    if not check:
        return result.stdout
    assert result.returncode == 0, result.stderr
    assert result.stderr == "", result.stderr
    return result.stdout


def _wait_until_transactions_complete(data_dir: Path, timeout: float = 30) -> None:
    """EndTxn is answered once PrepareAbort is written; CompleteAbort follows the markers."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        files = _segments(data_dir, "__transaction_state")
        if files and '"transactionStatus":5' in _ours("--transaction-log-decoder", "--files",
                                                       ",".join(map(str, files)), check=False):
            return
        time.sleep(0.5)
    raise AssertionError(f"no CompleteAbort in __transaction_state within {timeout} s")


def _compare(kafka_tool, decoder: str, files: list[Path]) -> int:
    """Both tools on ``files`` with ``decoder`` and each flag set; the number of lines compared."""
    compared = 0
    for flags in FLAG_SETS:
        args = (decoder, *flags, "--files", ",".join(map(str, files)))
        theirs = kafka_tool(DUMP_LOG_SEGMENTS, *args, check=True, timeout=120).stdout
        ours = _ours(*args)
        their_lines, our_lines = theirs.splitlines(), ours.splitlines()
        for i, (a, b) in enumerate(zip(their_lines, our_lines)):
            assert b == a, f"{decoder} {flags}: line {i + 1} differs\nKafka: {a}\nours:  {b}"
        assert len(our_lines) == len(their_lines), (decoder, flags)
        compared += len(their_lines)
    return compared


def test_decoders_match_kafka_on_a_brokers_coordinator_topics(kafka_controller, kafka_broker, kafka_tool,
                                                              tmp_path):
    controller = kafka_controller(1, CLUSTER_ID, "--standalone")
    broker = kafka_broker(2, CLUSTER_ID, controller.controller_address,
                          properties={"offsets.topic.num.partitions": "1",
                                      "transaction.state.log.num.partitions": "1", **SHARE_STATE_PROPERTIES})
    fill_coordinator_topics(broker.broker_address)
    _wait_until_transactions_complete(broker.data_dir)
    broker.kill()
    copy = tmp_path / "copy"
    for topic in DECODER_OF_TOPIC:
        for segment in _segments(broker.data_dir, topic):
            target = copy / segment.parent.name / segment.name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(segment, target)
    keep = os.environ.get("KAFKAWIRE_KEEP_COORDINATOR_LOGS")
    if keep:
        shutil.copytree(copy, keep, dirs_exist_ok=True)
    for topic, decoder in DECODER_OF_TOPIC.items():
        files = _segments(copy, topic)
        assert files, f"the broker wrote no {topic} segment"
        lines = _compare(kafka_tool, decoder, files)
        print(f"{topic}: {len(files)} file(s), {lines} lines identical")
    offsets_text = _ours("--offsets-decoder", "--files", ",".join(map(str, _segments(copy, "__consumer_offsets"))))
    # the traffic reached the record kinds it was meant to: classic, KIP-848 and share groups, offsets,
    # transactional offsets with their marker
    for expected in ('"type":"1"', '"type":"2"', '"type":"3"', '"type":"5"', '"type":"8"', '"type":"11"', '"type":"15"',
                     '"protocolType":"consumer"', '"subscription":{"topics":', "endTxnMarker: COMMIT"):
        assert expected in offsets_text, expected
    txn_text = _ours("--transaction-log-decoder", "--files", ",".join(map(str, _segments(copy, "__transaction_state"))))
    for state in ('"transactionStatus":2', '"transactionStatus":4', '"transactionStatus":5'):
        assert state in txn_text, state
    share_text = _ours("--share-group-state-decoder", "--files",
                       ",".join(map(str, _segments(copy, "__share_group_state"))))
    assert '"type":"0"' in share_text and '"deliveryState":2' in share_text, share_text


def test_offsets_decoder_matches_kafka_on_the_reference_segments(kafka_tool):
    files = _segments(REFERENCE, "*/__consumer_offsets") + _segments(REFERENCE, "*/*/__consumer_offsets")
    if not files:
        pytest.skip(f"no __consumer_offsets segment under {REFERENCE}")
    assert _compare(kafka_tool, "--offsets-decoder", files) > 0


def test_the_checked_in_golden_text_is_still_kafkas(kafka_tool, monkeypatch):
    """tests/tools/test_dump_log_decoders.py compares ours with these files without Java."""
    from tests.data.dump_log_coordinators import make
    monkeypatch.chdir(REPO)
    runs = make.golden_runs(REPO)
    assert len(runs) == 8
    for args, golden in runs:
        assert kafka_tool(DUMP_LOG_SEGMENTS, *args, check=True, timeout=120).stdout == golden.read_text(), golden
