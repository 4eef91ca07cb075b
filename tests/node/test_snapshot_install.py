"""A follower's install of a snapshot fetched from the leader (FetchSnapshot), in one process:
two drivers on real disks, the follower's requests handed straight to the leader's handler.
The install's disk work (the chunks' writes, the file's fsync, its rename, the log emptied) runs
on the follower's disk thread, not on the loop, and nothing that follows from it (the snapshot loaded, the next
Fetch) happens before it is done."""
import asyncio
import concurrent.futures
import os
import threading

from kafkawire.messages.fetch_request import FetchPartition, FetchRequest, FetchTopic
from kafkawire.messages.list_offsets_request import ListOffsetsPartition, ListOffsetsRequest, ListOffsetsTopic
from kafkawire.net.install_aware_log import InstallAwareLog
from kafkawire.net.metadata_topic import METADATA_TOPIC, MetadataTopic, NodeEndpoint
from kafkawire.protocol.apis import api_table
from kafkawire.protocol.error_codes import Errors
from kafkawire.raft.io import Append, WriteSnapshotChunk
from kafkawire.raft.config import RaftConfig
from kafkawire.raft.node.disk_store import DiskLogStore
from kafkawire.raft.node.driver import RaftDriver
from kafkawire.raft.types import Endpoints, OffsetAndEpoch
from kafkawire.records import RecordBatchBuilder
from kafkawire.raft.voters import VoterSet
from kafkawire.storage.snapshot import PART_SUFFIX, SnapshotBuilder, SnapshotId

from .test_snapshot_writing import _until

LEADER = Endpoints((("CONTROLLER", "127.0.0.1", 1),))
VOTERS = VoterSet.static({1: LEADER})


class Machine:
    """A state machine whose snapshot is every value it applied."""
    in_transaction = False

    def __init__(self):
        self.values, self.snapshots = [], []

    def on_committed(self, base_offset, epoch, append_time_ms, records):
        self.values += records

    def on_snapshot_loaded(self, snapshot_id, records):
        self.snapshots.append(snapshot_id)
        self.values = list(records)

    def on_leader_change(self, leader_id, epoch):
        pass

    def snapshot_records(self):
        return list(self.values)


class _Ctx:
    peer = ("127.0.0.1", 2)

    def __init__(self, api_version):
        self.api_version = api_version


class ToLeader:
    """A NetworkClient whose every request goes to the leader driver's handler; it counts them."""

    def __init__(self, leader):
        self.leader, self.sent = leader, []

    async def connect(self, address, timeout_ms):
        return {key: (api.min_version, api.max_version) for key, api in api_table().items()}

    async def send(self, address, body, *, api_version, timeout_ms):
        self.sent.append(type(body).__name__)
        return await self.leader.handle_request(_Ctx(api_version), body)


def test_a_snapshot_install_runs_on_the_disk_thread_and_its_effects_wait_until_it_is_durable(tmp_path):
    async def run():
        leader = RaftDriver(RaftConfig(node_id=1, cluster_id="c", endpoints=LEADER, static_voters=VOTERS,
                                       election_timeout_ms=50),
                            DiskLogStore(tmp_path / "leader", segment_bytes=256), client=None, seed=1,
                            state_machine=Machine(), snapshot_min_bytes=1, retention_bytes=0)
        leader.start()
        follower = machine = None
        release, started, threads, chunk_threads = threading.Event(), threading.Event(), [], []
        try:
            await _until(leader.is_leader, "leadership")
            for i in range(10):
                await leader.append([f"v{i}".encode() * 20])
            # The snapshot of every commit, not the first one cleaned behind: a later one replaces
            # it (retention_bytes=0), and the follower's must be the leader's last (checked below;
            # it fetched the one at 9 of 11 while the leader went on to 11, once at load 12).
            await _until(lambda: leader.store.start_offset() > 0 and leader.store.snapshot_ids()
                         and leader.store.snapshot_ids()[-1].offset == leader.high_watermark(),
                         "the leader's log cleaned after a snapshot of every commit")

            machine = Machine()
            store = DiskLogStore(tmp_path / "follower")
            prepare = store.prepare_install

            def held_prepare(snapshot_id):
                install = prepare(snapshot_id)

                def held_install():
                    threads.append(threading.get_ident())
                    started.set()
                    if not release.wait(10):
                        raise TimeoutError("the test never released the install")
                    install()
                return held_install
            store.prepare_install = held_prepare
            prepare_chunk = store.prepare_chunk

            def recorded_chunk(op):
                write = prepare_chunk(op)

                def recorded_write():
                    chunk_threads.append(threading.get_ident())
                    write()
                return recorded_write
            store.prepare_chunk = recorded_chunk
            client = ToLeader(leader)
            follower = RaftDriver(RaftConfig(node_id=2, cluster_id="c", endpoints=Endpoints((("CONTROLLER", "127.0.0.1", 2),)),
                                             static_voters=VOTERS, election_timeout_ms=50),
                                  store, client=client, seed=2, state_machine=machine)
            follower.start()
            await _until(started.is_set, "the follower's install")
            sent_at_install = len(client.sent)
            for _ in range(20):                 # many loop turns while the install waits
                await asyncio.sleep(0.001)
            directory = os.listdir(tmp_path / "follower")
            during = (list(machine.snapshots), len(client.sent) - sent_at_install, store.start_offset(),
                      [n for n in directory if n.endswith(".checkpoint")], [n for n in directory if n.endswith(PART_SUFFIX)])
            release.set()
            await _until(lambda: machine.values == leader.state_machine.values, "the follower to catch up")
            return (during, machine.snapshots, leader.store.snapshot_ids(), threads + chunk_threads, client.sent,
                    store.snapshot_ids())
        finally:
            release.set()
            if follower is not None:
                await follower.close()
            await leader.close()

    during, snapshots, leader_snapshots, threads, sent, follower_snapshots = asyncio.run(run())
    loaded_during, sent_during, start_during, final_files, part_files = during
    assert loaded_during == [] and sent_during == 0      # held while not durable: not loaded, no next Fetch
    assert start_during > 0                              # the core already read an installed store
    assert final_files == [] and len(part_files) == 1    # not renamed before its fsync
    assert snapshots and snapshots[0] in leader_snapshots and snapshots[0] in follower_snapshots
    assert any("FetchSnapshot" in name for name in sent)
    assert len(threads) >= 2 and threading.get_ident() not in threads   # install and chunks: not on the loop's thread


class _Asked:
    def __init__(self, api_version):
        self.api_version = api_version


def _metadata_answers(topic, offsets):
    """What clients reading __cluster_metadata get: ListOffsets earliest and latest, and a
    Fetch (v12, no wait) at each of ``offsets``: (error, high watermark, log start, records)."""
    async def ask():
        listed = await topic.list_offsets(_Asked(7), ListOffsetsRequest(replica_id=-1, topics=[ListOffsetsTopic(
            name=METADATA_TOPIC, partitions=[ListOffsetsPartition(partition_index=0, timestamp=ts, current_leader_epoch=-1)
                                             for ts in (-2, -1)])]))
        fetched = []
        for offset in offsets:
            answer = await topic.fetch(_Asked(12), FetchRequest(max_wait_ms=0, min_bytes=0, max_bytes=1 << 20, topics=[
                FetchTopic(topic=METADATA_TOPIC, partitions=[FetchPartition(partition=0, fetch_offset=offset,
                                                                            partition_max_bytes=1 << 20)])]))
            p = answer.responses[0].partitions[0]
            fetched.append((p.error_code, p.high_watermark, p.log_start_offset, len(p.records or b"")))
        return [(p.error_code, p.offset, p.leader_epoch) for p in listed.topics[0].partitions], fetched
    return asyncio.run(ask())


def test_clients_reading_the_metadata_log_see_the_installed_log_while_the_disk_thread_cuts_it(tmp_path):
    """MetadataTopic serves __cluster_metadata from the store's log on the loop while a
    follower's install empties that log on the disk thread. Held in the middle of the cut (one
    segment deleted, the others not yet), a client's ListOffsets and Fetch get the log the install
    makes (empty from the snapshot's offset), the answers they get once it is done; the log read
    directly is half cut then (its start still the old one, its segments going)."""
    store = DiskLogStore(tmp_path / "p", segment_bytes=500)
    for base in range(0, 40, 4):
        b = RecordBatchBuilder(base_offset=base, partition_leader_epoch=1)
        for i in range(4):
            b.append(None, f"v{base + i}".encode() * 10, (), 1000 + base + i)
        store.apply(Append(b.build(), base, base + 3, 1))
    store.flush()
    assert len(store.log.segments) > 2
    snapshot_id = OffsetAndEpoch(2, 100)
    data = SnapshotBuilder(SnapshotId(100, 2), last_contained_log_timestamp=5).finish()
    store.prepare_chunk(WriteSnapshotChunk(snapshot_id, 0, data))()
    topic = MetadataTopic(InstallAwareLog(store.log, store.installing_at), cluster_id="c",
                          node=NodeEndpoint(2, "127.0.0.1", 1), high_watermark=lambda: 40)
    listed, fetched = _metadata_answers(topic, [0])
    assert listed == [(0, 0, 1), (0, 40, 1)] and fetched[0][:3] == (0, 40, 0) and fetched[0][3] > 0

    install = store.prepare_install(snapshot_id)
    cutting, release = threading.Event(), threading.Event()
    delete_segment = store.log._delete_segment

    def delete_one_then_wait(base):
        delete_segment(base)
        if not cutting.is_set():
            cutting.set()
            if not release.wait(10):
                raise TimeoutError("the test never released the cut")
    store.log._delete_segment = delete_one_then_wait
    cut = concurrent.futures.ThreadPoolExecutor(1).submit(install)
    try:
        assert cutting.wait(10), "the install's disk half never started cutting the log"
        during = _metadata_answers(topic, [0, 39, 100])
    finally:
        release.set()
        cut.result(timeout=10)
    store.finish_install()
    after = _metadata_answers(topic, [0, 39, 100])
    store.close()
    out_of_range = (int(Errors.OFFSET_OUT_OF_RANGE), -1, -1, 0)
    # The epochs went with the old log (Kafka's truncateFullyAndStartAt clears its epoch cache).
    expected = ([(0, 100, -1), (0, 100, 0)], [out_of_range, out_of_range, (0, 100, 100, 0)])
    assert during == expected and after == expected
