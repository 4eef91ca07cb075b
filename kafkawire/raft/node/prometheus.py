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

The HTTP side is bounded: one request per connection (closed after the answer), a request
head of at most MAX_REQUEST_BYTES read within REQUEST_TIMEOUT_S (else 431 or a close), at most
MAX_CONNECTIONS at once (more are closed unanswered), and anything but ``GET /metrics`` is 404.
"""
from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass, field
from typing import Callable, Iterable, Iterator

from kafkawire.net.config import ServerConfig

from .driver import RaftDriver
from .metrics import CounterRate, current_vote, kafka_state

log = logging.getLogger(__name__)

MISSING_CLIENT = "the metrics endpoint needs prometheus_client: pip install 'kafkawire[metrics]'"
MAX_REQUEST_BYTES = 8192
REQUEST_TIMEOUT_S = 10.0
MAX_CONNECTIONS = 16
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"     # what generate_latest writes
RAFT = "kafka_server_raftmetrics_"
CONTROLLER = "kafka_controller_kafkacontroller_"
EVENT_MANAGER = "kafka_controller_controllereventmanager_"
CONTROLLER_STATS = "kafka_controller_controllerstats_"
# A Yammer histogram's percentile attributes (50thPercentile ... 999thPercentile) as the rules label them.
QUANTILES = (("0.50", 0.5), ("0.75", 0.75), ("0.95", 0.95), ("0.98", 0.98), ("0.99", 0.99), ("0.999", 0.999))
# BrokerRegistrationState's values (Kafka's enum of that name).
FENCED, CONTROLLED_SHUTDOWN, ACTIVE = 10, 20, 30


class MetricsUnavailable(RuntimeError):
    """The endpoint is enabled but cannot be served (prometheus_client is not installed)."""


@dataclass
class Family:
    """One metric family: ``samples`` are (labels, value); kind "gauge", "unknown" (untyped),
    "counter" (its sample is named ``name_total``) or "summary" (quantile samples, and ``count``)."""
    name: str
    help: str
    samples: list[tuple[dict[str, str], float]] = field(default_factory=list)
    kind: str = "gauge"
    count: int = 0


def _gauge(name: str, help_text: str, value: float) -> Family:
    return Family(name, help_text, [({}, float(value))])


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
    yield _gauge(RAFT + "current_leader", "The current quorum leader's id; -1 indicates unknown",
                 -1 if leader is None else leader)
    yield _gauge(RAFT + "current_vote", "The current voted id; -1 indicates not voted for anyone",
                 current_vote(status, node_id))
    yield _gauge(RAFT + "current_epoch", "The current quorum epoch.", status.epoch)
    yield _gauge(RAFT + "high_watermark", "The high watermark maintained on this member; -1 if it is unknown",
                 -1 if status.high_watermark is None else status.high_watermark)
    yield _gauge(RAFT + "log_end_offset", "The current raft log end offset.", status.log_end_offset)
    yield _gauge(RAFT + "log_end_epoch", "The current raft log end epoch.", status.last_fetched_epoch)
    yield _gauge(RAFT + "number_unknown_voter_connections", "Number of unknown voters whose connection "
                 "information is not cached", status.unknown_voter_connections)
    yield _gauge(RAFT + "number_of_voters", "Number of voters for a KRaft topic partition.", status.voters)
    if status.is_leader:      # Kafka adds these two on becoming leader and removes them after
        yield _gauge(RAFT + "number_of_observers", "Number of observers being tracked by the KRaft topic "
                     "partition leader.", status.observers)
        yield _gauge(RAFT + "uncommitted_voter_change", "1 if there is a voter change that has not been "
                     "committed, 0 otherwise.", int(status.uncommitted_voter_change))
    for sensor, what in (("commit_latency", "to commit an entry in the raft log"),
                         ("election_latency", "spent on electing a new leader")):
        window = getattr(metrics, sensor)
        yield _gauge(f"{RAFT}{sensor}_avg", f"The average time in milliseconds {what}.", window.avg())
        yield _gauge(f"{RAFT}{sensor}_max", f"The maximum time in milliseconds {what}.", window.max())
    rates = metrics.rates(dict(status.counters))
    yield _gauge(RAFT + "append_records_rate", "The average number of records appended per sec as the "
                 "leader of the raft quorum.", rates["append-records-rate"])
    yield _gauge(RAFT + "fetch_records_rate", "The average number of records fetched from the leader of "
                 "the raft quorum.", rates["fetch-records-rate"])
    yield _gauge(RAFT + "poll_idle_ratio_avg", "The ratio of time the Raft IO thread is idle as opposed to doing "
                 "work (e.g. handling requests or replicating from the leader)", metrics.poll_idle_ratio())


def controller_families(driver: RaftDriver, state_machine, config: ServerConfig,
                        idle: CounterRate | None = None) -> Iterator[Family]:
    """QuorumControllerMetrics and ControllerMetadataMetrics (kafka.controller): the committed
    image's counts, the node's offsets and what the controller measured (its ``stats`` and
    ``replay_stats``, kafkawire/controller/stats.py). Only for a state machine that keeps a
    metadata image (the metadata controller); ``is_active()`` is its own word. ``idle``: the
    rate AvgIdleRatio is read with, kept from one scrape to the next."""
    image = None if state_machine is None else state_machine.image
    if image is None:
        return
    is_active = getattr(state_machine, "is_active", None)
    active = bool(is_active is not None and is_active())
    yield _gauge(CONTROLLER + "activecontrollercount", "1 on the active controller", int(active))
    yield from _image_families(image)
    stats, replay = getattr(state_machine, "stats", None), getattr(state_machine, "replay_stats", None)
    if stats is not None and replay is not None:
        now_ms = state_machine.clock()          # the controller's clock: its contact times are on it
        yield from _controller_stats_families(stats, replay, image, active, now_ms, config, idle or CounterRate())
    status = driver.running.status()
    yield _gauge(CONTROLLER + "lastappliedrecordoffset", "The last offset applied to the metadata",
                 driver.applied_offset - 1)
    yield _gauge(CONTROLLER + "lastcommittedrecordoffset", "The last committed offset of the metadata log",
                 driver.high_watermark() - 1)
    applied_ms = image.provenance.time_ms
    yield _gauge(CONTROLLER + "lastappliedrecordtimestamp", "The append time of the last batch applied",
                 applied_ms)
    yield _gauge(CONTROLLER + "lastappliedrecordlagms", "Now minus the append time of the last batch applied",
                 int(time.time() * 1000) - applied_ms)
    yield _gauge(CONTROLLER + "newactivecontrollerscount", "Leader changes to a known leader seen by this node",
                 driver.metrics.new_leaders)
    # KRaftControlRecordStateMachine: controller.quorum.voters is set but the log's VotersRecord rules.
    yield _gauge(CONTROLLER + "ignoredstaticvoters", "1 if controller.quorum.voters is ignored for the "
                 "log's voter set", int(bool(config.controller_quorum_voters) and status.kraft_version > 0))


def _image_families(image) -> Iterator[Family]:
    """ControllerMetricsChanges' counts, over the committed image as it is now."""
    partitions = offline = not_preferred = 0
    for topic in image.topics_by_name.values():
        for partition in topic.partitions.values():
            partitions += 1
            offline += partition.leader < 0
            preferred = partition.replicas[0] if partition.replicas else -1
            not_preferred += partition.leader != preferred
    fenced = sum(1 for b in image.brokers.values() if b.fenced)
    shutting_down = sum(1 for b in image.brokers.values() if b.in_controlled_shutdown)
    yield _gauge(CONTROLLER + "globaltopiccount", "The number of topics", len(image.topics_by_name))
    yield _gauge(CONTROLLER + "globalpartitioncount", "The number of partitions", partitions)
    yield _gauge(CONTROLLER + "offlinepartitionscount", "Partitions without a leader", offline)
    yield _gauge(CONTROLLER + "preferredreplicaimbalancecount", "Partitions not led by their first replica",
                 not_preferred)
    yield _gauge(CONTROLLER + "fencedbrokercount", "Registered brokers that are fenced", fenced)
    yield _gauge(CONTROLLER + "activebrokercount", "Registered brokers that are not fenced",
                 len(image.brokers) - fenced)
    yield _gauge(CONTROLLER + "controlledshutdownbrokercount", "Registered brokers in controlled shutdown",
                 shutting_down)
    yield Family(CONTROLLER + "brokerregistrationstate", "10 fenced, 20 in controlled shutdown, 30 active",
                 [({"broker": str(b.id)}, float(_registration_state(b))) for b in image.brokers.values()])


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
    yield _gauge(EVENT_MANAGER + "avgidleratio", "Share of the sampled windows no write was being generated",
                 min(1.0, max(0.0, 1.0 - idle.rate(stats.processing_time.total_ms) / 1000)))
    yield _gauge(CONTROLLER + "eventqueueoperationsstartedcount", "Writes that reached their turn",
                 stats.operations_started)
    yield _gauge(CONTROLLER + "eventqueueoperationstimedoutcount", "Writes whose deadline passed before their turn",
                 stats.operations_timed_out)
    yield _gauge(CONTROLLER + "timedoutbrokerheartbeatcount", "Broker heartbeats that timed out before their turn",
                 stats.timed_out_heartbeats)
    yield _gauge(CONTROLLER + "metadataerrorcount", "Records that could not be applied, and failed writes",
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

def exposition(families: Callable[[], Iterable[Family]]) -> Callable[[], bytes]:
    """``render() -> bytes``: the text format of ``families()`` as prometheus_client writes it.
    Raises MetricsUnavailable (MISSING_CLIENT) when prometheus_client is not installed."""
    try:
        from prometheus_client import CollectorRegistry, generate_latest
        from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric, UnknownMetricFamily
    except ImportError:
        raise MetricsUnavailable(MISSING_CLIENT) from None
    kinds = {"gauge": GaugeMetricFamily, "unknown": UnknownMetricFamily, "counter": CounterMetricFamily}

    def summary(family: Family):
        out = Metric(family.name, family.help, "summary")
        for sample_labels, value in family.samples:
            out.add_sample(family.name, sample_labels, value)
        out.add_sample(family.name + "_count", {}, float(family.count))
        return out

    class NodeCollector:
        def collect(self):
            for family in families():
                if family.kind == "summary":
                    yield summary(family)
                    continue
                labels = sorted(family.samples[0][0]) if family.samples else []
                out = kinds[family.kind](family.name, family.help, labels=labels)
                for sample_labels, value in family.samples:
                    out.add_metric([sample_labels[k] for k in labels], value)
                yield out

    registry = CollectorRegistry(auto_describe=False)
    registry.register(NodeCollector())
    return lambda: generate_latest(registry)


def node_families(driver: RaftDriver, state_machine, config: ServerConfig) -> Callable[[], list[Family]]:
    idle = CounterRate(samples=config.metrics_num_samples, window_ms=config.metrics_sample_window_ms)
    return lambda: [*raft_families(driver), *controller_families(driver, state_machine, config, idle)]


# --- HTTP ---------------------------------------------------------------------------------------

def _response(status: str, body: bytes, content_type: str = "text/plain; charset=utf-8") -> bytes:
    head = (f"HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {len(body)}\r\n"
            "Connection: close\r\n\r\n")
    return head.encode("ascii") + body


NOT_FOUND = _response("404 Not Found", b"only GET /metrics is served here\n")
TOO_LARGE = _response("431 Request Header Fields Too Large", b"request too large\n")


class MetricsEndpoint:
    """A tiny HTTP/1.1 server on the running loop answering ``GET /metrics`` with ``render()``."""

    def __init__(self, host: str | None, port: int, render: Callable[[], bytes]):
        self.host, self.port, self.render = host, port, render
        self._server: asyncio.base_events.Server | None = None
        self._connections: set[asyncio.Task] = set()

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._accept, self.host, self.port, limit=MAX_REQUEST_BYTES)
        self.port = self._server.sockets[0].getsockname()[1]

    def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if len(self._connections) >= MAX_CONNECTIONS:
            writer.close()
            return
        task = asyncio.ensure_future(self._serve(reader, writer))
        self._connections.add(task)
        task.add_done_callback(self._connections.discard)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            async with asyncio.timeout(REQUEST_TIMEOUT_S):
                answer = await self._answer(reader)
            if answer is not None:
                writer.write(answer)
                async with asyncio.timeout(REQUEST_TIMEOUT_S):
                    await writer.drain()
        except (asyncio.TimeoutError, ConnectionError):
            pass
        finally:
            writer.close()

    async def _answer(self, reader: asyncio.StreamReader) -> bytes | None:
        """The response to the one request on this connection; None to close without one."""
        try:
            head = await reader.readuntil(b"\r\n\r\n")
        except asyncio.LimitOverrunError:
            return TOO_LARGE
        except asyncio.IncompleteReadError:
            return None
        if len(head) > MAX_REQUEST_BYTES:
            return TOO_LARGE
        request_line = head.split(b"\r\n", 1)[0].split(b" ")
        if len(request_line) != 3 or request_line[0] != b"GET" or request_line[1].split(b"?", 1)[0] != b"/metrics":
            return NOT_FOUND
        try:
            body = self.render()
        except Exception:       # a bug in reading the node must not end the endpoint: log it, answer 500
            log.exception("cannot render the metrics")
            return _response("500 Internal Server Error", b"cannot render the metrics\n")
        return _response("200 OK", body, CONTENT_TYPE)

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
        for task in list(self._connections):
            task.cancel()
        await asyncio.gather(*self._connections, return_exceptions=True)
        if self._server is not None:
            await self._server.wait_closed()


__all__ = ["MetricsEndpoint", "MetricsUnavailable", "MISSING_CLIENT", "exposition", "node_families",
           "raft_families", "controller_families"]
