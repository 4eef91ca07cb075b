"""Kafka 4.3.1's own tools and system-test clients as judges of a kafkawire broker (issue 29,
"Judges"): one combined kafkawire node (kafkawire.testing.EmbeddedBroker) for the module, and
Kafka's programs decide whether it behaved.

* VerifiableProducer (idempotent, acks=all) and VerifiableConsumer (a classic group committing
  after each poll): their JSON reports are the checker, as in Kafka's system tests: every
  acknowledged record is consumed exactly once, no duplicate, each partition's offsets dense,
  and the offsets committed are what the consumer read.
* TransactionalMessageCopier (what Kafka's transactions system test runs; VerifiableProducer
  4.3.1 has no transactional mode), in group mode, copies three partitions in transactions it
  aborts at random, with aborted transactions of our own around it; a read_committed
  VerifiableConsumer (KIP-848 protocol) reads exactly the copied records and the committed tail,
  in order per partition, never an aborted one; the copier's group offsets are the input's ends.
* kafka-consumer-groups: --list, --describe (CURRENT-OFFSET, LOG-END-OFFSET and LAG against what
  the verifiable clients reported), --reset-offsets --to-earliest --execute (then OffsetFetch),
  --delete.
* kafka-transactions: list, describe of a transactional id with an open transaction,
  describe-producers and find-hanging, against the transaction we left open; describe and
  describe-producers of the copier's finished ones (transaction.version 2 epoch bumps).

* ConsoleProducer and ConsoleConsumer (in a group), ProducerPerformance and ConsumerPerformance:
  each runs to its count against the broker.

Tables are parsed into rows keyed by their columns (Kafka fixes no row order). The tools run in
the process's shared tool JVM (tests/interop/tool_runs.py), except VerifiableProducer, whose
producer is flushed by its JVM's shutdown hook (and which runs while VerifiableConsumer reads);
each run is bounded in time.
"""
from __future__ import annotations

import subprocess
import time
from collections import Counter, defaultdict

import pytest

from tests.interop import kafka_dist, kafka_procs
from tests.interop.broker_judges import (GROUPS, TRANSACTIONS, WAIT_S, committed_offsets, create_topic, json_events,
                                         kafka_tool, module_broker, properties_file, table, transactional_producer,
                                         write_transaction)

confluent_kafka = pytest.importorskip("confluent_kafka")
kafka = pytest.importorskip("kafka")

VERIFIABLE_PRODUCER = "org.apache.kafka.tools.VerifiableProducer"
VERIFIABLE_CONSUMER = "org.apache.kafka.tools.VerifiableConsumer"
COPIER = "org.apache.kafka.tools.TransactionalMessageCopier"
CONSOLE_PRODUCER = "org.apache.kafka.tools.ConsoleProducer"
CONSOLE_CONSUMER = "org.apache.kafka.tools.consumer.ConsoleConsumer"
PRODUCER_PERFORMANCE = "org.apache.kafka.tools.ProducerPerformance"
CONSUMER_PERFORMANCE = "org.apache.kafka.tools.ConsumerPerformance"

RECORDS = 2000                     # VerifiableProducer's records, over PARTITIONS partitions
PRODUCE_RATE = 1000                # records a second: the consumer reads while they come
PARTITIONS = 3
VERIFIABLE_TOPIC = "verifiable"
VERIFIABLE_GROUP = "verifiable-group"
COPIED = 600                       # records the copier copies, in transactions of up to COPIER_TXN_SIZE
COPIER_TXN_SIZE = 50
COPIER_ID = "judge-copier"
OPEN_TXN_ID = "judge-open"
OPEN_TXN_TIMEOUT_MS = 600000


@pytest.fixture(scope="module")
def broker(kafka_libs, tmp_path_factory):
    with module_broker(tmp_path_factory) as node:
        yield node


# --- VerifiableProducer and VerifiableConsumer ----------------------------------------------------------
@pytest.fixture(scope="module")
def verifiable_run(broker, tmp_path_factory):
    """VerifiableProducer's and VerifiableConsumer's events, run at the same time as in Kafka's
    produce-consume-validate system tests: RECORDS records at PRODUCE_RATE a second, idempotent
    with acks=all, read meanwhile by a classic group that commits after every poll."""
    directory = tmp_path_factory.mktemp("verifiable")
    create_topic(broker, VERIFIABLE_TOPIC, PARTITIONS)
    producer_config = properties_file(directory / "producer.properties", enable_idempotence="true",
                                      retries=2147483647, linger_ms=5)
    command = kafka_dist.java_command(
        VERIFIABLE_PRODUCER, "--bootstrap-server", broker.bootstrap_servers, "--topic", VERIFIABLE_TOPIC,
        "--max-messages", str(RECORDS), "--throughput", str(PRODUCE_RATE), "--acks", "-1", "--repeating-keys", "97",
        "--command-config", producer_config)
    # Its report goes to a file: a pipe nobody reads while the consumer runs would fill and stop it.
    with open(directory / "producer.out", "w+") as out:
        producer = subprocess.Popen(command, stdout=out, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
        try:
            consumed = json_events(kafka_tool(
                VERIFIABLE_CONSUMER, "--bootstrap-server", broker.bootstrap_servers, "--topic", VERIFIABLE_TOPIC,
                "--group-id", VERIFIABLE_GROUP, "--group-protocol", "classic", "--max-messages", RECORDS,
                "--reset-policy", "earliest", "--verbose", timeout=WAIT_S))
            assert producer.wait(timeout=WAIT_S) == 0
        finally:
            if producer.poll() is None:
                producer.kill()
                producer.wait()
        out.seek(0)
        produced = json_events(out.read())
    return produced, consumed


def acked_records(produced: list[dict]) -> dict[tuple[int, int], str]:
    """{(partition, offset): value} of VerifiableProducer's acknowledged sends."""
    assert [e for e in produced if e["name"] == "producer_send_error"] == []
    acked: dict[tuple[int, int], str] = {}
    for event in produced:
        if event["name"] == "producer_send_success":
            assert (event["partition"], event["offset"]) not in acked, f"two acks at one offset: {event}"
            acked[(event["partition"], event["offset"])] = event["value"]
    return acked


def end_offsets(acked) -> dict[int, int]:
    """Each partition's log end offset, as the acknowledgements show it."""
    ends: dict[int, int] = defaultdict(int)
    for partition, offset in acked:
        ends[partition] = max(ends[partition], offset + 1)
    return dict(ends)


def test_verifiable_producer_acks_every_record_once_at_dense_offsets(verifiable_run):
    """Idempotent acks=all produce: every send acknowledged (tool_data says so too), no offset
    given twice, and each partition's offsets 0..n-1 with nothing between them."""
    produced, _ = verifiable_run
    acked = acked_records(produced)
    assert len(acked) == RECORDS
    assert sorted(acked.values(), key=int) == [str(i) for i in range(RECORDS)]
    (summary,) = [e for e in produced if e["name"] == "tool_data"]
    assert (summary["sent"], summary["acked"]) == (RECORDS, RECORDS)
    for partition, end in end_offsets(acked).items():
        assert sorted(o for p, o in acked if p == partition) == list(range(end)), f"partition {partition}"


def test_verifiable_consumer_reads_every_acked_record_exactly_once_and_commits_them(verifiable_run):
    """The group reads each acknowledged record once, at the offset it was acknowledged at; the
    records_consumed ranges tile each partition without overlap; every commit succeeds and the
    last one of each partition is its end offset; and it did read while the producer produced."""
    produced, consumed = verifiable_run
    acked = acked_records(produced)
    records = {}
    for event in consumed:
        if event["name"] == "record_data":
            where = (event["partition"], event["offset"])
            assert where not in records, f"read twice: {event}"
            records[where] = event["value"]
    assert records == acked
    ranges = defaultdict(list)
    for event in consumed:
        if event["name"] == "records_consumed":
            for summary in event["partitions"]:
                assert summary["maxOffset"] - summary["minOffset"] + 1 == summary["count"]
                ranges[summary["partition"]].append((summary["minOffset"], summary["maxOffset"]))
    ends = end_offsets(acked)
    for partition, spans in ranges.items():
        covered = [o for low, high in sorted(spans) for o in range(low, high + 1)]
        assert covered == list(range(ends[partition])), f"partition {partition}: {sorted(spans)}"
    commits = [e for e in consumed if e["name"] == "offsets_committed"]
    assert commits and all(c["success"] for c in commits), [c for c in commits if not c["success"]]
    last = {}
    for commit in commits:
        last.update({o["partition"]: o["offset"] for o in commit["offsets"]})
    assert last == ends
    assert consumed[-1]["name"] == "shutdown_complete"
    first_read = min(e["timestamp"] for e in consumed if e["name"] == "records_consumed")
    assert first_read < max(e["timestamp"] for e in produced if e["name"] == "producer_send_success")


# --- kafka-consumer-groups ------------------------------------------------------------------------------
def groups(broker, *args) -> str:
    return kafka_tool(GROUPS, "--bootstrap-server", broker.bootstrap_servers, *args)


def describe_offsets(broker, group: str) -> dict[int, tuple[str, str, str]]:
    """--describe of ``group``: {partition: (CURRENT-OFFSET, LOG-END-OFFSET, LAG)} of VERIFIABLE_TOPIC."""
    rows = table(groups(broker, "--describe", "--group", group), "GROUP")
    assert {row["GROUP"] for row in rows} == {group}
    return {int(row["PARTITION"]): (row["CURRENT-OFFSET"], row["LOG-END-OFFSET"], row["LAG"])
            for row in rows if row["TOPIC"] == VERIFIABLE_TOPIC}


def test_consumer_groups_lists_describes_resets_and_deletes_the_verifiable_group(broker, verifiable_run):
    """kafka-consumer-groups on the group VerifiableConsumer left (inactive, offsets committed):
    listed; described with its committed offsets, the log end offsets and their difference (5
    more records on partition 0 make a lag of 5); reset to the earliest offsets, which OffsetFetch
    then returns; deleted, after which it is neither listed nor has offsets."""
    produced, _ = verifiable_run
    ends = end_offsets(acked_records(produced))
    assert VERIFIABLE_GROUP in groups(broker, "--list").split()
    producer = kafka.KafkaProducer(bootstrap_servers=broker.bootstrap_servers, acks="all")
    for i in range(5):
        producer.send(VERIFIABLE_TOPIC, b"late-%d" % i, partition=0).get(timeout=WAIT_S)
    producer.close()
    ends_now = {**ends, 0: ends[0] + 5}
    assert describe_offsets(broker, VERIFIABLE_GROUP) == {
        p: (str(ends[p]), str(ends_now[p]), str(ends_now[p] - ends[p])) for p in ends}

    reset = table(groups(broker, "--group", VERIFIABLE_GROUP, "--reset-offsets", "--to-earliest",
                         "--topic", VERIFIABLE_TOPIC, "--execute"), "GROUP")
    assert {(int(r["PARTITION"]), r["NEW-OFFSET"]) for r in reset} == {(p, "0") for p in ends}
    assert committed_offsets(broker, VERIFIABLE_GROUP, VERIFIABLE_TOPIC, PARTITIONS) == {p: 0 for p in ends}
    assert describe_offsets(broker, VERIFIABLE_GROUP) == {p: ("0", str(ends_now[p]), str(ends_now[p])) for p in ends}

    deleted = groups(broker, "--delete", "--group", VERIFIABLE_GROUP)
    assert f"Deletion of requested consumer groups ('{VERIFIABLE_GROUP}') was successful." in deleted
    assert VERIFIABLE_GROUP not in groups(broker, "--list").split()
    assert committed_offsets(broker, VERIFIABLE_GROUP, VERIFIABLE_TOPIC, PARTITIONS) == {}


# --- transactions: the copier and read_committed ------------------------------------------------------------
def read_everything(broker, topic: str) -> list[str]:
    """Every record value of ``topic``'s PARTITIONS partitions, read_uncommitted, up to their end
    offsets."""
    consumer = kafka.KafkaConsumer(bootstrap_servers=broker.bootstrap_servers, enable_auto_commit=False,
                                   auto_offset_reset="earliest", group_id=None)
    partitions = [kafka.TopicPartition(topic, p) for p in range(PARTITIONS)]
    consumer.assign(partitions)
    ends = consumer.end_offsets(partitions)
    values: list[str] = []
    deadline = time.monotonic() + WAIT_S
    while any(consumer.position(p) < ends[p] for p in partitions) and time.monotonic() < deadline:
        for batch in consumer.poll(timeout_ms=500).values():
            values += [m.value.decode() for m in batch]
    consumer.close()
    return values


@pytest.fixture(scope="module")
def copied(broker):
    """COPIED records (in-0, in-1, ... on partition i % PARTITIONS of tx-in) copied to the same
    partitions of tx-out by TransactionalMessageCopier in group mode (a classic group, its offsets
    committed in the transactions with its generation), aborting transactions at random; tx-out's
    partition 0 also holds a transaction of ours aborted before the copy, one aborted after it,
    then a committed one (the tail). Returns ({partition: input values}, tail values, copier events)."""
    for topic in ("tx-in", "tx-out"):
        create_topic(broker, topic, PARTITIONS)
    inputs: dict[int, list[str]] = defaultdict(list)
    producer = kafka.KafkaProducer(bootstrap_servers=broker.bootstrap_servers, acks="all")
    for i in range(COPIED):
        inputs[i % PARTITIONS].append(f"in-{i}")
        producer.send("tx-in", b"in-%d" % i, partition=i % PARTITIONS)
    producer.flush(WAIT_S)
    producer.close()
    ours = transactional_producer(broker, "judge-aborter")
    write_transaction(ours, "tx-out", [f"aborted-before-{i}" for i in range(10)], commit=False)
    events = json_events(kafka_tool(
        COPIER, "--broker-list", broker.bootstrap_servers, "--input-topic", "tx-in", "--input-partition", 0,
        "--output-topic", "tx-out", "--transactional-id", COPIER_ID, "--consumer-group", "judge-copier-group",
        "--transaction-size", COPIER_TXN_SIZE, "--max-messages", COPIED, "--enable-random-aborts",
        "--group-mode", "--use-group-metadata", timeout=WAIT_S * 2))
    tail = [f"tail-{i}" for i in range(5)]
    write_transaction(ours, "tx-out", [f"aborted-after-{i}" for i in range(10)], commit=False)
    write_transaction(ours, "tx-out", tail, commit=True)
    return dict(inputs), tail, events


def test_transactional_copier_copies_every_record_once(broker, copied):
    """The copier ran to its end (exit 0: nothing left to copy) after joining its group once; its
    group's offsets, committed only in its transactions, are each partition's end."""
    inputs, _, events = copied
    assert [e["stage"] for e in events].count("RebalanceComplete") == 1
    assert committed_offsets(broker, "judge-copier-group", "tx-in", PARTITIONS) == \
        {p: len(values) for p, values in inputs.items()}


def test_read_committed_verifiable_consumer_never_sees_an_aborted_record(broker, copied, tmp_path):
    """A read_committed VerifiableConsumer (KIP-848 group) reads each partition's copied records
    once and in order, and on partition 0 then the committed tail: none of the aborted
    transactions' records (ours, and the copier's random aborts), though the log holds them (a
    read_uncommitted read sees them)."""
    inputs, tail, _ = copied
    config = properties_file(tmp_path / "consumer.properties", isolation_level="read_committed")
    consumed = json_events(kafka_tool(
        VERIFIABLE_CONSUMER, "--bootstrap-server", broker.bootstrap_servers, "--topic", "tx-out",
        "--group-id", "judge-read-committed", "--group-protocol", "consumer", "--max-messages", COPIED + len(tail),
        "--reset-policy", "earliest", "--verbose", "--command-config", config, timeout=WAIT_S))
    values: dict[int, list[str]] = defaultdict(list)
    for event in consumed:
        if event["name"] == "record_data":
            values[event["partition"]].append(event["value"])
    assert values == {**inputs, 0: inputs[0] + tail}
    everything = Counter(read_everything(broker, "tx-out"))
    assert all(everything[f"aborted-{when}-{i}"] == 1 for when in ("before", "after") for i in range(10))
    assert all(everything[value] >= 1 for values in inputs.values() for value in values)


# --- kafka-transactions ---------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def open_transaction(broker):
    """tx-open: a committed transaction of 3 records (offsets 0-2, its marker at 3), then an open
    one of 4 (offsets 4-7), both of OPEN_TXN_ID; the producer is kept until the module ends."""
    create_topic(broker, "tx-open", 1)
    producer = transactional_producer(broker, OPEN_TXN_ID, **{"transaction.timeout.ms": OPEN_TXN_TIMEOUT_MS})
    write_transaction(producer, "tx-open", ["c0", "c1", "c2"], commit=True)
    started_ms = int(time.time() * 1000)
    producer.begin_transaction()
    for value in ("o0", "o1", "o2", "o3"):
        producer.produce("tx-open", value.encode(), partition=0)
    producer.flush(WAIT_S)
    yield started_ms, int(time.time() * 1000)
    producer.abort_transaction(WAIT_S)


def transactions(broker, *args) -> str:
    return kafka_tool(TRANSACTIONS, "--bootstrap-server", broker.bootstrap_servers, *args)


def test_kafka_transactions_describes_the_open_transaction(broker, open_transaction, copied):
    """kafka-transactions list, describe, describe-producers and find-hanging agree with one
    another and with what we did: OPEN_TXN_ID is Ongoing on tx-open-0 with its timeout, started
    while we wrote it; its producer's last sequence is 6 (3 + 4 records) and its open transaction
    starts at offset 4; the copier's id has committed last; nothing hangs (find-hanging with a
    zero-minute timeout checks the open transaction against the coordinator)."""
    before_ms, after_ms = open_transaction
    listed = {row["TransactionalId"]: row for row in table(transactions(broker, "list"), "TransactionalId")}
    assert listed[OPEN_TXN_ID]["TransactionState"] == "Ongoing"
    assert listed[COPIER_ID]["TransactionState"] == "CompleteCommit"
    assert {row["Coordinator"] for row in listed.values()} == {"1"}
    producer_id = listed[OPEN_TXN_ID]["ProducerId"]

    (described,) = table(transactions(broker, "describe", "--transactional-id", OPEN_TXN_ID), "CoordinatorId")
    assert (described["CoordinatorId"], described["ProducerId"], described["TransactionState"],
            described["TransactionTimeoutMs"], described["TopicPartitions"]) == \
        ("1", producer_id, "Ongoing", str(OPEN_TXN_TIMEOUT_MS), "tx-open-0")
    assert before_ms - 1000 <= int(described["CurrentTransactionStartTimeMs"]) <= after_ms + 1000
    assert int(described["TransactionDurationMs"]) >= 0

    producers = table(transactions(broker, "describe-producers", "--topic", "tx-open", "--partition", 0), "ProducerId")
    (state,) = [row for row in producers if row["ProducerId"] == producer_id]
    assert (state["ProducerEpoch"], state["LastSequence"], state["CurrentTransactionStartOffset"]) == \
        (described["ProducerEpoch"], "6", "4")
    assert before_ms - 1000 <= int(state["LastTimestamp"]) <= after_ms + 1000
    assert int(state["LatestCoordinatorEpoch"]) >= 0       # the committed transaction's marker set it

    hanging = transactions(broker, "find-hanging", "--broker-id", 1, "--max-transaction-timeout", 0)
    assert table(hanging, "Topic") == []


def test_kafka_transactions_describes_the_copiers_finished_transactions(broker, copied):
    """The copier's transactional id (a Kafka 4.3.1 producer: transaction.version 2, so each
    EndTxn bumps its epoch) is CompleteCommit with no partition; on each tx-out partition its
    producer has no transaction open and the epoch of the last marker written there, its sequence
    reset by that bump (-1): at most the coordinator's epoch, and that epoch on the partitions of
    the last transaction."""
    (described,) = table(transactions(broker, "describe", "--transactional-id", COPIER_ID), "CoordinatorId")
    assert (described["TransactionState"], described["TopicPartitions"]) == ("CompleteCommit", "")
    epochs = []
    for partition in range(PARTITIONS):
        producers = table(transactions(broker, "describe-producers", "--topic", "tx-out", "--partition", partition),
                          "ProducerId")
        (state,) = [row for row in producers if row["ProducerId"] == described["ProducerId"]]
        assert (state["LastSequence"], state["CurrentTransactionStartOffset"]) == ("-1", "None"), f"tx-out-{partition}"
        epochs.append(int(state["ProducerEpoch"]))
    assert max(epochs) == int(described["ProducerEpoch"]) >= 1, epochs


# --- kafka-acls ---------------------------------------------------------------------------------------------
def test_kafka_acls_on_a_broker_without_an_authorizer_is_told_security_is_disabled(broker):
    """kafka-acls --bootstrap-server reads our broker's DescribeAcls answer: without
    authorizer.class.name, --list and --add (which describes first) fail with Kafka's
    SecurityDisabledException and the broker's text. The forwarded CreateAcls and DeleteAcls
    (the controller's text) and the APIs with an authorizer are tested through kafkawire's client
    (tests/broker/test_admin_apis.py, tests/node/test_broker_api_authorization.py)."""
    from tests.interop.broker_judges import run_tool
    acl = ["org.apache.kafka.tools.AclCommand", "--bootstrap-server", broker.bootstrap_servers]
    for action in (["--list", "--topic", "any"],
                   ["--add", "--allow-principal", "User:alice", "--operation", "Read", "--topic", "any"]):
        result = run_tool(*acl, *action, timeout=WAIT_S)
        assert result.returncode == 1, result.stdout[-3000:]
        assert "SecurityDisabledException: No Authorizer is configured on the broker" in result.stdout, \
            result.stdout[-3000:]


# --- kafka-configs, groups ----------------------------------------------------------------------------------
def test_kafka_configs_sets_a_groups_configs_and_gets_the_controllers_refusal_of_a_bad_one(broker):
    """kafka-configs --alter --entity-type groups: forwarded to kafkawire's controller, which
    validates the group's configs as Kafka's does (kafkawire/metadata/group_configs.py; the
    messages are checked without Java in tests/controller/test_admin_apis.py)."""
    from tests.interop.broker_judges import run_tool
    configs = ["kafka.admin.ConfigCommand", "--bootstrap-server", broker.bootstrap_servers, "--alter",
               "--entity-type", "groups", "--entity-name", "tool-group", "--add-config"]
    ok = run_tool(*configs, "consumer.session.timeout.ms=50000,consumer.heartbeat.interval.ms=6000", timeout=WAIT_S)
    assert ok.returncode == 0 and "Completed updating config for group tool-group." in ok.stdout, ok.stdout[-3000:]
    bad = run_tool(*configs, "consumer.session.timeout.ms=70000", timeout=WAIT_S)
    said = bad.stdout + bad.stderr
    assert bad.returncode == 1, said[-3000:]
    assert ("InvalidConfigurationException: consumer.session.timeout.ms must be less than or equal to "
            "group.consumer.max.session.timeout.ms") in said, said[-3000:]
    shown = run_tool("kafka.admin.ConfigCommand", "--bootstrap-server", broker.bootstrap_servers, "--describe",
                     "--entity-type", "groups", "--entity-name", "tool-group", "--all", timeout=WAIT_S)
    assert shown.returncode == 0 and "consumer.heartbeat.interval.ms=6000 sensitive=false" in shown.stdout, \
        shown.stdout[-3000:] + shown.stderr[-3000:]


def test_kafka_configs_changes_and_describes_the_brokers_log_levels(broker):
    """kafka-configs --entity-type broker-loggers: the broker applies a BROKER_LOGGER change to its
    own (Python) loggers, as Kafka's broker does to its log4j loggers, and lists them."""
    from tests.interop.broker_judges import run_tool
    loggers = ["kafka.admin.ConfigCommand", "--bootstrap-server", broker.bootstrap_servers, "--entity-type",
               "broker-loggers", "--entity-name", "1"]
    done = run_tool(*loggers, "--alter", "--add-config", "kafkawire.broker.broker=TRACE", timeout=WAIT_S)
    assert done.returncode == 0 and "Completed updating config for broker-logger 1." in done.stdout, \
        done.stdout[-3000:] + done.stderr[-3000:]
    shown = run_tool(*loggers, "--describe", timeout=WAIT_S)
    assert shown.returncode == 0, shown.stdout[-3000:] + shown.stderr[-3000:]
    assert "kafkawire.broker.broker=TRACE sensitive=false synonyms={}" in shown.stdout, shown.stdout[-3000:]
    # the tool checks the names against the broker's list first (the broker's own refusal of an
    # unknown logger is tested without Java: tests/net/test_runtime_loggers.py)
    bad = run_tool(*loggers, "--alter", "--add-config", "no.such.logger=INFO", timeout=WAIT_S)
    said = bad.stdout + bad.stderr
    assert bad.returncode == 1 and "Invalid broker logger(s): no.such.logger" in said, said[-3000:]


# --- the console clients and the performance tools -----------------------------------------------------
CONSOLE_RECORDS = 50
PERF_RECORDS = 2000


def test_console_producer_console_consumer_and_the_performance_tools_run_to_their_counts(broker):
    """Kafka's ConsoleProducer (its own JVM: it reads stdin; keys parsed, acks=all) writes
    CONSOLE_RECORDS lines; ConsoleConsumer in a classic group reads them back key and value, in
    order, and commits at close; ProducerPerformance (acks=all) sends PERF_RECORDS records and
    ConsumerPerformance reads them all in a group of its own. Functional judges of issue 29's
    load tools (their figures against a Kafka broker belong to benchmarks/broker_throughput.py)."""
    create_topic(broker, "console", 1)
    lines = "".join(f"k{i}:value {i}\n" for i in range(CONSOLE_RECORDS))
    produced = kafka_procs.run_kafka_tool(
        CONSOLE_PRODUCER, "--bootstrap-server", broker.bootstrap_servers, "--topic", "console",
        "--property", "parse.key=true", "--property", "key.separator=:", "--producer-property", "acks=all",
        input=lines, timeout=WAIT_S)
    assert produced.returncode == 0, produced.stderr[-3000:]
    consumed = kafka_tool(CONSOLE_CONSUMER, "--bootstrap-server", broker.bootstrap_servers, "--topic", "console",
                          "--group", "console-group", "--from-beginning", "--max-messages", CONSOLE_RECORDS,
                          "--property", "print.key=true", "--property", "key.separator=:", "--timeout-ms", 60000,
                          timeout=WAIT_S)
    assert consumed.splitlines()[-CONSOLE_RECORDS:] == lines.splitlines()
    assert committed_offsets(broker, "console-group", "console", 1) == {0: CONSOLE_RECORDS}

    create_topic(broker, "perf", 1)
    sent = kafka_tool(PRODUCER_PERFORMANCE, "--topic", "perf", "--num-records", PERF_RECORDS, "--record-size", 100,
                      "--throughput", -1, "--producer-props", f"bootstrap.servers={broker.bootstrap_servers}",
                      "acks=all", timeout=WAIT_S)
    assert f"{PERF_RECORDS} records sent" in sent, sent[-2000:]
    read = kafka_tool(CONSUMER_PERFORMANCE, "--bootstrap-server", broker.bootstrap_servers, "--topic", "perf",
                      "--messages", PERF_RECORDS, "--group", "perf-group", "--timeout", 60000, timeout=WAIT_S)
    header, row = [line.split(", ") for line in read.strip().splitlines()[-2:]]
    stats = dict(zip((c.strip() for c in header), (v.strip() for v in row)))
    assert int(stats["data.consumed.in.nMsg"]) == PERF_RECORDS, read[-2000:]
