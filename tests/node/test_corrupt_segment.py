"""A flipped bit in a batch's base offset (outside the CRC) on a stopped voter's disk (issue
18, item 6): on restart recovery cuts the log there and says so, the voter fetches the rest
from the leader, and every voter ends up with the same batches. Real processes."""
import os

from kafkawire.records import iter_batches
from kafkawire.raft.node.local_quorum import LocalQuorum

from .test_quorum_processes import batches_below


def _flip_a_base_offset(directory: str) -> int:
    """Flip bit 16 of the base offset of a batch in the middle of the active segment."""
    name = sorted(n for n in os.listdir(directory) if n.endswith(".log"))[-1]
    path = os.path.join(directory, name)
    with open(path, "rb") as f:
        data = bytearray(f.read())
    batches = list(iter_batches(bytes(data)))
    assert len(batches) >= 4, len(batches)
    victim = batches[len(batches) // 2]
    data[victim.position + 5] ^= 0x01
    with open(path, "wb") as f:
        f.write(data)
    return victim.base_offset


def test_a_flipped_base_offset_is_cut_on_restart_and_fetched_again(tmp_path):
    with LocalQuorum(tmp_path, voters=3).started("initial-controllers", graceful=False) as quorum:
        first = quorum.wait_for_leader(120)
        # The controller appends a NoOpRecord every 500 ms: wait for a few batches.
        quorum.wait_until(lambda: quorum.describe(first.leader_id).high_watermark >= 16, 30, "a few batches")
        follower = next(i for i in quorum.node_ids if i != first.leader_id)
        assert quorum.stop(follower) == 0
        flipped = _flip_a_base_offset(quorum.metadata_partition_dir(follower))
        quorum.start(follower)

        def log_text():
            with open(quorum.log_path(follower)) as f:
                return f.read()

        quorum.wait_until(lambda: "log recovery cut" in log_text(), 30, f"node {follower} to recover its log")
        text = log_text()
        assert "do not follow" in text and f"starts at {flipped + 65536}" in text, quorum.log_tail(follower, 40)
        leader_dir, follower_dir = (quorum.metadata_partition_dir(i) for i in (first.leader_id, follower))

        def same_batches():
            end = quorum.describe(first.leader_id).high_watermark
            theirs = batches_below(leader_dir, end)
            return end > flipped + 1 and batches_below(follower_dir, end) == theirs and theirs

        quorum.wait_until(same_batches, 30, f"node {follower} to fetch the cut records again")
        text = log_text()
        assert "Traceback" not in text and "CRITICAL" not in text and " ERROR " not in text
