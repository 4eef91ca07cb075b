"""Byte equality with two independent Python codecs of Kafka's protocol, kio and kafka-python 3.x.

For every (message, version) that we and a peer both have -- enumerated from the peer's own
index (kio's schema_name_map, kafka-python's ApiMessage/ApiHeader classes), never a hand list --
hypothesis draws instances of ours (in half the examples with some strings, bytes and arrays made
long enough for multi-byte varint lengths), converts each to the peer's object (tests/codec/peer_adapters.py,
generic over both sides' field metadata) and checks that:

1. both schemas lay the version out the same way (names, wire types, tags, nullability);
2. the peer writes the same bytes as we do;
3. the peer reads our bytes, consuming all of them, to an object equal to the one it was given;
4. we read the peer's bytes to our original instance.

What a peer cannot represent is constrained away; each case is documented in peer_adapters
(KIO_LIMITS, KAFKA_PYTHON_LIMITS). Versions outside our valid range or outside the peer's real
range are not pairs at all.
"""
from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from kafkawire import messages
from kafkawire.protocol import framing
from tests.codec.peer_adapters import inflate, peers
from tests.codec.strategies import instances, without_unknown_tags

PEERS = peers()
# A few examples per pair keeps the file well under a minute; raise it for a deeper search:
# KAFKAWIRE_PEER_EXAMPLES=200 python -m pytest tests/codec/test_peers.py
EXAMPLES = int(os.environ.get("KAFKAWIRE_PEER_EXAMPLES", "10"))

# The fewest pairs each peer must yield: a guard against enumeration silently finding nothing
# (kio 0.6.5: 616; kafka-python 3.0.12: 482, since schemas/ has every API: 216 and 164 before).
MIN_PAIRS = {"kio": 600, "kafka-python": 470}


def _cases():
    cases = []
    for name, peer in PEERS.items():
        if isinstance(peer, Exception):
            cases.append(pytest.param(name, None, None, None, id=f"{name}-unavailable",
                                      marks=pytest.mark.skip(reason=f"{name} is not installed: {peer}")))
            continue
        for message, version, ref in peer.pairs():
            cases.append(pytest.param(name, message, version, ref, id=f"{name}-{message}-v{version}"))
    return cases


CASES = _cases()


def _hex_diff(ours: bytes, theirs: bytes) -> str:
    at = next((i for i, (a, b) in enumerate(zip(ours, theirs)) if a != b), min(len(ours), len(theirs)))
    return (f"first difference at byte {at} (ours {len(ours)} bytes, peer {len(theirs)}): "
            f"ours ...{ours[max(0, at - 8):at + 16].hex(' ')}, peer ...{theirs[max(0, at - 8):at + 16].hex(' ')}")


@pytest.mark.parametrize("peer_name", sorted(MIN_PAIRS))
def test_pairs_enumerated(peer_name):
    peer = PEERS[peer_name]
    if isinstance(peer, Exception):
        pytest.skip(f"{peer_name} is not installed: {peer}")
    pairs = peer.pairs()
    assert len(pairs) >= MIN_PAIRS[peer_name], f"{peer_name}: only {len(pairs)} (message, version) pairs"
    for name, version, _ in pairs:
        assert version in messages.by_name(name).versions()


# One test function per peer: Hypothesis's pytest plugin wraps a parametrized test's settings
# once per item, and past ~950 items of one function reading them recurses too deep (it did
# with 1,105 cases in one function, under CI=true).
_SETTINGS = settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))


@pytest.mark.parametrize("peer_name,name,version,ref", [c for c in CASES if c.values[0] == "kio"])
@_SETTINGS
@given(data=st.data())
def test_same_bytes_as_kio(peer_name, name, version, ref, data):
    same_bytes_as_peer(peer_name, name, version, ref, data)


@pytest.mark.parametrize("peer_name,name,version,ref", [c for c in CASES if c.values[0] != "kio"])
@_SETTINGS
@given(data=st.data())
def test_same_bytes_as_kafka_python(peer_name, name, version, ref, data):
    same_bytes_as_peer(peer_name, name, version, ref, data)


def same_bytes_as_peer(peer_name, name, version, ref, data):
    peer = PEERS[peer_name]
    cls = messages.by_name(name)
    peer_cls = peer.peer_class(ref)

    layout = peer.layout_problems(cls, peer_cls if peer_name == "kio" else peer_cls._struct, version)
    assert not layout, "schemas disagree:\n" + "\n".join(layout)

    ours = without_unknown_tags(data.draw(instances(cls, version), label=f"{name} v{version}"))
    if data.draw(st.booleans(), label="long values"):
        inflate(ours, version, data.draw)
    peer.constrain(ours, name, version, data.draw)
    theirs = peer.to_peer(ours, peer_cls, version, draw=data.draw)   # may redraw values in ours

    our_bytes = ours.encode(version)
    peer_bytes = peer.encode(theirs, peer_cls, version)
    assert peer_bytes == our_bytes, f"{peer_name} writes {name} v{version} differently: " + _hex_diff(our_bytes, peer_bytes)

    read_by_peer = peer.decode(peer_cls, our_bytes, version)
    assert read_by_peer == theirs, f"{peer_name} reads our {name} v{version} as a different object"
    assert peer.from_peer(read_by_peer, cls, version) == ours

    assert cls.decode(peer_bytes, version) == ours


# kafka-python reads every ApiVersionsResponse with a non-zero ErrorCode as version 0 (see
# KAFKA_PYTHON_LIMITS), a cruder form of what Kafka's Java client does: ApiVersionsResponse.parse
# tries the requested version and, if that fails, reads version 0 -- because a broker answers an
# ApiVersionsRequest of a version it does not support with UNSUPPORTED_VERSION (35) in a version 0
# body (RequestContext.apiVersion() is 0 then) under response header v0, listing the ApiVersions
# versions it does support so the client can retry lower.
@pytest.mark.parametrize("version", [1, 2, 3, 4, 5])
def test_api_versions_unsupported_version_answer_reads_as_v0(version):
    from kafkawire.messages.api_versions_response import ApiVersion, ApiVersionsResponse
    answer = ApiVersionsResponse(error_code=35, api_keys=[ApiVersion(api_key=18, min_version=0, max_version=2)])
    payload = bytes.fromhex("00000007" "0023" "00000001" "0012" "0000" "0002")   # header v0, body v0
    assert framing.encode_response(answer, 0, 7)[4:] == payload
    assert framing.decode_response(payload, 18, version) == (7, answer)
