"""Client telemetry (KIP-714) on the broker, in process (issue 29): GetTelemetrySubscriptions and
PushTelemetry over kafkawire.broker.telemetry_apis with a moved clock, checked against Kafka
4.3.1's ClientMetricsManager: the subscription a client gets from the subscriptions that match
it, the push checks in Kafka's order, the termination push, subscription changes, the bounded
and expiring instance cache, and hostile payloads answered with Kafka's errors."""
from __future__ import annotations

import asyncio
import struct
import uuid
from types import SimpleNamespace

import pytest

from kafkawire.broker.client_metrics import DEFAULT_INTERVAL_MS, subscription_id
from kafkawire.broker.telemetry_apis import TelemetryApis
from kafkawire.broker.telemetry_exporter import PrometheusTelemetryExporter
from kafkawire.broker.telemetry_payload import PayloadError, decode_metrics
from kafkawire.messages.get_telemetry_subscriptions_request import GetTelemetrySubscriptionsRequest
from kafkawire.messages.push_telemetry_request import PushTelemetryRequest
from kafkawire.metadata.image import CLIENT_METRICS_RESOURCE
from kafkawire.net.metrics_http import exposition
from kafkawire.protocol.error_codes import Errors
from kafkawire.protocol.handler import RequestContext
from kafkawire.protocol.message import uuid_to_kafka_string
from kafkawire.records.compression import GZIP, LZ4, NONE, SNAPPY, ZSTD, compress

NOW = 1_700_000_000_000


# -- a small protobuf writer for MetricsData (opentelemetry metrics.proto) --

def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)


def _field(number: int, payload: bytes) -> bytes:
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


def _key_value(key: str, value: str) -> bytes:
    return _field(1, key.encode()) + _field(2, _field(1, value.encode()))


def metrics_data(*metrics: tuple[str, float, dict]) -> bytes:
    """MetricsData with one resource and scope holding gauges (name, value, attributes)."""
    encoded = b""
    for name, value, attributes in metrics:
        point = b"".join(_field(7, _key_value(k, v)) for k, v in attributes.items())
        point += _varint(4 << 3 | 1) + struct.pack("<d", value)            # as_double
        encoded += _field(2, _field(1, name.encode()) + _field(5, _field(1, point)))      # Metric{name, gauge}
    resource = _field(1, _field(1, _key_value("service.name", "judge")))
    return _field(1, resource + _field(2, encoded))


class Clock:
    def __init__(self):
        self.now = NOW

    def __call__(self) -> int:
        return self.now


def context(client_id="app-1", software=("apache-kafka-java", "4.3.1"), peer=("127.0.0.1", 50001),
            connection="c-1") -> RequestContext:
    return RequestContext(72, 0, 1, client_id, peer, "PLAINTEXT", connection, client_software=software)


class Node:
    """TelemetryApis over an image holding ``subscriptions`` (name -> configs), with a clock."""

    def __init__(self, max_bytes=1024 * 1024, **subscriptions):
        self.image = SimpleNamespace(configs={})
        self.clock = Clock()
        self.apis = TelemetryApis(lambda: self.image, max_bytes=max_bytes, enabled=True, clock_ms=self.clock)
        self.exported = []
        self.prometheus = PrometheusTelemetryExporter(max_series=50, clock_ms=self.clock)
        self.apis.exporters += [self.exported.append, self.prometheus]
        self.subscribe(**subscriptions)

    def subscribe(self, **subscriptions):
        configs = {(CLIENT_METRICS_RESOURCE, name): dict(c) for name, c in subscriptions.items()}
        self.image = SimpleNamespace(configs=configs)      # a new image, as the publisher gives

    def get(self, instance_id=uuid.UUID(int=0), ctx=None):
        request = GetTelemetrySubscriptionsRequest(client_instance_id=instance_id)
        return asyncio.run(self.apis.get_subscriptions(ctx or context(), request))

    def push(self, instance_id, subscription, metrics=b"", compression=NONE, terminating=False, ctx=None) -> int:
        request = PushTelemetryRequest(client_instance_id=instance_id, subscription_id=subscription,
                                       terminating=terminating, compression_type=compression, metrics=metrics)
        return asyncio.run(self.apis.push(ctx or context(), request)).error_code


ALL = {"metrics": "*", "interval.ms": "1000"}
PAYLOAD = metrics_data(("org.apache.kafka.producer.record.queue.time.avg", 2.5, {"topic": "t"}),
                       ("org.apache.kafka.producer.node.request.latency.max", 7.0, {"node.id": "1"}))


def test_a_client_gets_the_union_of_the_matching_subscriptions_and_their_least_interval():
    node = Node(producers={"metrics": "org.apache.kafka.producer.", "interval.ms": "2000",
                           "match": "client_software_name=apache-kafka-java,client_id=app-.*"},
                fast={"metrics": "org.apache.kafka.consumer.", "interval.ms": "500", "match": "client_id=app-1"},
                others={"metrics": "*", "interval.ms": "100", "match": "client_id=other"})
    answer = node.get()
    assert answer.error_code == 0 and answer.client_instance_id.int != 0
    assert sorted(answer.requested_metrics) == ["org.apache.kafka.consumer.", "org.apache.kafka.producer."]
    assert answer.push_interval_ms == 500
    assert answer.accepted_compression_types == [ZSTD, LZ4, GZIP, SNAPPY]
    assert (answer.telemetry_max_bytes, answer.delta_temporality) == (1024 * 1024, True)
    assert answer.subscription_id == subscription_id(("org.apache.kafka.consumer.", "org.apache.kafka.producer."),
                                                     500, answer.client_instance_id)
    # a regex matches the whole attribute (Java's Pattern.matches), and every selector must match
    assert node.get(ctx=context(client_id="xapp-1")).requested_metrics == []
    assert node.get(ctx=context(client_id="app-2", software=("librdkafka", "2.6"))).requested_metrics == []


def test_no_matching_subscription_is_no_metrics_at_the_default_interval_and_star_wins():
    node = Node()
    answer = node.get()
    assert (answer.requested_metrics, answer.push_interval_ms) == ([], DEFAULT_INTERVAL_MS)
    node = Node(some={"metrics": "a.b", "interval.ms": "1000"}, every={"metrics": "*", "interval.ms": "3000"})
    assert node.get().requested_metrics == ["*"]


def test_the_instance_id_and_the_source_address_port_and_software_version_are_selectors():
    node = Node(by_port={"metrics": "*", "match": "client_source_port=5000[0-9],client_source_address=127\\.0\\..*",
                         "interval.ms": "1000"})
    assert node.get().requested_metrics == ["*"]
    assert node.get(ctx=context(peer=("10.0.0.1", 50001))).requested_metrics == []
    first = node.get(ctx=context(software=("unknown", "unknown")))
    chosen = uuid_to_kafka_string(first.client_instance_id)
    node.subscribe(one={"metrics": "x.", "match": f"client_instance_id={chosen}", "interval.ms": "1000"})
    node.clock.now += 1000
    assert node.get(first.client_instance_id).requested_metrics == ["x."]
    assert node.get(ctx=context(connection="c-2")).requested_metrics == []


def test_a_push_is_exported_and_the_next_one_must_wait_the_push_interval():
    node = Node(every=ALL)
    answer = node.get()
    iid, sid = answer.client_instance_id, answer.subscription_id
    assert node.push(iid, sid, PAYLOAD) == 0                    # at once after the Get: accepted
    assert [m.name for m in node.exported[0].metrics()] == ["org.apache.kafka.producer.record.queue.time.avg",
                                                             "org.apache.kafka.producer.node.request.latency.max"]
    node.clock.now += 999
    assert node.push(iid, sid, PAYLOAD) == Errors.THROTTLING_QUOTA_EXCEEDED
    node.clock.now += 1
    assert node.push(iid, sid, PAYLOAD) == 0
    assert len(node.exported) == 2
    node.clock.now += 10
    assert node.get(iid).error_code == Errors.THROTTLING_QUOTA_EXCEEDED     # a Get too soon as well


def test_push_checks_come_in_kafkas_order():
    node = Node(max_bytes=64, every=ALL)
    answer = node.get()
    iid, sid = answer.client_instance_id, answer.subscription_id
    assert node.push(uuid.UUID(int=0), sid) == Errors.INVALID_REQUEST
    assert node.push(uuid.UUID(int=1), sid) == Errors.INVALID_REQUEST
    # the throttle is checked before the subscription id, the id before the compression, that before the size
    assert node.push(iid, sid + 1, b"x" * 100, compression=9) == Errors.UNKNOWN_SUBSCRIPTION_ID
    node.clock.now += 1
    assert node.push(iid, sid + 1, b"x" * 100, compression=9) == Errors.THROTTLING_QUOTA_EXCEEDED
    node.clock.now += 1000
    assert node.push(iid, sid, b"x" * 100, compression=9) == Errors.UNSUPPORTED_COMPRESSION_TYPE
    # after UNSUPPORTED_COMPRESSION_TYPE (or UNKNOWN_SUBSCRIPTION_ID) a Get is not throttled; but
    # such a Get does not count as one (its time is not kept), so the push still waits its interval
    node.clock.now += 1
    assert node.get(iid).error_code == 0
    assert node.push(iid, sid, b"x" * 65) == Errors.THROTTLING_QUOTA_EXCEEDED
    node.clock.now += 1000
    assert node.push(iid, sid, b"x" * 65) == Errors.TELEMETRY_TOO_LARGE
    node.clock.now += 1000
    assert node.push(iid, sid, b"\x0b" * 64) == Errors.INVALID_RECORD      # 64 bytes that are not MetricsData
    assert node.exported == []


def test_a_terminating_push_is_taken_early_and_nothing_after_it():
    node = Node(every=ALL)
    answer = node.get()
    iid, sid = answer.client_instance_id, answer.subscription_id
    assert node.push(iid, sid, PAYLOAD) == 0
    node.clock.now += 1
    assert node.push(iid, sid, PAYLOAD, terminating=True) == 0                # not throttled: it terminates
    assert node.exported[-1].terminating
    assert list(node.prometheus.latest) == [uuid_to_kafka_string(iid)]      # its final push is still shown
    node.clock.now += 5000
    assert node.push(iid, sid, PAYLOAD, terminating=True) == Errors.INVALID_REQUEST
    assert node.push(iid, sid, PAYLOAD) == Errors.INVALID_REQUEST
    # as in Kafka, each push leaves the instance's terminating flag as it said: after a refused
    # push that does not terminate, the instance takes pushes again
    node.clock.now += 5000
    assert node.push(iid, sid, PAYLOAD) == 0


def test_a_changed_subscription_gives_a_new_subscription_id_and_the_old_one_is_refused():
    node = Node(every=ALL)
    answer = node.get()
    iid, sid = answer.client_instance_id, answer.subscription_id
    node.subscribe(every={"metrics": "org.apache.kafka.producer.", "interval.ms": "2000"})
    assert node.push(iid, sid, PAYLOAD) == Errors.UNKNOWN_SUBSCRIPTION_ID
    again = node.get(iid)                                        # not throttled after UNKNOWN_SUBSCRIPTION_ID
    assert again.error_code == 0 and again.subscription_id != sid
    assert (again.requested_metrics, again.push_interval_ms) == (["org.apache.kafka.producer."], 2000)
    assert node.push(iid, again.subscription_id, PAYLOAD) == Errors.THROTTLING_QUOTA_EXCEEDED   # the refused push counted
    node.clock.now += 2000
    assert node.push(iid, again.subscription_id, PAYLOAD) == 0
    node.subscribe()                                             # deleted: no metrics, the default interval
    node.clock.now += 2000
    assert node.push(iid, again.subscription_id) == Errors.UNKNOWN_SUBSCRIPTION_ID
    emptied = node.get(iid)
    assert (emptied.requested_metrics, emptied.push_interval_ms) == ([], DEFAULT_INTERVAL_MS)


def test_the_instance_cache_expires_after_three_intervals_or_a_minute_and_is_bounded():
    node = Node(slow={"metrics": "*", "interval.ms": "30000"})
    manager = node.apis.manager
    answer = node.get()
    iid, sid = answer.client_instance_id, answer.subscription_id
    node.clock.now += 89_999
    assert node.push(iid, sid, PAYLOAD) == 0 and iid in manager.instances
    node.clock.now += 90_000                      # 3 x 30 s since its last request: expired, made anew
    assert node.push(iid, sid, PAYLOAD) == 0      # a new instance: its first push is not throttled
    node.subscribe(quick={"metrics": "*", "interval.ms": "1000"})
    node.get(iid)
    node.clock.now += 60_000
    node.get(ctx=context(connection="c-9"))       # another client's request sweeps the expired one
    assert iid not in manager.instances
    manager.cache_max_size = 3
    ids = [node.get(ctx=context(connection=f"k-{i}")).client_instance_id for i in range(5)]
    assert list(manager.instances) == ids[2:]     # the least recently used went first
    assert set(manager.stats.instances) == set(ids[2:])     # and their client-metrics meters with them


def test_an_instance_goes_with_the_connection_that_made_it():
    node = Node(every=ALL)
    iid = node.get(ctx=context(connection="gone")).client_instance_id
    node.apis.connection_closed("gone")
    assert iid not in node.apis.manager.instances
    node.apis.connection_closed("never-seen")


@pytest.mark.parametrize("codec", [GZIP, SNAPPY, LZ4, ZSTD])
def test_a_compressed_payload_is_decompressed_for_the_exporter(codec):
    node = Node(every=ALL)
    answer = node.get()
    assert node.push(answer.client_instance_id, answer.subscription_id, compress(codec, PAYLOAD), codec) == 0
    assert node.exported[0].data == PAYLOAD


def test_a_payload_that_decompresses_past_telemetry_max_bytes_is_an_invalid_record():
    node = Node(max_bytes=4096, every=ALL)
    answer = node.get()
    bomb = compress(GZIP, b"\0" * 1_000_000)
    assert len(bomb) < 4096
    assert node.push(answer.client_instance_id, answer.subscription_id, bomb, GZIP) == Errors.INVALID_RECORD
    node.clock.now += 1000
    assert node.push(answer.client_instance_id, answer.subscription_id, b"\x1f\x8b\x08garbage", GZIP) == \
        Errors.INVALID_RECORD


@pytest.mark.parametrize("hostile", [
    b"\x0a\xff\xff\xff\xff\x0f",              # a length past the end
    b"\x0a\x02\x12",                          # a nested length past its parent's end
    b"\x08" + b"\xff" * 11,                   # a varint longer than 10 bytes
    b"\x0b",                                  # wire type 3 (groups)
    b"\x00\x01",                              # field number 0
    b"\x0a\x05\x12\x03\x12\x01\x0a",          # a Metric cut short
    _field(1, _field(2, _field(2, _field(1, b"\xff\xfe")))),       # a name that is not UTF-8
    b"\x09\x01\x02",                          # a fixed64 cut short
])
def test_a_hostile_payload_is_an_invalid_record_never_a_traceback(hostile):
    with pytest.raises(PayloadError):
        decode_metrics(hostile)
    node = Node(every=ALL)
    answer = node.get()
    assert node.push(answer.client_instance_id, answer.subscription_id, hostile) == Errors.INVALID_RECORD


def test_deeply_repeated_fields_cost_one_walk_over_the_bytes():
    metrics = [(f"m.{i}", float(i), {"k": str(i)}) for i in range(2000)]
    resource, decoded = decode_metrics(metrics_data(*metrics))
    assert resource == {"service.name": "judge"} and len(decoded) == 2000
    assert decoded[1999].points == [({"k": "1999"}, 1999.0)]


def test_the_prometheus_exporter_shows_each_clients_last_push_bounded():
    node = Node(every=ALL)
    answer = node.get(ctx=context(client_id="shop"))
    assert node.push(answer.client_instance_id, answer.subscription_id, PAYLOAD, ctx=context(client_id="shop")) == 0
    text = exposition(node.prometheus.families)().decode()
    iid = uuid_to_kafka_string(answer.client_instance_id)
    assert (f'org_apache_kafka_producer_record_queue_time_avg{{client_id="shop",client_instance_id="{iid}",'
            f'topic="t"}} 2.5') in text
    assert 'org_apache_kafka_producer_node_request_latency_max{' in text and 'node_id="1"' in text
    many = metrics_data(*[(f"m.{i}", 1.0, {}) for i in range(40)])
    for i in range(3):                                  # 3 clients x 40 samples past max_series=50
        other = node.get(ctx=context(connection=f"o-{i}"))
        assert node.push(other.client_instance_id, other.subscription_id, many) == 0
    assert sum(len(s) for s in node.prometheus.latest.values()) <= 50
    assert len(node.prometheus.latest) == 1


def test_pushed_names_never_clash_with_the_nodes_families_nor_break_the_exposition():
    node = Node(every=ALL)
    answer = node.get()
    hostile = metrics_data(("kafka_server_kafkaserver_brokerstate", 1.0, {"__name__": "x", "": "y", "9a": "z"}),
                           ("7.up", 2.0, {"ok key": "v\n\"w"}))
    assert node.push(answer.client_instance_id, answer.subscription_id, hostile) == 0
    text = exposition(node.prometheus.families)().decode()
    assert "\nkafka_server_kafkaserver_brokerstate" not in text and "client_kafka_server_kafkaserver_brokerstate{" in text
    assert 'name__="x"' in text and 'attribute_="y"' in text and 'attribute_9a="z"' in text
    assert 'client_7_up{' in text and 'ok_key="v\\n\\"w"' in text


def test_a_clients_samples_are_shown_until_three_push_intervals_or_a_minute_after_its_last_push():
    node = Node(slow={"metrics": "*", "interval.ms": "30000"})
    answer = node.get()
    assert node.push(answer.client_instance_id, answer.subscription_id, PAYLOAD, terminating=True) == 0
    node.clock.now += 89_999
    assert len(list(node.prometheus.families())) == 2
    node.clock.now += 1
    assert list(node.prometheus.families()) == [] and node.prometheus.latest == {}


def test_without_an_exporter_the_pair_is_answered_but_not_listed_and_a_push_only_decompressed():
    """Kafka's broker lists the pair only with a reporter that takes telemetry, but answers it
    either way (isApiEnabled does not look at telemetry); its empty plugin decodes nothing."""
    from kafkawire.net.server import KafkaServer
    node = Node(every=ALL)
    node.apis.enabled, node.apis.exporters = False, []
    handlers = node.apis.handlers()
    assert sorted(handlers) == [71, 72] and not any(h.advertised for h in handlers.values())
    listed = {key for key, _, _ in KafkaServer(handlers, host="127.0.0.1", port=0).api_versions()}
    assert not listed & {71, 72}
    answer = node.get()
    assert node.push(answer.client_instance_id, answer.subscription_id, compress(GZIP, b"\x0b" * 64), GZIP) == 0
    node.clock.now += 1000
    assert node.push(answer.client_instance_id, answer.subscription_id, b"\x1f\x8bnot gzip", GZIP) == \
        Errors.INVALID_RECORD


def test_the_brokers_client_metrics_meters_count_throttles_unknown_subscriptions_exports_and_errors():
    """Kafka's ClientMetricsStats (group client-metrics): instance-count, the unknown-subscription
    meter, and per client instance the throttle, plugin-export (with its time) and plugin-error
    meters, which go with the instance; rendered as the JMX exporter names them."""
    from prometheus_client.parser import text_string_to_metric_families
    node = Node(every=ALL)
    answer = node.get()
    iid, sid = answer.client_instance_id, answer.subscription_id
    stats = node.apis.manager.stats
    assert node.push(iid, sid, PAYLOAD) == 0
    node.clock.now += 1
    assert node.push(iid, sid, PAYLOAD) == Errors.THROTTLING_QUOTA_EXCEEDED
    assert node.get(iid).error_code == Errors.THROTTLING_QUOTA_EXCEEDED
    node.clock.now += 1000
    assert node.push(iid, sid + 1, PAYLOAD) == Errors.UNKNOWN_SUBSCRIPTION_ID
    node.clock.now += 1000
    assert node.push(iid, sid, b"\x0b" * 64) == Errors.INVALID_RECORD        # not MetricsData: the export fails
    other = node.get(ctx=context(connection="c-2"))
    text = exposition(lambda: node.apis.manager.stats.families(len(node.apis.manager.instances)))().decode()
    samples = {(s.name, s.labels.get("client_instance_id")): s.value
               for family in text_string_to_metric_families(text) for s in family.samples}
    me = uuid_to_kafka_string(iid)
    assert samples[("kafka_server_client_metrics_instance_count", None)] == 2
    assert samples[("kafka_server_client_metrics_unknown_subscription_request_count", None)] == 1
    assert samples[("kafka_server_client_metrics_unknown_subscription_request_rate", None)] > 0
    assert samples[("kafka_server_client_metrics_throttle_count", me)] == 2
    assert samples[("kafka_server_client_metrics_plugin_export_count", me)] == 1
    assert samples[("kafka_server_client_metrics_plugin_error_count", me)] == 1
    assert samples[("kafka_server_client_metrics_plugin_export_time_max", me)] >= \
        samples[("kafka_server_client_metrics_plugin_export_time_avg", me)] >= 0
    newcomer = uuid_to_kafka_string(other.client_instance_id)
    assert samples[("kafka_server_client_metrics_throttle_count", newcomer)] == 0
    assert samples[("kafka_server_client_metrics_plugin_export_time_avg", newcomer)] != \
        samples[("kafka_server_client_metrics_plugin_export_time_avg", newcomer)]         # NaN: no export yet
    node.apis.connection_closed("c-1")                       # the instance goes, and its meters with it
    assert iid not in stats.instances and other.client_instance_id in stats.instances
