"""Real Apache Kafka 4.3.1 brokers (process.roles=broker) on a quorum of three kafkawire
controllers (issue 16, scenario 1): the brokers register and are unfenced; Kafka's own
kafka-topics and kafka-configs, run against the brokers, create, describe, grow and delete a
topic and alter topic and broker configs, the brokers forwarding the admin requests to our
active controller in Envelopes. Each wait is bounded; the timings are printed."""
from __future__ import annotations

import re
import time

TOPIC = "orders"
BROKERS = {4, 5, 6}
ELECTION = "org.apache.kafka.tools.LeaderElectionCommand"
METADATA_QUORUM = "org.apache.kafka.tools.MetadataQuorumCommand"
PARTITION_LINE = re.compile(r"Topic: (\S+)\tPartition: (\d+)\tLeader: (-?\d+)\tReplicas: ([\d,]*)\tIsr: ([\d,]*)")


def ids(text: str) -> list[int]:
    return [int(i) for i in text.split(",") if i]


def described(cluster, topic: str):
    """(header line, {partition: (leader, replicas, isr)}) as kafka-topics --describe prints them."""
    out = cluster.topics("--describe", "--topic", topic, check=False)
    if out.returncode != 0:
        return None, {}
    header = next((line for line in out.stdout.splitlines() if line.startswith(f"Topic: {topic}\tTopicId")), None)
    partitions = {}
    for match in PARTITION_LINE.finditer(out.stdout):
        partitions[int(match[2])] = (int(match[3]), ids(match[4]), ids(match[5]))
    return header, partitions


def wait_described(cluster, topic: str, count: int, timeout_s: float = 60):
    """Until every broker's metadata has ``count`` partitions with a leader and a full ISR."""
    def ready():
        header, partitions = described(cluster, topic)
        if len(partitions) == count and all(leader in replicas and sorted(isr) == sorted(replicas)
                                            for leader, replicas, isr in partitions.values()):
            return header, partitions
        return None
    return cluster.wait_until(ready, timeout_s, f"{topic} described with {count} led, fully in-sync partitions")


def check_placement(partitions: dict, rf: int) -> None:
    leaders = []
    for leader, replicas, isr in partitions.values():
        assert len(replicas) == rf and len(set(replicas)) == rf and set(replicas) <= BROKERS
        assert leader == replicas[0] and isr == replicas            # a new partition: ISR = replicas, in order
        leaders.append(leader)
    per_broker = [leaders.count(b) for b in sorted(BROKERS)]
    assert max(per_broker) - min(per_broker) <= 1, f"leaders not striped: {leaders}"


def config_lines(out: str) -> dict[str, str]:
    return dict(re.findall(r"^\s+([\w.]+)=(\S*) sensitive=", out, re.M))


def image_topics(cluster, controller_id: int) -> set[str]:
    """The topics in our controller's metadata image (kafkawire metadata-shell on its log)."""
    out = cluster.kafkawire("metadata-shell", "--directory", cluster.quorum.metadata_partition_dir(controller_id),
                            "ls", "/image/topics/byName")
    return set(out.stdout.split())


def test_kafka_topics_and_kafka_configs_through_brokers_on_kafkawire_controllers(kafka_on_kafkawire):
    cluster = kafka_on_kafkawire(controllers=3, brokers=3)
    assert cluster.describe_cluster() == {4: False, 5: False, 6: False}
    # DescribeQuorum through the brokers (they forward it to the active controller in an Envelope)
    status = cluster.tool(METADATA_QUORUM, "--bootstrap-server", cluster.bootstrap_servers(), "describe", "--status")
    leader_id = int(re.search(r"LeaderId:\s+(\d+)", status.stdout)[1])
    assert leader_id in cluster.controller_ids and "CurrentVoters:" in status.stdout
    print(f"\ncontroller leader after {cluster.timings['controller_leader_s']:.1f} s; brokers started (Kafka "
          f"Server started) after {cluster.timings['brokers_started_s']:.1f} s, all unfenced after "
          f"{cluster.timings['brokers_unfenced_s']:.1f} s")

    began = time.monotonic()
    out = cluster.topics("--create", "--topic", TOPIC, "--partitions", "6", "--replication-factor", "3")
    created_s = time.monotonic() - began
    assert f"Created topic {TOPIC}." in out.stdout
    header, partitions = wait_described(cluster, TOPIC, 6)
    print(f"kafka-topics --create took {created_s:.2f} s (JVM start included); described with leaders "
          f"{time.monotonic() - began:.2f} s after it began")
    assert "PartitionCount: 6\tReplicationFactor: 3" in header
    assert sorted(partitions) == list(range(6))
    check_placement(partitions, 3)
    # each kafka-topics run may ask another broker, which may not have replayed the topic yet
    cluster.wait_until(lambda: TOPIC in cluster.topics("--list").stdout.split(), 30, f"{TOPIC} in --list")

    again = cluster.topics("--create", "--topic", TOPIC, "--partitions", "1", "--replication-factor", "1", check=False)
    assert again.returncode != 0 and f"Topic '{TOPIC}' already exists." in again.stdout + again.stderr

    cluster.topics("--alter", "--topic", TOPIC, "--partitions", "12")
    header, grown = wait_described(cluster, TOPIC, 12)
    assert "PartitionCount: 12\tReplicationFactor: 3" in header
    assert {p: grown[p] for p in range(6)} == partitions          # the old partitions are untouched
    check_placement({p: grown[p] for p in range(6, 12)}, 3)
    shrink = cluster.topics("--alter", "--topic", TOPIC, "--partitions", "3", check=False)
    assert shrink.returncode != 0
    assert f"The topic {TOPIC} currently has 12 partition(s); 3 would not be an increase." in shrink.stdout + shrink.stderr

    out = cluster.configs("--alter", "--entity-type", "topics", "--entity-name", TOPIC, "--add-config",
                          "retention.ms=3600000,cleanup.policy=compact")
    assert f"Completed updating config for topic {TOPIC}." in out.stdout
    cluster.wait_until(lambda: config_lines(cluster.configs("--describe", "--entity-type", "topics", "--entity-name",
                                                            TOPIC).stdout).items() >= {
        "retention.ms": "3600000", "cleanup.policy": "compact"}.items(), 30, "the topic configs read back")
    cluster.wait_until(lambda: "retention.ms=3600000" in (described(cluster, TOPIC)[0] or ""), 30,
                       "retention.ms in kafka-topics --describe")
    bad = cluster.configs("--alter", "--entity-type", "topics", "--entity-name", TOPIC, "--add-config",
                          "retention.ms=soon", check=False)
    assert bad.returncode != 0
    assert "Invalid value soon for configuration retention.ms: Not a number of type LONG" in bad.stdout + bad.stderr
    cluster.configs("--alter", "--entity-type", "topics", "--entity-name", TOPIC, "--delete-config", "cleanup.policy")
    cluster.wait_until(lambda: "cleanup.policy" not in config_lines(cluster.configs(
        "--describe", "--entity-type", "topics", "--entity-name", TOPIC).stdout), 30, "cleanup.policy deleted")

    out = cluster.configs("--alter", "--entity-type", "brokers", "--entity-name", "5", "--add-config",
                          "log.cleaner.threads=2")
    assert "Completed updating config for broker 5." in out.stdout
    cluster.wait_until(lambda: config_lines(cluster.configs("--describe", "--entity-type", "brokers", "--entity-name",
                                                            "5").stdout).get("log.cleaner.threads") == "2",
                       30, "broker 5's log.cleaner.threads read back")
    out = cluster.configs("--alter", "--entity-type", "brokers", "--entity-default", "--add-config",
                          "log.retention.ms=7200000")
    assert "Completed updating default config for brokers in the cluster." in out.stdout
    cluster.wait_until(lambda: config_lines(cluster.configs("--describe", "--entity-type", "brokers",
                                                            "--entity-default").stdout).get("log.retention.ms")
                       == "7200000", 30, "the cluster default log.retention.ms read back")

    cluster.wait_until(lambda: TOPIC in image_topics(cluster, 1), 30, f"{TOPIC} in controller 1's metadata image")
    cluster.topics("--delete", "--topic", TOPIC)
    cluster.wait_until(lambda: TOPIC not in cluster.topics("--list").stdout.split(), 30, f"{TOPIC} gone from --list")
    cluster.wait_until(lambda: all(TOPIC not in image_topics(cluster, c) for c in cluster.controller_ids), 30,
                       f"{TOPIC} gone from every controller's metadata image")
    missing = cluster.topics("--delete", "--topic", TOPIC, check=False)
    assert missing.returncode != 0
    assert cluster.describe_cluster() == {4: False, 5: False, 6: False}


def _create_topics_answer(address, topics):
    """CreateTopics v7 sent straight to a controller: each result's fields but the random topic id."""
    import asyncio

    from kafkawire.messages.create_topics_request import CreatableTopic, CreatableTopicConfig, CreateTopicsRequest
    from kafkawire.net.client import NetworkClient

    request = CreateTopicsRequest(timeout_ms=30000, topics=[
        CreatableTopic(name=name, num_partitions=partitions, replication_factor=rf,
                       configs=[CreatableTopicConfig(name=k, value=v) for k, v in configs])
        for name, partitions, rf, configs in topics])

    async def send():
        async with NetworkClient(client_id="compare", request_timeout_ms=30000) as client:
            return await client.send(address, request, api_version=7)
    response = asyncio.run(send())
    return [(t.name, t.error_code, t.error_message, t.num_partitions, t.replication_factor, t.topic_config_error_code,
             [(c.name, c.value, c.read_only, c.config_source, c.is_sensitive) for c in t.configs or []])
            for t in response.topics]


def test_create_topics_answers_are_a_kafka_controllers(kafka_on_kafkawire, kafka_controller, kafka_broker):
    """The same CreateTopics to Kafka 4.3.1's controller and to ours, each with one real broker:
    the same results, effective configs and refusals."""
    ours = kafka_on_kafkawire(controllers=1, brokers=1)
    controller = kafka_controller(1, ours.cluster_id, "--standalone")
    kafka_broker(2, ours.cluster_id, controller.controller_address)
    topics = [
        ("plain", 2, 1, []),
        ("configured", 1, 1, [("retention.ms", "1000"), ("cleanup.policy", "compact"), ("segment.bytes", "2097152")]),
        ("bad-value", 1, 1, [("retention.ms", "soon")]),
        ("too-small", 1, 1, [("segment.bytes", "1")]),
        ("unknown-config", 1, 1, [("no.such.config", "1")]),
        ("too-many-replicas", 1, 3, []),
        ("bad name!", 1, 1, []),
        ("..", 1, 1, []),
        ("x" * 250, 1, 1, []),
        ("a_b", 1, 1, []),
        ("null-value", 1, 1, [("retention.ms", None)]),
        ("list", 1, 1, [("cleanup.policy", "compact,bogus")]),
        ("throttled", 1, 1, [("leader.replication.throttled.replicas", "0:1,x")]),
    ]
    theirs = _create_topics_answer(("127.0.0.1", controller.controller_port), topics)
    mine = _create_topics_answer(ours.quorum.address(1), topics)
    assert mine == theirs
    # a name colliding in metric names with one created above
    collision = [("a.b", 1, 1, [])]
    assert _create_topics_answer(ours.quorum.address(1), collision) == \
        _create_topics_answer(("127.0.0.1", controller.controller_port), collision)


def _answer(address, request, version):
    import asyncio

    from kafkawire.net.client import NetworkClient

    async def send():
        async with NetworkClient(client_id="compare", request_timeout_ms=30000) as client:
            return await client.send(address, request, api_version=version)
    return asyncio.run(send())


def _fields(message):
    """A response as nested tuples of its fields, topic ids left out (they are random)."""
    if isinstance(message, list):
        return [_fields(m) for m in message]
    if not hasattr(type(message), "_FIELDS"):
        return message
    return tuple((f.py_name, _fields(getattr(message, f.py_name))) for f in type(message)._FIELDS
                 if f.py_name != "topic_id")


def test_config_partition_and_deletion_answers_are_a_kafka_controllers(kafka_on_kafkawire, kafka_controller,
                                                                       kafka_broker):
    """IncrementalAlterConfigs, AlterConfigs, CreatePartitions and DeleteTopics, accepted and
    refused, sent straight to Kafka 4.3.1's controller and to ours: the same answers."""
    from kafkawire.messages.alter_configs_request import AlterableConfig as LegacyConfig
    from kafkawire.messages.alter_configs_request import AlterConfigsRequest
    from kafkawire.messages.alter_configs_request import AlterConfigsResource as LegacyResource
    from kafkawire.messages.alter_partition_reassignments_request import (AlterPartitionReassignmentsRequest,
                                                                          ReassignablePartition, ReassignableTopic)
    from kafkawire.messages.elect_leaders_request import ElectLeadersRequest, TopicPartitions
    from kafkawire.messages.list_partition_reassignments_request import ListPartitionReassignmentsRequest
    from kafkawire.messages.create_partitions_request import (CreatePartitionsAssignment, CreatePartitionsRequest,
                                                              CreatePartitionsTopic)
    from kafkawire.messages.delete_topics_request import DeleteTopicsRequest, DeleteTopicState
    from kafkawire.messages.incremental_alter_configs_request import (AlterableConfig, AlterConfigsResource,
                                                                      IncrementalAlterConfigsRequest)

    ours = kafka_on_kafkawire(controllers=1, brokers=1)
    controller = kafka_controller(1, ours.cluster_id, "--standalone")
    kafka_broker(2, ours.cluster_id, controller.controller_address)
    addresses = {"kafka": ("127.0.0.1", controller.controller_port), "kafkawire": ours.quorum.address(1)}
    setup = [("t", 2, 1, [("segment.ms", "3600000")]), ("gone", 1, 1, [])]
    for address in addresses.values():
        assert all(r[1] == 0 for r in _create_topics_answer(address, setup))

    def incremental(kind, name, *configs):
        return (44, 1, IncrementalAlterConfigsRequest(resources=[AlterConfigsResource(
            resource_type=kind, resource_name=name,
            configs=[AlterableConfig(name=k, config_operation=op, value=v) for k, op, v in configs])]))

    def legacy(kind, name, *configs):
        return (33, 2, AlterConfigsRequest(resources=[LegacyResource(
            resource_type=kind, resource_name=name, configs=[LegacyConfig(name=k, value=v) for k, v in configs])]))

    def partitions(name, count, assignments=None):
        return (37, 3, CreatePartitionsRequest(timeout_ms=30000, topics=[CreatePartitionsTopic(
            name=name, count=count,
            assignments=None if assignments is None else [CreatePartitionsAssignment(broker_ids=b)
                                                          for b in assignments])]))

    def reassign(name, pid, replicas, allow_rf_change=True):
        return (45, 1, AlterPartitionReassignmentsRequest(
            timeout_ms=30000, allow_replication_factor_change=allow_rf_change,
            topics=[ReassignableTopic(name=name, partitions=[ReassignablePartition(partition_index=pid,
                                                                                   replicas=replicas)])]))

    requests = [
        incremental(2, "t", ("retention.ms", 0, "1000"), ("cleanup.policy", 2, "compact")),
        incremental(2, "t", ("segment.ms", 1, None)),
        incremental(2, "t", ("retention.ms", 0, "soon")),
        incremental(2, "t", ("retention.ms", 2, "5")),
        incremental(2, "t", ("no.such.config", 0, "1")),
        incremental(2, "missing", ("retention.ms", 0, "1")),
        incremental(2, "", ("retention.ms", 0, "1")),
        incremental(4, "2", ("log.cleaner.threads", 0, "2")),
        incremental(4, "", ("log.retention.ms", 0, "7200000")),
        incremental(4, "9", ("log.cleaner.threads", 0, "2")),
        incremental(4, "x", ("log.cleaner.threads", 0, "2")),
        incremental(4, "-1", ("log.cleaner.threads", 0, "2")),
        incremental(4, "2", ("min.insync.replicas", 0, "2")),
        incremental(99, "t", ("retention.ms", 0, "1")),
        legacy(2, "t", ("retention.ms", "5")),
        legacy(2, "t", ("retention.ms", "-7")),
        partitions("t", 4),
        partitions("t", 4),
        partitions("t", 3),
        partitions("t", 6, [[2]]),
        partitions("t", 5, [[9]]),
        partitions("t", 5, [[2, 2]]),
        partitions("missing", 5),
        (20, 6, DeleteTopicsRequest(timeout_ms=30000, topics=[DeleteTopicState(name="gone")])),
        (20, 6, DeleteTopicsRequest(timeout_ms=30000, topics=[DeleteTopicState(name="gone")])),
        (20, 6, DeleteTopicsRequest(timeout_ms=30000, topics=[DeleteTopicState(name="a"), DeleteTopicState(name="a")])),
        (20, 6, DeleteTopicsRequest(timeout_ms=30000, topics=[DeleteTopicState()])),
        (20, 5, DeleteTopicsRequest(timeout_ms=30000, topic_names=["missing"])),
        reassign("missing", 0, [2]),
        reassign("t", 9, [2]),
        reassign("t", 0, []),
        reassign("t", 0, [2, 2]),
        reassign("t", 0, [9]),
        reassign("t", 0, [2, 3], allow_rf_change=False),
        reassign("t", 0, None),
        reassign("t", 0, [2]),
        (46, 0, ListPartitionReassignmentsRequest(timeout_ms=30000, topics=None)),
        (43, 2, ElectLeadersRequest(election_type=0, timeout_ms=30000, topic_partitions=[
            TopicPartitions(topic="t", partitions=[0, 9]), TopicPartitions(topic="missing", partitions=[0])])),
        (43, 2, ElectLeadersRequest(election_type=1, timeout_ms=30000, topic_partitions=[
            TopicPartitions(topic="t", partitions=[1])])),
        (43, 2, ElectLeadersRequest(election_type=0, timeout_ms=30000, topic_partitions=None)),
        (43, 2, ElectLeadersRequest(election_type=5, timeout_ms=30000, topic_partitions=[
            TopicPartitions(topic="t", partitions=[0])])),
    ]
    for key, version, request in requests:
        theirs, mine = (_fields(_answer(address, request, version)) for address in addresses.values())
        assert mine == theirs, f"api key {key} v{version}: {_fields(request)}"


def test_kafka_reassign_partitions_moves_a_partition(kafka_on_kafkawire, tmp_path):
    """Scenario 4: kafka-reassign-partitions moves a partition from brokers a,b to b,c; the new
    replica catches up (the leader's AlterPartition completes the reassignment) and --verify
    says it completed."""
    import json

    cluster = kafka_on_kafkawire(controllers=1, brokers=3)
    a, b, c = cluster.broker_ids
    cluster.topics("--create", "--topic", "moving", "--replica-assignment", f"{a}:{b}")
    _, partitions = wait_described(cluster, "moving", 1)
    assert partitions[0][1] == [a, b]
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps({"version": 1, "partitions": [{"topic": "moving", "partition": 0,
                                                               "replicas": [b, c]}]}))
    began = time.monotonic()
    out = cluster.reassign("--reassignment-json-file", plan, "--execute")
    assert "Successfully started partition reassignment for moving-0" in out.stdout

    def completed():
        verify = cluster.reassign("--reassignment-json-file", plan, "--verify", check=False)
        return "Reassignment of partition moving-0 is completed." in verify.stdout and verify
    cluster.wait_until(completed, 90, "the reassignment of moving-0 to complete")
    print(f"\nreassignment of moving-0 completed (--verify) {time.monotonic() - began:.1f} s after --execute")
    _, partitions = wait_described(cluster, "moving", 1)
    leader, replicas, isr = partitions[0]
    assert replicas == [b, c] and sorted(isr) == [b, c] and leader in (b, c)
    assert "No partition reassignments found." in cluster.reassign("--list").stdout

    # Reordering the in-sync replicas completes at once and leaves the leader; a preferred
    # election (kafka-leader-election) then hands leadership to the new first replica.
    follower = c if leader == b else b
    plan.write_text(json.dumps({"version": 1, "partitions": [{"topic": "moving", "partition": 0,
                                                               "replicas": [follower, leader]}]}))
    cluster.reassign("--reassignment-json-file", plan, "--execute")
    cluster.wait_until(lambda: described(cluster, "moving")[1].get(0, (None, []))[1] == [follower, leader], 30,
                       "the reordered replicas")
    out = cluster.tool(ELECTION, "--bootstrap-server", cluster.bootstrap_servers(), "--election-type", "preferred",
                       "--topic", "moving", "--partition", "0")
    assert "Successfully completed leader election (PREFERRED) for partitions moving-0" in out.stdout
    cluster.wait_until(lambda: described(cluster, "moving")[1].get(0, (None,))[0] == follower, 30,
                       "the preferred replica leading")
