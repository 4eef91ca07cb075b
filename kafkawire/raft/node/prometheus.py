"""The node's metrics as Prometheus scrapes them: ``GET /metrics`` on the node's own event loop,
on when ``metric.reporters`` names ``kafkawire.metrics.PrometheusReporter`` (at
``kafkawire.metrics.prometheus.listener``, http://:9404 by default).

The names are those a Kafka operator's dashboards already use: Kafka's MBeans renamed by the
JMX exporter's usual Kafka rules (Strimzi's kafka-metrics.yaml, which is the jmx_exporter
example kafka-2_0_0.yml plus KRaft rules, ``lowercaseOutputName: true``):

* ``kafka.server:type=raft-metrics`` attribute ``a-b`` (KafkaRaftMetrics) is
  ``kafka_server_raftmetrics_a_b``; the string ``current-state`` is
  ``kafka_server_raftmetrics_current_state{current_state="leader"} 1``.
* ``kafka.controller:type=T,name=N`` ``Value`` (QuorumControllerMetrics,
  ControllerMetadataMetrics) is ``kafka_controller_t_n``, lowercased; a ``broker=ID`` key
  becomes a ``broker`` label.
* a Yammer histogram (EventQueueTimeMs, EventQueueProcessingTimeMs) is the exporter's emulated
  summary: ``kafka_controller_t_n{quantile="0.50"}`` ... ``{quantile="0.999"}`` and
  ``kafka_controller_t_n_count`` (no ``_sum``, as the rules say);
* a Yammer meter ``name=XPerSec`` (the election meters) is the counter ``kafka_controller_t_x_total``.

Every value is read from the node when scraped (the raft core's status, the committed
metadata image, the driver's sampled sensors), never kept a second time.

The endpoint itself (HTTP, the text format) is kafkawire.net.metrics_http; a node with a broker
adds the broker's families (kafkawire.broker.metrics) through ``extra``.
"""
from __future__ import annotations

import itertools
import time
from typing import Callable, Generator, Iterable, Iterator

from kafkawire.net.config import ServerConfig
from kafkawire.net.metrics_http import (MISSING_CLIENT, PAUSE, Family, FamilyOrPause, MetricsEndpoint,
                                        MetricsUnavailable, exposition, gauge)
from kafkawire.net.request_metrics import RequestMetrics

from .driver import RaftDriver
from .metrics import CounterRate, current_vote, kafka_state

RAFT = "kafka_server_raftmetrics_"
CONTROLLER = "kafka_controller_kafkacontroller_"
EVENT_MANAGER = "kafka_controller_controllereventmanager_"
CONTROLLER_STATS = "kafka_controller_controllerstats_"
# A Yammer histogram's percentile attributes (50thPercentile ... 999thPercentile) as the rules label them.
PARTITIONS_PER_STEP = 10_000   # counted between two PAUSEs of a scrape (a few ms; metrics_http says why)
QUANTILES = (("0.50", 0.5), ("0.75", 0.75), ("0.95", 0.95), ("0.98", 0.98), ("0.99", 0.99), ("0.999", 0.999))
# BrokerRegistrationState's values (Kafka's enum of that name).
FENCED, CONTROLLED_SHUTDOWN, ACTIVE = 10, 20, 30


# --- what is exported ---------------------------------------------------------------------------

def raft_families(driver: RaftDriver) -> Iterator[Family]:
    """KafkaRaftMetrics (kafka.server:type=raft-metrics) from the core's status now."""
    core = driver.running
    status = core.status()
    metrics = driver.metrics
    node_id = driver.config.node_id
    is_voter = any(v.key.id == node_id for v in core.voters())
    yield Family(RAFT + "current_state", "The current state of this member", kind="unknown",
                 samples=[({"current_state": kafka_state(status, is_voter)}, 1.0)])
    leader = status.leader.leader_id
    yield gauge(RAFT + "current_leader", "The current quorum leader's id; -1 indicates unknown",
                 -1 if leader is None else leader)
    yield gauge(RAFT + "current_vote", "The current voted id; -1 indicates not voted for anyone",
                 current_vote(status, node_id))
    yield gauge(RAFT + "current_epoch", "The current quorum epoch.", status.epoch)
    yield gauge(RAFT + "high_watermark", "The high watermark maintained on this member; -1 if it is unknown",
                 -1 if status.high_watermark is None else status.high_watermark)
    yield gauge(RAFT + "log_end_offset", "The current raft log end offset.", status.log_end_offset)
    yield gauge(RAFT + "log_end_epoch", "The current raft log end epoch.", status.last_fetched_epoch)
    yield gauge(RAFT + "number_unknown_voter_connections", "Number of unknown voters whose connection "
                 "information is not cached", status.unknown_voter_connections)
    yield gauge(RAFT + "number_of_voters", "Number of voters for a KRaft topic partition.", status.voters)
    if status.is_leader:      # Kafka adds these two on becoming leader and removes them after
        yield gauge(RAFT + "number_of_observers", "Number of observers being tracked by the KRaft topic "
                     "partition leader.", status.observers)
        yield gauge(RAFT + "uncommitted_voter_change", "1 if there is a voter change that has not been "
                     "committed, 0 otherwise.", int(status.uncommitted_voter_change))
    for sensor, what in (("commit_latency", "to commit an entry in the raft log"),
                         ("election_latency", "spent on electing a new leader")):
        window = getattr(metrics, sensor)
        yield gauge(f"{RAFT}{sensor}_avg", f"The average time in milliseconds {what}.", window.avg())
        yield gauge(f"{RAFT}{sensor}_max", f"The maximum time in milliseconds {what}.", window.max())
    rates = metrics.rates(dict(status.counters))
    yield gauge(RAFT + "append_records_rate", "The average number of records appended per sec as the "
                 "leader of the raft quorum.", rates["append-records-rate"])
    yield gauge(RAFT + "fetch_records_rate", "The average number of records fetched from the leader of "
                 "the raft quorum.", rates["fetch-records-rate"])
    yield gauge(RAFT + "poll_idle_ratio_avg", "The ratio of time the Raft IO thread is idle as opposed to doing "
                 "work (e.g. handling requests or replicating from the leader)", metrics.poll_idle_ratio())


def controller_families(driver: RaftDriver, state_machine, config: ServerConfig,
                        idle: CounterRate | None = None) -> Iterator[FamilyOrPause]:
    """QuorumControllerMetrics and ControllerMetadataMetrics (kafka.controller): the committed
    image's counts, the node's offsets and what the controller measured (its ``stats`` and
    ``replay_stats``, kafkawire/controller/stats.py). Only for a state machine that keeps a
    metadata image (the metadata controller); ``is_active()`` is its own word. ``idle``: the
    rate AvgIdleRatio is read with, kept from one scrape to the next."""
    image = None if state_machine is None else state_machine.image
    if image is None:
        return
    # the partition counts of that same image: taken now, before the scrape gives the loop back
    committed = getattr(state_machine, "committed", None)
    counts = None if committed is None else committed.partition_counts(PARTITIONS_PER_STEP)
    is_active = getattr(state_machine, "is_active", None)
    active = bool(is_active is not None and is_active())
    yield gauge(CONTROLLER + "activecontrollercount", "1 on the active controller", int(active))
    yield from _image_families(image, counts)
    stats, replay = getattr(state_machine, "stats", None), getattr(state_machine, "replay_stats", None)
    if stats is not None and replay is not None:
        now_ms = state_machine.clock()          # the controller's clock: its contact times are on it
        yield from _controller_stats_families(stats, replay, image, active, now_ms, config, idle or CounterRate())
    status = driver.running.status()
    yield gauge(CONTROLLER + "lastappliedrecordoffset", "The last offset applied to the metadata",
                 driver.applied_offset - 1)
    yield gauge(CONTROLLER + "lastcommittedrecordoffset", "The last committed offset of the metadata log",
                 driver.high_watermark() - 1)
    applied_ms = image.provenance.time_ms
    yield gauge(CONTROLLER + "lastappliedrecordtimestamp", "The append time of the last batch applied",
                 applied_ms)
    yield gauge(CONTROLLER + "lastappliedrecordlagms", "Now minus the append time of the last batch applied",
                 int(time.time() * 1000) - applied_ms)
    yield gauge(CONTROLLER + "newactivecontrollerscount", "Leader changes to a known leader seen by this node",
                 driver.metrics.new_leaders)
    # KRaftControlRecordStateMachine: controller.quorum.voters is set but the log's VotersRecord rules.
    yield gauge(CONTROLLER + "ignoredstaticvoters", "1 if controller.quorum.voters is ignored for the "
                 "log's voter set", int(bool(config.controller_quorum_voters) and status.kraft_version > 0))


def _image_families(image, counts: tuple[int, int, int] | None = None) -> Iterator[FamilyOrPause]:
    """ControllerMetricsChanges' counts, over the committed image as it is now. ``counts``:
    (partitions, offline, not led by the preferred replica) as the controller's partition index
    gives them for that image (CommittedImage.partition_counts); without them, a walk of it."""
    partitions, offline, not_preferred = counts if counts is not None else (yield from _walked_counts(image))
    fenced = sum(1 for b in image.brokers.values() if b.fenced)
    shutting_down = sum(1 for b in image.brokers.values() if b.in_controlled_shutdown)
    yield gauge(CONTROLLER + "globaltopiccount", "The number of topics", len(image.topics_by_name))
    yield gauge(CONTROLLER + "globalpartitioncount", "The number of partitions", partitions)
    yield gauge(CONTROLLER + "offlinepartitionscount", "Partitions without a leader", offline)
    yield gauge(CONTROLLER + "preferredreplicaimbalancecount", "Partitions not led by their first replica",
                 not_preferred)
    yield gauge(CONTROLLER + "fencedbrokercount", "Registered brokers that are fenced", fenced)
    yield gauge(CONTROLLER + "activebrokercount", "Registered brokers that are not fenced",
                 len(image.brokers) - fenced)
    yield gauge(CONTROLLER + "controlledshutdownbrokercount", "Registered brokers in controlled shutdown",
                 shutting_down)
    yield Family(CONTROLLER + "brokerregistrationstate", "10 fenced, 20 in controlled shutdown, 30 active",
                 [({"broker": str(b.id)}, float(_registration_state(b))) for b in image.brokers.values()])


def _walked_counts(image) -> Generator[FamilyOrPause, None, tuple[int, int, int]]:
    """(partitions, offline, not led by the preferred replica) of ``image``, a PAUSE between steps
    (by topic id, as the partition index and Kafka's counts, kept from partition changes, count)."""
    partitions = offline = not_preferred = 0
    paused_at = 0
    for topic in list(image.topics_by_id.values()):
        if partitions - paused_at >= PARTITIONS_PER_STEP:
            paused_at = partitions
            yield PAUSE
        for partition in topic.partitions.values():
            partitions += 1
            offline += partition.leader < 0
            preferred = partition.replicas[0] if partition.replicas else -1
            not_preferred += partition.leader != preferred
    return partitions, offline, not_preferred


def _summary(name: str, help_text: str, durations) -> Family:
    """A Yammer histogram as the exporter's rules emulate a summary: percentiles of the recent
    samples (Snapshot.getValue's interpolation; 0 with none, as Yammer's) and the count of all."""
    ordered = sorted(durations.recent)
    return Family(name, help_text, [({"quantile": label}, _percentile(ordered, q)) for label, q in QUANTILES],
                  kind="summary", count=durations.count)


def _percentile(ordered: list, quantile: float) -> float:
    if not ordered:
        return 0.0
    position = quantile * (len(ordered) + 1)
    if position < 1:
        return float(ordered[0])
    if position >= len(ordered):
        return float(ordered[-1])
    lower, upper = ordered[int(position) - 1], ordered[int(position)]
    return lower + (position - int(position)) * (upper - lower)


def _controller_stats_families(stats, replay, image, active: bool, now_ms: int, config: ServerConfig,
                               idle: CounterRate) -> Iterator[Family]:
    """What the controller counted and timed: the event-queue metrics (its writes), heartbeats,
    faults and the elections replay saw."""
    yield _summary(EVENT_MANAGER + "eventqueuetimems", "Time a write waited for its turn (ms)", stats.queue_time)
    yield _summary(EVENT_MANAGER + "eventqueueprocessingtimems", "Time a write took to generate its records (ms)",
                   stats.processing_time)
    yield gauge(EVENT_MANAGER + "avgidleratio", "Share of the sampled windows no write was being generated",
                 min(1.0, max(0.0, 1.0 - idle.rate(stats.processing_time.total_ms) / 1000)))
    yield gauge(CONTROLLER + "eventqueueoperationsstartedcount", "Writes that reached their turn",
                 stats.operations_started)
    yield gauge(CONTROLLER + "eventqueueoperationstimedoutcount", "Writes whose deadline passed before their turn",
                 stats.operations_timed_out)
    yield gauge(CONTROLLER + "timedoutbrokerheartbeatcount", "Broker heartbeats that timed out before their turn",
                 stats.timed_out_heartbeats)
    yield gauge(CONTROLLER + "metadataerrorcount", "Records that could not be applied, and failed writes",
                 replay.errors + stats.faults)
    if active:        # Kafka registers these on activation and removes them when it resigns
        timeout = config.broker_session_timeout_ms
        yield Family(CONTROLLER + "timesincelastheartbeatreceivedms", "Time since the broker's last heartbeat "
                     "arrived, at most broker.session.timeout.ms",
                     [({"broker": str(b)}, float(stats.since_last_heartbeat_ms(b, now_ms, timeout)))
                      for b in image.brokers])
    yield Family(CONTROLLER_STATS + "uncleanleaderelections", "Unclean leader elections",
                 [({}, float(replay.unclean_elections))], kind="counter")
    yield Family(CONTROLLER_STATS + "electionfromeligibleleaderreplicas", "Leaders elected from the ELR",
                 [({}, float(replay.elr_elections))], kind="counter")


def _registration_state(broker) -> int:
    if broker.fenced:
        return FENCED
    return CONTROLLED_SHUTDOWN if broker.in_controlled_shutdown else ACTIVE


# --- prometheus_client ------------------------------------------------------------------------

def node_families(driver: RaftDriver, state_machine, config: ServerConfig,
                  extra: list[Callable[[], Iterable[FamilyOrPause]]] | None = None, *,
                  requests: RequestMetrics | None = None) -> Callable[[], Iterable[FamilyOrPause]]:
    """What the node's endpoint renders: the raft and controller families, the request metrics
    of its listeners (``requests``: kafka.network RequestMetrics, which a combined node's broker
    shares), then those of each source in ``extra`` (a list the node may add to later: a
    combined node's broker); read as the renderer iterates, so that it may stop at their PAUSEs."""
    idle = CounterRate(samples=config.metrics_num_samples, window_ms=config.metrics_sample_window_ms)
    sources = [] if extra is None else extra
    return lambda: itertools.chain(raft_families(driver), controller_families(driver, state_machine, config, idle),
                                   () if requests is None else requests.families(),
                                   (family for source in sources for family in source()))


__all__ = ["MetricsEndpoint", "MetricsUnavailable", "MISSING_CLIENT", "exposition", "node_families",
           "raft_families", "controller_families"]
