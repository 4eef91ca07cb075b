"""Real `kafkawire server-start` processes on 127.0.0.1: election, kill -9, restart, graceful stop.

Every wait is bounded (LocalQuorum raises with the node's log tail on timeout or early exit).
"""
import os
import re

import pytest

from kafkawire.net.config import ConfigError
from kafkawire.raft.node.local_quorum import LocalQuorum
from kafkawire.tools.server_start import load_config
from tests.nemesis.checks import batches_below


@pytest.fixture
def quorum(tmp_path):
    with LocalQuorum(tmp_path, voters=3).started("initial-controllers", graceful=False) as q:
        yield q


def test_kill_9_of_the_leader_elects_another_and_loses_nothing_committed(quorum):
    first = quorum.wait_for_leader(120)
    old = first.leader_id
    committed = first.high_watermark
    assert committed > 0, "the leader's start-of-epoch records commit"
    before = batches_below(quorum.metadata_partition_dir(old), committed)
    assert before

    quorum.kill(old)
    second = quorum.wait_for_leader(120, exclude=(old,), min_epoch=first.leader_epoch + 1)
    assert second.leader_id != old and second.leader_epoch > first.leader_epoch
    assert second.high_watermark >= committed
    assert batches_below(quorum.metadata_partition_dir(second.leader_id), committed) == before

    quorum.start(old)

    def caught_up():
        view = quorum.describe(second.leader_id)
        ends = {r.replica_id: r.log_end_offset for r in view.voters}
        return view if ends[old] >= view.high_watermark > committed else None

    view = quorum.wait_until(caught_up, 30, f"node {old} to catch up after its restart")
    leader_log = batches_below(quorum.metadata_partition_dir(view.leader_id), view.high_watermark)
    assert batches_below(quorum.metadata_partition_dir(old), view.high_watermark) == leader_log
    assert leader_log[:len(before)] == before


def test_sigterm_of_the_leader_resigns_and_a_new_leader_follows(quorum):
    first = quorum.wait_for_leader(120)
    old = first.leader_id
    assert quorum.stop(old) == 0
    with open(quorum.log_path(old)) as f:
        log = f.read()
    assert f"node {old}: Leader(e={first.leader_epoch}) -> Resigned(e={first.leader_epoch})" in log
    second = quorum.wait_for_leader(120, exclude=(old,), min_epoch=first.leader_epoch + 1)
    assert second.leader_id != old


def test_a_node_refuses_an_unformatted_directory(tmp_path):
    q = LocalQuorum(tmp_path, voters=1)
    q.write_config(1)
    proc = q.start(1)
    assert proc.wait(timeout=60) == 1
    assert "no meta.properties in" in q.log_tail(1)


def test_a_broker_only_node_whose_id_is_a_voter_is_refused_by_server_start_with_kafkas_message(tmp_path):
    """process.roles=broker runs (kafkawire.tools.broker_node), but as KafkaConfig checks, not with
    the node's id among controller.quorum.voters: server-start's config load refuses it."""
    q = LocalQuorum(tmp_path, voters=1)
    path = q.write_config(1, process_roles="broker", listeners=f"PLAINTEXT://127.0.0.1:{q.ports[1] + 1}",
                          listener_security_protocol_map="PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
                          controller_quorum_voters=f"1@127.0.0.1:{q.ports[1]}", controller_quorum_bootstrap_servers="")
    with pytest.raises(ConfigError, match=re.escape(
            "If process.roles contains just the 'broker' role, the node id 1 must not be included in the set of "
            "voters controller.quorum.voters=Set(1)")):
        load_config(path, [])


def test_unknown_keys_are_warned_once_each(tmp_path):
    q = LocalQuorum(tmp_path, voters=1, properties={"num.recovery.threads.per.data.dir": "3"})
    q.write_config(1)
    proc = q.start(1)               # unformatted: it warns, then stops
    assert proc.wait(timeout=60) == 1
    lines = [l for l in q.log_tail(1, 200).splitlines() if "num.recovery.threads.per.data.dir" in l]
    assert lines == [l for l in lines if "The configuration 'num.recovery.threads.per.data.dir' was supplied but isn't a known config."
                     in l]
    assert len(lines) == 1


def test_snapshots_are_written_and_a_restart_loads_the_latest(tmp_path):
    q = LocalQuorum(tmp_path, voters=1, properties={"metadata.log.max.record.bytes.between.snapshots": "1024"})
    q.format(mode="standalone")
    q.start_all()
    try:
        q.wait_for_leader(120)
        directory = q.metadata_partition_dir(1)

        def snapshots():
            return sorted(n for n in os.listdir(directory) if n.endswith(".checkpoint") and not n.startswith("0" * 20 + "-"))
        written = q.wait_until(snapshots, 30, "a snapshot after 1 KiB of records")
        assert q.stop(1) == 0
        from kafkawire.metadata.replay import replay_snapshot
        image = replay_snapshot(os.path.join(directory, written[-1])).image
        assert image.metadata_version is not None and 1 in image.controllers
        q.start(1)
        q.wait_for_leader(120)
        q.wait_until(lambda: "loaded snapshot" in q.log_tail(1, 200) and
                     written[-1].split("-")[0].lstrip("0") in q.log_tail(1, 200), 30, "the restart to load it")
    finally:
        q.stop_all()


def test_a_follower_behind_the_retained_log_catches_up_through_fetch_snapshot(tmp_path):
    """Retention (metadata.max.retention.bytes) deletes the segments a snapshot covers; a
    follower that was down meanwhile must install the leader's snapshot (FetchSnapshot)."""
    q = LocalQuorum(tmp_path, voters=3, properties={
        "metadata.log.segment.bytes": str(8 * 1024 * 1024),            # Kafka's minimum
        "metadata.log.max.record.bytes.between.snapshots": str(1024 * 1024),
        "metadata.max.retention.bytes": "1"},
        server_args=lambda c: ["test-raft-server", "--config", c, "--throughput", "8000", "--record-size", "1000",
                               "--log-level", "INFO"])
    q.format()
    q.start_all()
    try:
        leader = q.wait_for_leader(120).leader_id
        behind = next(i for i in q.node_ids if i != leader)
        q.kill(behind)
        first_segment = os.path.join(q.metadata_partition_dir(leader), "0" * 20 + ".log")
        q.wait_until(lambda: not os.path.exists(first_segment), 90,
                     "the leader to delete its first segment after a snapshot")

        q.start(behind)

        def caught_up():
            view = q.describe(leader)
            ends = {r.replica_id: r.log_end_offset for r in view.voters}
            installed = f"node {behind}: installed snapshot" in q.log_tail(behind, 400)
            return installed and ends[behind] >= view.high_watermark - 2000
        q.wait_until(caught_up, 90, f"node {behind} to install a snapshot and catch up")
        snapshots = [n for n in os.listdir(q.metadata_partition_dir(behind))
                     if n.endswith(".checkpoint") and not n.startswith("0" * 20 + "-")]
        assert snapshots, "the follower holds the snapshot it fetched"
    finally:
        q.kill_all()            # nothing is read after: a graceful stop of the whole quorum costs 5 s
