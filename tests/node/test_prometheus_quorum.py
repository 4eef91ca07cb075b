"""A real 3-voter quorum with the Prometheus endpoint on (metric.reporters=
kafkawire.metrics.PrometheusReporter): every node's GET /metrics, read with prometheus_client's
own text parser, agrees with DescribeQuorum (leader, epoch, high watermark, each node's log end
offset once the log is quiet), exactly one node is the active controller, and the topic and
partition counts follow a CreateTopics; the active controller alone reports the broker's time
since its last heartbeat, and every node's idle ratios, error and election counts and event-queue
counts are there and consistent (tests/controller/test_controller_metrics.py checks their values
in process). The active controller also exports kafka.network RequestMetrics of its controller
listener, as Kafka's ControllerServer does: the broker's BrokerRegistration and BrokerHeartbeat
counted and timed. Every wait is bounded and waits for a condition."""
from __future__ import annotations

import asyncio
import time
import urllib.request

import pytest

from kafkawire.messages.create_topics_request import CreatableTopic, CreateTopicsRequest
from kafkawire.net.config import PROMETHEUS_REPORTER
from kafkawire.protocol.error_codes import Errors
from kafkawire.raft.node.local_quorum import LocalQuorum, free_ports
from tests.nemesis.workload import BROKER_ID, QuorumClient, keep_a_broker

parser = pytest.importorskip("prometheus_client.parser")

RAFT = "kafka_server_raftmetrics_"
CONTROLLER = "kafka_controller_kafkacontroller_"
EVENT_MANAGER = "kafka_controller_controllereventmanager_"
STATS = "kafka_controller_controllerstats_"
REQUESTS = "kafka_network_requestmetrics_"


def scrape(port: int) -> dict[tuple[str, tuple], float]:
    """(sample name, sorted labels) -> value, parsed by prometheus_client's text parser."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as answer:
        assert answer.status == 200
        text = answer.read().decode()
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in parser.text_string_to_metric_families(text) for s in family.samples}


@pytest.fixture
def quorum(tmp_path):
    # No NoOpRecords (metadata.max.idle.interval.ms=0), so the log goes quiet and ends can match.
    ports = dict(zip((1, 2, 3), free_ports(3)))
    with LocalQuorum(tmp_path, voters=3, properties={"metric.reporters": PROMETHEUS_REPORTER,
                                                     "metadata.max.idle.interval.ms": "0"},
                     node_properties={i: {"kafkawire.metrics.prometheus.listener": f"http://127.0.0.1:{port}"}
                                      for i, port in ports.items()}).started(graceful=False) as q:
        q.metrics_ports = ports
        yield q


def _agrees_with_describe_quorum(q: LocalQuorum):
    view = q.describe(q.wait_for_leader(120).leader_id)
    ends = {r.replica_id: r.log_end_offset for r in view.voters}
    if set(ends.values()) != {view.high_watermark}:
        return None                                  # not quiet yet
    scraped = {i: scrape(q.metrics_ports[i]) for i in q.node_ids}
    for i, m in scraped.items():
        if (m[(RAFT + "current_leader", ())], m[(RAFT + "current_epoch", ())]) != (view.leader_id, view.leader_epoch):
            return None
        if (m[(RAFT + "high_watermark", ())], m[(RAFT + "log_end_offset", ())]) != (view.high_watermark, ends[i]):
            return None
    return view, scraped


def test_every_node_s_metrics_agree_with_describe_quorum_and_one_node_is_active(quorum):
    view, scraped = quorum.wait_until(lambda: _agrees_with_describe_quorum(quorum), 60,
                                      "every node's /metrics to agree with DescribeQuorum")
    for i, m in scraped.items():
        state = "leader" if i == view.leader_id else "follower"
        assert m[(RAFT + "current_state", (("current_state", state),))] == 1
        assert m[(RAFT + "number_of_voters", ())] == 3
        assert m[(RAFT + "log_end_epoch", ())] == view.leader_epoch
        assert m[(CONTROLLER + "globaltopiccount", ())] == 0
        assert m[(CONTROLLER + "timedoutbrokerheartbeatcount", ())] == 0
        assert 0 <= m[(RAFT + "poll_idle_ratio_avg", ())] <= 1
        assert 0 <= m[(EVENT_MANAGER + "avgidleratio", ())] <= 1
        assert m[(CONTROLLER + "metadataerrorcount", ())] == 0
        assert m[(STATS + "uncleanleaderelections_total", ())] == m[(STATS + "electionfromeligibleleaderreplicas_total", ())] == 0
        # every write that reached its turn was timed (EventQueueTimeMs' count), on each node
        assert m[(EVENT_MANAGER + "eventqueuetimems_count", ())] == m[(CONTROLLER + "eventqueueoperationsstartedcount", ())]
        assert (RAFT + "number_of_observers", ()) in m if i == view.leader_id else (RAFT + "number_of_observers", ()) not in m

    def one_active():
        counts = {i: scrape(quorum.metrics_ports[i])[(CONTROLLER + "activecontrollercount", ())]
                  for i in quorum.node_ids}
        return counts if sorted(counts.values()) == [0, 0, 1] else None

    counts = quorum.wait_until(one_active, 30, "exactly one node to report ActiveControllerCount 1")
    assert counts[view.leader_id] == 1


def test_topic_and_partition_counts_follow_a_create_topics(quorum):
    quorum.wait_for_leader(120)
    asyncio.run(_create_a_topic_with_a_broker(quorum))


async def _create_a_topic_with_a_broker(q: LocalQuorum) -> None:
    qc = QuorumClient({i: q.address(i) for i in q.node_ids})
    stop = asyncio.Event()
    broker = asyncio.ensure_future(keep_a_broker(qc, q.cluster_id, 99, stop))
    try:
        deadline = time.monotonic() + 60
        while True:        # the broker must be registered and unfenced before a topic can be placed
            reply = await qc.send_to_leader(CreateTopicsRequest(
                topics=[CreatableTopic(name="metrics-topic", num_partitions=3, replication_factor=1)],
                timeout_ms=3000))
            if reply.topics[0].error_code in (Errors.NONE, Errors.TOPIC_ALREADY_EXISTS):
                break
            assert time.monotonic() < deadline, f"CreateTopics kept failing: {reply.topics[0]}"
            await asyncio.sleep(0.2)
        wanted = {CONTROLLER + "globaltopiccount": 1, CONTROLLER + "globalpartitioncount": 3,
                  CONTROLLER + "offlinepartitionscount": 0, CONTROLLER + "activebrokercount": 1,
                  CONTROLLER + "fencedbrokercount": 0}
        while True:
            scraped = [await asyncio.to_thread(scrape, q.metrics_ports[i]) for i in q.node_ids]
            seen = [{name: m[(name, ())] for name in wanted} for m in scraped]
            if all(s == wanted for s in seen):
                break
            assert time.monotonic() < deadline, f"the counts never became {wanted}: {seen}"
            await asyncio.sleep(0.2)
        for m in scraped:
            assert m[(CONTROLLER + "brokerregistrationstate", (("broker", str(BROKER_ID)),))] == 30
        # The active controller alone tracks the broker's heartbeats, which keep its count below
        # the session timeout (broker.session.timeout.ms, 9000); its writes were timed.
        since = {i: m.get((CONTROLLER + "timesincelastheartbeatreceivedms", (("broker", str(BROKER_ID)),)))
                 for i, m in zip(q.node_ids, scraped)}
        active = [i for i, m in zip(q.node_ids, scraped) if m[(CONTROLLER + "activecontrollercount", ())] == 1]
        assert len(active) == 1 and [i for i, v in since.items() if v is not None] == active, since
        assert 0 <= since[active[0]] < 9000
        leader = scraped[q.node_ids.index(active[0])]
        assert leader[(CONTROLLER + "eventqueueoperationsstartedcount", ())] >= 2     # registration, heartbeats, topic
        await _heartbeats_are_counted_and_timed(q.metrics_ports[active[0]], leader, deadline)
    finally:
        stop.set()
        await asyncio.wait_for(broker, 10)
        await qc.client.close()


def _answered(m: dict, request: str) -> float:
    """RequestsPerSec's count of ``request``, over its versions."""
    return sum(v for (name, labels), v in m.items()
               if name == REQUESTS + "requests_total" and ("request", request) in labels)


async def _heartbeats_are_counted_and_timed(port: int, before: dict, deadline: float) -> None:
    """The active controller's request metrics: BrokerRegistration answered, and BrokerHeartbeat's
    count moves with the broker's next heartbeats, its histograms counting every one answered."""
    assert _answered(before, "BrokerRegistration") >= 1
    assert before[(REQUESTS + "errors_total", (("error", "NONE"), ("request", "BrokerRegistration")))] >= 1
    while True:
        after = await asyncio.to_thread(scrape, port)
        if _answered(after, "BrokerHeartbeat") > _answered(before, "BrokerHeartbeat"):
            break
        assert time.monotonic() < deadline, "the active controller never counted another BrokerHeartbeat"
        await asyncio.sleep(0.2)
    heartbeat = ("request", "BrokerHeartbeat")
    for timer in ("totaltimems", "requestqueuetimems", "localtimems", "responsesendtimems"):
        assert after[(REQUESTS + timer + "_count", (heartbeat,))] == _answered(after, "BrokerHeartbeat")
    # each request's total includes its queue time: so do the slowest of each (the 0.999 quantile
    # of fewer than 1000 samples is their largest)
    total, queued = (after[(REQUESTS + timer, (("quantile", "0.999"), heartbeat))]
                     for timer in ("totaltimems", "requestqueuetimems"))
    assert 0 <= queued <= total < 9000
