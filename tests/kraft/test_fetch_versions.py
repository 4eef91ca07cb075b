"""A replica's Fetch to the raft leader in every version Kafka 4.3.1's controller accepts
(4-18), answered as Kafka's KafkaRaftClient answers it: the partition is named by TopicId alone
(RaftUtil.hasValidTopicPartition), so a fetch below v13, which has no TopicId, is a top-level
INVALID_REQUEST with no partitions, which v4-v6 cannot carry (FetchResponse's ErrorCode is v7+:
an empty response); from v13 the records are served, except to a fetch naming the leader's own
id, which Kafka's leader answers with an empty UNKNOWN_SERVER_ERROR partition (its
LeaderState.updateReplicaState throws). Before, v4-v11 got a partition-level INVALID_REQUEST,
v12 was served by topic name, and the leader served itself. Checked on the bytes each version
encodes.
(tests/interop/test_fetch_and_envelope_vs_kafka.py sends the same to Kafka 4.3.1.)"""
import struct

import pytest

from kafkawire.messages import fetch_response as f_resp
from kafkawire.protocol import framing
from kafkawire.raft import rpc
from kafkawire.raft.io import RequestReceived
from kafkawire.raft.types import METADATA_TOPIC_ID, ReplicaKey

from .datadriven import Case
from .interaction import InteractionEnv

INVALID_REQUEST = 42
VERSIONS = range(4, 19)


def replica_fetch(replica_id: int, epoch: int, version: int) -> bytes:
    """A replica's fetch from offset 0 as it goes on the wire in ``version`` (only the fields the
    version has; LastFetchedEpoch is v12+), header included."""
    body = rpc.fetch_request("cluster", ReplicaKey(replica_id, None), epoch, 0, 0 if version >= 12 else -1,
                             0, 1 << 20)
    return framing.encode_request(rpc.adapt_request_for_version(body, version), version, 5)[4:]


@pytest.fixture(scope="module")
def env():
    env = InteractionEnv()
    for n, (command, args, kwargs) in enumerate([("cluster", [], {"voters": "(1,2,3)"}), ("elect", ["1"], {}),
                                                 ("stabilize", [], {}), ("propose", ["1"], {"count": "3"}),
                                                 ("stabilize", [], {})]):
        env.handle(Case(n, command, args, kwargs))
    return env


def answer(env, replica_id: int, version: int) -> bytes:
    """The leader's answer to the fetch, encoded in the fetch's version."""
    leader = env.nodes[1]
    request = framing.decode_request(replica_fetch(replica_id, leader.core.epoch, version))
    ready = leader.core.step(RequestReceived(env.now, ("versions", replica_id, version), version, request.body))
    env._apply(leader, ready, [])
    (response,) = ready.respond
    return response.body.encode(version)


@pytest.mark.parametrize("replica_id", [2, 7, 1], ids=["voter", "observer", "leader's own id"])
@pytest.mark.parametrize("version", VERSIONS)
def test_a_replica_fetch_without_a_topic_id_is_a_top_level_invalid_request(env, replica_id, version):
    raw = answer(env, replica_id, version)
    if version <= 6:       # ThrottleTimeMs, an empty Responses array
        assert raw == struct.pack(">ii", 0, 0)
    elif version <= 11:    # ThrottleTimeMs, ErrorCode, SessionId, an empty Responses array
        assert raw == struct.pack(">ihii", 0, INVALID_REQUEST, 0, 0)
    elif version == 12:    # flexible: compact array (length + 1), no tagged fields
        assert raw == struct.pack(">ihi", 0, INVALID_REQUEST, 0) + b"\x01\x00"
    else:
        decoded = f_resp.FetchResponse.decode(raw, version)
        (topic,) = decoded.responses
        (partition,) = topic.partitions
        if replica_id == 1:   # LeaderState.updateReplicaState throws: an empty UNKNOWN_SERVER_ERROR partition
            assert (decoded.error_code, topic.topic_id, partition.error_code) == (0, METADATA_TOPIC_ID, -1)
            assert (partition.high_watermark, len(partition.records)) == (-1, 0)
        else:
            assert (decoded.error_code, topic.topic_id, partition.error_code) == (0, METADATA_TOPIC_ID, 0)
            assert len(partition.records) > 0
