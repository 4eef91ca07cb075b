"""A broker's metrics as Kafka's broker names them, for the node's Prometheus endpoint
(kafkawire.net.metrics_http), renamed by the JMX exporter's usual Kafka rules as
kafkawire.raft.node.prometheus says:

* ``kafka.server:type=ReplicaManager,name=N`` ``Value`` is ``kafka_server_replicamanager_n``:
  LeaderCount, PartitionCount, UnderReplicatedPartitions, UnderMinIsrPartitionCount,
  AtMinIsrPartitionCount, ReassigningPartitions, OfflineReplicaCount, ProducerIdCount, with
  ReplicaManager's rules (the ISR a leader holds; min.insync.replicas at most the replication
  factor; reassigning: the leader's partition has replicas being added or removed);
* a BrokerTopicMetrics meter ``name=XPerSec`` is the counter
  ``kafka_server_brokertopicmetrics_x_total``: without a label for all topics, with a
  ``topic`` label for one (the exporter's rule for a meter with a key), made at a topic's first
  mark as Kafka makes its per-topic meters; the replication meters are all-topics only, as in
  Kafka;
* ReplicaManager's meters IsrExpandsPerSec, IsrShrinksPerSec, FailedIsrUpdatesPerSec are the
  counters ``kafka_server_replicamanager_isrexpands_total`` ..., counted by IsrUpdateMeters
  where Kafka's Partition marks them;
* ``kafka.server:type=KafkaServer,name=BrokerState`` is ``kafka_server_kafkaserver_brokerstate``
  with the values of Kafka's BrokerState;
* the per-partition Partition and Log gauges: kafkawire.broker.partition_metrics;
* ``kafka.log:type=LogManager``: the offline and cordoned log directories (log_manager_families);
* share groups' metrics (ShareGroupMetrics, SharePartitionMetrics, the group coordinator's
  share-group counts, the BrokerTopicMetrics share meters): kafkawire.broker.share_metrics.

Values are read when scraped; the meters are plain counts kept by the produce and fetch paths
(``BrokerTopicStats.mark``), a dict look-up and an add each.
"""
from __future__ import annotations

from typing import Iterator

from kafkawire.net.metrics_http import PAUSE, Family, FamilyOrPause, gauge
from kafkawire.net.request_metrics import QUANTILES, percentile
from kafkawire.storage.flush_stats import LOG_FLUSHES

from .partition_metrics import STEP, LedShape, partition_families
from .replica_state import EXPAND, SHRINK
from .share_metrics import FAILED_SHARE_ACK, FAILED_SHARE_FETCH, TOTAL_SHARE_ACK, TOTAL_SHARE_FETCH, share_families
from .telemetry_exporter import telemetry_families

REPLICA_MANAGER = "kafka_server_replicamanager_"
TOPIC_METRICS = "kafka_server_brokertopicmetrics_"
# The meters, by the name their MBean has without "PerSec", and what each counts (Kafka's descriptions).
MESSAGES_IN, BYTES_IN, BYTES_OUT = "MessagesIn", "BytesIn", "BytesOut"
TOTAL_PRODUCE, FAILED_PRODUCE = "TotalProduceRequests", "FailedProduceRequests"
TOTAL_FETCH, FAILED_FETCH = "TotalFetchRequests", "FailedFetchRequests"
REPLICATION_BYTES_IN, REPLICATION_BYTES_OUT = "ReplicationBytesIn", "ReplicationBytesOut"
TOPIC_METERS = {MESSAGES_IN: "messages", BYTES_IN: "bytes", BYTES_OUT: "bytes", TOTAL_PRODUCE: "requests",
                FAILED_PRODUCE: "requests", TOTAL_FETCH: "requests", FAILED_FETCH: "requests",
                **dict.fromkeys((TOTAL_SHARE_FETCH, FAILED_SHARE_FETCH, TOTAL_SHARE_ACK, FAILED_SHARE_ACK), "requests")}
ALL_TOPICS_ONLY = {REPLICATION_BYTES_IN: "bytes", REPLICATION_BYTES_OUT: "bytes"}
# Kafka's BrokerState values (org.apache.kafka.metadata.BrokerState), by the lifecycle's state names.
BROKER_STATES = {"STARTING": 1, "RECOVERY": 2, "RUNNING": 3, "PENDING_CONTROLLED_SHUTDOWN": 6, "SHUTTING_DOWN": 7}
NOT_RUNNING = 0


class IsrUpdateMeters:
    """ReplicaManager's IsrExpandsPerSec, IsrShrinksPerSec and FailedIsrUpdatesPerSec as counts,
    marked where Kafka's Partition marks them (kafkawire.broker.replication, at an AlterPartition's answer)."""
    __slots__ = ("expands", "shrinks", "failed")

    def __init__(self):
        self.expands = self.shrinks = self.failed = 0

    def committed(self, pending: str | None) -> None:
        """The controller committed a change the leader made: ``pending`` is its kind ("expand" or "shrink")."""
        if pending == EXPAND:
            self.expands += 1
        elif pending == SHRINK:
            self.shrinks += 1

    def families(self) -> Iterator[Family]:
        for name, what, count in (("isrexpands", "IsrExpandsPerSec: ISR expansions committed", self.expands),
                                  ("isrshrinks", "IsrShrinksPerSec: ISR shrinks committed", self.shrinks),
                                  ("failedisrupdates", "FailedIsrUpdatesPerSec: ISR changes the controller "
                                   "refused or that failed", self.failed)):
            yield Family(REPLICA_MANAGER + name, what, [({}, float(count))], kind="counter")


class BrokerTopicStats:
    """Kafka's BrokerTopicStats: the meters' counts, for all topics and per topic."""

    def __init__(self):
        self.all_topics: dict[str, int] = dict.fromkeys([*TOPIC_METERS, *ALL_TOPICS_ONLY], 0)
        self.topics: dict[str, dict[str, int]] = {}

    def mark(self, topic: str, meter: str, n: int = 1) -> None:
        """Count ``n`` on ``meter`` for ``topic`` and for all topics."""
        self.all_topics[meter] += n
        counts = self.topics.get(topic)
        if counts is None:
            counts = self.topics[topic] = dict.fromkeys(TOPIC_METERS, 0)
        counts[meter] += n

    def mark_all_topics(self, meter: str, n: int) -> None:
        """The all-topics meters only (replication bytes)."""
        self.all_topics[meter] += n

    def remove_topic(self, topic: str) -> None:
        """A deleted topic's meters go, as BrokerTopicStats.removeMetrics drops them."""
        self.topics.pop(topic, None)

    def families(self) -> Iterator[Family]:
        for meter, unit in {**TOPIC_METERS, **ALL_TOPICS_ONLY}.items():
            samples = [({}, float(self.all_topics[meter]))]
            if meter in TOPIC_METERS:
                samples += [({"topic": topic}, float(counts[meter])) for topic, counts in sorted(self.topics.items())]
            yield Family(f"{TOPIC_METRICS}{meter.lower()}", f"{meter}PerSec: the {unit} counted so far",
                         samples, kind="counter")


def broker_families(broker, *, requests: bool = True) -> Iterator[FamilyOrPause]:
    """Everything a broker exports (see the module docstring), read now; ``requests=False``
    leaves out its request metrics (a combined node's endpoint exports them with its controller's)."""
    lifecycle = broker.lifecycle
    state = NOT_RUNNING if lifecycle is None else BROKER_STATES.get(lifecycle.state, NOT_RUNNING)
    yield gauge("kafka_server_kafkaserver_brokerstate", "The broker's state (Kafka's BrokerState values)", state)
    led: list[LedShape] = []
    yield from _collect_led_shapes(broker, led)
    yield from replica_manager_families(broker, led)
    yield from broker.topic_stats.families()
    yield from partition_families(broker, led)
    if requests:
        yield from broker.request_metrics.families()
    yield from quota_families(broker.quotas)
    yield log_flush_family()
    if hasattr(broker, "log_dirs"):                     # (a stand-in broker of a test may have none)
        yield from log_manager_families(broker.log_dirs)
    yield from share_families(broker)                    # share groups (KIP-932): kafkawire.broker.share_metrics
    yield from telemetry_families(broker.telemetry)      # pushed client metrics (KIP-714), if on


def log_manager_families(log_dirs) -> Iterator[Family]:
    """``kafka.log:type=LogManager``: OfflineLogDirectoryCount and CordonedLogDirectoryCount, and
    per directory (a ``logDirectory`` label, its absolute path) LogDirectoryOffline and
    LogDirectoryCordoned (KIP-1066), 1 or 0."""
    name = "kafka_log_logmanager_"
    yield gauge(name + "offlinelogdirectorycount", "Log directories offline", len(log_dirs.offline))
    yield gauge(name + "cordonedlogdirectorycount", "Log directories cordoned", len(log_dirs.cordoned))
    for attribute, held in (("logdirectoryoffline", log_dirs.offline), ("logdirectorycordoned", log_dirs.cordoned)):
        yield Family(name + attribute, f"{attribute}: 1 when the directory is", [
            ({"logDirectory": path}, float(path in held)) for path in log_dirs.paths])


def log_flush_family() -> Family:
    """``kafka.log:type=LogFlushStats,name=LogFlushRateAndTimeMs``, a Yammer timer in ms, as the
    exporter's rules render one: quantile-labelled gauges of its recent durations (not rounded:
    a timer's snapshot is in its duration unit) and ``_count``."""
    count, recent = LOG_FLUSHES.snapshot()
    ordered = sorted(recent)
    return Family("kafka_log_logflushstats_logflushrateandtimems", "LogFlushRateAndTimeMs: segment flushes (ms)",
                  [({"quantile": label}, percentile(ordered, q)) for label, q in QUANTILES],
                  kind="summary", count=count)


# The quota types' MBean types and the name of each one's rate (Kafka's ClientQuotaManager metrics).
QUOTA_RATES = (("Produce", "produce", "byte_rate"), ("Fetch", "fetch", "byte_rate"),
               ("Request", "request", "request_time"))


def quota_families(quotas) -> Iterator[Family]:
    """``kafka.server:type=Produce|Fetch|Request,user=U,client-id=C`` (a part the quota does not
    name is left out, as Kafka's JmxReporter leaves out an empty tag) attributes byte-rate or
    request-time and throttle-time, as the exporter's quota rules name them:
    ``kafka_server_quota_byte_rate{resource="Produce",user="U",clientId="C"}`` and
    ``kafka_server_quota_throttle_time{...}`` (the mean throttle of the recent windows, NaN
    with none). One sample per client rate kept, as Kafka has one sensor per quota-sharing group."""
    rates: dict[str, list] = {"byte_rate": [], "request_time": []}
    throttles: list = []
    for resource, attribute, rate_name in QUOTA_RATES:
        for (user, client_id), rate, throttle in getattr(quotas, attribute).measured():
            labels = {"resource": resource}
            if user:
                labels["user"] = user
            if client_id:
                labels["clientId"] = client_id
            rates[rate_name].append((labels, rate))
            throttles.append((labels, throttle))
    yield Family("kafka_server_quota_byte_rate", "byte-rate: the client's bytes per second (Produce, Fetch)",
                 rates["byte_rate"])
    yield Family("kafka_server_quota_request_time", "request-time: the client's share of request handler "
                 "time, in percent", rates["request_time"])
    yield Family("kafka_server_quota_throttle_time", "throttle-time: the client's average throttle (ms)", throttles)


def _collect_led_shapes(broker, shapes: list[LedShape]) -> Iterator:
    """Each led partition's ISR as ReplicaManager reads it (one registration look-up each), into
    ``shapes``, yielding PAUSE every STEP partitions (over the led partitions as they were when it
    began, and the image as it was then)."""
    image = broker.image()
    min_isr_of: dict[str, int] = {}
    for index, partition in enumerate(list(broker.partitions.values())):
        if index % STEP == 0:
            yield PAUSE
        registration = _registration(image, partition)
        isr, replication_factor, min_isr = _isr_shape(broker, registration, partition, min_isr_of, image)
        reassigning = registration is not None and bool(registration.adding_replicas or
                                                        registration.removing_replicas)
        shapes.append((partition, len(isr), replication_factor, min_isr, reassigning))


def replica_manager_families(broker, led: list[LedShape]) -> Iterator[FamilyOrPause]:
    under_replicated = under_min_isr = at_min_isr = reassigning = producer_ids = 0
    for index, (partition, isr, replication_factor, min_isr, moving) in enumerate(led):
        if index % STEP == 0:
            yield PAUSE
        under_replicated += isr < replication_factor
        under_min_isr += isr < min_isr
        at_min_isr += isr == min_isr
        reassigning += moving
        producer_ids += len(partition.producers.producers)
    followed = len(broker.replica_roles.followers)
    yield gauge(REPLICA_MANAGER + "leadercount", "The partitions this broker leads", len(led))
    yield gauge(REPLICA_MANAGER + "partitioncount", "The partitions this broker holds a replica of",
                len(led) + followed)
    yield gauge(REPLICA_MANAGER + "underreplicatedpartitions", "Led partitions whose ISR is smaller than "
                "their replicas", under_replicated)
    yield gauge(REPLICA_MANAGER + "underminisrpartitioncount", "Led partitions whose ISR is below "
                "min.insync.replicas", under_min_isr)
    yield gauge(REPLICA_MANAGER + "atminisrpartitioncount", "Led partitions whose ISR is at min.insync.replicas",
                at_min_isr)
    yield gauge(REPLICA_MANAGER + "reassigningpartitions", "Led partitions being reassigned", reassigning)
    yield gauge(REPLICA_MANAGER + "offlinereplicacount", "Replicas in an offline log directory",
                len(broker.offline_partitions))
    yield gauge(REPLICA_MANAGER + "produceridcount", "Producer ids kept by the led partitions",
                producer_ids)
    yield from broker.replication.isr_meters.families()


def _isr_shape(broker, registration, partition, min_isr_of: dict, image) -> tuple:
    """(ISR, replication factor, effective min ISR) of a led partition: what replication holds,
    else (a partition alone) the committed ``registration`` and the topic's min.insync.replicas."""
    replicas = partition.replicas
    if replicas is not None:
        return replicas.state.isr, len(replicas.followers) + 1, replicas.effective_min_isr
    if registration is None:
        return (broker.node_id,), 1, 1
    min_isr = min_isr_of.get(partition.topic)
    if min_isr is None:
        min_isr = min_isr_of[partition.topic] = broker.topic_configs.produce_settings(
            image, partition.topic).min_insync_replicas
    return registration.isr, len(registration.replicas), min(min_isr, len(registration.replicas))


def _registration(image, partition):
    topic = None if image is None else image.topics_by_name.get(partition.topic)
    return None if topic is None else topic.partitions.get(partition.partition)


__all__ = ["BrokerTopicStats", "broker_families"]
