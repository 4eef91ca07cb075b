"""The counts behind a broker's metrics (kafkawire.broker.metrics), in process: ReplicaManager's
ISR meters counted at an AlterPartition's answer as Kafka's Partition counts them."""
from __future__ import annotations

import asyncio
import uuid
from types import SimpleNamespace

from kafkawire.broker.partition import LeaderPartition
from kafkawire.broker.replica_state import LeaderReplicas
from kafkawire.messages.alter_partition_response import AlterPartitionResponse, PartitionData, TopicData
from kafkawire.protocol.error_codes import Errors
from kafkawire.records.builder import build_batch

TOPIC_ID = uuid.UUID(int=5)
WAIT_S = 5


class ControllerAnsweringBroker:
    """What Replication reads of a broker, with a controller that commits each AlterPartition as
    sent (bumping the partition epoch), or answers ``error`` while it is set."""

    def __init__(self):
        self.node_id = 1
        self.config = SimpleNamespace(replica_lag_time_max_ms=30_000)
        self.lifecycle = SimpleNamespace(broker_epoch=10)
        self.brokers = {2: SimpleNamespace(fenced=False, epoch=20, in_controlled_shutdown=False)}
        self.partitions = {}
        self.error = Errors.NONE
        self.answered = 0

    def image(self):
        return SimpleNamespace(brokers=self.brokers)

    async def send_to_controller(self, request, timeout_ms):
        [topic] = request.topics
        [p] = topic.partitions
        self.answered += 1
        return AlterPartitionResponse(topics=[TopicData(topic_id=topic.topic_id, partitions=[PartitionData(
            partition_index=p.partition_index, error_code=self.error, leader_id=1, leader_epoch=p.leader_epoch,
            isr=[b.broker_id for b in p.new_isr_with_epochs], partition_epoch=p.partition_epoch + 1)])])

    def data_appended(self):
        pass


def led_with_follower_out_of_isr(tmp_path) -> LeaderPartition:
    partition = LeaderPartition.open(str(tmp_path), "t", 0, TOPIC_ID, leader_epoch=0, high_watermark=0)
    partition.log.append(build_batch([(None, b"v")]), assign_offsets=True, leader_epoch=0)
    partition.replicas = LeaderReplicas(1, max_lag_ms=30_000, broker_epoch=lambda b: 20)
    partition.replicas.make_leader(replicas=[1, 2], isr=[1], leader_epoch=0, partition_epoch=0,
                                   log_end_offset=1, now_ms=0, is_new_leader=True)
    return partition


def test_an_isr_expand_and_shrink_committed_by_the_controller_are_counted_once_each(tmp_path):
    """Partition.handleAlterPartitionUpdate marks IsrExpands or IsrShrinks once per committed
    change; handleAlterPartitionError marks FailedIsrUpdates (and a retried change counts again
    only when it is answered)."""
    from kafkawire.broker.replication import Replication
    broker, now = ControllerAnsweringBroker(), [0]
    replication = Replication(broker, clock=lambda: now[0])
    partition = led_with_follower_out_of_isr(tmp_path)
    broker.partitions[("t", 0)] = partition
    meters = replication.isr_meters

    async def until(condition):
        async with asyncio.timeout(WAIT_S):
            while not condition():
                await asyncio.sleep(0)

    async def go():
        replication.follower_fetched(partition, 2, 20, fetch_offset=1, log_start_offset=0, leader_end_offset=1)
        await until(lambda: not partition.replicas.state.in_flight)
        assert partition.replicas.state.isr == {1, 2}
        assert (meters.expands, meters.shrinks, meters.failed) == (1, 0, 0)
        replication.follower_fetched(partition, 2, 20, fetch_offset=1, log_start_offset=0, leader_end_offset=1)
        assert (meters.expands, broker.answered) == (1, 1)         # in the ISR already: no change sent
        partition.log.append(build_batch([(None, b"w")]), assign_offsets=True, leader_epoch=0)
        now[0] = 60_000                                             # the follower has lagged past the max lag
        broker.error = Errors.INVALID_UPDATE_VERSION                # refused: pending until the metadata says more
        replication.maybe_shrink_isr()
        await until(lambda: broker.answered == 2)
        assert (meters.expands, meters.shrinks, meters.failed) == (1, 0, 1)
        partition.replicas.make_leader(replicas=[1, 2], isr=[1, 2], leader_epoch=0, partition_epoch=1,
                                       log_end_offset=2, now_ms=0, is_new_leader=False)
        broker.error = Errors.NONE
        replication.maybe_shrink_isr()
        await until(lambda: not partition.replicas.state.in_flight)
        assert partition.replicas.state.isr == {1}
        assert (meters.expands, meters.shrinks, meters.failed) == (1, 1, 1)
        replication.close()
    asyncio.run(go())


def scraped(families) -> dict[tuple[str, tuple], float]:
    """(sample name, sorted labels) -> value of ``families`` rendered for the endpoint, parsed by
    prometheus_client's own text parser."""
    from prometheus_client.parser import text_string_to_metric_families

    from kafkawire.net.metrics_http import exposition
    text = exposition(lambda: list(families))().decode()
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


def test_the_partition_and_log_gauges_of_a_led_and_a_followed_partition(tmp_path):
    """Kafka's Partition gauges on every replica held (a follower's read 0 but LastStableOffsetLag),
    its Log gauges on every local log, with topic and partition labels."""
    from kafkawire.broker.follower import FollowerReplica
    from kafkawire.broker.metrics import BrokerTopicStats, IsrUpdateMeters, broker_families
    from kafkawire.net.request_metrics import RequestMetrics
    led = led_with_follower_out_of_isr(tmp_path / "led")          # replicas 1 and 2, ISR {1}
    led.log.append(build_batch([(None, b"w" * 2_000_000)]), assign_offsets=True, leader_epoch=0)
    followed = LeaderPartition.open(str(tmp_path / "followed"), "f", 3, uuid.UUID(int=6), leader_epoch=0,
                                    high_watermark=0)
    followed.log.append(build_batch([(None, b"v"), (None, b"v")]), assign_offsets=True, leader_epoch=0)
    broker = SimpleNamespace(
        lifecycle=None, partitions={("t", 0): led}, image=lambda: None, offline_partitions={},
        replica_roles=SimpleNamespace(followers={("f", 3): FollowerReplica(followed, leader_id=2, leader_epoch=0)}),
        topic_stats=BrokerTopicStats(), replication=SimpleNamespace(isr_meters=IsrUpdateMeters()),
        request_metrics=RequestMetrics(), quotas=no_quotas(),
        telemetry=no_telemetry(), config=SimpleNamespace(metrics_jmx_include=".*", metrics_jmx_exclude=""))
    m = scraped(broker_families(broker))
    t0, f3 = (("partition", "0"), ("topic", "t")), (("partition", "3"), ("topic", "f"))
    for name, led_value, followed_value in [("underreplicated", 1, 0), ("underminisr", 0, 0), ("atminisr", 1, 0),
                                            ("insyncreplicascount", 1, 0), ("replicascount", 2, 0),
                                            ("laststableoffsetlag", 0, 0)]:
        assert (m[(f"kafka_cluster_partition_{name}", t0)], m[(f"kafka_cluster_partition_{name}", f3)]) == \
            (led_value, followed_value), name
    assert (m[("kafka_log_log_logendoffset", t0)], m[("kafka_log_log_logendoffset", f3)]) == (2, 2)
    assert m[("kafka_log_log_logstartoffset", t0)] == 0 and m[("kafka_log_log_numlogsegments", f3)] == 1
    assert m[("kafka_log_log_size", t0)] == led.log.size > 2_000_000      # written with Go's exponent form
    assert m[("kafka_server_replicamanager_underreplicatedpartitions", ())] == 1
    assert m[("kafka_server_replicamanager_partitioncount", ())] == 2
    # metrics.jmx.exclude / include on the MBean names, as Kafka's JmxReporter
    broker.config.metrics_jmx_exclude = "kafka.cluster:type=Partition,.*"
    m = scraped(broker_families(broker))
    assert not any(name.startswith("kafka_cluster_partition_") for name, _ in m)
    assert m[("kafka_log_log_logendoffset", f3)] == 2
    broker.config.metrics_jmx_exclude, broker.config.metrics_jmx_include = "", r"kafka\.log:type=Log,name=Size,topic=f,.*"
    m = scraped(broker_families(broker))
    assert [key for key in m if key[0].startswith(("kafka_log_log_", "kafka_cluster_"))] == [("kafka_log_log_size", f3)]
    led.close()
    followed.close()


def no_telemetry():
    from kafkawire.broker.telemetry_apis import TelemetryApis
    return TelemetryApis(lambda: None, max_bytes=1024, enabled=False)


def no_quotas() -> SimpleNamespace:
    from kafkawire.net.client_quotas import ClientQuotaManager
    return SimpleNamespace(produce=ClientQuotaManager(11, 1), fetch=ClientQuotaManager(11, 1),
                           request=ClientQuotaManager(11, 1))


def test_the_quota_metrics_of_a_throttled_and_an_unthrottled_client():
    """ClientQuotaManager's metrics (kafka.server:type=Produce,client-id=C ``byte-rate`` and
    ``throttle-time``): the rate of each quota-sharing group, the mean of the throttles recorded
    (NaN before any), a tag the quota does not name left out."""
    import math

    from kafkawire.broker.metrics import quota_families
    from kafkawire.net.client_quotas import QuotaIndex
    quotas = no_quotas()
    produce, now = quotas.produce, [0]
    produce.clock = lambda: now[0]
    index = QuotaIndex({(None, "p"): 100.0, (None, "q"): 1e9})
    produce.record(index, "alice", "q", 10, now_ms=0)
    throttle = produce.record(index, "alice", "p", 1500, now_ms=0)      # 150 B/s over 10 s against 100 B/s
    produce.throttled(index, "alice", "p", throttle, now_ms=0)
    produce.throttled(index, "alice", "p", throttle + 2000, now_ms=0)
    m = scraped(quota_families(quotas))
    p, q = (("clientId", "p"), ("resource", "Produce")), (("clientId", "q"), ("resource", "Produce"))
    assert (throttle, m[("kafka_server_quota_byte_rate", p)], m[("kafka_server_quota_byte_rate", q)]) == (5000, 150, 1)
    assert m[("kafka_server_quota_throttle_time", p)] == 6000
    assert math.isnan(m[("kafka_server_quota_throttle_time", q)])
    now[0] = 120_000                     # two metrics windows of 30 s later: the throttles have expired
    assert math.isnan(scraped(quota_families(quotas))[("kafka_server_quota_throttle_time", p)])


def test_each_segment_flush_is_timed_in_log_flush_stats(tmp_path):
    """LogFlushRateAndTimeMs counts each segment flushed, as Kafka's LogSegment.flush: the segment
    a roll closes, and each segment written since the last flush of a log."""
    from kafkawire.broker.metrics import log_flush_family
    from kafkawire.storage.flush_stats import LOG_FLUSHES
    from kafkawire.storage.log import Log
    before = LOG_FLUSHES.count
    with Log(tmp_path) as log:
        log.append(build_batch([(None, b"v")]), assign_offsets=True)
        log.roll()                                                  # the closed segment: one
        log.append(build_batch([(None, b"w")]), assign_offsets=True)
        log.flush()                                                 # the active segment written since: one
        log.flush()                                                 # nothing written since: none
    assert LOG_FLUSHES.count - before == 2
    m = scraped([log_flush_family()])
    assert m[("kafka_log_logflushstats_logflushrateandtimems_count", ())] == LOG_FLUSHES.count
    assert m[("kafka_log_logflushstats_logflushrateandtimems", (("quantile", "0.999"),))] >= 0


class _StandInLog:
    log_start_offset, log_end_offset, size, segment_count = 0, 7, 490, 1


class _StandInPartition:
    """What the families read of a led partition, for a scrape of thousands of them."""
    log = _StandInLog()
    producers = SimpleNamespace(producers={})

    def __init__(self, topic, index):
        self.topic, self.partition = topic, index
        self.replicas = SimpleNamespace(state=SimpleNamespace(isr=(0, 1)), followers={1: None, 2: None},
                                        effective_min_isr=2)

    def high_watermark(self):
        return 7

    def last_stable_offset(self):
        return 7


def test_a_scrape_of_many_partitions_gives_the_loop_back_between_steps_and_renders_the_same_body(monkeypatch):
    """A broker's scrape walks every partition held (ten samples each); rendered in steps it
    yields to the event loop at its PAUSEs once a step's budget is spent, so other work runs
    during it, and the body is byte for byte the one rendered in one go."""
    from kafkawire.broker.metrics import BrokerTopicStats, IsrUpdateMeters, broker_families
    from kafkawire.broker.partition_metrics import STEP
    from kafkawire.net import metrics_http
    from kafkawire.net.request_metrics import RequestMetrics
    count = 20 * STEP
    broker = SimpleNamespace(
        lifecycle=None, image=lambda: None, offline_partitions={}, replica_roles=SimpleNamespace(followers={}),
        partitions={("t", p): _StandInPartition("t", p) for p in range(count)},
        topic_stats=BrokerTopicStats(), replication=SimpleNamespace(isr_meters=IsrUpdateMeters()),
        request_metrics=RequestMetrics(), quotas=no_quotas(), telemetry=no_telemetry(),
        config=SimpleNamespace(metrics_jmx_include=".*", metrics_jmx_exclude=""))
    render = metrics_http.exposition(lambda: broker_families(broker))
    whole = render()
    assert whole.count(b'kafka_log_log_logendoffset{partition="') == count
    monkeypatch.setattr(metrics_http, "STEP_BUDGET_S", 0.0)      # every PAUSE is a step

    async def scrape_beside_a_ticker():
        turns = 0
        done = asyncio.Event()

        async def ticker():
            nonlocal turns
            while not done.is_set():
                turns += 1
                await asyncio.sleep(0)
        task = asyncio.ensure_future(ticker())
        body = b"".join(await render.in_steps())
        done.set()
        await task
        return body, turns
    body, turns = asyncio.run(scrape_beside_a_ticker())
    assert body == whole
    # the led partitions are walked twice (their ISR shapes, then their samples) and summed once,
    # a PAUSE every STEP partitions each time, and one more step per per-partition family
    assert turns >= 3 * (count // STEP)
