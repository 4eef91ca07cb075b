"""kafkawire.records.scan_log: every entry of a damaged buffer, in Java's order of checks."""
from __future__ import annotations

import struct

from kafkawire.records import RecordBatch, TruncatedTail, build_batch, scan_log
from kafkawire.records.scan import (SIZE_BELOW_MINIMUM, UNKNOWN_MAGIC, UNREADABLE_BATCH, Corruption,
                                    believable_length)


def _batches(n: int = 3) -> list[bytes]:
    return [build_batch([(b"k%d" % i, b"v" * (i + 1))], base_offset=i, base_timestamp=1000)
            for i in range(n)]


def test_a_clean_buffer_is_its_batches():
    parts = _batches()
    entries = list(scan_log(b"".join(parts)))
    assert [type(e) for e in entries] == [RecordBatch] * 3
    assert [e.base_offset for e in entries] == [0, 1, 2]
    assert entries[1].position == len(parts[0])


def test_an_unknown_magic_is_skipped_by_its_size_and_the_scan_goes_on():
    parts = _batches()
    bad = bytearray(parts[1])
    bad[16] = 7
    entries = list(scan_log(b"".join([parts[0], bytes(bad), parts[2]])))
    corrupt = entries[1]
    assert isinstance(corrupt, Corruption) and corrupt.kind == UNKNOWN_MAGIC
    assert (corrupt.position, corrupt.at, corrupt.magic) == (len(parts[0]), len(parts[0]) + 16, 7)
    assert corrupt.next_position == len(parts[0]) + len(parts[1])
    assert isinstance(entries[2], RecordBatch) and entries[2].base_offset == 2


def test_a_v2_header_the_reader_refuses_is_unreadable_and_skipped():
    parts = _batches()
    bad = bytearray(parts[0])
    struct.pack_into(">i", bad, 8, 20)      # a size below the 61-byte v2 header, above the minimum
    data = bytes(bad[:32]) + parts[1]
    entries = list(scan_log(data))
    assert isinstance(entries[0], Corruption) and entries[0].kind == UNREADABLE_BATCH
    assert "smaller than the minimum" in entries[0].reason
    assert entries[0].next_position == 32
    assert isinstance(entries[1], RecordBatch)


def test_a_size_below_the_smallest_message_ends_the_scan():
    parts = _batches()
    bad = bytearray(parts[1])
    struct.pack_into(">i", bad, 8, 5)
    entries = list(scan_log(b"".join([parts[0], bytes(bad), parts[2]])))
    assert len(entries) == 2
    assert entries[1].kind == SIZE_BELOW_MINIMUM and entries[1].size == 5 and entries[1].next_position is None
    assert entries[1].at == len(parts[0]) + 8


def test_a_torn_batch_and_a_torn_header_are_truncated_tails():
    parts = _batches(2)
    data = parts[0] + parts[1][:40]
    assert list(scan_log(data))[-1] == TruncatedTail(len(parts[0]), 40, len(parts[1]))
    data = parts[0] + parts[1][:17]   # Java needs 18 bytes to read past the magic
    assert list(scan_log(data))[-1] == TruncatedTail(len(parts[0]), 17, 18)


def test_start_and_end_bound_the_scan():
    parts = _batches()
    data = b"".join(parts)
    entries = list(scan_log(data, len(parts[0]), len(parts[0]) + len(parts[1])))
    assert [e.base_offset for e in entries] == [1]


def test_believable_length_is_the_rule_a_reader_resyncs_by():
    batch = _batches(1)[0]
    assert believable_length(batch[:17], len(batch)) == len(batch)
    assert believable_length(batch[:17], len(batch) - 1) is None        # runs past what is there
    assert believable_length(batch[:16], len(batch)) is None            # too short to read the magic
    bad = bytearray(batch[:17])
    bad[16] = 3
    assert believable_length(bytes(bad), len(batch)) is None
