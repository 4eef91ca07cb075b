"""TCP reassembly in C (kafkawire/_native_src/reassemble.c, issue 26) against the Python code it
replaces on the fast way (kafkawire/capture/streams.py's _relative and _fill, the oracle): the same
directions (runs with their bytes and packet offsets, gaps, retransmission counts, SYN flags) on
every reference capture, on damaged ones, and on hostile segment lists (sequence numbers that wrap,
overlaps, retransmissions, reordering, snapshot-cut segments, duplicate packet numbers, no SYN,
empty segments). Segments the C code does not take on go to the Python code, which decides."""
from __future__ import annotations

import random
from dataclasses import replace

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafkawire import _native
from kafkawire.capture.fast_packets import read_segments_fast
from kafkawire.capture.packets import TCP_ACK, TCP_SYN, Segment
from kafkawire.capture.streams import Run, reassemble
from tests.tools.test_pcap import CAPTURES, damaged

native = _native.records.reassemble_direction if _native.records is not None else None
# without the extension (the pure leg) the fast way is the Python code itself: nothing to compare
pytestmark = pytest.mark.skipif(native is None, reason="the C extension is not built (pip install -e . builds it)")
A, B, C = ("10.0.0.1", 40000), ("10.0.0.2", 9092), ("::1", 50000)


def same_both_ways(segments: list) -> list:
    fast, first = reassemble(segments, fast=True), reassemble(segments, fast=False)
    assert fast == first
    return fast


@pytest.mark.parametrize("capture", CAPTURES, ids=[f"{p.parent.name}/{p.name}" for p in CAPTURES])
def test_reference_captures_reassemble_the_same(capture):
    same_both_ways(read_segments_fast(capture).segments)


def test_damaged_captures_reassemble_the_same(tmp_path):
    rng = random.Random(26)
    sources = [p for p in CAPTURES if p.stat().st_size < 200_000]
    if not sources:
        pytest.skip("no reference captures")
    compared = 0
    for i in range(60):
        path = tmp_path / f"damaged-{i}{rng.choice(sources).suffix}"
        path.write_bytes(damaged(rng, rng.choice(sources).read_bytes()))
        try:
            segments = read_segments_fast(path).segments
        except ValueError:          # not a capture any more: nothing to reassemble
            continue
        same_both_ways(segments)
        compared += 1
    assert compared >= 20


SEQ_BASES = (0, 1000, 2**31 - 5, 2**32 - 3, 2**32 - 1)


@st.composite
def hostile_segments(draw) -> list:
    """Segments of one or two directions: payloads placed at random offsets from a base that may
    wrap, some retransmitted, overlapping, reordered, cut by the snapshot, empty, or SYNs."""
    base = draw(st.sampled_from(SEQ_BASES) | st.integers(0, 2**32 - 1))
    out = []
    for index in range(1, draw(st.integers(1, 25)) + 1):
        src, dst = draw(st.sampled_from(((A, B), (B, A), (C, B))))
        offset = draw(st.integers(-40, 400))
        payload = draw(st.binary(max_size=60))
        cut = draw(st.integers(0, 3)) == 0
        length = len(payload) + (draw(st.integers(1, 80)) if cut else 0)
        flags = draw(st.sampled_from((TCP_ACK, TCP_ACK, TCP_SYN, TCP_SYN | TCP_ACK, 0x18, 0x11)))
        number = index if draw(st.integers(0, 9)) else draw(st.integers(1, index))    # duplicate packet numbers too
        out.append(Segment(number, 1.0 + index, src, dst, (base + offset) % 2**32, flags, payload, length))
    return out


@settings(max_examples=200, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(hostile_segments())
def test_hostile_segment_lists_reassemble_the_same(segments):
    same_both_ways(segments)


def test_the_c_code_takes_plain_segments_on():
    segments = [Segment(1, 0.0, A, B, 2**32 - 1, TCP_SYN, b"", 0), Segment(2, 0.1, A, B, 0, TCP_ACK, b"abc", 3),
                Segment(3, 0.2, A, B, 6, TCP_ACK, b"ghi", 5), Segment(4, 0.3, A, B, 3, TCP_ACK, b"def", 3),
                Segment(5, 0.4, A, B, 3, TCP_ACK, b"de", 2)]
    runs, gaps, retransmitted, saw_syn, syn_ack = native(segments, Run, Segment)
    assert [(r.start, bytes(r.data), r.packets) for r in runs] == [(0, b"abcdefghi", [(0, 2), (3, 4), (6, 3)])]
    assert (gaps, retransmitted, saw_syn, syn_ack) == ([(9, 2, 3)], 1, True, False)
    same_both_ways(segments)


class LooksLikeASegment(Segment):
    pass


@pytest.mark.parametrize("odd", [
    {"seq": 2**32}, {"seq": -1}, {"length": 2**41}, {"payload": bytearray(b"xy")}, {"payload": memoryview(b"xy")},
    {"index": 2**70}, {"flags": 2**20}, {"seq": 5.0},
], ids=repr)
def test_segments_the_c_code_does_not_take_on_are_left_to_python(odd):
    plain = [Segment(1, 0.0, A, B, 100, TCP_ACK, b"ab", 2), Segment(2, 0.0, A, B, 102, TCP_ACK, b"cd", 2)]
    segments = [plain[0], replace(plain[1], **odd)]
    assert native(segments, Run, Segment) is None
    assert native([plain[0], LooksLikeASegment(*vars(plain[1]).values())], Run, Segment) is None
    try:
        expected = reassemble(segments, fast=False)
    except Exception as exc:        # whatever the Python code says, the fast way says too
        with pytest.raises(type(exc)):
            reassemble(segments, fast=True)
    else:
        assert reassemble(segments, fast=True) == expected


def test_wrong_arguments_are_a_type_error():
    with pytest.raises(TypeError):
        native((), Run, Segment)
    with pytest.raises(TypeError):
        native([], Run)
    assert native([], Run, Segment) is None
