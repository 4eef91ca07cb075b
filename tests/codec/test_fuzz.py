"""Random and mutated bytes make a decoder raise DecodeError and nothing else: no crash, no hang."""
from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from kafkawire import messages
from kafkawire.protocol.errors import DecodeError
from tests.codec.strategies import instances

TARGETS = ["MetadataResponse", "FetchRequest", "FetchResponse", "ProduceRequest", "VoteRequest",
           "DescribeQuorumResponse", "ApiVersionsResponse", "VotersRecord", "PartitionRecord",
           "RegisterBrokerRecord", "FetchSnapshotResponse", "RequestHeader"]


@pytest.mark.parametrize("name", TARGETS)
@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data(), junk=st.binary(max_size=64))
def test_random_bytes(name, data, junk):
    cls = messages.by_name(name)
    version = data.draw(st.sampled_from(list(cls.versions())))
    try:
        cls.decode(junk, version)
    except DecodeError:
        pass


@pytest.mark.parametrize("name", TARGETS)
@settings(max_examples=100, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_mutated_valid_bytes(name, data):
    cls = messages.by_name(name)
    version = data.draw(st.sampled_from(list(cls.versions())))
    encoded = bytearray(data.draw(instances(cls, version)).encode(version))
    for _ in range(data.draw(st.integers(1, 4))):
        action = data.draw(st.sampled_from(["flip", "truncate", "insert"]))
        if action == "flip" and encoded:
            i = data.draw(st.integers(0, len(encoded) - 1))
            encoded[i] = data.draw(st.integers(0, 255))
        elif action == "truncate":
            del encoded[data.draw(st.integers(0, len(encoded))):]
        else:
            i = data.draw(st.integers(0, len(encoded)))
            encoded[i:i] = data.draw(st.binary(min_size=1, max_size=5))
    try:
        decoded = cls.decode(bytes(encoded), version)
    except DecodeError as exc:
        assert exc.message == cls.NAME and exc.version == version
    else:
        # Whatever decodes must encode again (the mutation happened to be valid).
        decoded.encode(version)
