"""Hostile raft requests against real `kafkawire server-start` quorums (issue 18, item 1): a
Vote, BeginQuorumEpoch or EndQuorumEpoch that would push the epoch to the end of the int32
space, name a leader that is not a voter, or claim the receiver's own id. Each is refused,
the epoch does not move, and the quorum keeps (or elects) a leader and commits afterwards.
The requests are built by our own codecs and sent with our NetworkClient."""
import asyncio

import pytest

from kafkawire.net.client import NetworkClient
from kafkawire.protocol.error_codes import Errors
from kafkawire.raft import rpc
from kafkawire.raft.bounds import INT32_MAX
from kafkawire.raft.node.local_quorum import LocalQuorum
from tests.nemesis.hostile import STRANGER, hostile_requests

INVALID = int(Errors.INVALID_REQUEST)


async def send_all(quorum: LocalQuorum) -> list[tuple[int, str, object]]:
    answers = []
    async with NetworkClient(client_id="hostile", request_timeout_ms=5000, connect_timeout_ms=5000) as client:
        for target in quorum.node_ids:
            for what, request in hostile_requests(quorum.cluster_id, target, list(quorum.node_ids)):
                answers.append((target, what, await client.send(quorum.address(target), request)))
    return answers


def refused(answer) -> bool:
    if answer.error_code:
        return False   # a top-level error would mean the request was not understood
    partition = answer.topics[0].partitions[0]
    return partition.error_code == INVALID or (partition.error_code == 0 and not partition.vote_granted)


@pytest.mark.parametrize("voters", [1, 3])
def test_hostile_epochs_are_refused_and_the_quorum_lives_on(tmp_path, voters):
    with LocalQuorum(tmp_path, voters=voters).started("initial-controllers", graceful=False) as quorum:
        first = quorum.wait_for_leader(120)
        # Two of three voters elect a leader: the third may not be listening yet (a connect refused).
        quorum.wait_until(lambda: all("listening on" in open(quorum.log_path(i)).read() for i in quorum.node_ids),
                          30, "every node listening", watch=quorum.node_ids)
        # And every voter has a record of the leader's epoch: a voter whose log still ends in
        # epoch 0 rightly grants a stranger claiming a log at (epoch 0, offset 10**6), as one
        # that lags may not know every voter yet (voting.py); under load a follower had not
        # fetched yet once (a full tests/node run at load 12).
        quorum.wait_until(lambda: (v := quorum.describe(first.leader_id)).high_watermark > 0
                          and all(r.log_end_offset >= v.high_watermark for r in v.voters),
                          30, "every voter to fetch in the leader's epoch", watch=quorum.node_ids)
        answers = asyncio.run(send_all(quorum))
        assert len(answers) == 8 * voters
        for target, what, answer in answers:
            assert refused(answer), f"node {target} accepted {what}: {answer}"
            assert answer.topics[0].partitions[0].leader_epoch == first.leader_epoch, (target, what, answer)
        for node_id in quorum.node_ids:
            with open(quorum.log_path(node_id)) as f:
                text = f.read()
            for said in ("would jump", "claiming our own id", "rejected a Vote at epoch 1000 from 99, not a voter",
                         "refused BeginQuorumEpoch for leader 99 at epoch 1000: leader 99 is not a voter",
                         "refused EndQuorumEpoch for leader 99 at epoch 1000: leader 99 is not a voter"):
                assert said in text, f"node {node_id} did not log {said!r}"
        # The leader is still the leader of the same epoch and goes on committing (its
        # controller appends a NoOpRecord every 500 ms).
        view = quorum.wait_until(lambda: (v := quorum.describe(first.leader_id)).high_watermark
                                 > first.high_watermark and v, 15, "the leader to commit after the requests")
        assert (view.leader_id, view.leader_epoch) == (first.leader_id, first.leader_epoch)
        # And a new election still happens at the next epoch, not at the end of the space.
        if voters == 3:
            quorum.kill(first.leader_id)
            second = quorum.wait_for_leader(120, exclude=(first.leader_id,), min_epoch=first.leader_epoch + 1)
        else:
            quorum.stop(first.leader_id)
            quorum.start(first.leader_id)
            second = quorum.wait_for_leader(120, min_epoch=first.leader_epoch + 1)
        assert second.leader_epoch < first.leader_epoch + 100
        quorum.wait_until(lambda: quorum.describe(second.leader_id).high_watermark > second.high_watermark,
                          15, "the new leader to commit")
        for node_id in quorum.running():
            with open(quorum.log_path(node_id)) as f:
                text = f.read()
            assert "Traceback" not in text and " ERROR " not in text, quorum.log_tail(node_id, 60)
