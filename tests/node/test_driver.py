"""The driver in one process with a real core and disk, no network: a single voter elects
itself, appends commit, listeners see committed records in order, and a restart replays them."""
import asyncio

from kafkawire.raft.config import RaftConfig
from kafkawire.raft.node.disk_store import DiskLogStore
from kafkawire.raft.node.driver import RaftDriver
from kafkawire.raft.contract import NotLeader
from kafkawire.raft.io import OutboundRequest, Ready
from kafkawire.raft.types import Endpoints
from kafkawire.raft.voters import VoterSet


class Recorder:
    def __init__(self):
        self.committed, self.leaders, self.snapshots = [], [], []

    def on_committed(self, base_offset, epoch, append_time_ms, records):
        self.committed += [(base_offset + i, r) for i, r in enumerate(records)]

    def on_snapshot_loaded(self, snapshot_id, records):
        self.snapshots.append(snapshot_id)

    def on_leader_change(self, leader_id, epoch):
        self.leaders.append((leader_id, epoch))


def config():
    endpoints = Endpoints((("CONTROLLER", "127.0.0.1", 1),))
    return RaftConfig(node_id=1, cluster_id="c", endpoints=endpoints,
                      static_voters=VoterSet.static({1: endpoints}), election_timeout_ms=50)


async def single_voter(directory, seed, work):
    driver = RaftDriver(config(), DiskLogStore(directory), client=None, seed=seed)
    recorder = Recorder()
    driver.register(recorder)
    driver.start()
    try:
        await asyncio.wait_for(_until(lambda: driver.is_leader()), 10)
        return await work(driver, recorder)
    finally:
        await driver.close()


async def _until(predicate):
    while not predicate():
        await asyncio.sleep(0.01)


def test_appends_commit_in_order_and_listeners_see_them(tmp_path):
    async def work(driver, recorder):
        offsets = await asyncio.gather(*(driver.append([f"v{i}".encode()]) for i in range(20)))
        await asyncio.wait_for(_until(lambda: len(recorder.committed) == 20), 10)
        return offsets, recorder, [b.base_offset for b in driver.read_committed(0)]

    offsets, recorder, batches = asyncio.run(single_voter(tmp_path / "p", 1, work))
    assert offsets == sorted(offsets) and len(set(offsets)) == 20
    assert [v for _, v in recorder.committed] == [f"v{i}".encode() for i in range(20)]
    assert [o for o, _ in recorder.committed] == offsets
    assert recorder.leaders[-1] == (1, 1)
    assert batches and batches[0] >= 1        # offset 0 is the LeaderChange control batch

    async def again(driver, recorder):
        # A listener registered on a reopened log is replayed the committed records first.
        await asyncio.wait_for(_until(lambda: len(recorder.committed) >= 20), 10)
        return recorder

    replayed = asyncio.run(single_voter(tmp_path / "p", 2, again))
    assert [v for _, v in replayed.committed][:20] == [f"v{i}".encode() for i in range(20)]


def test_an_append_after_shutdown_fails_with_not_leader(tmp_path):
    async def work(driver, recorder):
        driver.begin_shutdown(1000)
        await asyncio.wait_for(driver.shutdown_complete.wait(), 10)
        try:
            await driver.append([b"late"])
        except NotLeader as exc:
            return exc.error_code
        return None

    assert asyncio.run(single_voter(tmp_path / "p", 3, work)) == 6      # NOT_LEADER_OR_FOLLOWER


def test_a_new_leader_is_caught_up_once_it_applied_everything_before_its_epoch(tmp_path):
    """Kafka's rule for telling the state machine it leads (the controller activates then)."""
    from types import SimpleNamespace
    driver = RaftDriver(config(), DiskLogStore(tmp_path / "p"), client=None)
    driver.is_leader = lambda: True
    driver.core = SimpleNamespace(status=lambda: SimpleNamespace(epoch_start_offset=12))
    driver.applied_offset = 10
    assert not driver.leader_caught_up()
    driver.applied_offset = 12
    assert driver.leader_caught_up()
    driver.is_leader = lambda: False
    assert not driver.leader_caught_up()


def test_the_metrics_file_has_kafkas_raft_metric_names(tmp_path):
    import json

    async def work(driver, recorder):
        await driver.append([b"x"])
        driver.metrics.write(str(tmp_path / "m.json"))
        return json.loads((tmp_path / "m.json").read_text())

    doc = asyncio.run(single_voter(tmp_path / "p", 4, work))
    m = doc["metrics"]
    assert doc["group"] == "raft-metrics" and doc["node-id"] == 1
    assert (m["current-leader"], m["current-state"], m["number-of-voters"]) == (1, "leader", 1)
    assert m["number-unknown-voter-connections"] == 0
    assert m["high-watermark"] == m["log-end-offset"] >= 2
    assert m["commit-latency-max"] >= m["commit-latency-avg"] >= 0


def test_an_overloaded_leader_refuses_appends_past_its_queue_and_keeps_the_others(tmp_path):
    """Appends made in one event-loop turn wait in the driver's queue and reach the core as one
    Propose; past append_queue_limit records an append is refused at once with
    AppendQueueFull (nothing appended), as Kafka's BatchAccumulator refuses one it has no
    room for. The accepted ones commit, each with its own offset, in one batch."""
    from kafkawire.raft.contract import AppendQueueFull

    async def work(driver, recorder):
        driver.append_queue_limit = 6
        base = driver.next_offset()
        results = await asyncio.gather(*(driver.append([b"a%d" % i, b"b%d" % i]) for i in range(5)),
                                       return_exceptions=True)
        batches = [(b.base_offset, b.last_offset) for b in driver.read_committed(base)]
        return base, results, batches, driver.metrics.snapshot()["appends-refused"]

    base, results, batches, refused = asyncio.run(single_voter(tmp_path / "p", 5, work))
    accepted = [r for r in results if not isinstance(r, BaseException)]
    assert accepted == [base + 1, base + 3, base + 5]          # 3 appends of 2 records: 6 queued
    assert all(isinstance(r, AppendQueueFull) and "limit 6" in str(r) for r in results[3:]) and refused == 2
    assert batches == [(base, base + 5)]                      # one Propose, one batch


def test_queued_appends_reach_the_core_before_any_later_input(tmp_path):
    """An append waits in the queue until the next loop turn, but any other input (here a
    timer tick; a voter change would append a VotersRecord) first hands the queue to the
    core: nothing comes between, so the offset next_offset() gave before the append holds."""
    from kafkawire.raft.io import Tick

    async def work(driver, recorder):
        expected = driver.next_offset()
        append = asyncio.ensure_future(driver.append([b"x", b"y"]))
        await asyncio.sleep(0)                  # the append is queued; its drain has not run
        queued_before_tick = driver.next_offset() - driver.core.log.end_offset - sum(
            len(r) for _, r in driver.core.accumulator)
        driver._step(Tick(driver.clock()))      # an input arrives first
        proposed = driver.next_offset() - driver.core.log.end_offset - sum(
            len(r) for _, r in driver.core.accumulator)
        return expected, queued_before_tick, proposed, await asyncio.wait_for(append, 10)

    expected, queued_before_tick, proposed, last = asyncio.run(single_voter(tmp_path / "p", 6, work))
    assert (queued_before_tick, proposed) == (2, 0)     # in the driver's queue, then in the core
    assert last == expected + 1


def test_a_control_batch_an_input_writes_goes_after_the_appends_queued_before_it(tmp_path):
    """The controller applies a write at the offsets next_offset() gives, then queues it
    (prepare_append; issue 28). An input that makes the leader write a control batch, here
    UpdateFeatures raising kraft.version (a KRaftVersionRecord and a VotersRecord in one batch,
    as AddRaftVoter, RemoveRaftVoter and UpdateRaftVoter write theirs), arriving before the
    queue's drain, hands the queue to the core first: the control batch goes after the write,
    whose offsets hold (Kafka's control records take their offsets from the same accumulator)."""
    from kafkawire.messages.update_features_request import FeatureUpdateKey, UpdateFeaturesRequest

    class Ctx:
        api_version, peer = 1, ("127.0.0.1", 1)

    upgrade = UpdateFeaturesRequest(timeout_ms=10_000, feature_updates=[FeatureUpdateKey(
        feature="kraft.version", max_version_level=1, upgrade_type=1)])

    async def work(driver, recorder):
        await driver.append([b"warm-up"])
        # The request's task runs on the next loop turn, before the drain prepare_append schedules.
        request = asyncio.ensure_future(driver.handle_request(Ctx(), upgrade))
        expected = driver.next_offset()
        appended = driver.prepare_append([b"x", b"y"])
        answer = await asyncio.wait_for(request, 10)
        last = await asyncio.wait_for(appended, 10)
        end = driver.core.log.end_offset
        batches = [(b.base_offset, b.last_offset, b.is_control) for b in driver.store.data_batches(expected, end)]
        return expected, last, answer.error_code, driver.kraft_version(), batches, recorder.committed[-2:]

    expected, last, error, kraft_version, batches, committed = asyncio.run(single_voter(tmp_path / "p", 7, work))
    assert (error, kraft_version) == (0, 1)
    assert last == expected + 1 and committed == [(expected, b"x"), (expected + 1, b"y")]
    assert batches[:2] == [(expected, expected + 1, False), (expected + 2, expected + 3, True)]


class HeldFsync:
    """Wraps a DiskLogStore's prepare_flush so that every fsync (on the driver's disk thread)
    waits until the test releases it; ``started`` is set once one is waiting."""

    def __init__(self, store):
        import threading
        self.release, self.started = threading.Event(), threading.Event()
        prepare = store.prepare_flush

        def held_prepare():
            sync = prepare()

            def held_sync():
                self.started.set()
                if not self.release.wait(10):
                    raise TimeoutError("the test never released the fsync")
                sync()
            return held_sync
        store.prepare_flush = held_prepare


def test_a_leader_commits_nothing_before_its_fsync_but_answers_requests_meanwhile(tmp_path):
    """The fsync runs on the driver's disk thread and the core learns it is done from a
    LogFlushed input: until then a single voter's append does not commit (the leader counts
    its own log end toward the high watermark only once it is durable) and the listeners see
    nothing, but its messages are not held behind the fsync: a request answered meanwhile
    (DescribeQuorum) gets its answer at once, with the high watermark of before. The loop
    itself stays free: this test runs on it while the fsync waits."""
    from kafkawire.tools.metadata_quorum import describe_quorum_request

    class Ctx:
        api_version, peer = 1, ("127.0.0.1", 1)

    async def work(driver, recorder):
        await driver.append([b"warm-up"])
        held = HeldFsync(driver.store)
        hw_before, seen_before = driver.high_watermark(), len(recorder.committed)
        append = asyncio.ensure_future(driver.append([b"x"]))
        await asyncio.wait_for(_until(held.started.is_set), 10)
        answer = await asyncio.wait_for(driver.handle_request(Ctx(), describe_quorum_request()), 10)
        for _ in range(20):                     # many loop turns while the fsync waits
            await asyncio.sleep(0.001)
        during = (append.done(), driver.high_watermark(), len(recorder.committed), driver.core.log.end_offset,
                  driver.core.high_watermark())
        held.release.set()
        last = await asyncio.wait_for(append, 10)
        return hw_before, seen_before, during, last, answer, driver.high_watermark()

    hw_before, seen_before, during, last, answer, hw_after = asyncio.run(single_voter(tmp_path / "p", 7, work))
    appended_done, hw_during, seen_during, log_end, core_hw = during
    assert log_end == last + 1                       # written to the log (page cache) at once
    assert not appended_done and (hw_during, seen_during, core_hw) == (hw_before, seen_before, hw_before)
    assert answer.topics[0].partitions[0].high_watermark == hw_before     # answered during the fsync
    assert hw_after == last + 1


def test_a_leader_refuses_appends_while_too_many_wait_for_their_commit(tmp_path):
    """Backpressure covers the uncommitted tail too: once append_uncommitted_limit records
    were handed to the core and are not committed (here: their fsync is held), a new append
    is refused at once with AppendQueueFull, so a leader offered more than the quorum commits
    does not grow its commit latency without bound. Once they commit, appends are taken again."""
    from kafkawire.raft.contract import AppendQueueFull

    async def work(driver, recorder):
        await driver.append([b"warm-up"])
        driver.append_uncommitted_limit = 2
        held = HeldFsync(driver.store)
        first = asyncio.ensure_future(driver.append([b"a", b"b"]))
        await asyncio.wait_for(_until(held.started.is_set), 10)
        try:
            await driver.append([b"c"])
            refused = None
        except AppendQueueFull as exc:
            refused = str(exc)
        held.release.set()
        await asyncio.wait_for(first, 10)
        after = await asyncio.wait_for(driver.append([b"d"]), 10)
        return refused, after, driver.metrics.snapshot()["appends-refused"]

    refused, after, refused_count = asyncio.run(single_voter(tmp_path / "p", 8, work))
    assert refused is not None and "wait for their commit (limit 2)" in refused and refused_count == 1
    assert after > 0


def test_an_election_is_written_on_the_disk_thread_and_its_effects_wait_until_it_is_durable(tmp_path):
    """The quorum-state write and fsync of an election run on the driver's disk thread, not on
    the loop; the Ready that carries it (here a single voter's own election: it votes for
    itself and leads) keeps its effects until the write is done, so nothing of it (a vote, a
    leader change) leaves before it is durable, while the loop goes on."""
    import threading

    async def go():
        driver = RaftDriver(config(), DiskLogStore(tmp_path / "p"), client=None, seed=3)
        recorder = Recorder()
        driver.register(recorder)
        release, started, threads = threading.Event(), threading.Event(), []
        write = driver.store.write_election

        def held_write(*args):
            threads.append(threading.get_ident())
            started.set()
            if not release.wait(10):
                raise TimeoutError("the test never released the election write")
            write(*args)
        driver.store.write_election = held_write
        driver.start()
        try:
            await asyncio.wait_for(_until(started.is_set), 10)
            for _ in range(20):                 # many loop turns while the write waits
                await asyncio.sleep(0.001)
            during = list(recorder.leaders)
            release.set()
            await asyncio.wait_for(_until(lambda: recorder.leaders), 10)
            return during, recorder.leaders, threads, driver.store.read_election()
        finally:
            release.set()
            await driver.close()

    during, leaders, threads, election = asyncio.run(go())
    assert during == []                                     # held while the write was not durable
    assert leaders == [(1, election.epoch)] and election.leader_id == 1
    assert threads and threading.get_ident() not in threads  # not the loop's thread


def test_a_followers_commits_are_applied_after_its_next_fetch_has_left(tmp_path):
    """A follower's Ready carries its next Fetch and the high watermark the last answer gave: the
    Fetch leaves first (it tells the leader this node's log end, which the leader's commits wait
    for), each commit is applied after its own Fetch, in order, and one that a commit not
    deferred already covered is not applied again (driver_load._commit_after_send)."""
    two_voters = Endpoints((("CONTROLLER", "127.0.0.1", 1),))
    follower_config = RaftConfig(node_id=1, cluster_id="c", endpoints=two_voters, election_timeout_ms=60_000,
                                 static_voters=VoterSet.static({1: two_voters, 2: two_voters}))

    async def run():
        driver = RaftDriver(follower_config, DiskLogStore(tmp_path / "p"), client=None, seed=1)
        driver.start()
        order = []

        async def send(request):
            if request.body == "fetch":
                order.append(("fetch sent", request.correlation_id))

        def commit_through(through):
            order.append(("applied through", through))
            driver.metrics.set_high_watermark(through)
        driver._send, driver._commit_through = send, commit_through
        fetch = lambda n: OutboundRequest(n, 2, None, "fetch")     # noqa: E731
        try:
            assert not driver.is_leader()
            driver._apply_effects(Ready(send=(fetch(1),), committed_through=5))
            driver._apply_effects(Ready(send=(fetch(2),), committed_through=7))
            before_the_loop_turned = list(order)
            await asyncio.sleep(0)
            await asyncio.sleep(0)
            deferred = list(order)
            driver._apply_effects(Ready(send=(fetch(3),), committed_through=9))
            driver._apply_effects(Ready(committed_through=10))      # no Fetch in it: applied at once
            at_once = list(order)
            await asyncio.sleep(0)
            await asyncio.sleep(0)
            return before_the_loop_turned, deferred, at_once, list(order)
        finally:
            await driver.close()

    before_the_loop_turned, deferred, at_once, last = asyncio.run(run())
    assert before_the_loop_turned == []
    assert deferred == [("fetch sent", 1), ("applied through", 5), ("fetch sent", 2), ("applied through", 7)]
    assert at_once == deferred + [("applied through", 10)]
    assert last == at_once + [("fetch sent", 3)]                     # 9 not applied after 10


def test_a_request_whose_send_fails_unexpectedly_is_logged_and_failed_to_the_core(tmp_path, caplog):
    """Not lost in a task nobody awaits: the core hears RequestFailed, as for a transport error."""
    from kafkawire.protocol.apis import api_table
    from kafkawire.raft.io import RequestFailed

    class BrokenClient:
        async def connect(self, address, timeout_ms):
            raise RuntimeError("a bug in the client")

        async def close(self):
            pass

    async def go():
        endpoints = {n: Endpoints((("CONTROLLER", "127.0.0.1", n),)) for n in (1, 2)}
        two_voters = RaftConfig(node_id=1, cluster_id="c", endpoints=endpoints[1],
                                static_voters=VoterSet.static(endpoints), election_timeout_ms=50)
        driver = RaftDriver(two_voters, DiskLogStore(tmp_path / "p"), client=BrokenClient(), seed=1)
        failed = []
        step = driver._step
        driver._step = lambda event: (failed.append(event) if isinstance(event, RequestFailed) else None, step(event))
        driver.start()
        try:
            async with asyncio.timeout(10):
                await _until(lambda: failed)
        finally:
            await driver.close()
    api_table()                 # its first call imports every API's codecs: not within the wait
    asyncio.run(go())
    logged = [r.getMessage() for r in caplog.records if r.levelname == "ERROR"]
    assert logged and all(m.startswith("node 1: sending ") and m.endswith("to node 2 failed: a bug in the client")
                          for m in logged)


def test_the_log_is_written_on_the_disk_thread_and_a_write_error_there_stops_the_node(tmp_path, monkeypatch):
    import os
    import threading
    from kafkawire.storage import segment

    writers, real_pwrite = set(), os.pwrite

    def failing_pwrite(fd, data, position):
        writers.add(threading.current_thread().name)
        if refuse:
            raise OSError(5, "Input/output error")
        return real_pwrite(fd, data, position)
    refuse = False
    monkeypatch.setattr(segment.os, "pwrite", failing_pwrite)

    async def work(driver, recorder):
        nonlocal refuse
        await driver.append([b"written"])
        assert writers and all(name.startswith("raft-disk-") for name in writers), writers
        refuse = True
        appended = asyncio.ensure_future(driver.append([b"refused"]))
        async with asyncio.timeout(10):
            await _until(lambda: driver.failure is not None)
        refuse = False          # the close writes what is left
        appended.cancel()
        return str(driver.failure), [v for _, v in recorder.committed]

    failure, committed = asyncio.run(single_voter(tmp_path / "p", 1, work))
    assert "Input/output error" in failure
    assert committed == [b"written"]        # what was not written never committed
