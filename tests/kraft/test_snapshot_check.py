"""The fetched snapshot's check, fed chunk by chunk as the follower's core gets them
(kafkawire/raft/snapshot_check.py): the same verdict wherever the chunks split the batches,
the control records kept, damage refused at the chunk that shows it, and never more held
than the start of one batch."""
from __future__ import annotations

import os
import struct

import pytest

from kafkawire.raft.node.snapshot_writer import freeze_image, write_image
from kafkawire.raft.snapshot_check import MAX_SNAPSHOT_BATCH_BYTES, FetchedSnapshotCheck, check_fetched_snapshot
from kafkawire.raft.types import Endpoints, OffsetAndEpoch
from kafkawire.raft.voters import VoterSet
from kafkawire.records import ControlRecordType, iter_batches


@pytest.fixture(scope="module")
def snapshot(tmp_path_factory) -> bytes:
    """A kraft.version 1 snapshot (header, KRaftVersion and Voters, 1200 records in three
    data batches, footer), as the driver writes one."""
    directory = str(tmp_path_factory.mktemp("snapshot"))
    voters = VoterSet.static({i: Endpoints((("CONTROLLER", "127.0.0.1", 9000 + i),)) for i in (1, 2, 3)})
    values = [f"record-{i}".encode() * 3 for i in range(1200)]
    path = write_image(directory, freeze_image(OffsetAndEpoch(epoch=2, offset=1200), 1, voters.to_voters_record(),
                                               values, 0))
    with open(path, "rb") as f:
        return f.read()


def _chunks(data: bytes, size: int):
    return [data[i:i + size] for i in range(0, len(data), size)]


@pytest.mark.parametrize("chunk_size", [1, 13, 1000, 4096, 1 << 20])
def test_chunks_split_anywhere_give_the_verdict_and_control_records_of_the_whole(snapshot, chunk_size):
    largest_batch = max(batch.size_in_bytes for batch in iter_batches(snapshot))
    check = FetchedSnapshotCheck()
    for chunk in _chunks(snapshot, chunk_size):
        assert check.feed(chunk) is None
        assert check.held_bytes < largest_batch      # the start of one batch, never the snapshot
    assert check.finish() is None
    assert [kind for kind, _ in check.control_records] == [ControlRecordType.KRAFT_VERSION,
                                                           ControlRecordType.KRAFT_VOTERS]
    assert check.held_bytes == 0


def test_damage_is_refused_at_the_chunk_that_completes_the_damaged_batch(snapshot):
    batches = list(iter_batches(snapshot))
    damaged_batch = next(batch for batch in batches if not batch.is_control)     # the first data batch
    at = damaged_batch.end_position - 5                  # inside its records: the CRC no longer holds
    damaged = bytearray(snapshot)
    damaged[at] ^= 0xFF
    check = FetchedSnapshotCheck()
    chunks = _chunks(bytes(damaged), 500)
    refused_at = next(i for i, chunk in enumerate(chunks) if check.feed(chunk) is not None)
    assert refused_at == (damaged_batch.end_position - 1) // 500 < len(chunks) - 1
    assert "corrupt records" in check.problem
    assert check.feed(chunks[-1]) == check.problem == check.finish()     # a refusal is final


def test_a_batch_declaring_more_than_kafkas_largest_is_refused_before_its_bytes_come(snapshot):
    header_batch = next(iter_batches(snapshot))
    huge = struct.pack(">qi", 1, MAX_SNAPSHOT_BATCH_BYTES) + bytes([0, 0, 0, 0, 2]) + os.urandom(100)
    check = FetchedSnapshotCheck()
    problem = check.feed(snapshot[:header_batch.end_position] + huge)
    assert problem is not None and f"declares {MAX_SNAPSHOT_BATCH_BYTES + 12} bytes" in problem, problem
    assert check.held_bytes == 0


def test_a_snapshot_cut_short_or_without_its_footer_is_refused_at_the_end(snapshot):
    last = list(iter_batches(snapshot))[-1]
    assert "ends inside a batch" in check_fetched_snapshot(snapshot[:-3])
    assert "last record is not a SnapshotFooter" in check_fetched_snapshot(snapshot[:last.position])
    assert "first record is not a SnapshotHeader" in check_fetched_snapshot(snapshot[next(iter_batches(snapshot)).end_position:])
