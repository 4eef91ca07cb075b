"""KIP-1166 (Fetch v18 HighWatermark), as Kafka 4.3.1's KafkaRaftClient does it: a replica's
Fetch carries the high watermark it knows (-1 while it knows none; buildFetchRequest), and the
leader answers at once, instead of parking the fetch for up to its MaxWaitMs, when it knows a
higher one (handleFetchRequest, isHighWatermarkUpdated). An older Fetch has no such field (its
default, the int64 maximum, is never lower) and is parked as before.

Before: our Fetch left the field at that maximum and our leader parked every fetch without new
records, so a follower (ours or Kafka's, which sends the field) whose fetch arrived just after a
commit learnt of it only at the next append or after MaxWaitMs (500 ms)."""
import pytest

from kafkawire.protocol import framing
from kafkawire.raft import rpc
from kafkawire.raft.io import RequestReceived
from kafkawire.raft.types import ReplicaKey

from .datadriven import Case
from .interaction import InteractionEnv

NO_FIELD = 2 ** 63 - 1   # the field's default: what a Fetch below v18 decodes to


def run(env: InteractionEnv, command: str, **kwargs) -> str:
    return env.handle(Case(0, command, [], {k: str(v) for k, v in kwargs.items()}))


@pytest.fixture(scope="module")
def env():
    """Leader 1 of voters (1,2,3), high watermark 5 known to every replica."""
    env = InteractionEnv()
    env.handle(Case(0, "cluster", [], {"voters": "(1,2,3)"}))
    env.handle(Case(1, "elect", ["1"], {}))
    run(env, "stabilize")
    env.handle(Case(2, "propose", ["1"], {"count": "2"}))
    run(env, "stabilize")
    assert env.nodes[1].core.high_watermark() == 5
    return env


def test_a_follower_fetch_names_the_high_watermark_it_knows(env):
    """The follower learnt high watermark 5 from the leader's answer (at once, its fetch having
    carried 3) and says so in its next Fetch."""
    assert env.nodes[2].core.high_watermark() == 5
    out = run(env, "tick", ms=600) + "\n" + run(env, "stabilize")
    assert "2->1 Fetch epoch=1 offset=5 last_epoch=1 hw=5" in out.splitlines()


def leader_answers_at_once(env, high_watermark: int, version: int) -> bool:
    leader = env.nodes[1].core
    body = rpc.fetch_request(None, ReplicaKey(2, None), leader.epoch, leader.log.end_offset,
                             leader.log.last_fetched_epoch, 500, 1 << 20, high_watermark)
    frame = framing.encode_request(rpc.adapt_request_for_version(body, version), version, 99)
    request = framing.decode_request(frame[4:])
    handle = ("hw-test", high_watermark, version)
    ready = leader.step(RequestReceived(env.now, handle, version, request.body))
    leader.parked.complete_all()   # no parked fetch left behind (answered in a later Ready)
    return any(response.request_id == handle for response in ready.respond)


@pytest.mark.parametrize("high_watermark, version, at_once", [
    (-1, 18, True),          # the fetcher knows no high watermark yet
    (3, 18, True),           # it knows an older one
    (5, 18, False),          # it knows ours: nothing new, the fetch waits (long poll)
    (7, 18, False),          # a higher one than ours (a stale leader's view): waits too
    (-1, 17, False),         # v17 cannot carry the field: decoded as the int64 maximum
], ids=["unknown", "behind", "equal", "ahead", "v17"])
def test_the_leader_answers_at_once_a_fetch_whose_high_watermark_is_behind(env, high_watermark, version, at_once):
    assert leader_answers_at_once(env, high_watermark, version) is at_once
