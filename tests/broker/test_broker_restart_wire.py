"""What only a real restart of a `kafkawire server-start` process shows (a one-node combined node,
tests/broker/test_combined_node.py's, on free ports; killed by pid at the end). In process,
tests/broker/test_stray_logs.py sets stray logs aside on a stand-in image and
tests/broker/test_request_processing_gate.py gates requests against a stand-in controller; here the
image is the one the restarted process loads from its own metadata log, and the controller is real:

* the start's stray scan runs on the caught-up image, not on the empty one the process starts
  with: the logs the metadata assigns here are opened and serve their records, and a partition
  directory it does not assign (a topic id it does not know, a partition index the topic lacks)
  is renamed ``<topic>-<partition>.<uuid>-stray`` and kept, as Kafka's LogManager.loadLog does;
* after kill -9 the restarted broker accepts no connection on its fixed-port listener while it is
  fenced, and its first answer comes from an image in which it is unfenced. The fenced window is
  the killed incarnation's session: the restarted controller (the same process) gives every
  registered broker a fresh session when it becomes active, as Kafka's BrokerHeartbeatManager
  does, and refuses the new incarnation's registration until that session has expired.
"""
from __future__ import annotations

import os
import re
import shutil
import socket
import time
import uuid

import pytest

from kafkawire.messages.metadata_request import MetadataRequest, MetadataRequestTopic
from kafkawire.protocol.error_codes import Errors
from kafkawire.records import iter_batches
from kafkawire.records.builder import build_batch
from kafkawire.storage.state_files import CLEAN_SHUTDOWN_FILE, read_clean_shutdown_epoch, write_partition_metadata

from .test_combined_node import WAIT_S, combined_node
from .wire import call

STRAY = re.compile(r"^(.+-\d+)\.[0-9a-f]{32}-stray$")


@pytest.fixture(scope="module")
def node(tmp_path_factory):
    # A longer broker session than test_combined_node's: after kill -9 the restarted incarnation
    # waits about this long (from the controller's activation) for the controller to let the
    # killed one go, the fenced window under test (probed every 20 ms).
    # One broker: __consumer_offsets (the share-group test's coordinator) of one replica, one partition.
    # __share_group_state (the share-group test's share coordinator) likewise.
    with combined_node(tmp_path_factory.mktemp("restart"), broker_session_timeout_ms=2500,
                       offsets_topic_replication_factor=1, offsets_topic_num_partitions=1,
                       share_coordinator_state_topic_replication_factor=1, share_coordinator_state_topic_min_isr=1,
                       share_coordinator_state_topic_num_partitions=1) as n:
        yield n


def values(node, topic: str) -> list[bytes]:
    data = node.fetch(topic, 0)
    assert data.error_code == Errors.NONE
    return [bytes(r.value) for b in iter_batches(data.records) for r in b]


def strays(data_dir) -> dict[str, str]:
    """original name -> its -stray directory."""
    return {m.group(1): m.group(0) for m in map(STRAY.match, os.listdir(data_dir)) if m}


def test_after_a_restart_logs_the_metadata_does_not_assign_are_stray_and_the_assigned_ones_serve(node):
    node.create_topic("kept")
    for value in (b"a", b"b"):
        assert node.produce("kept", build_batch([(b"k", value)])).error_code == Errors.NONE
    node.quorum.stop(1)                                         # SIGTERM: a clean stop
    # its marker, as Kafka's LogManager leaves it, with the broker epoch the next start registers
    epoch = read_clean_shutdown_epoch(node.data_dir)
    assert isinstance(epoch, int) and epoch >= 0
    log_start = os.path.getsize(node.quorum.log_path(1))
    kept = os.path.join(node.data_dir, "kept-0")
    shutil.copytree(kept, os.path.join(node.data_dir, "kept-7"))     # an index the topic lacks
    ghost = os.path.join(node.data_dir, "ghost-0")
    shutil.copytree(kept, ghost)                                       # a topic id the metadata does not know
    write_partition_metadata(os.path.join(ghost, "partition.metadata"), uuid.uuid4())
    assert strays(node.data_dir) == {}
    node.quorum.start(1)
    node.wait_unfenced()
    assert not os.path.exists(os.path.join(node.data_dir, CLEAN_SHUTDOWN_FILE))     # read, then gone
    with open(node.quorum.log_path(1), errors="replace") as f:
        f.seek(log_start)
        assert f"(previous broker epoch {epoch})" in f.read()
    node.quorum.wait_until(lambda: sorted(strays(node.data_dir)) == ["ghost-0", "kept-7"], WAIT_S,
                           "the unassigned logs to be renamed -stray")
    assert os.path.isdir(kept) and not os.path.exists(ghost)
    node.quorum.wait_until(lambda: node.leaders("kept") == [1], WAIT_S, "kept to have its leader back")
    assert values(node, "kept") == [b"a", b"b"]
    kept_7 = os.path.join(node.data_dir, strays(node.data_dir)["kept-7"])
    assert "00000000000000000000.log" in os.listdir(kept_7)             # kept, not deleted


def refused(address) -> bool:
    """Whether a TCP connection to ``address`` is refused (False: it was accepted)."""
    try:
        socket.create_connection(address, timeout=2).close()
    except ConnectionRefusedError:
        return True
    return False


def test_a_broker_restarted_after_kill_9_accepts_no_connection_until_it_is_unfenced(node):
    """The process is up (its start-up line "registering; its listeners ... serve requests once
    ..." is in its log) while its broker is still fenced: connections to the broker port are
    refused then; the first one accepted gets a Metadata answer that lists this broker (only
    unfenced brokers are listed) and its partition led here."""
    node.create_topic("gated")
    log_path = node.quorum.log_path(1)
    node.quorum.kill(1)
    assert read_clean_shutdown_epoch(node.data_dir) is None        # kill -9 leaves no marker
    log_start = os.path.getsize(log_path)

    def this_run() -> str:
        with open(log_path, errors="replace") as f:
            f.seek(log_start)
            return f.read()
    node.quorum.start(1)
    refused_while_fenced = 0
    deadline = time.monotonic() + WAIT_S
    while refused(node.broker):
        assert time.monotonic() < deadline, f"the broker did not open its port in {WAIT_S} s"
        log = this_run()
        # read after the refusal: a start-up line without RUNNING means the broker was fenced then
        if "serve requests once it has caught up" in log and "-> RUNNING" not in log:
            refused_while_fenced += 1
        time.sleep(0.02)
    metadata = call(node.broker, MetadataRequest(topics=[MetadataRequestTopic(name="gated")],
                                                 allow_auto_topic_creation=False), 12)
    assert [b.node_id for b in metadata.brokers] == [1]
    assert [(p.error_code, p.leader_id) for t in metadata.topics for p in t.partitions] == [(Errors.NONE, 1)]
    assert refused_while_fenced > 0, this_run()
    assert "-> RUNNING" in this_run()
    assert "(previous broker epoch -1)" in this_run()             # an unclean stop registers no epoch


def test_a_restarted_leader_delivers_no_acknowledged_record_again_and_keeps_delivery_counts(node):
    """Share groups (KIP-932): the leader writes each share-partition's state to the share
    coordinator (``__share_group_state``) before it answers an acknowledgement, and reads it back
    when it serves the share-partition again: after kill -9 the acknowledged records are not
    delivered again, a released one is with its delivery count kept (2: the second time), and one
    acquired only is delivered again with count 1 (an acquisition is not written, as Kafka's)."""
    from kafkawire.broker.share_partition import ACCEPT, RELEASE
    from kafkawire.messages.share_fetch_request import AcknowledgementBatch
    from .test_share_groups_wire import (GROUP, assigned_once_initialized, delivered, heartbeat, share_fetch,
                                         wait_for_coordinator)
    node.create_topic("shared")
    broker = node.broker
    topic_id = call(broker, MetadataRequest(topics=[MetadataRequestTopic(name="shared")]), 12).topics[0].topic_id
    wait_for_coordinator(broker)
    member = str(uuid.uuid4())
    assert heartbeat(broker, member, 0, ["shared"]).error_code == Errors.NONE
    assert assigned_once_initialized(broker, member, 1).assignment.topic_partitions[0].partitions == [0]
    assert share_fetch(broker, member, 0, topic_id, [0]).error_code == Errors.NONE       # starts at 0
    node.produce("shared", build_batch([(None, b"v%d" % i, (), 0) for i in range(5)]))
    assert delivered(share_fetch(broker, member, 1, topic_id, [], wait_ms=5_000))[0][1] == [(0, 4, 1)]
    acked = share_fetch(broker, member, 2, topic_id, [0], acks={0: [
        AcknowledgementBatch(first_offset=0, last_offset=3, acknowledge_types=[ACCEPT, ACCEPT, ACCEPT, RELEASE])]})
    assert acked.responses[0].partitions[0].acknowledge_error_code == Errors.NONE      # written: no wait
    node.quorum.kill(1)
    node.quorum.start(1)
    deadline = time.monotonic() + WAIT_S
    while refused(broker):
        assert time.monotonic() < deadline, f"the broker did not open its port in {WAIT_S} s"
        time.sleep(0.02)
    wait_for_coordinator(broker)
    rejoined = heartbeat(broker, member, 0, ["shared"])           # the member rejoins, assigned at once:
    assert rejoined.error_code == Errors.NONE                      # the coordinator replayed what it initialized
    assert [(t.topic_id, t.partitions) for t in rejoined.assignment.topic_partitions] == [(topic_id, [0])]
    resumed = share_fetch(broker, member, 0, topic_id, [0], wait_ms=5_000)
    assert delivered(resumed)[0] == ([b"v3", b"v4"], [(3, 3, 2), (4, 4, 1)])
