"""`kafkawire metadata-quorum` against a fake controller (a KafkaServer answering with responses
built here). The expected text is written from MetadataQuorumCommand.java (Kafka 4.x) and
ToolsUtils.prettyPrintTable: labels padded to 24 characters, table cells padded to the column
width and each followed by a tab, Node.toString's JSON-like voters, Kafka's messages."""
from __future__ import annotations

import csv
import re
import uuid

import pytest

from kafkawire.messages.add_raft_voter_response import AddRaftVoterResponse
from kafkawire.messages.describe_cluster_response import DescribeClusterBroker, DescribeClusterResponse
from kafkawire.messages.describe_quorum_response import (DescribeQuorumResponse, Listener, Node, PartitionData,
                                                         ReplicaState, TopicData)
from kafkawire.messages.remove_raft_voter_response import RemoveRaftVoterResponse
from kafkawire.protocol.error_codes import Errors
from conftest import unavailable
from tests import kafka_schemas, kafka_trunk_record
from fake_node import FakeNode, SilentPeer, answers_metadata, closed_port
from kafkawire.tools import metadata_quorum
from kafkawire.tools.admin_client import KafkaApiError, exception_class_name
from kafkawire.tools.cli import main

DESCRIBE_QUORUM, DESCRIBE_CLUSTER, ADD_VOTER, REMOVE_VOTER = 55, 60, 80, 81
CLUSTER_ID = "MkU3OEVBNTcwNTJENDM2Qk"
DIR = {i: uuid.UUID(bytes=bytes([i]) * 16) for i in range(1, 6)}     # base64url "AQEB...", "AgIC...", ...


def quorum_response(version, *, leader_id=1, voters=None, error=0, error_message=None, top_error=0,
                    topic_name="__cluster_metadata"):
    """Voters 2, 1 (leader), 3 and observer 4, as a leader would describe them in ``version``."""
    def replica(node_id, leo, fetch, caught_up):
        return ReplicaState(replica_id=node_id, replica_directory_id=DIR[node_id] if version >= 2 else uuid.UUID(int=0),
                            log_end_offset=leo, last_fetch_timestamp=fetch, last_caught_up_timestamp=caught_up)
    if voters is None:
        voters = [replica(2, 118, 1718000000400, 1718000000300), replica(1, 120, 1718000000500, 1718000000500),
                  replica(3, 120, 1718000000450, 1718000000450)]
    partition = PartitionData(partition_index=0, error_code=error, leader_id=leader_id, leader_epoch=7,
                              high_watermark=119, current_voters=voters,
                              observers=[replica(4, 110, 1718000000420, -1)])
    response = DescribeQuorumResponse(error_code=top_error,
                                      topics=[TopicData(topic_name=topic_name, partitions=[partition])])
    if version >= 2:
        partition.error_message = error_message
        response.error_message = None
        response.nodes = [Node(node_id=1, listeners=[Listener(name="CONTROLLER", host="localhost", port=9093)]),
                          Node(node_id=3, listeners=[Listener(name="CONTROLLER", host="::1", port=9095),
                                                     Listener(name="SSL", host="host-3", port=9094)])]
    return response


def cluster_response(request, version, controllers=None, controller_id=1, error=0):
    controllers = controllers or {1: ("127.0.0.1", 9093)}
    return DescribeClusterResponse(error_code=error, endpoint_type=request.endpoint_type, cluster_id=CLUSTER_ID,
                                   controller_id=controller_id,
                                   brokers=[DescribeClusterBroker(broker_id=i, host=h, port=p)
                                            for i, (h, p) in controllers.items()])


def controller(handlers=None, **kwargs) -> FakeNode:
    """A fake active controller: DescribeCluster names itself as node 1 and the active controller."""
    node = FakeNode({}, **kwargs)
    node.handlers = {DESCRIBE_CLUSTER: lambda r, v: cluster_response(r, v, {1: ("127.0.0.1", node.port)}),
                     DESCRIBE_QUORUM: lambda r, v: quorum_response(v), **(handlers or {})}
    return node


def kafkawire(capsys, *argv):
    rc = main(list(argv))
    out, err = capsys.readouterr()
    return rc, out, err


STATUS = (
    "ClusterId:              MkU3OEVBNTcwNTJENDM2Qk\n"
    "LeaderId:               1\n"
    "LeaderEpoch:            7\n"
    "HighWatermark:          119\n"
    "MaxFollowerLag:         2\n"
    "MaxFollowerLagTimeMs:   200\n"
    'CurrentVoters:          [{"id": 2, "directoryId": "AgICAgICAgICAgICAgICAg"}, '
    '{"id": 1, "directoryId": "AQEBAQEBAQEBAQEBAQEBAQ", "endpoints": ["CONTROLLER://localhost:9093"]}, '
    '{"id": 3, "directoryId": "AwMDAwMDAwMDAwMDAwMDAw", "endpoints": ["CONTROLLER://[::1]:9095", "SSL://host-3:9094"]}]\n'
    'CurrentObservers:       [{"id": 4, "directoryId": "BAQEBAQEBAQEBAQEBAQEBA"}]\n'
)

REPLICATION = (
    "NodeId\tDirectoryId           \tLogEndOffset\tLag\tLastFetchTimestamp\tLastCaughtUpTimestamp\tStatus  \t\n"
    "1     \tAQEBAQEBAQEBAQEBAQEBAQ\t120         \t0  \t1718000000500     \t1718000000500        \tLeader  \t\n"
    "2     \tAgICAgICAgICAgICAgICAg\t118         \t2  \t1718000000400     \t1718000000300        \tFollower\t\n"
    "3     \tAwMDAwMDAwMDAwMDAwMDAw\t120         \t0  \t1718000000450     \t1718000000450        \tFollower\t\n"
    "4     \tBAQEBAQEBAQEBAQEBAQEBA\t110         \t10 \t1718000000420     \t-1                   \tObserver\t\n"
)


def test_describe_status_via_controller(capsys):
    with controller() as node:
        rc, out, err = kafkawire(capsys, "metadata-quorum", "--bootstrap-controller", node.address, "describe",
                                 "--status")
    assert (rc, err) == (0, "")
    assert out == STATUS
    # The admin's metadata (DescribeCluster for the controllers), describeCluster, describeMetadataQuorum.
    assert [(r.api_key, r.api_version) for r in node.received] == [(60, 2), (60, 2), (55, 2)]
    assert all(r.request.endpoint_type == 2 for r in node.requests(DESCRIBE_CLUSTER))
    topics = node.requests(DESCRIBE_QUORUM)[0].request.topics
    assert [(t.topic_name, [p.partition_index for p in t.partitions]) for t in topics] == [("__cluster_metadata", [0])]


def test_describe_status_via_broker(capsys):
    with answers_metadata(controller()) as node:
        rc, out, err = kafkawire(capsys, "metadata-quorum", "--bootstrap-server", node.address, "describe", "--status")
    assert (rc, out, err) == (0, STATUS, "")
    # A broker is asked directly: the admin's Metadata, then no controller lookup, DescribeCluster for brokers.
    assert [(r.api_key, r.request.endpoint_type if r.api_key == 60 else None) for r in node.received] == \
        [(3, None), (60, 1), (55, None)]
    assert node.requests(3)[0].request.topics == []


def test_bootstrap_server_without_metadata_is_kafkas_fatal_metadata_error(capsys):
    """A Kafka controller's listener has no Metadata API: Kafka's Admin fails every call with
    "The node does not support METADATA" (no retries until the timeout)."""
    with controller() as node:
        rc, out, err = kafkawire(capsys, "metadata-quorum", "--bootstrap-server", node.address, "--timeout", "20000",
                                 "describe", "--status")
    assert (rc, out) == (1, "")
    assert err == "org.apache.kafka.common.errors.UnsupportedVersionException: The node does not support METADATA\n"
    assert node.received == []


def test_describe_replication(capsys):
    with controller() as node:
        rc, out, err = kafkawire(capsys, "metadata-quorum", "--bootstrap-controller", node.address, "describe",
                                 "--replication")
    assert (rc, out, err) == (0, REPLICATION, "")


def test_describe_replication_human_readable_api():
    with controller() as node:
        rows = metadata_quorum.describe_replication(node.address, human_readable=True, now_ms=1718000001000)
        with pytest.raises(metadata_quorum.ToolError) as drift:
            metadata_quorum.describe_replication(node.address, human_readable=True, now_ms=1718000000450)
    assert rows == [
        ["1", "AQEBAQEBAQEBAQEBAQEBAQ", "120", "0", "500 ms ago", "500 ms ago", "Leader"],
        ["2", "AgICAgICAgICAgICAgICAg", "118", "2", "600 ms ago", "700 ms ago", "Follower"],
        ["3", "AwMDAwMDAwMDAwMDAwMDAw", "120", "0", "550 ms ago", "550 ms ago", "Follower"],
        ["4", "BAQEBAQEBAQEBAQEBAQEBA", "110", "10", "580 ms ago", "-1", "Observer"]]
    assert str(drift.value) == ("Error while computing relative time, possible drift in system clock.\n"
                                "Current timestamp is 1718000000450, last fetch timestamp is 1718000000500")


def test_describe_replication_human_readable_cli(capsys):
    """Against the wall clock: the leader reported its times a second before answering."""
    import time

    def recent(request, version):
        now = int(time.time() * 1000) - 1000
        return quorum_response(version, voters=[ReplicaState(replica_id=1, replica_directory_id=DIR[1], log_end_offset=5,
                                                             last_fetch_timestamp=now, last_caught_up_timestamp=-1)])
    with controller({DESCRIBE_QUORUM: recent}) as node:
        rc, out, err = kafkawire(capsys, "metadata-quorum", "--bootstrap-controller", node.address, "describe",
                                 "--replication", "--human-readable")
    assert (rc, err) == (0, "")
    leader_row = out.splitlines()[1]
    m = re.fullmatch(r"1     \tAQEBAQEBAQEBAQEBAQEBAQ\t5           \t0 *\t(\d+) ms ago *\t-1 +\tLeader  \t", leader_row)
    assert m, leader_row
    assert 1000 <= int(m.group(1)) < 60_000


def test_describe_quorum_v0_has_no_directory_ids_timestamps_or_endpoints(capsys):
    with controller(max_versions={DESCRIBE_QUORUM: 0}) as node:
        rc, status, err = kafkawire(capsys, "metadata-quorum", "--bootstrap-controller", node.address, "describe",
                                    "--status")
        rc2, table, err2 = kafkawire(capsys, "metadata-quorum", "--bootstrap-controller", node.address, "describe",
                                     "--replication")
    assert (rc, err, rc2, err2) == (0, "", 0, "")
    assert {r.api_version for r in node.requests(DESCRIBE_QUORUM)} == {0}
    assert status.splitlines()[5:] == [
        "MaxFollowerLagTimeMs:   -1",      # v0 has no LastCaughtUpTimestamp
        'CurrentVoters:          [{"id": 2}, {"id": 1}, {"id": 3}]',
        'CurrentObservers:       [{"id": 4}]']
    assert table.splitlines()[1] == ("1     \tAAAAAAAAAAAAAAAAAAAAAA\t120         \t0  \t-1                \t"
                                     "-1                   \tLeader  \t")


def test_bootstrap_controller_finds_the_active_controller(capsys):
    """DescribeCluster on a follower names the active controller; the quorum is asked there."""
    with controller() as active:
        def follower_cluster(request, version):
            return cluster_response(request, version, {1: ("127.0.0.1", active.port), 2: ("127.0.0.1", 1)},
                                    controller_id=1)
        with FakeNode({DESCRIBE_CLUSTER: follower_cluster}) as follower:
            rc, out, err = kafkawire(capsys, "metadata-quorum", "--bootstrap-controller", follower.address,
                                     "describe", "--replication")
    assert (rc, out, err) == (0, REPLICATION, "")
    assert [r.api_key for r in follower.received] == [DESCRIBE_CLUSTER]
    assert [r.api_key for r in active.received] == [DESCRIBE_QUORUM]


def test_not_controller_is_retried(capsys):
    answers = iter([DescribeQuorumResponse(error_code=int(Errors.NOT_CONTROLLER))])
    with controller({DESCRIBE_QUORUM: lambda r, v: next(answers, None) or quorum_response(v)}) as node:
        rc, out, err = kafkawire(capsys, "metadata-quorum", "--bootstrap-controller", node.address, "describe",
                                 "--replication")
    assert (rc, out, err) == (0, REPLICATION, "")
    assert len(node.requests(DESCRIBE_QUORUM)) == 2
    assert len(node.requests(DESCRIBE_CLUSTER)) == 2      # the active controller was looked up again


def test_retriable_partition_error_until_the_timeout(capsys):
    with controller({DESCRIBE_QUORUM: lambda r, v: quorum_response(
            v, error=int(Errors.NOT_LEADER_OR_FOLLOWER), error_message="node 1 is not the leader")}) as node:
        rc, out, err = kafkawire(capsys, "metadata-quorum", "--bootstrap-controller", node.address, "--timeout",
                                 "600", "describe", "--replication")
    assert (rc, out) == (1, "")
    assert err.count("\n") == 1
    # Kafka's Call.toString, then handleTimeoutFailure's " timed out at NOW after N attempt(s)".
    assert re.match(r"org\.apache\.kafka\.common\.errors\.TimeoutException: Call\(callName=describeMetadataQuorum, "
                    r"deadlineMs=\d+, tries=(\d+), nextAllowedTryMs=\d+\) timed out at \d+ after \1 attempt\(s\)", err), err
    assert err.rstrip().endswith("(last error: org.apache.kafka.common.errors.NotLeaderOrFollowerException: "
                                 "node 1 is not the leader)")
    assert len(node.requests(DESCRIBE_QUORUM)) >= 2


@pytest.mark.parametrize("response, message", [
    (lambda v: quorum_response(v, top_error=int(Errors.CLUSTER_AUTHORIZATION_FAILED)),
     "org.apache.kafka.common.errors.ClusterAuthorizationException: Cluster authorization failed."),
    (lambda v: quorum_response(v, topic_name="other"),
     "org.apache.kafka.common.errors.UnknownServerException: DescribeMetadataQuorum received a topic with name "
     "other when __cluster_metadata was expected"),
    (lambda v: DescribeQuorumResponse(topics=[]),
     "org.apache.kafka.common.errors.UnknownServerException: DescribeMetadataQuorum received 0 topics when 1 was "
     "expected"),
    (lambda v: quorum_response(v, error=int(Errors.INVALID_REQUEST), error_message="bad request"),
     "org.apache.kafka.common.errors.InvalidRequestException: bad request"),
])
def test_describe_errors(capsys, response, message):
    with controller({DESCRIBE_QUORUM: lambda r, v: response(v)}) as node:
        rc, out, err = kafkawire(capsys, "metadata-quorum", "--bootstrap-controller", node.address, "describe",
                                 "--status")
    assert (rc, out, err) == (1, "", message + "\n")
    assert len(node.requests(DESCRIBE_QUORUM)) == 1         # not retriable: asked once


def test_no_leader_among_the_voters(capsys):
    with controller({DESCRIBE_QUORUM: lambda r, v: quorum_response(v, leader_id=-1)}) as node:
        rc, out, err = kafkawire(capsys, "metadata-quorum", "--bootstrap-controller", node.address, "describe",
                                 "--status")
    assert (rc, out) == (1, "")
    assert err == "No value present: the leader -1 is not one of the current voters (2, 1, 3)\n"


def test_describe_cluster_error(capsys):
    with FakeNode({DESCRIBE_CLUSTER: lambda r, v: cluster_response(
            r, v, error=int(Errors.MISMATCHED_ENDPOINT_TYPE))}) as node:
        rc, out, err = kafkawire(capsys, "metadata-quorum", "--bootstrap-controller", node.address, "describe",
                                 "--status")
    assert (rc, out, err) == (1, "", "org.apache.kafka.common.errors.MismatchedEndpointTypeException: The request "
                                     "was sent to an endpoint of the wrong type.\n")


@pytest.mark.parametrize("flags, message", [
    (["--status", "--replication"], "Only one of --status or --replication should be specified with describe "
                                    "sub-command"),
    ([], "One of --status or --replication must be specified with describe sub-command"),
    (["--status", "--human-readable"], "The option --human-readable is only supported along with --replication"),
])
def test_describe_flag_rules(capsys, flags, message):
    with controller() as node:
        rc, out, err = kafkawire(capsys, "metadata-quorum", "--bootstrap-controller", node.address, "describe", *flags)
    assert (rc, out, err) == (1, "", message + "\n")


# --- add-controller --------------------------------------------------------------------------------

def controller_config(tmp_path, *, meta: str | None = None, **overrides) -> str:
    """A controller's server.properties and its metadata directory's meta.properties."""
    meta_dir = tmp_path / "meta"
    meta_dir.mkdir(exist_ok=True)
    if meta is None:
        meta = ("#\n#Mon Jun 10 06:13:20 UTC 2024\ncluster.id=MkU3OEVBNTcwNTJENDM2Qk\n"
                "directory.id=BQUFBQUFBQUFBQUFBQUFBQ\nnode.id=3\nversion=1\n")
    if meta:
        (meta_dir / "meta.properties").write_text(meta)
    props = {"process.roles": "controller", "node.id": "3", "controller.listener.names": "CONTROLLER",
             "listeners": "CONTROLLER://:9095", "metadata.log.dir": str(meta_dir),
             "log.dirs": str(tmp_path / "logs"), "controller.quorum.bootstrap.servers": "localhost:9093"}
    props.update(overrides)
    path = tmp_path / "controller.properties"
    path.write_text("".join(f"{k}={v}\n" for k, v in props.items() if v is not None))
    return str(path)


def test_add_controller(capsys, tmp_path):
    config = controller_config(tmp_path)
    with controller({ADD_VOTER: lambda r, v: AddRaftVoterResponse(error_message=None)}) as node:
        rc, out, err = kafkawire(capsys, "metadata-quorum", "--bootstrap-controller", node.address, "--timeout", "5000",
                                 "--command-config", config, "add-controller")
    assert (rc, err) == (0, "")
    assert out == "Added controller 3 with directory id BQUFBQUFBQUFBQUFBQUFBQ and endpoints: CONTROLLER://localhost:9095\n"
    [added] = node.requests(ADD_VOTER)
    request = added.request
    assert added.api_version == 1
    assert (request.cluster_id, request.voter_id, request.voter_directory_id, request.ack_when_committed) == \
        (None, 3, DIR[5], True)
    assert [(lst.name, lst.host, lst.port) for lst in request.listeners] == [("CONTROLLER", "localhost", 9095)]
    assert 0 < request.timeout_ms <= 5000


def test_add_controller_dry_run_endpoints(capsys, tmp_path):
    """advertised.listeners over listeners, in controller.listener.names order; names upper-cased; IPv6 in brackets."""
    config = controller_config(tmp_path, **{
        "controller.listener.names": "CONTROLLER,controller2",
        "listeners": "CONTROLLER://:9095,CONTROLLER2://[::1]:9096",
        "advertised.listeners": "CONTROLLER://ctrl-3.example:19095"})
    with controller() as node:
        rc, out, err = kafkawire(capsys, "metadata-quorum", "--bootstrap-controller", node.address,
                                 "--command-config", config, "add-controller", "--dry-run")
    assert (rc, err) == (0, "")
    assert out == ("DRY RUN of adding controller 3 with directory id BQUFBQUFBQUFBQUFBQUFBQ and endpoints: "
                   "CONTROLLER://ctrl-3.example:19095, CONTROLLER2://[::1]:9096\n")
    assert node.received == []


@pytest.mark.parametrize("error_message, printed", [
    ("voter 3 is already a voter", "voter 3 is already a voter"),
    (None, "The voter is already part of the set of voters."),      # Errors.exception(null): the default message
])
def test_add_controller_error(capsys, tmp_path, error_message, printed):
    config = controller_config(tmp_path)
    with controller({ADD_VOTER: lambda r, v: AddRaftVoterResponse(error_code=int(Errors.DUPLICATE_VOTER),
                                                                  error_message=error_message)}) as node:
        rc, out, err = kafkawire(capsys, "metadata-quorum", "--bootstrap-controller", node.address,
                                 "--command-config", config, "add-controller")
    assert (rc, out) == (1, "")
    assert err == f"org.apache.kafka.common.errors.DuplicateVoterException: {printed}\n"
    assert len(node.requests(ADD_VOTER)) == 1


def test_add_controller_not_controller_retried(capsys, tmp_path):
    answers = iter([AddRaftVoterResponse(error_code=int(Errors.NOT_CONTROLLER), error_message=None)])
    config = controller_config(tmp_path)
    with controller({ADD_VOTER: lambda r, v: next(answers, AddRaftVoterResponse(error_message=None))}) as node:
        rc, out, err = kafkawire(capsys, "metadata-quorum", "--bootstrap-controller", node.address,
                                 "--command-config", config, "add-controller")
    assert (rc, err) == (0, "")
    assert len(node.requests(ADD_VOTER)) == 2


@pytest.mark.parametrize("overrides, meta, message", [
    ({"node.id": None}, None, "node.id not found in configuration file. Is this a valid controller configuration file?"),
    ({"node.id": "-1"}, None, "node.id was negative in configuration file. Is this a valid controller configuration file?"),
    ({"node.id": "three"}, None, 'For input string: "three"'),
    ({"process.roles": "broker"}, None,
     "process.roles did not contain 'controller' in configuration file. Is this a valid controller configuration file?"),
    ({"metadata.log.dir": None, "log.dirs": None}, None,
     "Neither metadata.log.dir nor log.dirs were found. Is this a valid controller configuration file?"),
    ({}, "", "Unable to read meta.properties from {meta}"),
    ({}, "cluster.id=MkU3OEVBNTcwNTJENDM2Qk\nnode.id=3\nversion=1\n", "No directory id found in {meta}"),
    ({"controller.listener.names": None}, None,
     "controller.listener.names was not found. Is this a valid controller configuration file?"),
    ({"controller.listener.names": "CONTROLLER,ctl"}, None, "Cannot find information about controller listener name: CTL"),
])
def test_add_controller_config_refusals(capsys, tmp_path, overrides, meta, message):
    config = controller_config(tmp_path, meta=meta, **overrides)
    rc, out, err = kafkawire(capsys, "metadata-quorum", "--bootstrap-controller", f"127.0.0.1:{closed_port()}",
                             "--command-config", config, "add-controller", "--dry-run")
    assert (rc, out, err) == (1, "", message.format(meta=tmp_path / "meta") + "\n")


def test_add_controller_uses_the_first_log_dir_without_metadata_log_dir(capsys, tmp_path):
    config = controller_config(tmp_path, **{"metadata.log.dir": None,
                                            "log.dirs": f"{tmp_path / 'meta'},{tmp_path / 'other'}"})
    rc, out, err = kafkawire(capsys, "metadata-quorum", "--bootstrap-controller", f"127.0.0.1:{closed_port()}",
                             "--command-config", config, "add-controller", "--dry-run")
    assert (rc, err) == (0, "")
    assert "with directory id BQUFBQUFBQUFBQUFBQUFBQ" in out


def test_add_controller_needs_its_config(capsys, tmp_path):
    rc, out, err = kafkawire(capsys, "metadata-quorum", "--bootstrap-controller", "127.0.0.1:9093", "add-controller")
    assert (rc, out, err) == (1, "", "You must supply the configuration file of the controller you are adding when "
                                     "using add-controller.\n")
    missing = tmp_path / "nope.properties"
    rc, out, err = kafkawire(capsys, "metadata-quorum", "--bootstrap-controller", "127.0.0.1:9093",
                             "--command-config", str(missing), "add-controller")
    assert (rc, out, err) == (1, "", f"Properties file {missing} does not exist.\n")


# --- remove-controller --------------------------------------------------------------------------------

def test_remove_controller(capsys):
    with controller({REMOVE_VOTER: lambda r, v: RemoveRaftVoterResponse(error_message=None)}) as node:
        rc, out, err = kafkawire(capsys, "metadata-quorum", "--bootstrap-controller", node.address,
                                 "remove-controller", "--controller-id", "2", "--controller-directory-id",
                                 "AgICAgICAgICAgICAgICAg")
    assert (rc, out, err) == (0, "Removed  KRaft controller 2 with directory id AgICAgICAgICAgICAgICAg\n", "")
    [removed] = node.requests(REMOVE_VOTER)
    assert (removed.api_version, removed.request.cluster_id, removed.request.voter_id,
            removed.request.voter_directory_id) == (0, None, 2, DIR[2])


def test_remove_controller_dry_run_sends_nothing(capsys):
    with controller() as node:
        rc, out, err = kafkawire(capsys, "metadata-quorum", "--bootstrap-controller", node.address,
                                 "remove-controller", "-i", "2", "-d", "AgICAgICAgICAgICAgICAg", "--dry-run")
    assert (rc, out, err) == (0, "DRY RUN of removing  KRaft controller 2 with directory id AgICAgICAgICAgICAgICAg\n", "")
    assert node.received == []


def test_remove_controller_error(capsys):
    with controller({REMOVE_VOTER: lambda r, v: RemoveRaftVoterResponse(error_code=int(Errors.VOTER_NOT_FOUND),
                                                                        error_message=None)}) as node:
        rc, out, err = kafkawire(capsys, "metadata-quorum", "--bootstrap-controller", node.address,
                                 "remove-controller", "-i", "9", "-d", "AgICAgICAgICAgICAgICAg")
    assert (rc, out, err) == (1, "", "org.apache.kafka.common.errors.VoterNotFoundException: The voter is not part "
                                     "of the set of voters.\n")


@pytest.mark.parametrize("args, message", [
    (["-i", "-1", "-d", "AgICAgICAgICAgICAgICAg"], "Invalid negative --controller-id: -1"),
    (["-i", "2", "-d", "abc"], "Failed to parse --controller-directory-id: Input string `abc` decoded as 2 bytes, "
                               "which is not equal to the expected 16 bytes of a base64-encoded UUID"),
    (["-i", "2", "-d", "a.b"], "Failed to parse --controller-directory-id: Illegal base64 character 2e"),
])
def test_remove_controller_refusals(capsys, args, message):
    rc, out, err = kafkawire(capsys, "metadata-quorum", "--bootstrap-controller", f"127.0.0.1:{closed_port()}",
                             "remove-controller", *args)
    assert (rc, out, err) == (1, "", message + "\n")


# Uuid.fromString through java.util.Base64's URL decoder; messages as a Java 17 run of
# `Uuid.fromString(s)` / `Base64.getUrlDecoder().decode(s)` printed them.
@pytest.mark.parametrize("text, outcome", [
    ("AAAAAAAAAAAAAAAAAAAAAA", uuid.UUID(int=0)),
    ("AAAAAAAAAAAAAAAAAAAAAA==", uuid.UUID(int=0)),
    ("AAECAwQFBgcICQoLDA0ODw", uuid.UUID(bytes=bytes(range(16)))),
    ("AAAA", "Input string `AAAA` decoded as 3 bytes, which is not equal to the expected 16 bytes of a base64-encoded UUID"),
    ("AAAAAAAAAAAAAAAAAAAAAAA", "Input string `AAAAAAAAAAAAAAAAAAAAAAA` decoded as 17 bytes, which is not equal to the "
                                "expected 16 bytes of a base64-encoded UUID"),
    ("!!!!", "Illegal base64 character 21"),
    ("AAAAA", "Last unit does not have enough valid bits"),
    ("AAAAAAAAAAAAAAAAAAAAAA=", "Input byte array has wrong 4-byte ending unit"),
    ("AAAAAAAAAAAAAAAAAAAAA=", "Last unit does not have enough valid bits"),
    ("AA=A", "Input byte array has wrong 4-byte ending unit"),
    ("é", "Input byte[] should at least have 2 bytes for base64 bytes"),
    ("A" * 25, "Input string with prefix `AAAAAAAAAAAAAAAAAAAAAAAA` is too long to be decoded as a base64 UUID"),
])
def test_kafka_uuid_from_string(text, outcome):
    if isinstance(outcome, uuid.UUID):
        assert metadata_quorum.kafka_uuid_from_string(text) == outcome
    else:
        with pytest.raises(ValueError) as exc:
            metadata_quorum.kafka_uuid_from_string(text)
        assert str(exc.value) == outcome


# --- connections, timeouts, flags -----------------------------------------------------------------

def _attempt_warnings(err: str) -> list[str]:
    """The WARN lines of failed attempts (issue 20, item 6), in Kafka's tools-log4j layout."""
    lines = err.splitlines()[:-1]
    assert lines and all(re.fullmatch(r"\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}\] WARN .* \(kafkawire\.admin\)", line)
                         for line in lines), err
    assert all("--timeout MS" in line for line in lines), err
    return lines


def test_refused_connection_says_each_attempt_then_one_error_line(capsys):
    port = closed_port()
    rc, out, err = kafkawire(capsys, "metadata-quorum", "--bootstrap-controller", f"127.0.0.1:{port}",
                             "--timeout", "300", "describe", "--status")
    assert (rc, out) == (1, "")
    warnings = _attempt_warnings(err)
    assert all(f"127.0.0.1:{port}" in line and "refused" in line for line in warnings)
    assert "listNodes: attempt 1 failed: " in warnings[0]
    last = err.splitlines()[-1]
    assert last.startswith("org.apache.kafka.common.errors.TimeoutException: Timed out waiting for a node assignment. "
                           "Call: listNodes (last error: ")
    assert f"127.0.0.1:{port}" in last and "refused" in last


def test_silent_peer_times_out(capsys, tmp_path):
    with SilentPeer() as peer:
        # the one request is cut by the call's deadline: no attempt failed, one line
        rc, out, err = kafkawire(capsys, "metadata-quorum", "--bootstrap-server", peer.address, "--timeout", "400",
                                 "describe", "--replication")
        assert (rc, out) == (1, "")
        assert err == "org.apache.kafka.common.errors.TimeoutException: Timed out waiting for a node assignment. " \
                      "Call: describeMetadataQuorum\n"
        # requests that time out before the call does are failed attempts, each said (issue 20, item 6)
        config = tmp_path / "short-requests.properties"
        config.write_text("request.timeout.ms=250\n")
        rc, out, err = kafkawire(capsys, "metadata-quorum", "--bootstrap-server", peer.address, "--command-config",
                                 str(config), "--timeout", "1500", "describe", "--replication")
    assert (rc, out) == (1, "")
    warnings = _attempt_warnings(err)
    assert len(warnings) >= 2 and all("timed out" in line for line in warnings), err
    assert err.splitlines()[-1].startswith("org.apache.kafka.common.errors.TimeoutException: Timed out waiting for a "
                                           "node assignment. Call: describeMetadataQuorum")


@pytest.mark.parametrize("bootstrap, message", [
    ("127.0.0.1", "Invalid url in bootstrap.controllers: 127.0.0.1"),
    ("host.invalid:9093", "No resolvable bootstrap urls given in bootstrap.controllers"),
    (" , ", "No resolvable bootstrap urls given in bootstrap.controllers"),
])
def test_bad_bootstrap(capsys, bootstrap, message):
    rc, out, err = kafkawire(capsys, "metadata-quorum", "--bootstrap-controller", bootstrap, "describe", "--status")
    assert (rc, out, err) == (1, "", message + "\n")


@pytest.mark.parametrize("argv, complaint", [
    (["describe", "--status"], "one of the arguments --bootstrap-server --bootstrap-controller is required"),
    (["--bootstrap-server", "a:1", "--bootstrap-controller", "b:1", "describe"], "not allowed with argument"),
    (["--bootstrap-server", "a:1", "remove-controller", "-i", "x", "-d", "y"], "invalid int value: 'x'"),
    (["--bootstrap-server", "a:1", "remove-controller", "-i", "1"], "the following arguments are required"),
    (["--bootstrap-server", "a:1"], "the following arguments are required: COMMAND"),
])
def test_bad_flags(capsys, argv, complaint):
    with pytest.raises(SystemExit) as exit_:
        main(["metadata-quorum", *argv])
    out, err = capsys.readouterr()
    assert exit_.value.code != 0 and out == ""
    assert complaint in err and "Traceback" not in err


def test_bad_command_config_value(capsys, tmp_path):
    config = tmp_path / "admin.properties"
    config.write_text("request.timeout.ms=soon\n")
    rc, out, err = kafkawire(capsys, "metadata-quorum", "--bootstrap-controller", "127.0.0.1:9093",
                             "--command-config", str(config), "describe", "--status")
    assert (rc, out, err) == (1, "", "Invalid value soon for configuration request.timeout.ms: Not a number of type INT\n")
    config.write_text("security.protocol=SASL_SSL\n")
    rc, out, err = kafkawire(capsys, "metadata-quorum", "--bootstrap-controller", "127.0.0.1:9093",
                             "--command-config", str(config), "describe", "--status")
    # Kafka's default sasl.mechanism is GSSAPI, whose Krb5LoginModule entry is missing: refused naming the key
    assert (rc, out, err) == (1, "", "--command-config: sasl.jaas.config: (unset) is required with "
                                     "security.protocol=SASL_SSL\n")
    config.write_text("security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\n")
    rc, out, err = kafkawire(capsys, "metadata-quorum", "--bootstrap-controller", "127.0.0.1:9093",
                             "--command-config", str(config), "describe", "--status")
    assert (rc, out, err) == (1, "", "--command-config: sasl.jaas.config: (unset) is required with "
                                     "security.protocol=SASL_PLAINTEXT\n")


def test_exception_class_names_match_kafka():
    """Every error code's Java exception class, against Kafka's Errors (errors.tsv of Kafka 4.3.1's
    jar, tests/kafka_schemas.py, and trunk's, rebuilt from it and tests/data/kafka-trunk)."""
    tables = kafka_schemas.errors_tables()
    if not tables:
        unavailable(kafka_schemas.why())
    paths = [*tables.values(), kafka_trunk_record.references("record")[0] / "errors.tsv"]
    rows = [row for path in paths for row in csv.DictReader(open(path, encoding="utf-8"), delimiter="\t")]
    checked = 0
    for row in rows:
        if row["name"] == "NONE":
            continue
        error = Errors.for_code(int(row["code"]))
        if error.name != row["name"]:
            continue            # a code this build of kafkawire does not know
        assert exception_class_name(error) == row["exception_class"], row["name"]
        checked += 1
    assert checked > 100
    assert str(KafkaApiError(Errors.VOTER_NOT_FOUND, "gone")) == \
        "org.apache.kafka.common.errors.VoterNotFoundException: gone"
