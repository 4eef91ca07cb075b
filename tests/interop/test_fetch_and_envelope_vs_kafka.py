"""Raft Fetch in every version and Envelopes with malformed inner requests, sent alike to a real
Kafka 4.3.1 controller and to a kafkawire controller (issue 24, defect 9), the decoded answers
compared:

* a replica's Fetch v4-v18 from an observer id (7) and from the only voter's id (1), the
  leader's own: v4-v6 an empty response, v7-v12 a top-level INVALID_REQUEST, v13+ the partition
  (KafkaRaftClient.handleFetchRequest), for the leader's own id an empty UNKNOWN_SERVER_ERROR
  partition (LeaderState.updateReplicaState throws). Throttle, session id, high watermark,
  records contents and node ids legitimately differ and are left out;
* Envelopes whose inner request Kafka cannot parse (EnvelopeUtils: RequestHeader.parse, then
  ApiKeys.forwardable, then the body): the envelope's error code and its (absent) response data.
Java-free: tests/kraft/test_fetch_versions.py and tests/net/test_envelope.py."""
from __future__ import annotations

import asyncio
import struct

from kafkawire.messages.create_topics_request import CreatableTopic, CreateTopicsRequest
from kafkawire.messages.envelope_request import EnvelopeRequest
from kafkawire.messages.metadata_request import MetadataRequest
from kafkawire.net.client import NetworkClient
from kafkawire.net.envelope import serialize_principal
from kafkawire.protocol.framing import encode_request
from kafkawire.raft import rpc
from kafkawire.raft.node.local_quorum import LocalQuorum, describe_quorum
from kafkawire.raft.types import ReplicaKey

CLUSTER_ID = "f9J2mQ7XTOyHnBq8aW3kLg"
OBSERVER, VOTER = 7, 1
FETCH_VERSIONS = range(4, 19)


def fetch_vectors() -> list[tuple[int, int]]:
    """(replica id, version) of every Fetch sent."""
    return [(replica_id, v) for replica_id in (OBSERVER, VOTER) for v in FETCH_VERSIONS]


def _inner(body, version: int) -> bytes:
    return encode_request(body, version, 99, client_id="adminclient-1")[4:]


def envelope_vectors() -> list[tuple[str, bytes]]:
    create = CreateTopicsRequest(topics=[CreatableTopic(name="t", num_partitions=1, replication_factor=1)],
                                 timeout_ms=1000)
    metadata = _inner(MetadataRequest(topics=None), 12)
    return [
        ("unknown API key 999", struct.pack(">hhih", 999, 0, 99, 0) + b"\0" * 8),
        ("LeaderAndIsr, no valid version left", struct.pack(">hhih", 4, 7, 99, -1) + b"\0" * 8),
        ("a 2-byte header", b"\x00\x13"),
        ("Metadata's header cut inside the client id", metadata[:10]),
        ("Metadata v12, not forwardable", metadata),
        ("CreateTopics v1, below Kafka 4.3.1's range", _inner(create, 1)),
        ("CreateTopics v99", struct.pack(">hhih", 19, 99, 99, 0) + b"\0" * 8),
        ("CreateTopics v7 with its body cut short", _inner(create, 7)[:-3]),
    ]


def _fetch_summary(response) -> tuple:
    """What must agree: the top-level error, per topic the id and per partition its index,
    error (with the high watermark, if an error), and whether it carries records, a diverging
    epoch or a snapshot id; how many leader endpoints are named."""
    return (response.error_code,
            [(t.topic_id, [(p.partition_index, p.error_code, p.high_watermark if p.error_code else None,
                            bool(p.records), p.diverging_epoch.epoch >= 0, p.snapshot_id.epoch >= 0)
                           for p in t.partitions]) for t in response.responses],
            len(response.node_endpoints or []))


async def _answers(address: tuple[str, int], cluster_id: str) -> dict[str, object]:
    view = await describe_quorum(address, timeout_ms=15000)   # a loaded machine: Kafka is slow at first
    out: dict[str, object] = {}
    async with NetworkClient(client_id="defect-9", request_timeout_ms=10000) as client:
        for replica_id, version in fetch_vectors():
            request = rpc.fetch_request(cluster_id, ReplicaKey(replica_id, None), view.leader_epoch, 0,
                                        0 if version >= 12 else -1, 0, 1 << 20)
            response = await client.send(address, rpc.adapt_request_for_version(request, version),
                                         api_version=version)
            out[f"Fetch v{version} from replica {replica_id}"] = _fetch_summary(response)
        for what, data in envelope_vectors():
            response = await client.send(address, EnvelopeRequest(
                request_data=data, request_principal=serialize_principal("User:ANONYMOUS"),
                client_host_address=bytes([127, 0, 0, 1])))
            out[f"Envelope, {what}"] = (response.error_code, response.response_data or None)
    return out


def test_kafka_and_kafkawire_answer_old_raft_fetches_and_bad_envelopes_alike(kafka_controller, tmp_path):
    kafka = kafka_controller(1, CLUSTER_ID, "--standalone")
    theirs = asyncio.run(_answers(("127.0.0.1", kafka.controller_port), CLUSTER_ID))
    kafka.kill()
    with LocalQuorum(tmp_path / "kafkawire", voters=1, cluster_id=CLUSTER_ID).started("standalone") as quorum:
        quorum.wait_for_leader(60)
        mine = asyncio.run(_answers(quorum.address(1), CLUSTER_ID))
    print("\n".join(f"{what}: Kafka {theirs[what]}, kafkawire {mine[what]}" for what in theirs))
    assert mine == theirs
