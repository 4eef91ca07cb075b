"""KRaft control record values in real Kafka data decode through the generated classes and
re-encode to their original bytes; whatever their Version field says, they are read and
written at version 0, as Kafka's ControlRecordUtils and MemoryRecordsBuilder do."""
from collections import Counter
from pathlib import Path

import pytest

import uuid

from kafkawire import messages
from kafkawire.messages import leader_change_message as leader_change, voters_record
from kafkawire.records import build_control_batch, iter_batches
from kafkawire.records.control import ControlRecordType, decode_control_value
from kafkawire.records.errors import CorruptRecordError
from kafkawire.records.kraft_control import VALUE_MESSAGES, encode_value, value_json
from tests.conftest import REFERENCE as SHARED_REFERENCE

KRAFT_DATA = SHARED_REFERENCE / "kraft-data"


def test_real_control_values_round_trip():
    if not KRAFT_DATA.exists():
        pytest.skip(f"reference material not available: {KRAFT_DATA} is missing")
    seen = control_values_round_trip(KRAFT_DATA)
    assert seen["SnapshotHeaderRecord"] > 0 and seen["SnapshotFooterRecord"] > 0 and seen["LeaderChangeMessage"] > 0


def control_values_round_trip(root: Path) -> Counter:
    """Every KRaft control record value under root re-encodes to its bytes; the values seen by type
    (tests/interop/test_held_out_claims_on_kafka_data.py runs it on data Kafka wrote in the run)."""
    seen = Counter()
    for path in sorted(root.rglob("*")):
        if path.suffix not in (".log", ".checkpoint") or not path.is_file():
            continue
        for batch in iter_batches(path.read_bytes(), file=str(path)):
            if not getattr(batch, "is_control", False):
                continue
            for record in batch:
                if record.control_type < 2:
                    continue
                value = record.control_value
                assert value.encode(value.version) == bytes(record.value), f"{path} offset {record.offset}"
                seen[type(value).__name__] += 1
    return seen


def test_a_value_without_a_version_is_reported():
    for value in (None, b"", b"\x00"):
        with pytest.raises(CorruptRecordError, match="LeaderChangeMessage v0, field Version"):
            decode_control_value(ControlRecordType.LEADER_CHANGE, value)


def _samples():
    """One value of each KRaft control type with every field set (version 0 layout)."""
    voter = voters_record.Voter(voter_id=3, voter_directory_id=uuid.UUID(int=5),
                                endpoints=[voters_record.Endpoint(name="CONTROLLER", host="h", port=9093)],
                                k_raft_version_feature=voters_record.KRaftVersionFeature(min_supported_version=0,
                                                                                         max_supported_version=1))
    return {
        ControlRecordType.LEADER_CHANGE: leader_change.LeaderChangeMessage(
            leader_id=2, voters=[leader_change.Voter(voter_id=i) for i in (1, 2, 3)],
            granting_voters=[leader_change.Voter(voter_id=2)]),
        ControlRecordType.SNAPSHOT_HEADER: messages.by_name("SnapshotHeaderRecord")(last_contained_log_timestamp=77),
        ControlRecordType.SNAPSHOT_FOOTER: messages.by_name("SnapshotFooterRecord")(),
        ControlRecordType.KRAFT_VERSION: messages.by_name("KRaftVersionRecord")(k_raft_version=1),
        ControlRecordType.KRAFT_VOTERS: voters_record.VotersRecord(voters=[voter]),
    }


@pytest.mark.parametrize("field_version", [1, 2, 7, -1, -32768, 32767])
def test_the_version_field_does_not_choose_the_layout(field_version):
    """A value whose Version field is not 0 is still in version 0's layout, as Kafka writes
    and reads it (ControlRecordUtils.*_CURRENT_VERSION, used whatever the field says)."""
    for control_type, message in _samples().items():
        assert type(message).NAME == VALUE_MESSAGES[control_type]
        message.version = field_version
        value = encode_value(message)
        assert value == message.encode(0), type(message).NAME          # the writer: layout 0
        assert value[:2] == field_version.to_bytes(2, "big", signed=True)
        decoded = decode_control_value(control_type, value)             # the reader: layout 0
        assert decoded == message and decoded.version == field_version


def test_a_leader_change_saying_version_1_is_read_as_kafka_reads_it():
    """The case found on real data: LeaderChangeMessage has a version 1 (VoterDirectoryId),
    but Kafka reads every value at 0, so Version=1 bytes in layout 0 are fine to Kafka."""
    message = leader_change.LeaderChangeMessage(version=0, leader_id=1, voters=[leader_change.Voter(voter_id=1)],
                            granting_voters=[leader_change.Voter(voter_id=1)])
    value = b"\x00\x01" + message.encode(0)[2:]
    decoded = decode_control_value(ControlRecordType.LEADER_CHANGE, value)
    assert (decoded.version, decoded.leader_id, [v.voter_id for v in decoded.granting_voters]) == (1, 1, [1])
    # dump-log prints it as DumpLogSegments does: JsonConverter.write at the field's version,
    # so a (zero) voterDirectoryId appears.
    assert value_json(decoded) == {"version": 1, "leaderId": 1,
                                   "voters": [{"voterId": 1, "voterDirectoryId": "AAAAAAAAAAAAAAAAAAAAAA"}],
                                   "grantingVoters": [{"voterId": 1, "voterDirectoryId": "AAAAAAAAAAAAAAAAAAAAAA"}]}
    batch = next(iter_batches(build_control_batch(ControlRecordType.LEADER_CHANGE, value, timestamp=0)))
    assert next(iter(batch)).control_value == decoded


def test_a_negative_version_prints_every_field():
    """Kafka's JsonConverter guards only the fields some versions lack, so a negative Version
    prints all the others (what version 0 prints)."""
    header = messages.by_name("SnapshotHeaderRecord")(version=-1, last_contained_log_timestamp=5)
    assert value_json(header) == {"version": -1, "lastContainedLogTimestamp": 5}
