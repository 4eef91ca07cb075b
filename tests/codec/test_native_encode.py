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
