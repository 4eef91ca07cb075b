"""Issue 29's judge "our broker starts on a log directory a Kafka 4.3.1 broker wrote, and a Kafka
broker starts on ours", for the state beside the records (test_log_dirs_swapped_with_kafka.py swaps
the records): one combined node with two log directories (JBOD) goes Kafka -> kafkawire -> Kafka,
one cluster run, one JVM start per direction. Each side writes, and the next side must serve:

* an idempotent producer kept across both swaps: its sequences go on (producer snapshots): no
  OUT_OF_ORDER_SEQUENCE, no duplicate, one producer id and epoch for all its batches;
* a transaction left open at each stop (__transaction_state): the next side aborts it when the
  transactional id starts again; a read_committed consumer never sees its records and reads
  the transactions committed after it;
* a classic group's member kept across the swap (its member id from __consumer_offsets) and its
  committed offset, where a new member resumes; a KIP-848 group's member kept across both swaps
  (its member epoch and assignment: ConsumerGroupDescribe answers the same);
* DeleteRecords' log start offset (log-start-offset-checkpoint) and the recovery points a clean
  stop writes; the leader epochs (leader-epoch-checkpoint: OffsetForLeaderEpoch answers);
* a compacted topic after its cleaner ran (cleaned segments, tombstones, cleaner-offset-checkpoint),
  handed over in the middle of a swap (the cleaned segment under ``.swap`` names beside the old
  segments, a ``.cleaned`` leftover): the next side finishes the swap;
* a share group's state (__share_group_state; its share.auto.offset.reset=earliest a group config
  in the metadata): ReadShareGroupState answers the same, and a new
  member is delivered exactly what it says (released records again with their delivery count,
  records acquired at the stop again, acknowledged ones never);
* the two directories' meta.properties (directory ids) and each replica's directory.

Costs about 75 s at a load average of 30 on 2 cores (two Kafka starts, the cleaner's three
rounds); marked kafka and slow.
"""
from __future__ import annotations

import signal
from pathlib import Path

import pytest

confluent_kafka = pytest.importorskip("confluent_kafka")

from confluent_kafka.admin import (AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource,  # noqa: E402
                                   NewTopic)

from kafkawire.messages.metadata_request import MetadataRequest, MetadataRequestTopic  # noqa: E402
from kafkawire.metadata.replay import replay_directory  # noqa: E402
from kafkawire.storage.state_files import random_uuid, uuid_to_kafka  # noqa: E402
from tests.broker.wire import call  # noqa: E402
from tests.interop import swap_state as s  # noqa: E402
from tests.interop.kafka_procs import KafkaNode  # noqa: E402
from tests.interop.test_log_dirs_swapped_with_kafka import start_kafkawire  # noqa: E402

pytestmark = [pytest.mark.kafka, pytest.mark.slow]

HELD_MS = "3600000"          # min.compaction.lag.ms while a phase writes (no cleaning yet)


class Run:
    """What the phases share: the node, the clients kept across swaps, what the last side served."""

    def __init__(self, node: KafkaNode):
        self.node = node
        self.dirs = [node.data_dir, node.directory / "data2"]
        self.errors = s.ErrorLog()
        self.idempotent = None
        self.open_txn = None
        self.member = None
        self.new_member = None
        self.topic_id = None
        self.share_state = None
        self.share_member = None
        self.tags: list[str] = []
        self.deleted_to = 0
        self.saved: tuple | None = None
        self.last: dict | None = None
        self.meta: dict | None = None

    def drop_clients_of_the_stopped_side(self) -> None:
        """Once its broker stopped: the open transaction stays open, the share member's acquired
        records stay acquired (its connection closes only now)."""
        self.open_txn = None
        if self.share_member is not None:
            self.share_member.connection.close()
            self.share_member = None

    def partition_dir(self, name: str) -> Path:
        [found] = [d / name for d in self.dirs if (d / name).is_dir()]
        return found


def alter_compaction_lag(bootstrap: str, value: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    resource = ConfigResource("topic", s.COMPACTED, incremental_configs=[
        ConfigEntry("min.compaction.lag.ms", value, incremental_operation=AlterConfigOpType.SET)])
    for future in admin.incremental_alter_configs([resource]).values():
        future.result(s.WAIT_S)


def create_topics(run: Run, bootstrap: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    topics = [NewTopic(s.PLAIN, 3, 1), NewTopic(s.SHARED, 1, 1), NewTopic(s.COMPACTED, 1, 1, config={
        "cleanup.policy": "compact", "segment.ms": str(s.SEGMENT_MS), "min.cleanable.dirty.ratio": "0.01",
        "min.compaction.lag.ms": HELD_MS, "delete.retention.ms": "86400000"})]
    for future in admin.create_topics(topics).values():
        future.result(s.WAIT_S)
    s.share_group_from_earliest(bootstrap)
    metadata = call(bootstrap, MetadataRequest(topics=[MetadataRequestTopic(name=s.SHARED)]), 12)
    run.topic_id = metadata.topics[0].topic_id


def superseded(view: list[tuple], active_base: int) -> set[int]:
    """Offsets below the active segment whose key has a later record there too: what a cleaning removes."""
    last = {key: offset for offset, key, _ in view if offset < active_base}
    return {offset for offset, key, _ in view if offset < active_base and last[key] != offset}


def compact(run: Run, bootstrap: str, tag: str) -> None:
    """Three segments of keyed records, copies of the rolled ones, then the cleaner let loose."""
    alter_compaction_lag(bootstrap, HELD_MS)
    s.compacted_writes(run.idempotent, tag)
    directory = run.partition_dir(f"{s.COMPACTED}-0")
    saved_dir = run.node.directory / f"saved-{tag}"
    run.saved = (saved_dir, s.save_segments(directory, saved_dir))
    view = s.read_partition(bootstrap, s.COMPACTED, 0, "read_uncommitted")
    gone = superseded(view, max(s.segment_files(directory)))
    assert gone, view
    alter_compaction_lag(bootstrap, "0")
    s.wait_until_cleaned(bootstrap, gone)


def write_phase(run: Run, bootstrap: str, tag: str) -> None:
    """One side's traffic: every kind of state, each left as the other side must take it over."""
    if run.idempotent is None:
        run.idempotent = s.idempotent_producer(bootstrap, run.errors)
        run.new_member = s.NewProtocolMember(bootstrap)
    s.produce(run.idempotent, s.PLAIN, 0, [(None, f"{tag}-idem-{i}".encode()) for i in range(5)])
    run.open_txn = s.transactions(bootstrap, tag)
    if run.member is not None:                       # the kept member leaves; a new one resumes
        run.member.consumer.close()
    resume_at = run.last["committed"][2] if run.last else 0
    s.produce(run.idempotent, s.PLAIN, 2, [(None, f"{tag}-group-{i}".encode()) for i in range(4)])
    run.member = s.GroupMember(bootstrap)
    written = s.read_partition(bootstrap, s.PLAIN, 2, "read_uncommitted")
    expected = [(o, v) for o, _, v in written if o >= resume_at]
    assert run.member.read(len(expected)) == expected
    run.member.commit(expected[-1][0])              # its last record is read again next time
    run.deleted_to = resume_at + 1
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.delete_records([confluent_kafka.TopicPartition(s.PLAIN, 2, run.deleted_to)]).values():
        future.result(s.WAIT_S)
    compact(run, bootstrap, tag)
    run.share_state, run.share_member = s.share_round(bootstrap, run.topic_id, run.idempotent, tag, 10 if not run.tags else 5,
                                    run.share_state)
    run.tags.append(tag)


def served(run: Run, bootstrap: str) -> dict:
    """What a side serves of every kind of state."""
    files = {name: s.leader_epochs(run.partition_dir(name)) for name in (f"{s.PLAIN}-0", f"{s.PLAIN}-2",
                                                                           f"{s.COMPACTED}-0")}
    epochs = {name: [e for e, _ in entries] for name, entries in files.items()}
    return {
        "epoch-files": files,
        "plain-0": s.read_partition(bootstrap, s.PLAIN, 0), "plain-1": s.read_partition(bootstrap, s.PLAIN, 1),
        "plain-2": s.read_partition(bootstrap, s.PLAIN, 2, "read_uncommitted"),
        "compacted": s.read_partition(bootstrap, s.COMPACTED, 0, "read_uncommitted"),
        "starts": s.first_offsets(bootstrap, s.PLAIN, range(3)),
        "committed": s.committed(bootstrap, s.GROUP, s.PLAIN, range(3)),
        "group": s.group_view(bootstrap), "new-group": s.new_group_view(bootstrap), "share": s.share_state(bootstrap, run.topic_id),
        "epochs": {name: s.epoch_end_offsets(bootstrap, name.rsplit("-", 1)[0], int(name.rsplit("-", 1)[1]), e)
                   for name, e in epochs.items()},
    }


def expected_plain(tags: list[str]) -> tuple[list, list]:
    """The values of plain-0 and plain-1 a read_committed consumer reads after ``tags``' phases."""
    zero = [f"{t}-{kind}-{i}".encode() for t in tags for kind, n in (("idem", 5), ("committed-0", 3))
            for i in range(n)]
    return zero, [f"{t}-committed-1-{i}".encode() for t in tags for i in range(3)]


def check_taken_over(run: Run, bootstrap: str, side: str) -> None:
    """The new side serves exactly what the other served at its stop."""
    now = served(run, bootstrap)
    before = run.last
    for key in ("plain-0", "plain-1", "plain-2", "compacted", "starts", "committed", "group", "new-group", "share"):
        assert now[key] == before[key], f"{side} serves {key} {now[key]}, the other side served {before[key]}"
    for name, answers in before["epochs"].items():         # the other side's epochs, asked of this one
        topic, partition = name.rsplit("-", 1)
        asked = s.epoch_end_offsets(bootstrap, topic, int(partition), list(answers))
        assert asked == answers, f"{side} answers OffsetForLeaderEpoch of {name} {asked}, the other side {answers}"
        # A lost epoch may still be answered right (the next epoch's start): the file must keep them.
        kept = now["epoch-files"][name][:len(before["epoch-files"][name])]
        assert kept == before["epoch-files"][name], (side, name, now["epoch-files"][name], before["epoch-files"][name])
    for directory in run.dirs:
        assert not list(directory.glob("*/*.cleaned")) and not list(directory.glob("*/*.swap")), side
    first, end = run.swapped                 # the old segments the swap replaced are gone, not just unread
    replaced = [b for b in s.segment_files(run.partition_dir(f"{s.COMPACTED}-0")) if first < b < end]
    assert replaced == [], f"{side} left segments {replaced} the swap of [{first}, {end}) replaced"
    assert {d: (d / "meta.properties").read_text() for d in run.dirs} == run.meta, side


def at_stop(run: Run, bootstrap: str) -> None:
    run.last = served(run, bootstrap)
    zero, one = expected_plain(run.tags)
    assert [v for _, _, v in run.last["plain-0"]] == zero
    assert [v for _, _, v in run.last["plain-1"]] == one
    assert run.last["starts"][2] == run.deleted_to
    [(_, member_epoch, assigned)] = run.last["new-group"][3]        # one member, an epoch, the partition
    assert member_epoch > 0 and assigned, run.last["new-group"]
    run.ends = s.end_offsets(bootstrap, s.PLAIN, range(3))


def after_stop(run: Run) -> None:
    """The files a clean stop leaves: recovery points at the log ends, the log start offset, the
    directories' ids; then the compacted partition is left mid-swap for the next side."""
    recovery = {k: v for d in run.dirs for k, v in s.checkpoint(d, "recovery-point-offset-checkpoint").items()}
    assert {p: recovery[f"{s.PLAIN}-{p}"] for p in range(3)} == run.ends, recovery
    starts = {k: v for d in run.dirs for k, v in s.checkpoint(d, "log-start-offset-checkpoint").items()}
    assert starts.get(f"{s.PLAIN}-2") == run.deleted_to, starts
    meta = {d: (d / "meta.properties").read_text() for d in run.dirs}
    ids = {d: dict(line.split("=", 1) for line in text.splitlines() if "=" in line).get("directory.id")
           for d, text in meta.items()}
    assert len(set(ids.values())) == 2 and None not in ids.values(), meta
    if run.meta is None:
        run.meta = meta
    run.dir_ids = ids
    saved_dir, saved = run.saved
    run.swapped = s.leave_an_interrupted_cleaning(run.partition_dir(f"{s.COMPACTED}-0"), saved_dir, saved)


def check_directories(run: Run) -> None:
    """Each replica's directory in the metadata is the id of the log directory holding it, and
    both directories hold some."""
    from kafkawire.storage.state_files import uuid_to_kafka as text
    image = replay_directory(str(run.node.metadata_dir)).image
    where = {}
    for name in (s.PLAIN, s.SHARED, s.COMPACTED):
        for index, partition in image.topics_by_name[name].partitions.items():
            [found] = [d for d in run.dirs if (d / f"{name}-{index}").is_dir()]
            assert text(partition.directories[0]) == run.dir_ids[found], (name, index, found)
            where[f"{name}-{index}"] = found
    assert set(where.values()) == set(run.dirs), where


def test_kafka_and_kafkawire_take_over_each_others_broker_state(kafka_libs, tmp_path):
    node = KafkaNode(tmp_path / "node", 1, "broker,controller", heap="384m", properties={
        "log.dirs": f"{tmp_path / 'node' / 'data'},{tmp_path / 'node' / 'data2'}",
        "offsets.topic.num.partitions": "1", "transaction.state.log.num.partitions": "1",
        "share.coordinator.state.topic.num.partitions": "1", "share.coordinator.state.topic.replication.factor": "1",
        "share.coordinator.state.topic.min.isr": "1", "log.cleaner.enable": "true", "log.cleaner.backoff.ms": "200",
        "log.cleaner.dedupe.buffer.size": "4194304", "log.cleaner.threads": "1"})
    run, kafkawire = Run(node), None
    try:
        node.format(uuid_to_kafka(random_uuid()), "--standalone", "--feature", "share.version=1")
        node.start()
        node.wait_ready()
        bootstrap = node.broker_address
        create_topics(run, bootstrap)
        write_phase(run, bootstrap, "kafka")
        at_stop(run, bootstrap)
        assert node.stop(timeout_s=s.WAIT_S) is not None, node.log_tail()
        run.drop_clients_of_the_stopped_side()
        after_stop(run)

        kafkawire = start_kafkawire(node)
        check_taken_over(run, bootstrap, "kafkawire")
        write_phase(run, bootstrap, "kafkawire")
        at_stop(run, bootstrap)
        kafkawire.send_signal(signal.SIGTERM)
        assert kafkawire.wait(timeout=s.WAIT_S) == 0
        run.drop_clients_of_the_stopped_side()
        after_stop(run)
        check_directories(run)

        since = len(node.log_text())
        node.start()
        s.wait_kafka_started(node, since)
        check_taken_over(run, bootstrap, "Kafka")
        write_phase(run, bootstrap, "kafka-again")
        at_stop(run, bootstrap)
        batches = s.producer_batches([run.partition_dir(f"{s.PLAIN}-0")])
        assert len({(pid, epoch) for pid, epoch, *_ in batches}) == 1, batches
        sequences = [seq + i for _, _, seq, count, _ in batches for i in range(count)]
        assert sequences == list(range(len(sequences))) and len(sequences) == 15, batches
        assert run.errors.errors == []
    finally:
        for member in (run.member, run.new_member):
            if member is not None:
                member.consumer.close()
        run.drop_clients_of_the_stopped_side()
        if kafkawire is not None and kafkawire.poll() is None:
            kafkawire.kill()
            kafkawire.wait(timeout=30)
        node.kill()
