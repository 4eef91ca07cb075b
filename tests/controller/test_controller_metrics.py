"""The controller metrics of Kafka's QuorumControllerMetrics and ControllerMetadataMetrics that
come from what the controller measures (kafkawire/controller/stats.py), scraped as the node's
endpoint renders them and read back with prometheus_client's own text parser, against the
controller's state: the event-queue metrics count and time its writes (EventQueueTimeMs'
count is EventQueueOperationsStartedCount), a heartbeat whose deadline passes before its
turn is a TimedOutBrokerHeartbeatCount and an EventQueueOperationsTimedOutCount,
TimeSinceLastHeartbeatReceivedMs is the active controller's only and capped at the session
timeout, the election meters count what replay saw (RECOVERING: unclean; a leader from the
ELR), and MetadataErrorCount counts records that could not be applied. No Java, no sockets."""
from __future__ import annotations

import asyncio
import types
import uuid

import pytest

from kafkawire.controller.frames import frame
from kafkawire.net.config import parse_server_config
from kafkawire.raft.node.metrics import CounterRate, RaftMetrics
from kafkawire.raft.node.prometheus import controller_families, exposition

from .harness import Ctx, FakeQuorum, Running, add_controller, heartbeat, run, until
from .test_torn_writes import create, held_leader, lead_with_a_broker

parser = pytest.importorskip("prometheus_client.parser")

CONTROLLER = "kafka_controller_kafkacontroller_"
EVENT_MANAGER = "kafka_controller_controllereventmanager_"
STATS = "kafka_controller_controllerstats_"
CONFIG = parse_server_config("process.roles=controller\nnode.id=1\nlisteners=CONTROLLER://127.0.0.1:9093\n"
                             "controller.listener.names=CONTROLLER\n"
                             "controller.quorum.bootstrap.servers=127.0.0.1:9093\n")
TOPIC_ID = uuid.UUID(int=77)


def scrape(controller) -> dict[tuple[str, tuple], float]:
    """(sample name, sorted labels) -> value of the controller's families, as Prometheus parses them."""
    driver = types.SimpleNamespace(running=types.SimpleNamespace(status=lambda: types.SimpleNamespace(kraft_version=0)),
                                   applied_offset=controller.applied_offset + 1, high_watermark=lambda: 0,
                                   metrics=types.SimpleNamespace(new_leaders=0))
    text = exposition(lambda: list(controller_families(driver, controller, CONFIG)))().decode()
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in parser.text_string_to_metric_families(text) for s in family.samples}


async def _held_create(quorum, leader, name: str) -> asyncio.Future:
    """A CreateTopics whose records are appended and held (not committed) until ``quorum.release()``."""
    quorum.holding = True
    write = asyncio.ensure_future(leader.handlers()[19].handle(Ctx(7), create(name)))
    await until(lambda: quorum.held, "a write appended and held")
    return write


def test_writes_are_the_event_queue_counted_and_timed():
    quorum = FakeQuorum()
    leader = add_controller(quorum, 1)

    async def go():
        async with Running(leader):
            await lead_with_a_broker(quorum, leader)
            await leader.handlers()[19].handle(Ctx(7), create("t"))
    run(go())
    m = scrape(leader)
    started = leader.stats.operations_started
    assert started >= 4         # registrations, the heartbeat, the topic (activation is not a queued write)
    assert m[(CONTROLLER + "eventqueueoperationsstartedcount", ())] == started
    assert m[(EVENT_MANAGER + "eventqueuetimems_count", ())] == started
    assert m[(EVENT_MANAGER + "eventqueueprocessingtimems_count", ())] == started
    assert {labels for name, labels in m if name == EVENT_MANAGER + "eventqueuetimems"} == {
        (("quantile", q),) for q in ("0.50", "0.75", "0.95", "0.98", "0.99", "0.999")}
    assert m[(CONTROLLER + "eventqueueoperationstimedoutcount", ())] == 0
    assert m[(CONTROLLER + "metadataerrorcount", ())] == 0
    assert 0 <= m[(EVENT_MANAGER + "avgidleratio", ())] <= 1


def test_the_queue_time_is_how_long_a_write_waited_for_its_turn():
    """A CreateTopics queued behind a write whose commit is held waits until that write is
    applied: the 0.999 quantile is that wait on the controller's clock."""
    quorum, leader = held_leader()
    leader.pipeline.max_uncommitted_records = 1     # the held write fills the pipeline: the next waits its turn

    async def go():
        async with Running(leader):
            await lead_with_a_broker(quorum, leader)
            first = await _held_create(quorum, leader, "a")
            second = asyncio.ensure_future(leader.handlers()[19].handle(Ctx(7), create("b")))
            await asyncio.sleep(0)
            leader.clock.now += 1234
            quorum.release()
            await asyncio.gather(first, second)
    run(go())
    assert scrape(leader)[(EVENT_MANAGER + "eventqueuetimems", (("quantile", "0.999"),))] == 1234


def test_a_heartbeat_whose_deadline_passes_before_its_turn_is_counted_timed_out():
    quorum, leader = held_leader()
    leader.pipeline.max_uncommitted_records = 1     # the held write fills the pipeline: the next waits its turn

    async def go():
        async with Running(leader):
            epoch = await lead_with_a_broker(quorum, leader)
            held = await _held_create(quorum, leader, "a")
            beat = asyncio.ensure_future(leader.handlers()[63].handle(Ctx(0), heartbeat(1, epoch, quorum.end_offset)))
            await asyncio.sleep(0)
            leader.clock.now += 5001          # past the heartbeat's 5 s deadline while it waits its turn
            quorum.release()
            await held
            return await beat
    answer = run(go())
    assert answer.error_code == 7            # REQUEST_TIMED_OUT
    m = scrape(leader)
    assert m[(CONTROLLER + "timedoutbrokerheartbeatcount", ())] == leader.stats.timed_out_heartbeats == 1
    assert m[(CONTROLLER + "eventqueueoperationstimedoutcount", ())] == 1


def test_time_since_the_last_heartbeat_is_the_active_controller_s_and_capped_at_the_session_timeout():
    quorum = FakeQuorum()
    leader = add_controller(quorum, 1)
    follower = add_controller(quorum, 2)
    name, broker_1 = CONTROLLER + "timesincelastheartbeatreceivedms", (("broker", "1"),)

    async def go():
        async with Running(leader, follower):
            epoch = await lead_with_a_broker(quorum, leader)
            await until(lambda: 1 in follower.image.brokers, "the follower replayed the registration")
            seen = [scrape(leader)[(name, broker_1)]]
            leader.clock.now += 1234
            seen.append(scrape(leader)[(name, broker_1)])
            leader.clock.now += 60_000
            seen.append(scrape(leader)[(name, broker_1)])
            await leader.handlers()[63].handle(Ctx(0), heartbeat(1, epoch, quorum.end_offset))
            seen.append(scrape(leader)[(name, broker_1)])
            return seen
    assert run(go()) == [0, 1234, CONFIG.broker_session_timeout_ms, 0]
    assert CONFIG.broker_session_timeout_ms == 9000
    assert not [key for key in scrape(follower) if key[0] == name]


def test_elections_and_errors_are_what_replay_saw_on_every_controller():
    quorum = FakeQuorum()
    controllers = [add_controller(quorum, 1), add_controller(quorum, 2)]
    quorum.commit([frame("TopicRecord", name="t", topic_id=TOPIC_ID),
                   frame("PartitionRecord", 2, partition_id=0, topic_id=TOPIC_ID, replicas=[1, 2, 3], isr=[1],
                         leader=1, leader_epoch=0, partition_epoch=0, directories=[uuid.UUID(int=0)] * 3,
                         eligible_leader_replicas=[2], last_known_elr=[])])
    quorum.commit([frame("PartitionChangeRecord", 2, partition_id=0, topic_id=TOPIC_ID, leader=2, isr=[2],
                         eligible_leader_replicas=[])])                       # a leader from the ELR
    quorum.commit([frame("PartitionChangeRecord", 0, partition_id=0, topic_id=TOPIC_ID, leader=3, isr=[3],
                         leader_recovery_state=1)])                           # unclean: RECOVERING
    quorum.commit([b"\x00not a metadata record"])
    for controller in controllers:
        m = scrape(controller)
        assert controller.replay_stats.unclean_elections == m[(STATS + "uncleanleaderelections_total", ())] == 1
        assert controller.replay_stats.elr_elections == m[(STATS + "electionfromeligibleleaderreplicas_total", ())] == 1
        assert len(controller.state.problems) == m[(CONTROLLER + "metadataerrorcount", ())] == 1


def test_replay_counts_survive_a_snapshot_load():
    """Kafka's meters and error count are the process's: loading a snapshot does not reset them."""
    quorum = FakeQuorum()
    controller = add_controller(quorum, 1)
    quorum.commit([b"\x00not a metadata record"])
    controller.on_snapshot_loaded(types.SimpleNamespace(offset=quorum.end_offset, epoch=1), [])
    assert scrape(controller)[(CONTROLLER + "metadataerrorcount", ())] == 1


def test_poll_idle_ratio_is_the_share_of_the_windows_without_raft_work():
    """poll-idle-ratio-avg over the sampled windows: 500 ms of stepping the core in 2 s is 0.75
    idle; with nothing measured yet it is 1.0, Kafka's default."""
    now = [0.0]
    metrics = RaftMetrics(1, samples=2, window_ms=1000)
    metrics.busy = CounterRate(samples=2, window_ms=1000, clock=lambda: now[0])
    assert metrics.poll_idle_ratio() == 1.0
    now[0], metrics.busy_ms = 2000.0, 500.0
    assert metrics.poll_idle_ratio() == 0.75
    assert metrics.snapshot()["poll-idle-ratio-avg"] == 0.75


def _walked(image) -> tuple[int, int, int]:
    partitions = [p for topic in image.topics_by_id.values() for p in topic.partitions.values()]
    return (len(partitions), sum(p.leader == -1 for p in partitions),
            sum(p.leader != (p.replicas[0] if p.replicas else -1) for p in partitions))


def test_partition_counts_come_from_the_index_and_are_the_committed_images_while_writes_are_ahead(monkeypatch):
    """GlobalPartitionCount, OfflinePartitionsCount and PreferredReplicaImbalanceCount describe the
    committed image, as Kafka's (ControllerMetricsChanges over the published image): a fencing
    applied ahead of its commit (broker 1's partitions lose their leader) shows only once
    committed, though the partition index it is served from already holds it."""
    from kafkawire.raft.node import prometheus
    monkeypatch.setattr(prometheus, "_walked_counts", lambda image: pytest.fail("the scrape walked the image"))
    quorum, leader = held_leader()
    seen = []

    def counts():
        m = scrape(leader)
        served = tuple(int(m[(CONTROLLER + name, ())]) for name in (
            "globalpartitioncount", "offlinepartitionscount", "preferredreplicaimbalancecount"))
        index = leader.state.partition_index
        seen.append((leader.committed.ahead, served, _walked(leader.image),
                     (index.partition_count(), index.leaderless_count(), index.imbalanced_count())))

    async def go():
        async with Running(leader):
            epoch = await lead_with_a_broker(quorum, leader)
            await leader.handlers()[19].handle(Ctx(7), create("t"))
            counts()
            quorum.holding = True
            fence = asyncio.ensure_future(leader.handlers()[63].handle(
                Ctx(0), heartbeat(1, epoch, quorum.end_offset, want_fence=True)))
            await until(lambda: quorum.held, "the fencing appended and held")
            counts()
            quorum.release()
            await fence
            counts()
    run(go())
    assert [ahead for ahead, *_ in seen] == [0, 1, 0]
    assert [served for _, served, _, _ in seen] == [(1, 0, 0), (1, 0, 0), (1, 1, 1)]
    assert all(served == walked for _, served, walked, _ in seen)
    assert seen[1][3] == (1, 1, 1)          # the index was ahead of what the metrics served


def test_the_walk_a_scrape_falls_back_to_counts_what_the_index_counts():
    """When the writes ahead touched too many partitions to adjust the index's counts
    (CommittedImage.partition_counts gives None), the scrape walks the committed image, in steps:
    the same numbers."""
    from kafkawire.raft.node.prometheus import PAUSE, _image_families
    quorum = FakeQuorum()
    controller = add_controller(quorum, 1)
    records = [frame("TopicRecord", name="t", topic_id=TOPIC_ID)]
    for pid, (replicas, leader) in enumerate([([1, 2], 1), ([1, 2], 2), ([2, 1], -1), ([3], 3)]):
        records.append(frame("PartitionRecord", partition_id=pid, topic_id=TOPIC_ID, replicas=replicas,
                             isr=[r for r in replicas if r == leader], leader=leader, leader_epoch=0,
                             partition_epoch=0))
    quorum.commit(records)

    def gauges(counts):
        return {f.name: f.samples for f in _image_families(controller.image, counts) if f is not PAUSE}
    indexed = controller.committed.partition_counts(0)
    assert indexed == (4, 1, 2)
    assert gauges(None) == gauges(indexed)
