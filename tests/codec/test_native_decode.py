"""The native message decoder (issue 26) against its oracle, the generated pure-Python decoders:
equal objects of the same types on every (message, version), and on hostile bytes it gives up
exactly where the pure decoder raises, so that Message.decode raises the pure path's own error
(class, text, field, offset). Run without the C extension (or with KAFKAWIRE_PURE=1) these
tests are skipped, except the one that checks the pure tables are left alone."""
from __future__ import annotations

import os
import struct
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from kafkawire import messages
from kafkawire.protocol import native_codec
from kafkawire.protocol.errors import DecodeError
from kafkawire.protocol.message import Struct
from tests.codec.strategies import instances, mutated_encodings

ROOT = Path(__file__).resolve().parents[2]
NAMES = sorted(cls.NAME for cls in messages.all_messages())
needs_native = pytest.mark.skipif(not native_codec.native_decoders_enabled(),
                                  reason="the C extension is not built, or KAFKAWIRE_PURE=1")
SETTINGS = settings(max_examples=12, deadline=None, suppress_health_check=list(HealthCheck))


def assert_same(a, b, where="message"):
    """Equal values of the same types, all the way down (a memoryview is not bytes, though
    they compare equal; every slot, lazy defaults and unknown tagged fields included)."""
    assert type(a) is type(b), f"{where}: {type(a).__name__} != {type(b).__name__}"
    if isinstance(a, Struct):
        for klass in type(a).__mro__:
            slots = getattr(klass, "__slots__", ())
            for slot in (slots,) if isinstance(slots, str) else slots:   # ('one') is a str
                assert_same(getattr(a, slot), getattr(b, slot), f"{where}.{slot}")
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b), f"{where}: {len(a)} items != {len(b)}"
        for i, (x, y) in enumerate(zip(a, b)):
            assert_same(x, y, f"{where}[{i}]")
    elif isinstance(a, float):
        assert struct.pack(">d", a) == struct.pack(">d", b), f"{where}: {a!r} != {b!r}"   # NaN too
    else:
        assert a == b, f"{where}: {a!r} != {b!r}"


def native_or_none(decoder, data: bytes):
    try:
        return decoder.native(data, 0)
    except ValueError:
        return None


def pure_or_none(decoder, data: bytes):
    try:
        return decoder.pure(data, 0)
    except Exception:  # noqa: BLE001 - whatever the pure decoder raises is "it fails here"
        return None


def assert_agree(decoder, data: bytes):
    """Both decode the bytes to the same object and end, or neither does."""
    native, pure = native_or_none(decoder, data), pure_or_none(decoder, data)
    assert (native is None) == (pure is None), \
        f"{decoder.__name__}: native {'failed' if native is None else 'decoded'} where pure did not: {data!r:.200}"
    if native is not None:
        assert_same(native, pure)


@needs_native
def test_every_message_and_version_has_a_native_decoder():
    """No (message, version) is left to the pure decoder alone: the programs cover every field type."""
    missing = [(cls.NAME, v) for cls in messages.all_messages() for v in cls.versions()
               if not hasattr(cls._DECODERS[v], "native")]
    assert missing == []


@needs_native
@pytest.mark.parametrize("name", NAMES)
@SETTINGS
@given(data=st.data())
def test_native_decode_equals_pure_decode(name, data):
    """Every (message, version): the native decoder gives the pure decoder's object (same types,
    unknown tagged fields, nulls) and end, for random valid instances."""
    cls = messages.by_name(name)
    version = data.draw(st.sampled_from(list(cls.versions())))
    encoded = data.draw(instances(cls, version)).encode(version)
    decoder = cls._DECODERS[version]
    native = decoder.native(encoded, 0)
    assert_same(native, decoder.pure(encoded, 0))
    assert_same(cls.decode(encoded, version), native[0])


@needs_native
@pytest.mark.parametrize("name", NAMES)
@SETTINGS
@given(data=st.data())
def test_native_decode_fails_exactly_where_pure_decode_fails(name, data):
    """Mutated bytes (flipped, truncated, inserted): the native decoder succeeds, with the same
    object, exactly where the pure decoder does, and gives up everywhere else."""
    cls = messages.by_name(name)
    version = data.draw(st.sampled_from(list(cls.versions())))
    encoded = data.draw(mutated_encodings(cls, version, max_mutations=3))
    assert_agree(cls._DECODERS[version], encoded)


def rich_metadata_response():
    from kafkawire.messages.metadata_response import MetadataResponseBroker, MetadataResponsePartition, MetadataResponseTopic
    import uuid
    cls = messages.by_name("MetadataResponse")
    partition = MetadataResponsePartition(partition_index=3, leader_id=1, replica_nodes=[1, 2], isr_nodes=[1],
                                          offline_replicas=[2])
    topic = MetadataResponseTopic(name="t\u00e9", topic_id=uuid.UUID(int=7), partitions=[partition, partition])
    return cls(brokers=[MetadataResponseBroker(node_id=1, host="h", port=9092, rack="r")], cluster_id="c",
               topics=[topic])


@needs_native
@pytest.mark.parametrize("version", [0, 9, 12])
def test_every_truncation_and_every_byte_flip_agree(version):
    """Every prefix of an encoded message, and every single byte set to 0x00, 0x7f, 0x80 and 0xff."""
    cls = messages.by_name("MetadataResponse")
    encoded = rich_metadata_response().encode(version)
    decoder = cls._DECODERS[version]
    for end in range(len(encoded)):
        assert_agree(decoder, encoded[:end])
    for i in range(len(encoded)):
        for byte in (0x00, 0x7F, 0x80, 0xFF):
            assert_agree(decoder, encoded[:i] + bytes([byte]) + encoded[i + 1:])


def decode_error(cls, data, version):
    with pytest.raises(DecodeError) as info:
        cls.decode(data, version)
    return info.value


@needs_native
@pytest.mark.parametrize("cut", [1, 7, 30, 61])
def test_decode_errors_are_the_pure_paths_own(cut, monkeypatch):
    """Message.decode through the native decoder raises the pure decoder's DecodeError: same text,
    field and byte offset (the native decoder hands bad bytes to the pure one)."""
    cls = messages.by_name("MetadataResponse")
    data = rich_metadata_response().encode(12)[:-cut]
    native_error = decode_error(cls, data, 12)
    monkeypatch.setitem(cls._DECODERS, 12, cls._DECODERS[12].pure)
    pure_error = decode_error(cls, data, 12)
    assert (str(native_error), native_error.field, native_error.offset) == \
        (str(pure_error), pure_error.field, pure_error.offset)


@needs_native
def test_records_are_memoryview_slices_of_the_input():
    """A records field decodes to a slice of one memoryview of the input, as the pure decoder's."""
    from kafkawire.messages.fetch_response import FetchableTopicResponse, PartitionData
    cls = messages.by_name("FetchResponse")
    batch = bytes(range(200))
    data = cls(responses=[FetchableTopicResponse(topic="t", partitions=[PartitionData(records=batch)])]).encode(12)
    records = cls.decode(data, 12).responses[0].partitions[0].records
    assert type(records) is memoryview and records.obj is data and bytes(records) == batch


def test_the_zero_uuid_decodes_to_one_shared_object_on_both_paths():
    """Kafka's Uuid.ZERO_UUID ("no topic id"), frequent in real traffic, decodes to one shared
    UUID (immutable, equal to UUID(int=0)) instead of a new object each time; other uuids stay
    new objects. Checked on Message.decode (native when built) and on the pure decoder."""
    import uuid

    from kafkawire.protocol.primitives import read_uuid, uuid_from_bytes
    cls = messages.by_name("ReadShareGroupStateRequest")
    from kafkawire.messages.read_share_group_state_request import ReadStateData
    data = cls(group_id="g", topics=[ReadStateData(topic_id=uuid.UUID(int=0)), ReadStateData(topic_id=uuid.UUID(int=0)),
                                     ReadStateData(topic_id=uuid.UUID(int=7)), ReadStateData(topic_id=uuid.UUID(int=7))]
               ).encode(0)
    pure = getattr(cls._DECODERS[0], "pure", cls._DECODERS[0])
    for decoded in (cls.decode(data, 0), pure(data, 0)[0]):
        ids = [t.topic_id for t in decoded.topics]
        assert ids == [uuid.UUID(int=0)] * 2 + [uuid.UUID(int=7)] * 2
        assert ids[0] is ids[1] and ids[2] is not ids[3]
        assert type(ids[0]) is uuid.UUID and ids[0].is_safe == uuid.SafeUUID.unknown
    assert read_uuid(bytes(16), 0)[0] is uuid_from_bytes(bytes(16))


@needs_native
def test_unknown_tagged_fields_next_to_known_tags_are_kept_in_order():
    """A tagged-field section with known tags and unknown ones: the known ones land in their
    fields, the unknown ones are kept as (tag, bytes) in tag order, as the pure decoder keeps them."""
    cls = messages.by_name("FetchRequest")
    msg = cls(cluster_id="c")
    msg.unknown_tagged_fields = [(40, b""), (5, b"\x01\x02")]
    encoded = msg.encode(15)
    assert_agree(cls._DECODERS[15], encoded)
    decoded = cls.decode(encoded, 15)
    assert decoded.cluster_id == "c" and decoded.unknown_tagged_fields == [(5, b"\x01\x02"), (40, b"")]


def test_forced_pure_path_keeps_the_generated_decoders():
    """KAFKAWIRE_PURE=1: every message decodes through its generated Python functions."""
    code = ("from types import FunctionType\nfrom kafkawire import messages\n"
            "print(all(type(d) is FunctionType for c in messages.all_messages() for d in c._DECODERS.values()))")
    env = dict(os.environ, KAFKAWIRE_PURE="1", PYTHONPATH=str(ROOT))
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert out.stdout.strip() == "True", out.stderr


@needs_native
def test_class_decode_hands_every_other_call_to_message_decode(monkeypatch):
    """The C decode of a message class does the common call and leaves the rest to Message.decode:
    partial decoding, bytes left over, a bytearray, a version without a decoder, a replaced decoder."""
    cls = messages.by_name("MetadataResponse")
    data = rich_metadata_response().encode(12)
    whole = cls.decode(data, 12)
    assert cls.decode(data + b"xy", 12, partial=True) == (whole, len(data))
    assert cls.decode(bytearray(data), 12) == whole
    left_over = decode_error(cls, data + b"xy", 12)
    assert "2 bytes left over after the message" in str(left_over) and left_over.offset == len(data)
    assert "no such version" in str(decode_error(cls, data, 99))
    calls = []
    pure = cls._DECODERS[12].pure
    monkeypatch.setitem(cls._DECODERS, 12, lambda raw, pos: calls.append(pos) or pure(raw, pos))
    assert cls.decode(data, 12) == whole and calls == [0]


def _string_decodes_as_python_does(decoder, payload: bytes):
    """The native decoder's str of these bytes (a FindCoordinatorRequest v0 key) is Python's
    strict UTF-8 decoding of them, or it gives up exactly where that raises."""
    try:
        expected = payload.decode("utf-8")
    except UnicodeDecodeError:
        expected = None
    data = struct.pack(">h", len(payload)) + payload
    try:
        got = decoder.native(data, 0)[0].key
    except ValueError:
        got = None
    # str equality also compares the storage kind (Latin-1, UCS-2, UCS-4): a str made one size
    # too wide would differ here.
    assert (type(got), got) == (type(expected), expected), f"{payload!r}"


UTF8_BOUNDARIES = (0x00, 0x41, 0x7F, 0x80, 0x8F, 0x90, 0x9F, 0xA0, 0xBF, 0xC0, 0xF4, 0xFF)
CONTINUATION_OR_NOT = (0x41, 0x80, 0xBF, 0xC0)   # past the second byte only the 10xxxxxx form matters


@needs_native
def test_strings_are_strict_utf8_as_python_decodes_it():
    """The native decoder makes its own str of UTF-8 (measured, then filled at its final size):
    every lead byte followed by the boundary values of the continuation ranges (overlong forms,
    surrogates, past U+10FFFF, truncated sequences) decodes to Python's str, of the same
    storage kind, or is refused where Python's strict decoding raises."""
    decoder = messages.by_name("FindCoordinatorRequest")._DECODERS[0]
    tails = [()] + [(b,) for b in CONTINUATION_OR_NOT] + [(b, c) for b in CONTINUATION_OR_NOT for c in CONTINUATION_OR_NOT]
    for lead in range(256):
        for second in UTF8_BOUNDARIES:
            for tail in tails:
                _string_decodes_as_python_does(decoder, bytes((lead, second) + tail))


@needs_native
@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(st.text(max_size=12).map(lambda t: t.encode("utf-8", "surrogatepass")),
                          st.binary(max_size=6), st.just(b"abcdefgh")), max_size=6))
def test_mixed_text_decodes_as_python_does(parts):
    """ASCII runs of eight bytes and more (read a word at a time) next to any other text, and
    bytes that are not UTF-8: Python's str or Python's refusal."""
    _string_decodes_as_python_does(messages.by_name("FindCoordinatorRequest")._DECODERS[0], b"".join(parts))


@needs_native
def test_view_fields_of_one_message_are_slices_of_its_bytes_that_outlive_each_other():
    """The records of every partition are memoryview(data)[a:b] (they share one managed buffer,
    the first view's): each reads its own bytes, keeps data as .obj, and releasing one leaves the
    others readable, as with views sliced in Python."""
    from kafkawire.messages.fetch_response import FetchableTopicResponse, PartitionData, FetchResponse
    parts = [PartitionData(partition_index=i, records=bytes([65 + i]) * (i + 3)) for i in range(3)]
    data = FetchResponse(responses=[FetchableTopicResponse(topic="t", partitions=parts)]).encode(12)
    decoded = FetchResponse.decode(data, 12).responses[0].partitions
    views = [p.records for p in decoded]
    assert all(type(v) is memoryview and v.obj is data and v.readonly for v in views)
    assert [v.tobytes() for v in views] == [p.records for p in parts]
    views[0].release()
    assert views[1][1:].tobytes() == b"BBB" and views[2].tobytes() == b"CCCCC"


@needs_native
def test_decode_reads_the_decoders_dict_as_it_is_at_each_call():
    """cls.decode (C) remembers the last version's decoder only while the class's _DECODERS dict
    is unchanged: a decoder put in its place is the one the next call runs."""
    from kafkawire.messages.list_groups_request import ListGroupsRequest
    data, native = ListGroupsRequest().encode(3), ListGroupsRequest._DECODERS[3]
    assert ListGroupsRequest.decode(data, 3) == ListGroupsRequest()
    calls = []

    def spy(data, pos):
        calls.append(pos)
        return native.pure(data, pos)

    ListGroupsRequest._DECODERS[3] = spy
    try:
        assert ListGroupsRequest.decode(data, 3) == ListGroupsRequest() and calls == [0]
    finally:
        ListGroupsRequest._DECODERS[3] = native
    assert ListGroupsRequest.decode(data, 3) == ListGroupsRequest() and calls == [0]
