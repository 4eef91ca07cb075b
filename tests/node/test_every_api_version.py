"""Every version of every API a node advertises (ApiVersions tells which) gets a well-formed
answer or Kafka's error for the case, never UNKNOWN_SERVER_ERROR (-1) and never a closed
connection (issue 18, item 5: versioned fields follow the version). Sent to the leader of a
dynamic quorum (kraft.version 1, directory ids known) and to an observer, with the requests
all-default and, for the raft APIs, as a replica would send them."""
import asyncio
import socket
import uuid

import pytest

from kafkawire import messages
from kafkawire.messages.describe_quorum_request import DescribeQuorumRequest, PartitionData, TopicData
from kafkawire.net.client import NetworkClient
from kafkawire.protocol.message import Struct
from kafkawire.raft import rpc
from kafkawire.raft.node.local_quorum import LocalQuorum
from kafkawire.raft.types import Endpoints, OffsetAndEpoch, ReplicaKey

UNKNOWN_SERVER_ERROR = -1
STRANGER = ReplicaKey(7, uuid.UUID(int=7))


def error_codes(message, path=""):
    """Every (field path, error code) in a response, nested structs and arrays included."""
    for name in getattr(message, "__slots__", ()):
        value = getattr(message, name, None)
        if name == "error_code":
            yield path + name, value
        elif isinstance(value, Struct):
            yield from error_codes(value, f"{path}{name}.")
        elif isinstance(value, list):
            for i, item in enumerate(value):
                if isinstance(item, Struct):
                    yield from error_codes(item, f"{path}{name}[{i}].")


def replica_requests(cluster_id: str, target: int, epoch: int, version: int) -> dict[int, object]:
    """The raft requests as a replica (here node 7, an observer nobody knows) sends them, with
    only the fields the version has: LastFetchedEpoch is Fetch v12+, PreVote Vote v2+."""
    me, to = STRANGER, ReplicaKey(target, None)
    here = Endpoints((("CONTROLLER", "127.0.0.1", 1),))
    return {
        1: rpc.fetch_request(cluster_id, me, epoch, 0, 0 if version >= 12 else -1, 0, 1 << 20),
        52: rpc.vote_request(cluster_id, epoch, me, to, 0, 0, version >= 2),
        53: rpc.begin_quorum_epoch_request(cluster_id, epoch, me.id, to, here),
        54: rpc.end_quorum_epoch_request(cluster_id, epoch, me.id, (), here),
        55: DescribeQuorumRequest(topics=[TopicData(topic_name="__cluster_metadata",
                                                     partitions=[PartitionData(partition_index=0)])]),
        59: rpc.fetch_snapshot_request(cluster_id, me, epoch, OffsetAndEpoch(0, 0), 0, 1 << 20),
    }


async def probe(address, cluster_id: str, target: int, epoch: int) -> tuple[int, list[str]]:
    problems, sent = [], 0
    async with NetworkClient(client_id="every-version", request_timeout_ms=15000, connect_timeout_ms=5000) as client:
        from kafkawire.messages.describe_cluster_request import DescribeClusterRequest
        await client.send(address, DescribeClusterRequest())   # connects and learns the versions
        advertised = client.peer_versions(address)
        for api_key, (low, high) in sorted(advertised.items()):
            request_cls = messages.by_api_key(api_key, "request")
            # A Produce with acks=0 (the default) is never answered, as in Kafka: ask for acks.
            defaults = {"acks": -1, "timeout_ms": 1000} if api_key == 0 else {}
            shapes = {"default": lambda: request_cls(**defaults)}
            if api_key in replica_requests(cluster_id, target, epoch, high):
                shapes["replica"] = lambda k=api_key: rpc.adapt_request_for_version(
                    replica_requests(cluster_id, target, epoch, version)[k], version)
            for version in range(low, high + 1):
                for shape, make in shapes.items():
                    what = f"{request_cls.__name__} v{version} ({shape})"
                    try:
                        response = await client.send(address, make(), api_version=version)
                    except Exception as exc:   # a closed connection or a codec error: both are findings
                        problems.append(f"{what}: {type(exc).__name__}: {exc}")
                        await asyncio.sleep(0.5)   # past the reconnect backoff, for the next one
                        continue
                    sent += 1
                    bad = [p for p, code in error_codes(response) if code == UNKNOWN_SERVER_ERROR]
                    if bad:
                        problems.append(f"{what}: UNKNOWN_SERVER_ERROR at {', '.join(bad)}")
    return sent, problems


def listening(quorum, node_id: int) -> bool:
    try:
        socket.create_connection(quorum.address(node_id), timeout=1).close()
    except OSError:
        return False
    return True


def test_every_advertised_version_is_answered(tmp_path):
    with LocalQuorum(tmp_path, voters=1, extra_nodes=1).started("initial-controllers") as quorum:
        leader = quorum.wait_for_leader(120)
        results = {}
        for node_id in quorum.node_ids:
            # the extra node (an observer) may still be starting its listener when the voter leads
            quorum.wait_until(lambda: listening(quorum, node_id), 30, f"node {node_id} to answer")
            results[node_id] = asyncio.run(probe(quorum.address(node_id), quorum.cluster_id, node_id,
                                                 leader.leader_epoch))
        problems = [f"node {n}: {p}" for n, (_, ps) in results.items() for p in ps]
        assert not problems, "\n".join(problems)
        assert all(sent > 100 for sent, _ in results.values()), {n: s for n, (s, _) in results.items()}
        for node_id in quorum.node_ids:
            with open(quorum.log_path(node_id)) as f:
                text = f.read()
            assert "Traceback" not in text, quorum.log_tail(node_id, 80)
