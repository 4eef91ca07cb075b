"""Every raft response the core builds encodes in every version of its message, with every
optional part filled (issue 18, item 5: a field is set only in the versions that have it).
tests/node/test_every_api_version.py checks the same through a running node."""
import uuid

import pytest

from kafkawire.messages import (begin_quorum_epoch_response as bqe, describe_quorum_response as dq,
                                end_quorum_epoch_response as eqe, fetch_response as f,
                                fetch_snapshot_response as fs, vote_response as v)
from kafkawire.raft import rpc
from kafkawire.raft.io import ReplicaProgress
from kafkawire.raft.types import Endpoints, OffsetAndEpoch, ReplicaKey

ENDPOINTS = Endpoints((("CONTROLLER", "127.0.0.1", 9093),))
LEADER = dict(leader_id=1, epoch=7, endpoints=ENDPOINTS, listener="CONTROLLER")
PROGRESS = ReplicaProgress(ReplicaKey(1, uuid.UUID(int=5)), 10, 1000, 1000)

BUILDERS = {
    "Vote": (v.VoteResponse, lambda ver: rpc.vote_response(0, granted=True, api_version=ver, **LEADER)),
    "BeginQuorumEpoch": (bqe.BeginQuorumEpochResponse, lambda ver: rpc.begin_quorum_epoch_response(
        0, api_version=ver, **LEADER)),
    "EndQuorumEpoch": (eqe.EndQuorumEpochResponse, lambda ver: rpc.end_quorum_epoch_response(
        0, api_version=ver, **LEADER)),
    "Fetch diverging": (f.FetchResponse, lambda ver: rpc.fetch_response(
        0, high_watermark=5, diverging=OffsetAndEpoch(3, 4), api_version=ver, **LEADER)),
    "Fetch snapshot": (f.FetchResponse, lambda ver: rpc.fetch_response(
        0, high_watermark=5, snapshot_id=OffsetAndEpoch(3, 4), api_version=ver, **LEADER)),
    "Fetch error": (f.FetchResponse, lambda ver: rpc.fetch_response(0, error=37, api_version=ver, **LEADER)),
    "FetchSnapshot": (fs.FetchSnapshotResponse, lambda ver: rpc.fetch_snapshot_response(
        0, snapshot_id=OffsetAndEpoch(3, 4), size=3, data=b"abc", api_version=ver, **LEADER)),
    "DescribeQuorum": (dq.DescribeQuorumResponse, lambda ver: rpc.describe_quorum_response(
        0, leader_id=1, epoch=7, high_watermark=10, voters=[PROGRESS], observers=[PROGRESS],
        nodes=[(1, ENDPOINTS)], api_version=ver)),
}
CASES = [(name, version) for name, (cls, _) in BUILDERS.items() for version in cls.versions()]


@pytest.mark.parametrize("name, version", CASES, ids=[f"{n} v{ver}" for n, ver in CASES])
def test_the_response_encodes_in_its_version(name, version):
    cls, build = BUILDERS[name]
    response = build(version)
    decoded = cls.decode(response.encode(version), version)
    if name.startswith("Fetch ") and version >= 12:
        partition = decoded.responses[0].partitions[0]
        assert (partition.current_leader.leader_id, partition.current_leader.leader_epoch) == (1, 7)
    if name == "DescribeQuorum":
        replica = decoded.topics[0].partitions[0].current_voters[0]
        assert (replica.replica_directory_id == uuid.UUID(int=5)) == (version >= 2)
