"""A follower refuses a fetched response that breaks the log's rules and goes on (issue 18,
item 6): nothing of it is appended, its log end offset stays, it says why, and the next fetch
takes the leader's good records. Kafka's follower likewise rejects such a response and keeps
its log end offset; before, this core raised RaftInvariantError and the node exited."""
import struct

import pytest

from kafkawire.records import iter_batches
from kafkawire.raft.io import ResponseReceived

from .datadriven import Case
from .interaction import InteractionEnv


def _env_with_a_fetch_answer_to_2() -> InteractionEnv:
    env = InteractionEnv()
    env.handle(Case(1, "cluster", [], {"voters": "(1,2,3)"}))
    env.handle(Case(2, "elect", ["1"], {}))
    env.handle(Case(3, "stabilize", [], {}))
    env.handle(Case(4, "propose", ["1"], {"count": "3"}))
    return env


def _tamper(records: bytes, how: str) -> bytes:
    data = bytearray(records)
    first = next(iter(iter_batches(records)))
    if how == "base offset bit":           # outside the CRC: 3 -> 65539
        data[5] ^= 0x01
    elif how == "overlap":                 # the batch claims offsets the follower already has
        struct.pack_into(">q", data, 0, first.base_offset - 1)
    elif how == "epoch from the future":   # partition leader epoch, outside the CRC
        struct.pack_into(">i", data, 12, 99)
    elif how == "crc":
        data[-1] ^= 0xFF
    return bytes(data)


@pytest.mark.parametrize("how, said", [("base offset bit", "does not start at the log end offset 3"),
                                       ("overlap", "does not start at the log end offset 3"),
                                       ("epoch from the future", "leader epoch 99, outside [1, 1]"),
                                       ("crc", "corrupt records")])
def test_a_bad_fetch_response_is_refused_and_the_follower_goes_on(how, said):
    env = _env_with_a_fetch_answer_to_2()
    answers = [q for q in env.queue if q[0] == "response" and q[2] == 2]
    assert len(answers) == 1
    partition = answers[0][4].body.responses[0].partitions[0]
    assert bytes(partition.records)
    partition.records = _tamper(bytes(partition.records), how)
    follower = env.nodes[2]
    before = (follower.core.log.end_offset, follower.core.state)
    env.queue.remove(answers[0])
    _, destination, correlation_id = answers[0][4].request_id
    ready = follower.core.step(ResponseReceived(env.now, correlation_id, destination, answers[0][4].body))
    env._apply(follower, ready, [])
    assert (follower.core.log.end_offset, follower.core.state) == before and not ready.log_ops
    assert follower.core.counters["fetch_responses_refused"] == 1
    assert any(said in w for w in ready.warnings), ready.warnings
    # The follower fetches again (after the retry backoff) and gets the leader's good records.
    for _ in range(10):
        env.handle(Case(5, "tick", [], {"ms": "200"}))
        env.handle(Case(6, "stabilize", [], {}))
    assert follower.core.log.end_offset == env.nodes[1].core.log.end_offset == 6
    assert follower.core.high_watermark() == 6


def test_the_refusal_is_a_warning_of_the_ready():
    env = _env_with_a_fetch_answer_to_2()
    answer = next(q for q in env.queue if q[0] == "response" and q[2] == 2)
    partition = answer[4].body.responses[0].partitions[0]
    partition.records = _tamper(bytes(partition.records), "base offset bit")
    _, destination, correlation_id = answer[4].request_id
    ready = env.nodes[2].core.step(ResponseReceived(env.now, correlation_id, destination, answer[4].body))
    assert any("refused the records fetched from leader 1 in epoch 1: batch 65539..65541 does not start at "
               "the log end offset 3; the log end offset stays 3" in w for w in ready.warnings), ready.warnings
    assert not ready.log_ops


def _control_batch(base: int, epoch: int, value: bytes) -> bytes:
    from kafkawire.records import ControlRecordType, RecordBatchBuilder
    from kafkawire.records.control import encode_control_key
    builder = RecordBatchBuilder(base_offset=base, partition_leader_epoch=epoch, is_control=True)
    builder.append(encode_control_key(ControlRecordType.KRAFT_VOTERS), value, (), 0)
    return builder.build()


def _voters_record_of(*ids: int) -> bytes:
    import uuid
    from kafkawire.records.kraft_control import encode_value
    from kafkawire.raft.types import Endpoints, ReplicaKey
    from kafkawire.raft.voters import VoterNode, VoterSet
    voters = VoterSet.of(VoterNode(ReplicaKey(i, uuid.UUID(int=i)), Endpoints((("CONTROLLER", f"node{i}", 9093),)), 0, 1)
                         for i in ids)
    return encode_value(voters.to_voters_record())


@pytest.mark.parametrize("value, said", [
    (_voters_record_of(1), "changes more than one voter"),     # removes 2 and 3 at once
    (b"\x00\x00\xff\xff\xff", "the control batch at offset 3"),  # a VotersRecord that does not decode
])
def test_a_fetched_control_record_breaking_kip_853_is_refused(value, said):
    env = _env_with_a_fetch_answer_to_2()
    answer = next(q for q in env.queue if q[0] == "response" and q[2] == 2)
    env.queue.remove(answer)
    answer[4].body.responses[0].partitions[0].records = _control_batch(3, 1, value)
    follower = env.nodes[2]
    voters_before = follower.core.voters()
    _, destination, correlation_id = answer[4].request_id
    ready = follower.core.step(ResponseReceived(env.now, correlation_id, destination, answer[4].body))
    assert not ready.log_ops and follower.core.log.end_offset == 3 and follower.core.voters() == voters_before
    assert any(said in w for w in ready.warnings), ready.warnings
