"""KRaft control record values whose Version field is not 0, through Kafka's DumpLogSegments
and ours (issue 12, item 6).

Kafka reads LeaderChange, SnapshotHeader/Footer, KRaftVersion and Voters values at version 0
whatever their Version field says, and prints them with JsonConverter at that field's
version. A segment of such values, in version 0's layout with Version 1, 7, -1 and 32767,
must dump as Kafka dumps it: every record read, the same text line for line.
"""
from __future__ import annotations

import subprocess
import sys
import uuid
from pathlib import Path

from kafkawire.messages import leader_change_message as leader_change, voters_record
from kafkawire.messages.k_raft_version_record import KRaftVersionRecord
from kafkawire.messages.snapshot_footer_record import SnapshotFooterRecord
from kafkawire.messages.snapshot_header_record import SnapshotHeaderRecord
from kafkawire.records import build_control_batch
from kafkawire.records.control import ControlRecordType
from kafkawire.storage import LogSegment
from tests.interop.kafka_procs import DUMP_LOG_SEGMENTS

REPO = Path(__file__).resolve().parents[2]
TS = 1_700_000_000_000
FIELD_VERSIONS = (1, 7, -1, 32767)


def _values(field_version: int) -> list[tuple[int, bytes]]:
    """(control type, value) of each KRaft type, version 0's layout, Version = field_version."""
    voter = voters_record.Voter(
        voter_id=3, voter_directory_id=uuid.UUID(int=5),
        endpoints=[voters_record.Endpoint(name="CONTROLLER", host="localhost", port=9093)],
        k_raft_version_feature=voters_record.KRaftVersionFeature(min_supported_version=0, max_supported_version=1))
    messages = [
        (ControlRecordType.LEADER_CHANGE, leader_change.LeaderChangeMessage(
            leader_id=2, voters=[leader_change.Voter(voter_id=i) for i in (1, 2, 3)],
            granting_voters=[leader_change.Voter(voter_id=2)])),
        (ControlRecordType.SNAPSHOT_HEADER, SnapshotHeaderRecord(last_contained_log_timestamp=TS)),
        (ControlRecordType.SNAPSHOT_FOOTER, SnapshotFooterRecord()),
        (ControlRecordType.KRAFT_VERSION, KRaftVersionRecord(k_raft_version=1)),
        (ControlRecordType.KRAFT_VOTERS, voters_record.VotersRecord(voters=[voter])),
    ]
    # Crafted from version 0's bytes, not by our encoder, so the reader is tested on its own.
    return [(t, field_version.to_bytes(2, "big", signed=True) + m.encode(0)[2:]) for t, m in messages]


def _segment(directory: Path) -> Path:
    directory.mkdir(parents=True)
    segment = LogSegment(directory, 0, index_interval_bytes=1, create=True)
    offset = 0
    for field_version in FIELD_VERSIONS:
        for control_type, value in _values(field_version):
            segment.append(build_control_batch(control_type, value, timestamp=TS, base_offset=offset,
                                               partition_leader_epoch=4))
            offset += 1
    segment.flush()
    segment.close()
    return directory / "00000000000000000000.log"


def test_control_values_with_any_version_field_dump_as_kafka_dumps_them(kafka_tool, tmp_path):
    path = _segment(tmp_path / "__cluster_metadata-0")
    for flags in (("--deep-iteration",), ("--cluster-metadata-decoder",)):
        kafka = kafka_tool(DUMP_LOG_SEGMENTS, *flags, "--files", path, check=True)
        ours = subprocess.run([sys.executable, "-m", "kafkawire.tools.cli", "dump-log", *flags, "--files", str(path)],
                              cwd=REPO, capture_output=True, text=True, timeout=120)
        theirs_lines = kafka.stdout.splitlines()
        records = [line for line in theirs_lines if "LeaderChange:" in line or "SnapshotHeader" in line
                   or "SnapshotFooter" in line or "KRaftVersion" in line or "KRaftVoters" in line]
        # 20 records, each read by Kafka (a value it cannot read would stop the dump)
        assert len(records) == 4 * 5, kafka.stdout[-2000:]
        assert '"version":1,"leaderId":2' in kafka.stdout and '"version":-1,' in kafka.stdout
        assert ours.returncode == 0, ours.stderr[-2000:]
        assert ours.stdout.splitlines() == theirs_lines, \
            next(f"line {n}:\n  Kafka: {a}\n  ours:  {b}"
                 for n, (a, b) in enumerate(zip(theirs_lines + [""], ours.stdout.splitlines() + [""])) if a != b)
