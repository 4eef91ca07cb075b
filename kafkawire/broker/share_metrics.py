"""Share groups' metrics (KIP-932) as a Kafka 4.3.1 broker names them, for the node's Prometheus
endpoint (kafkawire.broker.metrics), renamed by the JMX exporter's usual Kafka rules:

* ``kafka.server:type=ShareGroupMetrics`` (Kafka's ShareGroupMetrics, Yammer):
  RecordAcknowledgementsPerSec per ``ackType`` (Accept, Release, Reject, Renew: records
  acknowledged, counted once the acknowledgement was written, a batch's whole range when it has
  one type) as the counter ``kafka_server_sharegroupmetrics_recordacknowledgements_total``;
  PartitionLoadTimeMs (reading a share-partition's state from the share coordinator),
  RequestTopicPartitionsFetchRatio per ``group`` (percent of a ShareFetch's partitions that
  acquired records) and TopicPartitionsAcquireTimeMs per ``group`` (from a ShareFetch's first
  try to acquire until it acquired records or gave up, its long poll included) as summaries
  ``kafka_server_sharegroupmetrics_partitionloadtimems{quantile}`` and ``..._count``;
* ``kafka.server:type=SharePartitionMetrics`` per ``group``, ``topic``, ``partition`` (Kafka's
  SharePartitionMetrics, for the share-partitions this broker leads): InFlightMessageCount (the
  in-flight window, end minus start, 0 when nothing is in flight), AcquisitionLockTimeoutPerSec
  (records whose acquisition lock passed, counted when the broker releases them: the next fetch
  or acknowledgement of the share-partition, where Kafka's timer fires at the deadline) as
  ``kafka_server_sharepartitionmetrics_acquisitionlocktimeout_total``, and
  InFlightBatchMessageCount (the records of each acquired range) as a summary;
* ``kafka.server:type=group-coordinator-metrics`` (Kafka's GroupCoordinatorMetrics, the share
  groups' part): ``group-count{protocol="share"}``, ``share-group-count{state}`` (Empty, Stable,
  Dead) and ``share-group-rebalance-count`` / ``-rate`` (group epoch bumps by heartbeats) as
  ``kafka_server_groupcoordinatormetrics_group_count`` ...;
* the BrokerTopicMetrics share meters (TotalShareFetchRequestsPerSec, FailedShareFetchRequestsPerSec,
  TotalShareAcknowledgementRequestsPerSec, FailedShareAcknowledgementRequestsPerSec): counted
  here per topic and exported by kafkawire.broker.metrics with the other topic meters.

* ``kafka.server:type=share-coordinator-metrics`` (Kafka's ShareCoordinatorMetrics):
  ``write-total`` and ``write-rate`` (state writes of one share-partition, a read's new leader
  epoch included), ``write-latency-avg`` / ``-max`` (a WriteShareGroupState request's handling,
  over the sampled windows; NaN with none) and ``last-pruned-offset`` per ``topic`` and
  ``partition`` of ``__share_group_state``, as ``kafka_server_sharecoordinatormetrics_write_total`` ...

Not exported: InFlightBatchCount (Kafka counts its cached batches; kafkawire keeps a state per
record, not per batch), and FetchLockTimeMs and FetchLockRatio (kafkawire has no fetch lock: a
share-partition's acquisition runs in one step of the event loop).
"""
from __future__ import annotations

import math
import time
from collections import deque
from typing import Iterator

from kafkawire.net.metrics_http import Family
from kafkawire.net.request_metrics import QUANTILES, RECENT_SAMPLES, percentile

from .share_partition import ACCEPT, REJECT, RELEASE, RENEW

__all__ = ["ShareMetrics", "ShareCoordinatorMetrics", "share_families", "mark_topics", "TOTAL_SHARE_FETCH", "FAILED_SHARE_FETCH", "TOTAL_SHARE_ACK",
           "FAILED_SHARE_ACK"]

GROUP_METRICS = "kafka_server_sharegroupmetrics_"
PARTITION_METRICS = "kafka_server_sharepartitionmetrics_"
COORDINATOR_METRICS = "kafka_server_groupcoordinatormetrics_"
SHARE_COORDINATOR_METRICS = "kafka_server_sharecoordinatormetrics_"
ACK_TYPE_NAMES = {ACCEPT: "Accept", RELEASE: "Release", REJECT: "Reject", RENEW: "Renew"}
# BrokerTopicMetrics' share meters, by their MBean names without "PerSec"
TOTAL_SHARE_FETCH, FAILED_SHARE_FETCH = "TotalShareFetchRequests", "FailedShareFetchRequests"
TOTAL_SHARE_ACK, FAILED_SHARE_ACK = "TotalShareAcknowledgementRequests", "FailedShareAcknowledgementRequests"
SHARE_GROUP_STATES = ("Empty", "Stable", "Dead")
RATE_WINDOW_S, RATE_SAMPLES = 30.0, 2          # metrics.sample.window.ms, metrics.num.samples defaults


class Histogram:
    """A Yammer histogram as the exporter shows it: quantiles of the recent values, and a count."""
    __slots__ = ("recent", "count")

    def __init__(self):
        self.recent: deque = deque(maxlen=RECENT_SAMPLES)
        self.count = 0

    def update(self, value: float) -> None:
        self.recent.append(value)
        self.count += 1


class WindowedRate:
    """Kafka's Rate of a growing count over its sampled windows (metrics.num.samples x
    metrics.sample.window.ms, the defaults), per second: ``observe`` the count before each
    event (a window starts there), ``rate`` at a scrape."""

    def __init__(self):
        self._starts: deque = deque(maxlen=RATE_SAMPLES)       # (window start, count then)

    def observe(self, total: float) -> None:
        now = time.monotonic()
        if not self._starts or now - self._starts[-1][0] >= RATE_WINDOW_S:
            self._starts.append((now, total))

    def rate(self, total: float) -> float:
        self.observe(total)
        started, then = self._starts[0]
        return (total - then) / max(time.monotonic() - started, (RATE_SAMPLES - 1) * RATE_WINDOW_S)


class ShareCoordinatorMetrics:
    """What the share coordinator counts (kafkawire.broker.share_coordinator_apis marks it)."""

    def __init__(self):
        self.write_rate = WindowedRate()
        self._latencies: deque = deque()                       # (when, ms) within the sampled windows
        self.last_pruned: dict[int, int] = {}                  # __share_group_state partition -> offset

    def record_write_latency(self, started: float) -> None:
        now = time.monotonic()
        self._latencies.append((now, (now - started) * 1000))

    def latencies(self) -> list[float]:
        since = time.monotonic() - RATE_SAMPLES * RATE_WINDOW_S
        while self._latencies and self._latencies[0][0] < since:
            self._latencies.popleft()
        return [ms for _, ms in self._latencies]

    def families(self, write_total: int, topic: str) -> Iterator[Family]:
        name = SHARE_COORDINATOR_METRICS
        latencies = self.latencies()
        yield Family(name + "write_total", "write-total: share-group state write calls", [({}, float(write_total))])
        yield Family(name + "write_rate", "write-rate: share-group state write calls per second",
                     [({}, self.write_rate.rate(write_total))])
        yield Family(name + "write_latency_avg", "write-latency-avg: a share-group state write's time (ms)",
                     [({}, sum(latencies) / len(latencies) if latencies else math.nan)])
        yield Family(name + "write_latency_max", "write-latency-max: the longest share-group state write (ms)",
                     [({}, max(latencies) if latencies else math.nan)])
        yield Family(name + "last_pruned_offset", "last-pruned-offset: where the share-group state topic was "
                     "last pruned", [({"topic": topic, "partition": str(p)}, float(offset))
                                     for p, offset in sorted(self.last_pruned.items())])


class ShareMetrics:
    """What the share-group paths count (kafkawire.broker.share_apis marks them)."""

    def __init__(self):
        self.acknowledged: dict[int, int] = dict.fromkeys(ACK_TYPE_NAMES, 0)
        self.load_time_ms = Histogram()
        self.fetch_ratio: dict[str, Histogram] = {}
        self.acquire_time_ms: dict[str, Histogram] = {}
        self.batch_records: dict[tuple, Histogram] = {}       # (group, topic id, partition) -> acquired ranges
        self.rebalances = WindowedRate()

    def record_acknowledgements(self, batches) -> None:
        """recordAcknowledgement: one type for the batch's whole range, else one per offset (GAP ignored)."""
        for batch in batches:
            types = list(batch.acknowledge_types)
            if len(types) == 1:
                if types[0] in self.acknowledged:
                    self.acknowledged[types[0]] += batch.last_offset - batch.first_offset + 1
                continue
            for kind in types:
                if kind in self.acknowledged:
                    self.acknowledged[kind] += 1

    def record_load(self, started: float) -> None:
        self.load_time_ms.update((time.monotonic() - started) * 1000)

    def record_fetch(self, group_id: str, started: float, acquired: int, requested: int) -> None:
        """A ShareFetch's acquisition ended: TopicPartitionsAcquireTimeMs and RequestTopicPartitionsFetchRatio."""
        self.acquire_time_ms.setdefault(group_id, Histogram()).update(round((time.monotonic() - started) * 1000))
        self.fetch_ratio.setdefault(group_id, Histogram()).update(int(acquired * 100 / requested) if requested else 0)

    def record_acquired(self, key: tuple, acquired) -> None:
        histogram = self.batch_records.get(key)
        if histogram is None:
            histogram = self.batch_records[key] = Histogram()
        for first, last, _ in acquired:
            histogram.update(last - first + 1)

    def forget(self, key: tuple) -> None:
        self.batch_records.pop(key, None)


def _summary(name: str, what: str, histograms: dict) -> Family:
    """Labelled summaries: ``histograms`` maps a label dict (as a tuple of pairs) to a Histogram."""
    samples, counts = [], []
    for labels, histogram in histograms.items():
        ordered = sorted(histogram.recent)
        samples += [({**dict(labels), "quantile": q_label}, percentile(ordered, q)) for q_label, q in QUANTILES]
        counts.append((dict(labels), float(histogram.count)))
    return Family(name, what, samples, kind="summary", counts=counts)


def _partition_labels(image, key: tuple) -> dict | None:
    group_id, topic_id, index = key
    topic = None if image is None else image.topics_by_id.get(topic_id)
    return None if topic is None else {"group": group_id, "topic": topic.name, "partition": str(index)}


def share_families(broker) -> Iterator[Family]:
    share = getattr(getattr(broker, "group_apis", None), "share_apis", None)
    if share is None:                  # a broker without group APIs (a stand-in): none to show
        return
    metrics = share.metrics
    yield Family(GROUP_METRICS + "recordacknowledgements", "RecordAcknowledgementsPerSec: records acknowledged",
                 [({"ackType": ACK_TYPE_NAMES[k]}, float(n)) for k, n in metrics.acknowledged.items()], kind="counter")
    yield _summary(GROUP_METRICS + "partitionloadtimems", "PartitionLoadTimeMs: share-partition state reads (ms)",
                   {(): metrics.load_time_ms})
    yield _summary(GROUP_METRICS + "requesttopicpartitionsfetchratio", "RequestTopicPartitionsFetchRatio: percent "
                   "of a share fetch's partitions that acquired records",
                   {(("group", g),): h for g, h in sorted(metrics.fetch_ratio.items())})
    yield _summary(GROUP_METRICS + "topicpartitionsacquiretimems", "TopicPartitionsAcquireTimeMs: a share fetch's "
                   "time to acquire records (ms)", {(("group", g),): h for g, h in sorted(metrics.acquire_time_ms.items())})
    image = broker.image()
    in_flight, timeouts, batches = [], [], {}
    for key, sp in list(share.partitions.items()):
        labels = _partition_labels(image, key)
        if labels is None:
            continue
        in_flight.append((labels, float(sp.next_offset - sp.start_offset if sp.entries else 0)))
        timeouts.append((labels, float(sp.lock_timeouts)))
        if key in metrics.batch_records:
            batches[tuple(labels.items())] = metrics.batch_records[key]
    yield Family(PARTITION_METRICS + "inflightmessagecount", "InFlightMessageCount: records in the in-flight window",
                 in_flight)
    yield Family(PARTITION_METRICS + "acquisitionlocktimeout", "AcquisitionLockTimeoutPerSec: records whose "
                 "acquisition lock passed", timeouts, kind="counter")
    yield _summary(PARTITION_METRICS + "inflightbatchmessagecount", "InFlightBatchMessageCount: records per "
                   "acquired range", batches)
    for key in [k for k in metrics.batch_records if k not in share.partitions]:
        metrics.forget(key)               # a share-partition no longer led here: its histogram goes too
    yield from _coordinator_families(share.groups, metrics)
    apis = getattr(broker, "share_coordinator_apis", None)
    if apis is not None:
        yield from apis.metrics.families(apis.coordinator.write_calls, apis.store.TOPIC)


def _coordinator_families(groups, metrics: ShareMetrics) -> Iterator[Family]:
    by_state = dict.fromkeys(SHARE_GROUP_STATES, 0)
    for group in list(groups.groups.values()):
        by_state[group.state] = by_state.get(group.state, 0) + 1
    yield Family(COORDINATOR_METRICS + "group_count", "group-count: the groups, by protocol",
                 [({"protocol": "share"}, float(len(groups.groups)))])
    yield Family(COORDINATOR_METRICS + "share_group_count", "share-group-count: the share groups, by state",
                 [({"state": state}, float(n)) for state, n in by_state.items()])
    yield Family(COORDINATOR_METRICS + "share_group_rebalance_count", "share-group-rebalance-count: share group "
                 "rebalances", [({}, float(groups.rebalances))])
    yield Family(COORDINATOR_METRICS + "share_group_rebalance_rate", "share-group-rebalance-rate: share group "
                 "rebalances per second", [({}, metrics.rebalances.rate(groups.rebalances))])


def mark_topics(topic_stats, outcomes, total: str, failed: str) -> None:
    """BrokerTopicStats' share meters: ``total`` once per topic of a request's partitions,
    ``failed`` once per topic with a partition answered with an error; ``outcomes``: (topic
    name, error code) per partition (an unknown topic, named None, is not counted)."""
    topics: dict[str, bool] = {}
    for name, code in outcomes:
        if name is not None:
            topics[name] = topics.get(name, False) or code != 0
    for name, any_failed in topics.items():
        topic_stats.mark(name, total)
        if any_failed:
            topic_stats.mark(name, failed)
