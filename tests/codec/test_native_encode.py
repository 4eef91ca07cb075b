"""The native message encoder (issue 26) against its oracle, the generated pure-Python encoders
(Message.encode without them; ``encode_into`` stays pure): the same bytes for every (message, version), and for values
it does not take on (wrong types, out of range, set in a version without the field, unknown
tagged fields) it steps aside, so that Message.encode writes or raises exactly what the pure
encoder does. Skipped without the C extension (or with KAFKAWIRE_PURE=1)."""
from __future__ import annotations

import uuid

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from kafkawire import messages
from kafkawire.protocol import native_codec
from tests.codec.strategies import instances, without_unknown_tags

NAMES = sorted(cls.NAME for cls in messages.all_messages())
pytestmark = pytest.mark.skipif(not native_codec.native_decoders_enabled(),
                                reason="the C extension is not built, or KAFKAWIRE_PURE=1")
SETTINGS = settings(max_examples=12, deadline=None, suppress_health_check=list(HealthCheck))
ODD_VALUES = [None, 1.5, float("nan"), "x", "\ud800", b"x", bytearray(b"xy"), memoryview(b"xyz"), -1, 2**31,
              2**64, [], [None], [1, 2], (), True, uuid.UUID(int=5), object()]


def public_encode(obj, version):
    """Message.encode's result: ("ok", bytes) or (exception class, text)."""
    try:
        return "ok", obj.encode(version)
    except Exception as exc:  # noqa: BLE001 - every error is compared
        return type(exc), str(exc)


def pure_encode(obj, version):
    """What Message.encode does with the native encoders out of the way."""
    cls = type(obj)
    saved = cls.__dict__["_NATIVE_ENCODERS"]
    cls._NATIVE_ENCODERS = {}
    try:
        return public_encode(obj, version)
    finally:
        cls._NATIVE_ENCODERS = saved


@pytest.mark.parametrize("name", NAMES)
@SETTINGS
@given(data=st.data())
def test_native_encode_writes_the_pure_bytes(name, data):
    """Every (message, version): the C encoder takes on random valid instances (without unknown
    tagged fields) and writes the generated encoder's bytes."""
    cls = messages.by_name(name)
    version = data.draw(st.sampled_from(list(cls.versions())))
    obj = without_unknown_tags(data.draw(instances(cls, version)))
    native = cls._NATIVE_ENCODERS[version](obj)
    assert native is not None, "the native encoder stepped aside on an ordinary instance"
    assert native == pure_encode(obj, version)[1]


@pytest.mark.parametrize("name", NAMES)
@SETTINGS
@given(data=st.data())
def test_odd_values_encode_or_fail_as_the_pure_encoder_does(name, data):
    """A field (of any version) set to a value of another type or range, and unknown tagged
    fields: Message.encode gives the pure encoder's bytes, or its exception with its text."""
    cls = messages.by_name(name)
    version = data.draw(st.sampled_from(list(cls.versions())))
    obj = data.draw(instances(cls, version))
    if cls._FIELDS:
        field = data.draw(st.sampled_from(cls._FIELDS))
        setattr(obj, field.py_name, data.draw(st.sampled_from(ODD_VALUES)))
    assert public_encode(obj, version) == pure_encode(obj, version)


def test_lazy_tagged_struct_read_but_unchanged_is_left_out():
    """A lazy tagged struct that was read (and so made) but equals its default is not written,
    as the generated encoder decides; once changed it is."""
    from kafkawire.messages.fetch_response import FetchableTopicResponse, PartitionData
    cls = messages.by_name("FetchResponse")
    partition = PartitionData(records=b"")
    msg = cls(responses=[FetchableTopicResponse(topic="t", partitions=[partition])])
    assert partition.diverging_epoch.epoch == -1        # read: the slot now holds an instance
    assert cls._NATIVE_ENCODERS[12](msg) == pure_encode(msg, 12)[1]
    partition.diverging_epoch.epoch = 7
    assert cls._NATIVE_ENCODERS[12](msg) == pure_encode(msg, 12)[1]
    assert cls.decode(msg.encode(12), 12).responses[0].partitions[0].diverging_epoch.epoch == 7


def _no_struct_eq(self, other):
    raise AssertionError("Struct.__eq__ was called")


def test_lazy_struct_read_is_compared_with_its_default_in_c(monkeypatch):
    """A lazy struct that was read (so made) is compared with its default instance slot by slot
    in C, not through Struct.__eq__ on every encode (which made FetchResponse v4-v11 encodes
    slower than kafka-python's): with __eq__ out of reach the native encoder still writes the
    pure bytes, leaving the struct out at its default (v12: tagged; v4: absent) and writing it
    once changed; values of other types (an int subclass) still get Struct.__eq__'s answer."""
    from kafkawire.messages.fetch_response import EpochEndOffset, FetchableTopicResponse, PartitionData
    cls = messages.by_name("FetchResponse")
    partition = PartitionData(records=b"")
    msg = cls(responses=[FetchableTopicResponse(topic="t", partitions=[partition])])
    assert partition.diverging_epoch.epoch == -1 and partition.snapshot_id.epoch == -1   # read: made
    partition.current_leader.leader_epoch = -1.0          # a float equal to the default int
    monkeypatch.setattr(EpochEndOffset, "__eq__", _no_struct_eq)
    for version in (4, 12):
        assert cls._NATIVE_ENCODERS[version](msg) == pure_encode(msg, version)[1]
    partition.diverging_epoch.epoch = 7
    assert cls._NATIVE_ENCODERS[12](msg) == pure_encode(msg, 12)[1]
    assert cls._NATIVE_ENCODERS[4](msg) is None           # set in a version without it: the pure encoder raises
    monkeypatch.undo()

    class MinusOne(int):
        pass
    partition.diverging_epoch.epoch = MinusOne(-1)        # not a plain int: Struct.__eq__ says equal
    for version in (4, 12):
        assert cls._NATIVE_ENCODERS[version](msg) == pure_encode(msg, version)[1]


def test_lazy_struct_with_a_list_read_is_compared_in_c(monkeypatch):
    """The same for a lazy struct holding a list (ClassicMemberMetadata): empty lists on both
    sides are equal without Struct.__eq__, a non-empty one differs and is written."""
    from kafkawire.messages.consumer_group_member_metadata_value import ClassicMemberMetadata, ClassicProtocol
    cls = messages.by_name("ConsumerGroupMemberMetadataValue")
    msg = cls()
    assert msg.classic_member_metadata.supported_protocols == []
    expected = pure_encode(msg, 0)[1]
    monkeypatch.setattr(ClassicMemberMetadata, "__eq__", _no_struct_eq)
    assert cls._NATIVE_ENCODERS[0](msg) == expected
    msg.classic_member_metadata.supported_protocols.append(ClassicProtocol(name="range"))
    native = cls._NATIVE_ENCODERS[0](msg)
    monkeypatch.undo()
    assert native == pure_encode(msg, 0)[1] != expected


def test_messages_around_the_one_pass_buffer_are_written_as_the_pure_encoder_does():
    """The native encoder writes messages of up to 4 KB in one pass into a stack buffer and
    larger ones in two (sized, then written): both give the pure bytes, on either side of the
    boundary and far beyond it."""
    from kafkawire.messages.fetch_response import FetchableTopicResponse, PartitionData
    cls = messages.by_name("FetchResponse")
    sample = cls(responses=[FetchableTopicResponse(topic="t", partitions=[PartitionData(records=bytes(200))])])
    overhead = len(sample.encode(12)) - 200     # the same for records of 128 B to 16 KB (a 2-byte length)
    for size in (4095, 4096, 4097, 10_000):
        records = bytes(range(256)) * (size // 256 + 1)
        partition = PartitionData(records=records[:size - overhead])
        msg = cls(responses=[FetchableTopicResponse(topic="t", partitions=[partition])])
        native = cls._NATIVE_ENCODERS[12](msg)
        assert native is not None and len(native) == size
        assert native == pure_encode(msg, 12)[1]


def test_message_encode_in_c_hands_every_other_call_to_message_encode(monkeypatch):
    """message.encode is C for the common call (a version whose native encoder takes the message
    on) and Message.encode's own work for the rest: a version without an encoder, a keyword
    argument, an encoder replaced in _NATIVE_ENCODERS, a value the native encoder steps aside on;
    it binds as a method does (cls.encode(message, v), a bound method kept and called later)."""
    from kafkawire.protocol.errors import UnsupportedVersionError
    cls = messages.by_name("FetchResponse")
    msg = cls(throttle_time_ms=5)
    expected = pure_encode(msg, 12)[1]
    assert msg.encode(12) == cls.encode(msg, 12) == expected
    bound = msg.encode
    assert bound(12) == bound(version=12) == expected
    with pytest.raises(UnsupportedVersionError, match="no such version"):
        msg.encode(99)
    calls = []
    native = cls._NATIVE_ENCODERS[12]
    monkeypatch.setitem(cls._NATIVE_ENCODERS, 12, lambda message: calls.append(message) or native(message))
    assert msg.encode(12) == expected and calls == [msg]
    monkeypatch.undo()
    msg.throttle_time_ms = 2**40                          # out of range: the pure encoder's EncodeError
    assert public_encode(msg, 12) == pure_encode(msg, 12) and public_encode(msg, 12)[0] != "ok"


def test_uuid_defaults_are_compared_in_c(monkeypatch):
    """An absent uuid field (ReplicaDirectoryId of DescribeQuorumResponse v0-v1) holding a UUID
    equal to its default but not the shared ZERO_UUID is compared in C (UUID.__eq__ in Python on
    every encode made these pairs the slowest of the sweep, 8.6x kafka-python): the pure bytes
    with UUID.__eq__ out of reach; a UUID that differs, or a subclass of UUID, gets the pure
    encoder's answer (its error, or its bytes)."""
    from kafkawire.messages.describe_quorum_response import PartitionData, ReplicaState, TopicData
    from kafkawire.protocol.primitives import ZERO_UUID
    cls = messages.by_name("DescribeQuorumResponse")
    replica = ReplicaState(replica_id=3, replica_directory_id=uuid.UUID(int=0), log_end_offset=9)
    assert replica.replica_directory_id is not ZERO_UUID
    msg = cls(topics=[TopicData(topic_name="t", partitions=[PartitionData(current_voters=[replica])])])
    expected = {version: pure_encode(msg, version) for version in (0, 1, 2)}
    assert all(result[0] == "ok" for result in expected.values())

    def no_uuid_eq(self, other):
        raise AssertionError("UUID.__eq__ was called")
    monkeypatch.setattr(uuid.UUID, "__eq__", no_uuid_eq)
    for version in (0, 1, 2):
        assert cls._NATIVE_ENCODERS[version](msg) == expected[version][1]
    monkeypatch.undo()

    replica.replica_directory_id = uuid.UUID(int=5)       # set in a version without it
    for version in (0, 1):
        assert cls._NATIVE_ENCODERS[version](msg) is None
        assert public_encode(msg, version) == pure_encode(msg, version) and pure_encode(msg, version)[0] != "ok"

    class ZeroUUID(uuid.UUID):
        pass
    replica.replica_directory_id = ZeroUUID(int=0)        # not an exact UUID: Python's == decides
    for version in (0, 1):
        assert public_encode(msg, version) == expected[version]


def _frame_through_the_pure_encoder(body, version: int, correlation_id: int) -> bytes:
    from kafkawire.protocol.framing import response_header_version
    from kafkawire.protocol.primitives import EncodeBuffer
    from kafkawire.protocol.registry import installed
    buf = EncodeBuffer()
    installed().by_name("ResponseHeader")(correlation_id=correlation_id).encode_into(
        buf, response_header_version(body.API_KEY, version))
    body.encode_into(buf, version)
    return buf.getvalue(size_prefix=True)


@pytest.mark.parametrize("name", [n for n in NAMES if n.endswith("Response")])
def test_a_response_frame_is_the_pure_encoders_frame(name):
    """framing.encode_response takes the C encoder for a response without bytes fields: its
    frames (size, header v0 or v1, body) are the pure encoder's, at every version, for random
    bodies and for a body the C encoder steps aside from."""
    from kafkawire.protocol.framing import encode_response
    cls = messages.by_name(name)

    @settings(max_examples=4, deadline=None, suppress_health_check=list(HealthCheck))   # the body's bytes: above
    @given(st.data())
    def check(data):
        version = data.draw(st.sampled_from(list(cls.versions())))
        body = data.draw(instances(cls, version))      # unknown tagged fields too: C steps aside
        correlation_id = data.draw(st.integers(-2**31, 2**31 - 1))
        assert encode_response(body, version, correlation_id) == \
            _frame_through_the_pure_encoder(body, version, correlation_id)
    check()
