"""The KIP-853 request checks of tests/kraft/test_reconfig_findings.py, settled on the wire: the
same AddRaftVoter, RemoveRaftVoter and UpdateRaftVoter requests go to a real Kafka 4.3.1
controller and to a kafkawire controller (a --standalone one, kraft.version 1, and a static one,
kraft.version 0), and both must answer with the same error code (and name the leader alike)."""
import asyncio

import pytest

from kafkawire.messages import add_raft_voter_request as add_req
from kafkawire.messages import remove_raft_voter_request as rm_req
from kafkawire.messages import update_raft_voter_request as up_req
from kafkawire.net.client import NetworkClient
from kafkawire.protocol.error_codes import Errors
from kafkawire.raft.node.local_quorum import LocalQuorum, describe_quorum
from tests.interop.kafka_procs import free_port

ZERO = b"\0" * 16


def _requests(port: int, epoch: int, directory):
    """(what is checked, request) pairs; each answer's error code is compared."""
    own = [up_req.Listener(name="CONTROLLER", host="127.0.0.1", port=port)]
    return [
        ("RemoveRaftVoter without a directory id",
         rm_req.RemoveRaftVoterRequest(cluster_id=None, voter_id=1, voter_directory_id=_uuid(ZERO))),
        ("UpdateRaftVoter without a directory id",
         up_req.UpdateRaftVoterRequest(cluster_id=None, current_leader_epoch=epoch, voter_id=1,
                                       voter_directory_id=_uuid(ZERO), listeners=own,
                                       k_raft_version_feature=up_req.KRaftVersionFeature(min_supported_version=0,
                                                                                         max_supported_version=1))),
        ("UpdateRaftVoter whose kraft.version range leaves out the finalized one",
         up_req.UpdateRaftVoterRequest(cluster_id=None, current_leader_epoch=epoch, voter_id=1,
                                       voter_directory_id=directory, listeners=own,
                                       k_raft_version_feature=up_req.KRaftVersionFeature(min_supported_version=2,
                                                                                         max_supported_version=2))),
        ("AddRaftVoter of a voter without the quorum's listener",
         add_req.AddRaftVoterRequest(cluster_id=None, timeout_ms=5000, voter_id=1, voter_directory_id=directory,
                                     listeners=[add_req.Listener(name="OTHER", host="127.0.0.1", port=port)])),
    ]


def _uuid(raw: bytes):
    import uuid
    return uuid.UUID(bytes=raw)


async def _answers(port: int) -> list[tuple[str, str, int]]:
    view = await describe_quorum(("127.0.0.1", port))
    directory = next(v.replica_directory_id for v in view.voters if v.replica_id == 1)
    out = []
    async with NetworkClient(client_id="findings", request_timeout_ms=10000) as client:
        for what, request in _requests(port, view.leader_epoch, directory):
            response = await client.send(("127.0.0.1", port), request)
            leader = getattr(response, "current_leader", None)
            out.append((what, Errors.for_code(response.error_code).name,
                        None if leader is None else leader.leader_id))
    return out


@pytest.mark.parametrize("mode", ["standalone", "static"])
def test_kafka_and_kafkawire_refuse_bad_voter_requests_alike(kafka_controller, tmp_path, mode):
    port = free_port()
    args = ("--standalone",) if mode == "standalone" else ()
    props = {} if mode == "standalone" else {"controller.quorum.voters": f"1@127.0.0.1:{port}",
                                             "controller.quorum.bootstrap.servers": None}
    kafka = kafka_controller(1, "Lw1mYbmTQbqaGkrDa5lrXQ", *args, controller_port=port, properties=props)
    theirs = asyncio.run(_answers(kafka.controller_port))
    ours = LocalQuorum(tmp_path / "kafkawire", voters=1)
    try:
        ours.format(mode=mode)
        ours.start(1)
        ours.wait_for_leader(60)
        mine = asyncio.run(_answers(ours.ports[1]))
    finally:
        ours.kill(1)
    print("\n".join(f"{what}: Kafka {a[1]} (leader {a[2]}), kafkawire {b[1]} (leader {b[2]})"
                    for (what, *_), a, b in zip(theirs, theirs, mine)))
    assert mine == theirs
