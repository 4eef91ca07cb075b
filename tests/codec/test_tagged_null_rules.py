"""Two rules of Kafka's generator that only tagged fields show (found against Kafka 4.3.1's own
classes by tests/interop/test_codec_vectors.py; these checks need no Kafka):

- ``"default": null`` as a JSON null (not the string "null") is no default at all, so a tagged
  nullable array defaults to empty and a tagged nullable struct to a default instance; null is then
  a value that is written;
- inside a tagged field a nullable struct's marker is an unsigned varint (0 null, 1 present), not
  the int8 -1 of the untagged form.
"""
from kafkawire import messages

MemberMetadata = messages.by_name("ConsumerGroupMemberMetadataValue")
Assignment = messages.by_name("ConsumerGroupCurrentMemberAssignmentValue")
TopicPartitions = Assignment._FIELDS[3].struct

# The untagged part of a default ConsumerGroupMemberMetadataValue v0 as Kafka 4.3.1 writes it
# (four empty strings, no topics, an empty regex, rebalance timeout -1, an empty assignor).
MEMBER_FIXED = bytes.fromhex("01010101" "01" "01" "ffffffff" "01")


def test_tagged_struct_with_json_null_default_defaults_to_an_instance_and_writes_null_with_a_varint():
    assert MemberMetadata().classic_member_metadata == MemberMetadata._FIELDS[-1].struct()
    assert MemberMetadata().encode(0) == MEMBER_FIXED + b"\x00"                  # the default: not written
    null = MEMBER_FIXED + bytes.fromhex("01" "00" "01" "00")                    # one tag: 0, size 1, marker 0
    assert MemberMetadata(classic_member_metadata=None).encode(0) == null
    assert MemberMetadata.decode(null, 0).classic_member_metadata is None


def test_tagged_array_with_json_null_default_defaults_to_empty_and_writes_null():
    assert TopicPartitions().assignment_epochs == []
    assert TopicPartitions._FIELDS[-1].name == "AssignmentEpochs"
    empty = Assignment(assigned_partitions=[TopicPartitions()])
    null = Assignment(assigned_partitions=[TopicPartitions(assignment_epochs=None)])
    assert len(null.encode(0)) == len(empty.encode(0)) + 3                    # tag 0, size 1, length 0 (null)
    assert Assignment.decode(null.encode(0), 0) == null
    assert Assignment.decode(empty.encode(0), 0) == empty
