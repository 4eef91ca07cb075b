"""Kafka 4.3.1's admin tools judge a kafkawire broker (issue 29, "Judges"; the invocations a
by-hand script used to print, now checked): one combined kafkawire node for the module holds an
inactive classic group with committed offsets ("billing"), a live KIP-848 member ("g848"), a
committed transaction and one left open, records with timestamps we chose; each tool's output is
parsed and compared to that state.

* kafka-consumer-groups: --list --state; --describe --offsets/--members/--state --verbose of
  both groups; --reset-offsets (dry run, --to-offset on one partition, refused on the active
  group); --delete-offsets (done on the inactive group, refused per partition on the subscribed
  one); --delete of an active, an inactive and an unknown group; a KIP-848 group its member left
  (shifted, its offsets deleted, deleted).
* kafka-transactions: describe-producers (a finished and an open transaction), find-hanging,
  abort of the open one by its start offset, after which a read_committed reader reaches the end.
* kafka-topics --describe, kafka-configs --describe (a topic --all, the brokers' default),
  kafka-log-dirs (sizes against the files on disk), kafka-delete-records (a good offset, one past
  the end, an internal topic) and kafka-get-offsets for every special time.
* kafka-broker-api-versions: Kafka 4.3.1's broker range for every API served, the SASL pair on
  a PLAINTEXT listener.
* client telemetry (KIP-714; the node takes it): a kafka-client-metrics subscription, Kafka's Java
  producer and librdkafka pushing, their metric names on the node's Prometheus endpoint.
"""
from __future__ import annotations

import json
import os
import re
import time
import urllib.request

import pytest

from tests.interop.broker_judges import (GROUPS, TRANSACTIONS, WAIT_S, committed_offsets, create_topic, kafka_tool,
                                         module_broker, run_tool, table, transactional_producer, wait_until,
                                         write_transaction)
from kafkawire.codegen.kafka_api_keys import kafka_apis
from kafkawire.messages.metadata_request import MetadataRequest, MetadataRequestTopic
from kafkawire.protocol.error_codes import Errors
from tests.broker.wire import call
from tests.interop import kafka_dist
from tests.interop.kafka_procs import CONFIGS, FEATURES, TOPICS, free_port

confluent_kafka = pytest.importorskip("confluent_kafka")
kafka = pytest.importorskip("kafka")

PER_PARTITION = 10                 # records on each of the 3 partitions of "orders"
PEAK_OFFSET = 4                    # the offset of each partition's largest timestamp (not its last)
BASE_MS = int(time.time() * 1000) - 60_000     # recent: records older than retention.ms (7 days) would go
LOG_DIRS = "org.apache.kafka.tools.LogDirsCommand"
DELETE_RECORDS = "org.apache.kafka.tools.DeleteRecordsCommand"
GET_OFFSETS = "org.apache.kafka.tools.GetOffsetShell"
API_VERSIONS = "org.apache.kafka.tools.BrokerApiVersionsCommand"
CLIENT_METRICS = "org.apache.kafka.tools.ClientMetricsCommand"
# Kafka 4.3.1 broker APIs kafkawire's broker does not serve yet (docs/broker.md, "What is not done
# yet"): none since the share coordinator's five APIs (the ACL APIs are served, SECURITY_DISABLED
# on a node without an authorizer, as Kafka's).
NOT_SERVED_YET: set[int] = set()
# The module's node takes client telemetry (KIP-714), so it serves GetTelemetrySubscriptions and
# PushTelemetry (71, 72) as a Kafka broker with a telemetry-capable reporter does, and its
# Prometheus endpoint shows the pushed metrics.
TELEMETRY_REPORTERS = "kafkawire.metrics.PrometheusReporter,kafkawire.metrics.ClientTelemetryExporter"
PERF_TEST = "org.apache.kafka.tools.ProducerPerformance"
# Kafka's broker leaves out an unstable last version (unstable.api.versions.enable=false).
# Where a Kafka 4.3.1 broker advertises other than the jar's schema: InitProducerId v6 (KIP-939 2PC)
# is unstable in 4.3.1; Produce is listed from v0 though its schema starts at v3 (ApiKeys'
# PRODUCE_API_VERSIONS_RESPONSE_MIN_VERSION, KAFKA-18659: old librdkafka clients need v0 listed).
STABLE_RANGES = {22: (0, 5), 0: (0, 13)}


@pytest.fixture(scope="module")
def broker(kafka_libs, tmp_path_factory):
    metrics_port = free_port()
    with module_broker(tmp_path_factory, {"metric.reporters": TELEMETRY_REPORTERS,
                                          "kafkawire.metrics.prometheus.listener": f"http://127.0.0.1:{metrics_port}"}
                       ) as node:
        node.metrics_url = f"http://127.0.0.1:{metrics_port}/metrics"
        yield node


def record_timestamp(offset: int) -> int:
    """The timestamp of the record at ``offset`` of each "orders" partition (one batch each):
    rising, but the record at PEAK_OFFSET has the largest."""
    return BASE_MS + (10_000 if offset == PEAK_OFFSET else offset)


@pytest.fixture(scope="module")
def state(broker):
    """The module's traffic; yields {"member": g848's member id} while the KIP-848 member and the
    open transaction's producer stay alive."""
    create_topic(broker, "orders", 3)
    create_topic(broker, "tx", 1)
    producer = kafka.KafkaProducer(bootstrap_servers=broker.bootstrap_servers, acks="all", linger_ms=200)
    sent = [producer.send("orders", b"v", partition=partition, timestamp_ms=record_timestamp(offset))
            for offset in range(PER_PARTITION) for partition in range(3)]
    producer.flush(WAIT_S)
    assert {(m.partition, m.offset) for m in (f.get(WAIT_S) for f in sent)} == \
        {(p, o) for p in range(3) for o in range(PER_PARTITION)}
    producer.close()
    billing = kafka.KafkaConsumer("orders", bootstrap_servers=broker.bootstrap_servers, group_id="billing",
                                  auto_offset_reset="earliest", enable_auto_commit=False)
    read = 0
    deadline = time.monotonic() + WAIT_S
    while read < 3 * PER_PARTITION and time.monotonic() < deadline:
        read += sum(len(batch) for batch in billing.poll(timeout_ms=500).values())
    billing.commit()
    billing.close()
    write_transaction(transactional_producer(broker, "tid-1"), "tx", [f"t{i}" for i in range(5)], commit=True)
    open_producer = transactional_producer(broker, "tid-open", **{"transaction.timeout.ms": 900000})
    open_producer.begin_transaction()
    open_producer.produce("tx", b"open", partition=0)
    open_producer.flush(WAIT_S)
    member = confluent_kafka.Consumer({"bootstrap.servers": broker.bootstrap_servers, "group.id": "g848",
                                       "group.protocol": "consumer", "client.id": "c848"})
    member.subscribe(["orders"])
    wait_until(lambda: member.poll(0.2) is None and len(member.assignment()) == 3, "g848's member owns orders")
    yield {"member": member.memberid()}
    member.close()
    open_producer.abort_transaction(WAIT_S)       # before the node goes, so that it does not retry for ever
    open_producer.close()


def groups(broker, *args) -> str:
    return kafka_tool(GROUPS, "--bootstrap-server", broker.bootstrap_servers, *args)


def state_table(stdout: str) -> dict[str, dict[str, str]]:
    """--describe --state: {group: row}; the COORDINATOR (ID) cell ("host:port  (id)") as "(id)"."""
    joined = re.sub(r"\S+\s+\((\d+)\)", r"(\1)", stdout.replace("COORDINATOR (ID)", "COORDINATOR"))
    return {row["GROUP"]: row for row in table(joined, "GROUP")}


def test_consumer_groups_list_and_describe_both_groups(broker, state):
    """--list --state names each group's state; --describe --offsets shows billing's committed
    offsets at the log end (lag 0, no member) and g848's partitions owned by its member with no
    offset; --members shows g848's member owning all three partitions, reconciled; --state
    shows billing Empty with no member and g848 Stable with one, on coordinator 1."""
    listed = {row["GROUP"]: row["STATE"] for row in table(groups(broker, "--list", "--state"), "GROUP")}
    assert listed == {"billing": "Empty", "g848": "Stable"}

    offsets = table(groups(broker, "--describe", "--all-groups", "--offsets", "--verbose"), "GROUP")
    by_group = {(r["GROUP"], r["TOPIC"], int(r["PARTITION"])): r for r in offsets}
    assert set(by_group) == {(g, "orders", p) for g in ("billing", "g848") for p in range(3)}
    for p in range(3):
        billing, live = by_group[("billing", "orders", p)], by_group[("g848", "orders", p)]
        assert (billing["LEADER-EPOCH"], billing["CURRENT-OFFSET"], billing["LOG-END-OFFSET"], billing["LAG"],
                billing["CONSUMER-ID"]) == ("0", str(PER_PARTITION), str(PER_PARTITION), "0", "-")
        assert (live["CURRENT-OFFSET"], live["LOG-END-OFFSET"], live["LAG"], live["CONSUMER-ID"], live["HOST"],
                live["CLIENT-ID"]) == ("-", str(PER_PARTITION), "-", state["member"], "/127.0.0.1", "c848")

    (member,) = table(groups(broker, "--describe", "--all-groups", "--members", "--verbose"), "GROUP")
    assert (member["GROUP"], member["CONSUMER-ID"], member["CLIENT-ID"], member["#PARTITIONS"],
            member["CURRENT-ASSIGNMENT"], member["TARGET-ASSIGNMENT"]) == \
        ("g848", state["member"], "c848", "3", "orders:0,1,2", "orders:0,1,2")
    assert member["CURRENT-EPOCH"] == member["TARGET-EPOCH"]

    states = state_table(groups(broker, "--describe", "--all-groups", "--state", "--verbose"))
    assert (states["billing"]["STATE"], states["billing"]["#MEMBERS"], states["billing"]["COORDINATOR"]) == \
        ("Empty", "0", "(1)")
    live = states["g848"]
    assert (live["STATE"], live["#MEMBERS"], live["COORDINATOR"], live["ASSIGNMENT-STRATEGY"]) == \
        ("Stable", "1", "(1)", "uniform")
    assert live["GROUP-EPOCH"] == live["TARGET-ASSIGNMENT-EPOCH"] == member["CURRENT-EPOCH"]


def test_consumer_groups_reset_and_delete_offsets(broker, state):
    """A dry run changes nothing; --to-offset 2 on orders:1 moves that one offset; the active
    group's reset is refused naming its state; billing's offsets of orders:0 are deleted, while
    g848's are refused on every partition because it is subscribed to the topic."""
    def billing_offsets():
        return committed_offsets(broker, "billing", "orders", 3)

    dry = table(groups(broker, "--group", "billing", "--reset-offsets", "--to-earliest", "--topic", "orders",
                       "--dry-run"), "GROUP")
    assert {(int(r["PARTITION"]), r["NEW-OFFSET"]) for r in dry} == {(p, "0") for p in range(3)}
    assert billing_offsets() == {p: PER_PARTITION for p in range(3)}

    moved = table(groups(broker, "--group", "billing", "--reset-offsets", "--to-offset", 2, "--topic", "orders:1",
                         "--execute"), "GROUP")
    assert [(r["PARTITION"], r["NEW-OFFSET"]) for r in moved] == [("1", "2")]
    assert billing_offsets() == {0: PER_PARTITION, 1: 2, 2: PER_PARTITION}

    refused = groups(broker, "--group", "g848", "--reset-offsets", "--to-earliest", "--all-topics", "--execute")
    assert "Error: Assignments can only be reset if the group 'g848' is inactive, but the current state is Stable." \
        in refused
    assert table(refused, "GROUP") == []

    deleted = groups(broker, "--group", "billing", "--delete-offsets", "--topic", "orders:0")
    assert "Request succeeded for deleting offsets from group billing." in deleted
    assert [(r["PARTITION"], r["STATUS"]) for r in table(deleted, "TOPIC")] == [("0", "Successful")]
    assert billing_offsets() == {1: 2, 2: PER_PARTITION}

    subscribed = groups(broker, "--group", "g848", "--delete-offsets", "--topic", "orders")
    assert "Error: Encountered some partition-level error, see the follow-up details." in subscribed
    statuses = re.findall(r"^orders\s+(\d)\s+Error: org\.apache\.kafka\.common\.errors\.(\w+):", subscribed, re.M)
    assert sorted(statuses) == [(str(p), "GroupSubscribedToTopicException") for p in range(3)]


def test_consumer_groups_delete_an_active_an_inactive_and_an_unknown_group(broker, state):
    """Only the inactive group is deleted; the active one is not empty, the unknown one not found."""
    out = groups(broker, "--delete", "--group", "g848", "--group", "billing", "--group", "nosuch")
    failures = dict(re.findall(r"^\* Group '(\w+)' could not be deleted due to: "
                               r"org\.apache\.kafka\.common\.errors\.(\w+):", out, re.M))
    assert failures == {"g848": "GroupNotEmptyException", "nosuch": "GroupIdNotFoundException"}
    assert "These consumer groups were deleted successfully: 'billing'" in out
    assert groups(broker, "--list").split() == ["g848"]


def test_consumer_groups_manage_a_kip848_group_its_member_left(broker, state):
    """A KIP-848 group whose one member committed and left: described with the member's committed
    offsets while it runs, then Empty with no member; its offsets may then be shifted back (the
    lag follows), deleted for the whole topic, and the group deleted."""
    member = confluent_kafka.Consumer({"bootstrap.servers": broker.bootstrap_servers, "group.id": "g848-left",
                                       "group.protocol": "consumer", "auto.offset.reset": "earliest",
                                       "enable.auto.commit": False})
    member.subscribe(["orders"])
    read = 0
    deadline = time.monotonic() + WAIT_S
    while read < 3 * PER_PARTITION and time.monotonic() < deadline:
        message = member.poll(0.2)
        read += message is not None and not message.error()
    member.commit(asynchronous=False)
    live = table(groups(broker, "--describe", "--group", "g848-left"), "GROUP")
    assert {(r["PARTITION"], r["CURRENT-OFFSET"], r["LAG"], r["CONSUMER-ID"]) for r in live} == \
        {(str(p), str(PER_PARTITION), "0", member.memberid()) for p in range(3)}
    member.close()

    left = state_table(groups(broker, "--describe", "--group", "g848-left", "--state"))["g848-left"]
    assert (left["STATE"], left["#MEMBERS"]) == ("Empty", "0")
    shifted = table(groups(broker, "--group", "g848-left", "--reset-offsets", "--shift-by", -2, "--topic", "orders",
                           "--execute"), "GROUP")
    assert {(r["PARTITION"], r["NEW-OFFSET"]) for r in shifted} == {(str(p), str(PER_PARTITION - 2)) for p in range(3)}
    described = table(groups(broker, "--describe", "--group", "g848-left", "--offsets"), "GROUP")
    assert {(r["PARTITION"], r["CURRENT-OFFSET"], r["LAG"]) for r in described} == \
        {(str(p), str(PER_PARTITION - 2), "2") for p in range(3)}
    deleted = groups(broker, "--group", "g848-left", "--delete-offsets", "--topic", "orders")
    assert sorted((r["PARTITION"], r["STATUS"]) for r in table(deleted, "TOPIC")) == \
        [(str(p), "Successful") for p in range(3)]
    assert committed_offsets(broker, "g848-left", "orders", 3) == {}
    assert "Deletion of requested consumer groups ('g848-left') was successful." in \
        groups(broker, "--delete", "--group", "g848-left")


# --- kafka-transactions: abort ------------------------------------------------------------------------
def transactions(broker, *args) -> str:
    return kafka_tool(TRANSACTIONS, "--bootstrap-server", broker.bootstrap_servers, *args)


def producers_of_tx(broker) -> dict[str, dict[str, str]]:
    rows = table(transactions(broker, "describe-producers", "--topic", "tx", "--partition", 0), "ProducerId")
    return {row["ProducerId"]: row for row in rows}


def read_committed_end(broker) -> tuple[int, list[bytes]]:
    """tx-0's end offset for read_committed (its last stable offset), and what such a reader
    gets from the start up to it."""
    consumer = kafka.KafkaConsumer(bootstrap_servers=broker.bootstrap_servers, group_id=None,
                                   isolation_level="read_committed", enable_auto_commit=False,
                                   auto_offset_reset="earliest")
    partition = kafka.TopicPartition("tx", 0)
    consumer.assign([partition])
    end = consumer.end_offsets([partition])[partition]
    values: list[bytes] = []
    deadline = time.monotonic() + WAIT_S
    while consumer.position(partition) < end and time.monotonic() < deadline:
        values += [m.value for batch in consumer.poll(timeout_ms=500).values() for m in batch]
    consumer.close()
    return end, values


def test_kafka_transactions_aborts_the_open_transaction_by_its_start_offset(broker, state):
    """tx-0 holds tid-1's committed transaction (offsets 0-4, marker 5) and tid-open's open one
    (offset 6): describe-producers shows the first finished and the second open at 6; nothing
    hangs; `abort --start-offset 3` is refused (no transaction opens there);
    `abort --start-offset 6` writes the abort marker, after which no producer has an
    open transaction and a read_committed reader reaches the log end seeing only tid-1's
    records."""
    listed = {row["TransactionalId"]: row["ProducerId"] for row in table(transactions(broker, "list"),
                                                                          "TransactionalId")}
    done, open_ = listed["tid-1"], listed["tid-open"]
    before = producers_of_tx(broker)
    assert set(before) == {done, open_}
    assert (before[done]["LastSequence"], before[done]["LatestCoordinatorEpoch"],
            before[done]["CurrentTransactionStartOffset"]) == ("4", "0", "None")
    assert (before[open_]["LastSequence"], before[open_]["LatestCoordinatorEpoch"],
            before[open_]["CurrentTransactionStartOffset"]) == ("0", "-1", "6")
    assert read_committed_end(broker)[0] == 6                  # the open transaction holds the LSO
    assert table(transactions(broker, "find-hanging", "--broker-id", 1), "Topic") == []

    not_open = run_tool(TRANSACTIONS, "--bootstrap-server", broker.bootstrap_servers, "abort", "--topic", "tx",
                        "--partition", 0, "--start-offset", 3)
    assert (not_open.returncode, not_open.stderr.strip().splitlines()[-1]) == \
        (1, "Could not find any open transactions starting at offset 3 on partition tx-0")
    transactions(broker, "abort", "--topic", "tx", "--partition", 0, "--start-offset", 6)
    after = producers_of_tx(broker)
    assert {pid: row["CurrentTransactionStartOffset"] for pid, row in after.items()} == {done: "None", open_: "None"}
    assert after[open_]["LatestCoordinatorEpoch"] == "0"
    assert read_committed_end(broker) == (8, [b"t%d" % i for i in range(5)])


# --- topics, configs, log dirs, delete-records, get-offsets ----------------------------------------------------
def test_kafka_topics_and_configs_describe_the_topic_and_the_defaults(broker, state):
    """kafka-topics --describe (through DescribeTopicPartitions): 3 partitions led by node 1 with ISR
    [1] and empty ELRs; kafka-configs: the topic's
    every config with its default's source (retention.ms 7 days, no synonym: Kafka's
    log.retention.hours is not a synonym the broker reports), the cluster's min.insync.replicas
    default of 1 that formatting wrote."""
    described = kafka_tool(TOPICS, "--bootstrap-server", broker.bootstrap_servers, "--describe", "--topic", "orders")
    header, *partitions = [line.strip() for line in described.splitlines() if line.strip()]
    assert re.search(r"PartitionCount: 3\tReplicationFactor: 1\t", header)
    # through DescribeTopicPartitions, as on Kafka 4.3.1's broker: empty ELR lists, not N/A (Metadata's)
    assert sorted(partitions) == [f"Topic: orders\tPartition: {p}\tLeader: 1\tReplicas: 1\tIsr: 1\t"
                                  f"Elr: \tLastKnownElr:" for p in range(3)]
    configs = kafka_tool(CONFIGS, "--bootstrap-server", broker.bootstrap_servers, "--describe",
                         "--entity-type", "topics", "--entity-name", "orders", "--all")
    entries = {name: (value, synonyms) for name, value, synonyms in
               re.findall(r"^  ([\w.]+)=(.*?) sensitive=false synonyms=\{(.*)\}$", configs, re.M)}
    assert entries["retention.ms"] == ("604800000", "")
    assert entries["cleanup.policy"] == ("delete", "DEFAULT_CONFIG:log.cleanup.policy=delete")
    assert entries["max.message.bytes"] == ("1048588", "DEFAULT_CONFIG:message.max.bytes=1048588")
    assert entries["min.insync.replicas"] == \
        ("1", "DYNAMIC_DEFAULT_BROKER_CONFIG:min.insync.replicas=1, DEFAULT_CONFIG:min.insync.replicas=1")
    assert len(entries) == len(configs.splitlines()) - 1      # every line parsed
    brokers = kafka_tool(CONFIGS, "--bootstrap-server", broker.bootstrap_servers, "--describe",
                         "--entity-type", "brokers", "--entity-default")
    assert "min.insync.replicas=1 sensitive=false synonyms={DYNAMIC_DEFAULT_BROKER_CONFIG:min.insync.replicas=1}" \
        in brokers


def test_kafka_topics_creates_lists_grows_and_deletes_a_topic(broker):
    """kafka-topics' other commands through the broker (issue 29's judge; --create and --describe
    run above): a topic created with a config of its own, listed, grown from 2 partitions to 4
    (--alter; its new partitions' logs opened here), described with its config, deleted, then no
    longer listed and unknown to Metadata."""
    servers, topic = broker.bootstrap_servers, "tools-grown"

    def topics(*args) -> str:
        return kafka_tool(TOPICS, "--bootstrap-server", servers, *args)

    def partition_count() -> int | None:
        described = call(broker, MetadataRequest(topics=[MetadataRequestTopic(name=topic)],
                                                 allow_auto_topic_creation=False), 12).topics[0]
        return None if described.error_code else len(described.partitions)

    topics("--create", "--topic", topic, "--partitions", 2, "--replication-factor", 1,
           "--config", "retention.ms=3600000")
    assert topic in topics("--list").split()
    topics("--alter", "--topic", topic, "--partitions", 4)
    wait_until(lambda: partition_count() == 4, f"{topic} grown to 4 partitions")
    wait_until(lambda: all(os.path.isdir(os.path.join(broker.log_dir, f"{topic}-{p}")) for p in range(4)),
               f"the logs of {topic}'s 4 partitions")
    header = topics("--describe", "--topic", topic).splitlines()[0]
    # the configs not of source DEFAULT_CONFIG: the topic's own and the cluster's min.insync.replicas
    # that formatting wrote (as Kafka's kafka-storage format does)
    assert header.endswith("\tPartitionCount: 4\tReplicationFactor: 1\t"
                           "Configs: min.insync.replicas=1,retention.ms=3600000"), header
    topics("--delete", "--topic", topic)
    wait_until(lambda: topic not in topics("--list").split(), f"{topic} gone from kafka-topics --list")
    assert partition_count() is None


def test_log_dirs_delete_records_and_get_offsets(broker, state, tmp_path):
    """kafka-log-dirs gives each partition's size as the bytes of its segments on disk;
    kafka-delete-records moves orders-1's start to 4, refuses an offset past orders-0's end
    (OffsetOutOfRange) and an internal topic (InvalidTopic); kafka-get-offsets then gives the
    latest, earliest (and earliest-local) offsets, the offset of the largest timestamp (a record
    inside its batch, not the batch's last), the first offset at or after a timestamp (none
    after the largest) and nothing for the tiered-storage times."""
    dirs_out = kafka_tool(LOG_DIRS, "--bootstrap-server", broker.bootstrap_servers, "--describe",
                          "--topic-list", "orders")
    (report,) = [json.loads(line) for line in dirs_out.splitlines() if line.startswith("{")]
    (log_dir,) = report["brokers"][0]["logDirs"]
    for entry in log_dir["partitions"]:
        directory = os.path.join(broker.log_dir, entry["partition"])
        on_disk = sum(os.path.getsize(os.path.join(directory, f)) for f in os.listdir(directory) if f.endswith(".log"))
        assert (entry["size"], entry["offsetLag"], entry["isFuture"]) == (on_disk, 0, False), entry
    assert sorted(e["partition"] for e in log_dir["partitions"]) == ["orders-0", "orders-1", "orders-2"]

    spec = tmp_path / "delete.json"
    spec.write_text(json.dumps({"version": 1, "partitions": [
        {"topic": "orders", "partition": 1, "offset": 4}, {"topic": "orders", "partition": 0, "offset": 99},
        {"topic": "__consumer_offsets", "partition": 0, "offset": -1}]}))
    deleted = kafka_tool(DELETE_RECORDS, "--bootstrap-server", broker.bootstrap_servers, "--offset-json-file", spec)
    results = dict(re.findall(r"^partition: (\S+)\t(.*)$", deleted, re.M))
    assert results == {
        "orders-1": "low_watermark: 4",
        "orders-0": "error: org.apache.kafka.common.errors.OffsetOutOfRangeException: "
                    "The requested offset is not within the range of offsets maintained by the server.",
        "__consumer_offsets-0": "error: org.apache.kafka.common.errors.InvalidTopicException: "
                                "The request attempted to perform an operation on an invalid topic."}

    def offsets(time_spec: str) -> dict[str, int]:
        out = kafka_tool(GET_OFFSETS, "--bootstrap-server", broker.bootstrap_servers, "--topic", "orders",
                         "--time", time_spec)
        return {where: int(offset) for where, offset in (line.rsplit(":", 1) for line in out.split())}
    assert offsets("-1") == {f"orders:{p}": PER_PARTITION for p in range(3)}
    assert offsets("-2") == offsets("-4") == {"orders:0": 0, "orders:1": 4, "orders:2": 0}
    assert offsets("-3") == {f"orders:{p}": PEAK_OFFSET for p in range(3)}
    assert offsets(str(BASE_MS + 2)) == {"orders:0": 2, "orders:1": 4, "orders:2": 2}
    assert offsets(str(BASE_MS + 10_001)) == {}
    assert offsets("-5") == offsets("-6") == {}


def test_broker_api_versions_are_kafka_4_3_1_brokers(broker, state):
    """kafka-broker-api-versions on the broker listener: every API it lists has Kafka 4.3.1's
    broker range (the jar's schemas, less an unstable last version); the only APIs it lacks are
    those not served yet (the telemetry pair is served: the node takes client telemetry); SaslHandshake and SaslAuthenticate are listed on
    this PLAINTEXT listener, as Kafka's broker lists them on every listener."""
    out = kafka_tool(API_VERSIONS, "--bootstrap-server", broker.bootstrap_servers)
    listed = {}
    for key, versions in re.findall(r"^\t\w+\((\d+)\): (.*?),?$", out, re.M):
        match = re.fullmatch(r"(\d+)(?: to (\d+))? \[usable: \d+\]", versions)
        listed[int(key)] = (int(match[1]), int(match[2] or match[1])) if match else versions
    jar = kafka_dist.libs_dir() / f"kafka-clients-{kafka_dist.KAFKA_VERSION}.jar"
    kafkas = {key: STABLE_RANGES.get(key, (low, high))
              for key, (_, low, high, on_broker) in kafka_apis(str(jar)).items() if on_broker}
    assert set(listed) == set(kafkas)
    served = {key: versions for key, versions in listed.items() if versions != "UNSUPPORTED"}
    assert set(kafkas) - set(served) <= NOT_SERVED_YET
    assert (served[71], served[72]) == ((0, 0), (0, 0))
    assert {key: versions for key, versions in served.items() if versions != kafkas[key]} == {}
    assert (served.get(17), served.get(36)) == ((0, 1), (0, 2))


def test_quotas_scram_features_and_client_metrics_through_the_broker(broker):
    """Kafka's tools on the broker's bootstrap server (issue 29): kafka-configs alters a user's
    quota and SCRAM credential (AlterClientQuotas and AlterUserScramCredentials, forwarded) and
    a client id's quota, then describes them (DescribeClientQuotas and
    DescribeUserScramCredentials, answered from the broker's image); kafka-features describes the
    finalized features and dry-runs a kraft.version upgrade (UpdateFeatures, forwarded);
    kafka-client-metrics --list and --describe (ListConfigResources) answer with no
    subscription."""
    servers = broker.bootstrap_servers
    for config in ("producer_byte_rate=1024", "SCRAM-SHA-256=[iterations=4096,password=judge-secret]"):
        # one at a time: Kafka's tool refuses both at once through --bootstrap-server
        kafka_tool(CONFIGS, "--bootstrap-server", servers, "--alter", "--entity-type", "users", "--entity-name",
                   "judge", "--add-config", config)
    kafka_tool(CONFIGS, "--bootstrap-server", servers, "--alter", "--entity-type", "clients", "--entity-name",
               "judge-app", "--add-config", "consumer_byte_rate=2048")

    def described(entity_type, name):
        return kafka_tool(CONFIGS, "--bootstrap-server", servers, "--describe", "--entity-type", entity_type,
                          "--entity-name", name)
    def both_described():
        out = described("users", "judge")
        return out if "SCRAM" in out and "Quota" in out else None
    users = wait_until(both_described, "the user's quota and credential described")
    assert "Quota configs for user-principal 'judge' are producer_byte_rate=1024.0" in users, users
    assert "SCRAM credential configs for user-principal 'judge' are SCRAM-SHA-256=iterations=4096" in users, users
    clients = described("clients", "judge-app")
    assert "Quota configs for client-id 'judge-app' are consumer_byte_rate=2048.0" in clients, clients
    features = kafka_tool(FEATURES, "--bootstrap-server", servers, "describe")
    assert re.search(r"^Feature: kraft\.version\s+SupportedMinVersion: 0\s+SupportedMaxVersion: 1\s+"
                     r"FinalizedVersionLevel: 1\s+Epoch: \d+", features, re.M), features
    upgrade = run_tool(FEATURES, "--bootstrap-server", servers, "upgrade", "--feature", "kraft.version=1", "--dry-run")
    assert (upgrade.returncode, upgrade.stdout) == (0, "kraft.version can be upgraded to 1.\n"), upgrade.stderr[-2000:]
    listed = run_tool(CLIENT_METRICS, "--bootstrap-server", servers, "--list")
    assert (listed.returncode, listed.stdout.strip()) == (0, ""), listed.stderr[-2000:]
    described_metrics = run_tool(CLIENT_METRICS, "--bootstrap-server", servers, "--describe")
    assert (described_metrics.returncode, described_metrics.stdout.strip()) == (0, ""), \
        described_metrics.stderr[-2000:]


def test_kafka_topics_over_a_controller_mutation_rate_hears_throttling_quota_exceeded(broker, tmp_path):
    """KIP-599 through the broker (issue 29): kafka-configs sets a client id's
    controller_mutation_rate; kafka-topics with that client id creates a topic that takes the
    controller's token bucket below zero (11 tokens: 11 windows x 1 s x 1/s; 20 partitions), then
    fails the next creation with Kafka's own THROTTLING_QUOTA_EXCEEDED message, and the topic is
    not made."""
    servers = broker.bootstrap_servers
    # answered once committed: the controller, which enforces it, has it then
    kafka_tool(CONFIGS, "--bootstrap-server", servers, "--alter", "--entity-type", "clients", "--entity-name",
               "judge-mutator", "--add-config", "controller_mutation_rate=1")
    config = tmp_path / "mutator.properties"
    config.write_text("client.id=judge-mutator\n")

    def create(name: str, partitions: int):
        return run_tool(TOPICS, "--bootstrap-server", servers, "--command-config", config, "--create", "--topic",
                        name, "--partitions", partitions, "--replication-factor", 1)
    first = create("mutated-wide", 20)
    assert first.returncode == 0, first.stderr[-2000:]
    second = create("mutated-refused", 1)
    assert second.returncode != 0 and "The throttling quota has been exceeded" in second.stdout + second.stderr, \
        (second.returncode, second.stdout[-2000:], second.stderr[-2000:])
    listed = call(broker, MetadataRequest(topics=[MetadataRequestTopic(name=n) for n in ("mutated-wide",
                                                                                       "mutated-refused")],
                                         allow_auto_topic_creation=False), 12)
    assert [(t.name, t.error_code, len(t.partitions)) for t in listed.topics] == [
        ("mutated-wide", 0, 20), ("mutated-refused", int(Errors.UNKNOWN_TOPIC_OR_PARTITION), 0)]


def test_kafka_configs_sets_and_describes_the_replication_throttles(broker):
    """KIP-73's settings as Kafka's tool writes them (issue 29): the brokers' default rates and a
    topic's throttled replicas, then described back (what the replication quotas read)."""
    servers = broker.bootstrap_servers
    create_topic(broker, "throttled", 2)
    kafka_tool(CONFIGS, "--bootstrap-server", servers, "--alter", "--entity-type", "brokers", "--entity-default",
               "--add-config", "leader.replication.throttled.rate=1000000,follower.replication.throttled.rate=2000000")
    kafka_tool(CONFIGS, "--bootstrap-server", servers, "--alter", "--entity-type", "topics", "--entity-name",
               "throttled", "--add-config", "leader.replication.throttled.replicas=[0:1,1:1]")
    brokers = kafka_tool(CONFIGS, "--bootstrap-server", servers, "--describe", "--entity-type", "brokers",
                         "--entity-default")
    assert "leader.replication.throttled.rate=1000000" in brokers and \
        "follower.replication.throttled.rate=2000000" in brokers, brokers
    topic = kafka_tool(CONFIGS, "--bootstrap-server", servers, "--describe", "--entity-type", "topics",
                       "--entity-name", "throttled")
    assert "leader.replication.throttled.replicas=0:1,1:1" in topic, topic


def scraped(broker) -> str:
    with urllib.request.urlopen(broker.metrics_url, timeout=10) as answer:
        return answer.read().decode()


def pushed_by(text: str, client_id: str) -> set[str]:
    """The family names of the samples the node's endpoint shows for ``client_id``'s pushes."""
    return set(re.findall(rf'^(\w+)\{{[^}}]*client_id="{re.escape(client_id)}"', text, re.M))


def test_kafkas_java_producer_and_librdkafka_push_their_metrics_to_the_subscription(broker):
    """Client telemetry (KIP-714, issue 29): kafka-client-metrics --alter creates a subscription to
    the producer metrics of the clients named telemetry-*; Kafka's Java producer (ProducerPerformance,
    enable.metrics.push defaults to true) and librdkafka's get it, push, and the pushed metric names
    show up on the node's Prometheus endpoint, labelled with their client id. Then the subscription
    is deleted (the module's --list test expects none)."""
    servers = broker.bootstrap_servers
    kafka_tool(CLIENT_METRICS, "--bootstrap-server", servers, "--alter", "--name", "judge-producers",
               "--metrics", "org.apache.kafka.producer.", "--interval", "200", "--match", "client_id=telemetry-.*")
    try:
        described = kafka_tool(CLIENT_METRICS, "--bootstrap-server", servers, "--describe", "--name", "judge-producers")
        assert "metrics=org.apache.kafka.producer." in described and "interval.ms=200" in described, described
        rdkafka = confluent_kafka.Producer({"bootstrap.servers": servers, "client.id": "telemetry-rdkafka"})
        rdkafka.produce("orders", b"telemetry", partition=0)
        # 2 s of sends at 10/s: the producer lives through its GetTelemetrySubscriptions and several
        # 200 ms push intervals (a producer that closes before its subscription arrives pushes nothing)
        kafka_tool(PERF_TEST, "--topic", "orders", "--num-records", 20, "--record-size", 10, "--throughput", 10,
                   "--producer-props", f"bootstrap.servers={servers}", "client.id=telemetry-java")
        java = wait_until(lambda: pushed_by(scraped(broker), "telemetry-java"), "the Java producer's pushed metrics")
        assert all(name.startswith("org_apache_kafka_producer_") for name in java), java
        assert "org_apache_kafka_producer_record_send_total" in java, sorted(java)
        rdkafka.flush(WAIT_S)
        pushed = wait_until(lambda: pushed_by(scraped(broker), "telemetry-rdkafka"), "librdkafka's pushed metrics")
        assert all(name.startswith("org_apache_kafka_producer_") for name in pushed), pushed
    finally:
        kafka_tool(CLIENT_METRICS, "--bootstrap-server", servers, "--delete", "--name", "judge-producers")
