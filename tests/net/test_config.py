"""server.properties: Kafka's defaults and types, and refusals that name key, value and rule."""
import logging

import pytest

from kafkawire.net.config import ConfigError, Endpoint, QuorumVoter, load_server_config, parse_server_config

BASE = {
    "process.roles": "controller",
    "node.id": "1",
    "controller.quorum.voters": "1@localhost:9093",
    "listeners": "CONTROLLER://:9093",
    "controller.listener.names": "CONTROLLER",
}


def props(**overrides):
    items = dict(BASE)
    for key, value in overrides.items():
        key = key.replace("_", ".")
        if value is None:
            items.pop(key, None)
        else:
            items[key] = value
    return "".join(f"{k}={v}\n" for k, v in items.items())


def test_defaults_are_kafkas():
    c = parse_server_config(props())
    assert c.controller_quorum_election_timeout_ms == 1000
    assert c.controller_quorum_fetch_timeout_ms == 2000
    assert c.controller_quorum_election_backoff_max_ms == 1000
    assert c.controller_quorum_request_timeout_ms == 2000
    assert c.controller_quorum_retry_backoff_ms == 20
    assert c.controller_quorum_append_linger_ms == 25
    assert c.controller_quorum_auto_join_enable is False
    assert c.controller_quorum_bootstrap_servers == ()
    assert c.metadata_log_segment_bytes == 1 << 30
    assert c.metadata_log_segment_ms == 7 * 24 * 3600 * 1000
    assert c.metadata_max_retention_bytes == 100 * 1024 * 1024
    assert c.metadata_max_retention_ms == 7 * 24 * 3600 * 1000
    assert c.metadata_log_max_record_bytes_between_snapshots == 20 * 1024 * 1024
    assert c.metadata_log_max_snapshot_interval_ms == 3600 * 1000
    assert c.metadata_max_idle_interval_ms == 500
    assert c.socket_request_max_bytes == 100 * 1024 * 1024
    assert c.connections_max_idle_ms == 600_000
    assert c.queued_max_request_bytes == -1
    assert c.max_connections == c.max_connections_per_ip == 2**31 - 1
    assert c.max_connections_per_ip_overrides == ()
    assert c.log_dirs == ("/tmp/kafka-logs",)
    assert c.metadata_log_dir == "/tmp/kafka-logs"      # first log dir when metadata.log.dir is unset
    assert c.inter_broker_listener_name is None
    assert c.controller_quorum_voters == (QuorumVoter(1, "localhost", 9093),)
    assert c.listeners == (Endpoint("CONTROLLER", "PLAINTEXT", None, 9093),)
    assert c.advertised_listeners == c.listeners
    assert (c.group_initial_rebalance_delay_ms, c.group_min_session_timeout_ms, c.group_max_session_timeout_ms,
            c.group_max_size) == (3000, 6000, 1_800_000, 2**31 - 1)
    assert (c.offsets_topic_num_partitions, c.offsets_topic_replication_factor, c.offsets_topic_segment_bytes,
            c.offset_metadata_max_bytes) == (50, 3, 100 * 1024 * 1024, 4096)
    assert (c.group_consumer_session_timeout_ms, c.group_consumer_heartbeat_interval_ms, c.group_consumer_max_size,
            c.group_consumer_assignors, c.group_consumer_assignment_interval_ms) == (
        45_000, 5000, 2**31 - 1, ("uniform", "range"), 1000)
    assert (c.group_consumer_min_session_timeout_ms, c.group_consumer_max_session_timeout_ms,
            c.group_consumer_min_heartbeat_interval_ms, c.group_consumer_max_heartbeat_interval_ms) == (
        45_000, 60_000, 5000, 15_000)


def test_a_typical_combined_node():
    c = parse_server_config("""
# comment
process.roles = broker,controller
node.id=3
controller.quorum.bootstrap.servers=host1:9093, [::1]:9094
listeners=PLAINTEXT://0.0.0.0:9092,CONTROLLER://127.0.0.1:9093
advertised.listeners=PLAINTEXT://kafka1:9092,CONTROLLER://kafka1:9093
controller.listener.names=CONTROLLER
listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT
inter.broker.listener.name=PLAINTEXT
log.dirs=/data/b,/data/a
metadata.log.dir=/meta
controller.quorum.auto.join.enable=TRUE
socket.request.max.bytes=1024
connections.max.idle.ms=5000
""")
    assert c.process_roles == ("broker", "controller") and c.is_broker and c.is_controller
    assert c.controller_quorum_bootstrap_servers == (("host1", 9093), ("::1", 9094))
    assert c.controller_endpoints == (Endpoint("CONTROLLER", "PLAINTEXT", "kafka1", 9093),)
    assert c.all_log_dirs == ("/data/a", "/data/b", "/meta")
    assert c.controller_quorum_auto_join_enable is True
    assert (c.socket_request_max_bytes, c.connections_max_idle_ms) == (1024, 5000)


def test_the_inter_broker_listener_is_named_as_kafka_names_it():
    """inter.broker.listener.name, else the listener named as security.inter.broker.protocol."""
    combined = dict(process_roles="broker,controller", listeners="SSL://:9092,PLAINTEXT://:9094,CONTROLLER://:9093",
                    listener_security_protocol_map="SSL:SSL,PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT")
    assert parse_server_config(props(**combined)).inter_broker_listener == "PLAINTEXT"
    assert parse_server_config(props(**combined, security_inter_broker_protocol="SSL")).inter_broker_listener == "SSL"
    assert parse_server_config(props(**combined, inter_broker_listener_name="ssl")).inter_broker_listener == "SSL"
    assert parse_server_config(props()).inter_broker_listener is None        # a controller-only node


def test_controller_listeners_default_to_plaintext_only_when_no_listener_is_named_ssl_or_sasl():
    """Without listener.security.protocol.map Kafka maps controller listeners to PLAINTEXT unless a
    listener or controller listener is named SSL, SASL_PLAINTEXT or SASL_SSL."""
    combined = dict(process_roles="broker,controller", listeners="PLAINTEXT://:9092,CONTROLLER://:9093")
    assert parse_server_config(props(**combined)).controller_endpoints[0].security_protocol == "PLAINTEXT"
    for secured in ("SSL", "sasl_plaintext", "SASL_SSL"):
        with pytest.raises(ConfigError, match="no security protocol for listener CONTROLLER"):
            parse_server_config(props(**dict(combined, listeners=f"{secured}://:9092,CONTROLLER://:9093")))
    with pytest.raises(ConfigError, match="no security protocol for listener CONTROLLER"):   # a controller name
        parse_server_config(props(listeners="SSL://:9093,CONTROLLER://:9094", controller_listener_names="SSL,CONTROLLER"))
    mapped = dict(combined, listeners="SSL://:9092,CONTROLLER://:9093",
                  listener_security_protocol_map="SSL:SSL,CONTROLLER:PLAINTEXT", security_inter_broker_protocol="SSL")
    assert [e.security_protocol for e in parse_server_config(props(**mapped)).listeners] == ["SSL", "PLAINTEXT"]


def test_unknown_keys_are_warned_not_refused(caplog):
    with caplog.at_level(logging.WARNING, logger="kafkawire.net.config"):
        c = parse_server_config(props(num_recovery_threads_per_data_dir="3") + "some.future.key=x\n")
    assert c.unknown_keys == ("num.recovery.threads.per.data.dir", "some.future.key")
    assert "some.future.key" in caplog.text


def test_listener_connection_limits_are_read_per_listener_and_checked():
    c = parse_server_config(props() + "listener.name.controller.max.connections=5\n"
                            "listener.name.CONTROLLER.max.connection.creation.rate=7\n")
    assert c.listener_connection_limits == (("CONTROLLER", "max.connections", 5),
                                            ("CONTROLLER", "max.connection.creation.rate", 7))
    assert c.unknown_keys == ()
    with pytest.raises(ConfigError, match="listener.name.controller.max.connections: '-1' must be at least 0"):
        parse_server_config(props() + "listener.name.controller.max.connections=-1\n")


def test_the_high_watermark_checkpoint_interval_has_kafkas_name():
    """ReplicationConfigs' replica.high.watermark.checkpoint.interval.ms (LONG, 5000) sets how often
    the broker writes replication-offset-checkpoint; it is read, not warned as unknown."""
    assert parse_server_config(props()).replica_high_watermark_checkpoint_interval_ms == 5000
    c = parse_server_config(props(replica_high_watermark_checkpoint_interval_ms="250"))
    assert c.replica_high_watermark_checkpoint_interval_ms == 250 and c.unknown_keys == ()


@pytest.mark.parametrize("overrides, key, fragment", [
    (dict(node_id=None), "node.id", "is required"),
    (dict(node_id="-1"), "node.id", "must be at least 0"),
    (dict(node_id="one"), "node.id", "is not a number of type INT"),
    (dict(node_id="2147483648"), "node.id", "out of range for type INT"),
    (dict(process_roles=""), "process.roles", "must not be empty"),
    (dict(process_roles="controller,zookeeper"), "process.roles", "unknown role 'zookeeper'"),
    (dict(process_roles="controller,controller"), "process.roles", "names a role twice"),
    (dict(controller_quorum_voters="1@host"), "controller.quorum.voters", "'1@host' is not ID@HOST:PORT"),
    (dict(controller_quorum_voters="x@host:1"), "controller.quorum.voters", "the id is not an integer"),
    (dict(controller_quorum_voters="1@h:1,1@h:2"), "controller.quorum.voters", "names voter 1 twice"),
    (dict(controller_quorum_voters="2@localhost:9093"), "controller.quorum.voters", "must include this controller's node.id 1"),
    (dict(controller_quorum_voters=""), "controller.quorum.voters", "one of them must name the controllers"),
    (dict(controller_quorum_bootstrap_servers="nohost"), "controller.quorum.bootstrap.servers", "is not HOST:PORT"),
    (dict(controller_quorum_auto_join_enable="yes"), "controller.quorum.auto.join.enable", "either true or false"),
    (dict(controller_quorum_election_timeout_ms="-5"), "controller.quorum.election.timeout.ms", "at least 0"),
    (dict(controller_quorum_fetch_timeout_ms="2s"), "controller.quorum.fetch.timeout.ms", "not a number of type INT"),
    (dict(listeners="CONTROLLER:9093"), "listeners", "is not NAME://HOST:PORT"),
    (dict(listeners="CONTROLLER://:70000"), "listeners", "outside 0..65535"),
    (dict(listeners="CONTROLLER://:9093,OTHER://:9094"), "listeners", "no security protocol for listener OTHER"),
    (dict(listeners="CONTROLLER://:9093,CONTROLLER://:9094"), "listeners", "different name"),
    (dict(listeners="CONTROLLER://:9093,PLAINTEXT://:9093", process_roles="broker,controller"), "listeners",
     "different port"),
    (dict(listeners="CONTROLLER://:9093,PLAINTEXT://:9092"), "listeners", "only contain KRaft controller listeners"),
    (dict(controller_listener_names=None), "controller.listener.names", "is required"),
    (dict(controller_listener_names="OTHER", listener_security_protocol_map="CONTROLLER:PLAINTEXT,OTHER:PLAINTEXT"),
     "controller.listener.names", "at least one value appearing in the 'listeners'"),
    (dict(process_roles="broker", node_id="4", listeners="PLAINTEXT://:9092,CONTROLLER://:9093"),
     "controller.listener.names", "must not contain a value appearing in the 'listeners'"),
    (dict(process_roles="broker", node_id="4", listeners="PLAINTEXT://:9092", controller_quorum_auto_join_enable="true"),
     "controller.quorum.auto.join.enable", "only supported when process.roles contains the 'controller' role"),
    # KafkaConfig.validateValues for a broker-only node: its id is no voter's, and the listener it
    # reaches the controllers on has a security protocol (explicit when the map is given).
    (dict(process_roles="broker", listeners="PLAINTEXT://:9092", controller_quorum_voters="1@h:9093,2@h:9093"),
     "controller.quorum.voters", "If process.roles contains just the 'broker' role, the node id 1 must not be "
                                 "included in the set of voters controller.quorum.voters=Set(1, 2)"),
    (dict(process_roles="broker", node_id="4", listeners="PLAINTEXT://:9092",
          listener_security_protocol_map="PLAINTEXT:PLAINTEXT"), "controller.listener.names",
     "Controller listener with name CONTROLLER defined in controller.listener.names not found in "
     "listener.security.protocol.map"),
    # KafkaConfig's rules on the inter-broker and advertised listeners, Kafka 4.3.1's messages (each
    # checked against Kafka's KafkaConfig on the same properties)
    (dict(process_roles="broker,controller", listeners="PLAINTEXT://:9092,CONTROLLER://:9093",
          inter_broker_listener_name="INTERNAL"), "inter.broker.listener.name",
     "Listener with name INTERNAL defined in inter.broker.listener.name not found in listener.security.protocol.map."),
    (dict(process_roles="broker,controller", listeners="PLAINTEXT://:9092,CONTROLLER://:9093",
          inter_broker_listener_name="CONTROLLER"), "inter.broker.listener.name",
     "inter.broker.listener.name must be a listener name defined in advertised.listeners. The valid options based "
     "on currently configured listeners are PLAINTEXT"),
    (dict(process_roles="broker,controller", listeners="BROKER://:9092,CONTROLLER://:9093",
          listener_security_protocol_map="BROKER:PLAINTEXT,CONTROLLER:PLAINTEXT"), "inter.broker.listener.name",
     "(unset) inter.broker.listener.name must be a listener name defined in advertised.listeners. The valid options "
     "based on currently configured listeners are BROKER (unset: the listener named as "
     "security.inter.broker.protocol, PLAINTEXT)"),
    (dict(process_roles="broker,controller", listeners="A://:9092,B://:9094,C://:9095,D://:9096,E://:9097,"
                                                       "CONTROLLER://:9093",
          listener_security_protocol_map="A:PLAINTEXT,B:PLAINTEXT,C:PLAINTEXT,D:PLAINTEXT,E:PLAINTEXT,"
                                         "CONTROLLER:PLAINTEXT"), "inter.broker.listener.name",
     "are E,A,B,C,D (unset"),                # a Scala HashSet's order beyond four names
    (dict(process_roles="broker,controller", listeners="PLAINTEXT://:9092,CONTROLLER://:9093",
          inter_broker_listener_name="PLAINTEXT", security_inter_broker_protocol="PLAINTEXT"),
     "inter.broker.listener.name", "Only one of inter.broker.listener.name and security.inter.broker.protocol "
                                   "should be set."),
    (dict(process_roles="broker,controller", listeners="PLAINTEXT://:9092,CONTROLLER://:9093",
          security_inter_broker_protocol="ssl"), "security.inter.broker.protocol",
     "must be one of PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL"),
    (dict(process_roles="broker,controller", listeners="CONTROLLER://:9093"), "advertised.listeners",
     "There must be at least one broker advertised listener. Perhaps all listeners appear in "
     "controller.listener.names?"),
    (dict(process_roles="broker,controller", listeners="PLAINTEXT://:9092,CONTROLLER://:9093",
          advertised_listeners="PLAINTEXT://h:9092,OTHER://h:9094",
          listener_security_protocol_map="PLAINTEXT:PLAINTEXT,OTHER:PLAINTEXT,CONTROLLER:PLAINTEXT"),
     "advertised.listeners", "advertised.listeners listener names must be equal to or a subset of the ones defined "
                             "in listeners. Found PLAINTEXT,OTHER. The valid options based on the current "
                             "configuration are PLAINTEXT,CONTROLLER"),
    (dict(inter_broker_listener_name="CONTROLLER"), "controller.listener.names",
     "controller.listener.names must not contain an explicitly set inter.broker.listener.name configuration value "
     "when process.roles=controller'"),
    (dict(advertised_listeners="CONTROLLER://0.0.0.0:9093"), "advertised.listeners", "nonroutable meta-address"),
    (dict(listener_security_protocol_map="CONTROLLER"), "listener.security.protocol.map", "LISTENER_NAME:SECURITY_PROTOCOL"),
    (dict(listener_security_protocol_map="CONTROLLER:TLS"), "listener.security.protocol.map", "unknown security protocol"),
    (dict(metadata_log_segment_bytes="1024"), "metadata.log.segment.bytes", "at least 8388608"),
    (dict(metadata_log_segment_ms="soon"), "metadata.log.segment.ms", "not a number of type LONG"),
    (dict(metadata_max_retention_bytes="9223372036854775808"), "metadata.max.retention.bytes", "out of range for type LONG"),
    (dict(metadata_log_max_record_bytes_between_snapshots="0"), "metadata.log.max.record.bytes.between.snapshots",
     "at least 1"),
    (dict(metadata_log_max_snapshot_interval_ms="-1"), "metadata.log.max.snapshot.interval.ms", "at least 0"),
    (dict(metadata_max_idle_interval_ms="-1"), "metadata.max.idle.interval.ms", "at least 0"),
    (dict(socket_request_max_bytes="0"), "socket.request.max.bytes", "at least 1"),
    (dict(connections_max_idle_ms="ten"), "connections.max.idle.ms", "not a number of type LONG"),
    (dict(max_connections="-1"), "max.connections", "at least 0"),
    (dict(max_connections_per_ip="many"), "max.connections.per.ip", "not a number of type INT"),
    (dict(max_connections_per_ip_overrides="127.0.0.1"), "max.connections.per.ip.overrides", "not host:count"),
    (dict(queued_max_request_bytes="1MB"), "queued.max.request.bytes", "not a number of type LONG"),
    (dict(offsets_topic_replication_factor="0"), "offsets.topic.replication.factor", "at least 1"),
    (dict(offsets_topic_replication_factor="40000"), "offsets.topic.replication.factor", "out of range for type SHORT"),
    (dict(offsets_topic_replication_factor="three"), "offsets.topic.replication.factor", "not a number of type SHORT"),
    (dict(offsets_topic_num_partitions="0"), "offsets.topic.num.partitions", "at least 1"),
    (dict(group_initial_rebalance_delay_ms="-1"), "group.initial.rebalance.delay.ms", "at least 0"),
    (dict(group_max_size="0"), "group.max.size", "at least 1"),
    (dict(group_consumer_assignors="sticky"), "group.consumer.assignors", "builtin assignors uniform and range"),
    (dict(group_consumer_heartbeat_interval_ms="500"), "group.consumer.heartbeat.interval.ms",
     "must be greater than or equal to group.consumer.min.heartbeat.interval.ms"),
    (dict(group_consumer_session_timeout_ms="90000"), "group.consumer.session.timeout.ms",
     "must be less than or equal to group.consumer.max.session.timeout.ms"),
    (dict(group_consumer_heartbeat_interval_ms="15000", group_consumer_session_timeout_ms="15000",
          group_consumer_min_session_timeout_ms="1000"), "group.consumer.heartbeat.interval.ms",
     "must be less than group.consumer.session.timeout.ms"),
    (dict(group_streams_session_timeout_ms="0"), "group.streams.session.timeout.ms", "at least 1"),
    (dict(group_streams_max_size="0"), "group.streams.max.size", "at least 1"),
    (dict(group_streams_num_standby_replicas="-1"), "group.streams.num.standby.replicas", "at least 0"),
    (dict(group_streams_max_heartbeat_interval_ms="4000"), "group.streams.max.heartbeat.interval.ms",
     "must be greater than or equal to group.streams.min.heartbeat.interval.ms"),
    (dict(group_streams_heartbeat_interval_ms="500"), "group.streams.heartbeat.interval.ms",
     "must be greater than or equal to group.streams.min.heartbeat.interval.ms"),
    (dict(group_streams_session_timeout_ms="90000"), "group.streams.session.timeout.ms",
     "must be less than or equal to group.streams.max.session.timeout.ms"),
    (dict(group_streams_heartbeat_interval_ms="15000", group_streams_session_timeout_ms="15000",
          group_streams_min_session_timeout_ms="1000"), "group.streams.heartbeat.interval.ms",
     "must be less than group.streams.session.timeout.ms"),
    (dict(group_streams_assignment_interval_ms="20000"), "group.streams.assignment.interval.ms",
     "must be less than or equal to group.streams.max.assignment.interval.ms"),
    (dict(group_streams_num_standby_replicas="3"), "group.streams.num.standby.replicas",
     "must be less than or equal to group.streams.max.standby.replicas"),
    # share groups: GroupCoordinatorConfig's and ShareGroupConfig's ranges and requires, Kafka's wording
    (dict(group_share_max_size="1001"), "group.share.max.size", "must be no more than 1000"),
    (dict(group_share_assignors="simple,simple"), "group.share.assignors", "names a value twice"),
    (dict(group_share_assignors=""), "group.share.assignors", "must be a non-empty list"),
    (dict(group_share_assignors="simple,other"), "group.share.assignors",
     "must contain exactly one assignor, but found 2"),
    (dict(group_share_assignors="com.example.MyAssignor"), "group.share.assignors",
     "kafkawire offers only Kafka's builtin share group assignor, simple"),
    (dict(share_fetch_purgatory_purge_interval_requests="often"), "share.fetch.purgatory.purge.interval.requests",
     "not a number of type INT"),
    (dict(group_share_persister_class_name=""), "group.share.persister.class.name", "Kafka's no-op persister"),
    (dict(group_share_persister_class_name="org.apache.kafka.server.share.persister.NoOpStatePersister"),
     "group.share.persister.class.name", "Kafka's no-op persister"),
    (dict(group_share_persister_class_name="com.example.Persister"), "group.share.persister.class.name",
     "is an unknown persister: kafkawire offers only org.apache.kafka.server.share.persister.DefaultStatePersister"),
    (dict(group_share_delivery_count_limit="1"), "group.share.delivery.count.limit", "at least 2"),
    (dict(group_share_record_lock_duration_ms="3600001"), "group.share.record.lock.duration.ms",
     "must be no more than 3600000"),
    (dict(group_share_min_partition_max_record_locks="2001"), "group.share.min.partition.max.record.locks",
     "must be no more than 2000"),
    (dict(group_share_heartbeat_interval_ms="500"), "group.share.heartbeat.interval.ms",
     "must be greater than or equal to group.share.min.heartbeat.interval.ms"),
    (dict(group_share_session_timeout_ms="90000"), "group.share.session.timeout.ms",
     "must be less than or equal to group.share.max.session.timeout.ms"),
    (dict(group_share_heartbeat_interval_ms="15000", group_share_session_timeout_ms="15000",
          group_share_min_session_timeout_ms="1000"), "group.share.heartbeat.interval.ms",
     "must be less than group.share.session.timeout.ms"),
    (dict(group_share_assignment_interval_ms="20000"), "group.share.assignment.interval.ms",
     "must be less than or equal to group.share.max.assignment.interval.ms"),
    (dict(group_share_delivery_count_limit="10", group_share_max_delivery_count_limit="9"),
     "group.share.max.delivery.count.limit", "must be greater than or equal to group.share.delivery.count.limit"),
    (dict(group_share_delivery_count_limit="2", group_share_min_delivery_count_limit="3"),
     "group.share.delivery.count.limit", "must be greater than or equal to group.share.min.delivery.count.limit"),
    (dict(group_share_record_lock_duration_ms="10000"), "group.share.record.lock.duration.ms",
     "must be greater than or equal to group.share.min.record.lock.duration.ms"),
    (dict(group_share_max_share_sessions="100"), "group.share.max.share.sessions",
     "must be greater than or equal to group.share.max.size"),
])
def test_bad_values_are_refused_naming_key_value_and_rule(overrides, key, fragment):
    with pytest.raises(ConfigError) as info:
        parse_server_config(props(**overrides))
    assert info.value.key == key
    assert str(info.value).startswith(f"{key}: ")
    assert fragment in str(info.value)


def test_streams_group_settings_are_read():
    c = parse_server_config(props(group_streams_session_timeout_ms="20000", group_streams_min_session_timeout_ms="10000",
                                  group_streams_heartbeat_interval_ms="1000", group_streams_min_heartbeat_interval_ms="500",
                                  group_streams_max_size="3", group_streams_num_standby_replicas="3",
                                  group_streams_max_standby_replicas="4", group_streams_initial_rebalance_delay_ms="0"))
    assert (c.group_streams_session_timeout_ms, c.group_streams_min_session_timeout_ms,
            c.group_streams_heartbeat_interval_ms, c.group_streams_min_heartbeat_interval_ms, c.group_streams_max_size,
            c.group_streams_num_standby_replicas, c.group_streams_max_standby_replicas,
            c.group_streams_initial_rebalance_delay_ms) == (20_000, 10_000, 1_000, 500, 3, 3, 4, 0)
    defaults = parse_server_config(props())
    assert (defaults.group_streams_session_timeout_ms, defaults.group_streams_max_session_timeout_ms,
            defaults.group_streams_heartbeat_interval_ms, defaults.group_streams_max_heartbeat_interval_ms,
            defaults.group_streams_max_standby_replicas, defaults.group_streams_assignment_interval_ms) == (
        45_000, 60_000, 5_000, 15_000, 2, 1_000)


def test_the_brief_example_message():
    with pytest.raises(ConfigError, match=r"^controller\.quorum\.voters: '1@host' is not ID@HOST:PORT$"):
        parse_server_config(props(controller_quorum_voters="1@host"))


def test_java_properties_syntax(tmp_path):
    path = tmp_path / "server.properties"
    path.write_text("! bang comment\nprocess.roles:controller\nnode.id 7\n"
                    "controller.quorum.voters=7@local\\\n  host:9093\n"
                    "listeners=CONTROLLER://:9093\ncontroller.listener.names=CONTROLLER\n")
    c = load_server_config(path)
    assert c.node_id == 7 and c.controller_quorum_voters == (QuorumVoter(7, "localhost", 9093),)


def test_unreadable_file_is_a_config_error(tmp_path):
    with pytest.raises(ConfigError, match="cannot be read"):
        load_server_config(tmp_path / "missing.properties")


def test_a_broker_only_node_is_warned_that_it_uses_only_the_first_controller_listener_name(caplog):
    """KafkaConfig warns when process.roles=broker names several controller listeners: the raft
    client reaches the controllers on the first only."""
    with caplog.at_level(logging.WARNING, logger="kafkawire.net.config"):
        c = parse_server_config(props(process_roles="broker", node_id="4", listeners="PLAINTEXT://:9092",
                                      controller_listener_names="CONTROLLER,CONTROLLER2",
                                      listener_security_protocol_map="PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT,"
                                                                     "CONTROLLER2:PLAINTEXT"))
    assert c.controller_listener_names == ("CONTROLLER", "CONTROLLER2")
    assert ("controller.listener.names has multiple entries; only the first will be used since process.roles=broker: "
            "[CONTROLLER, CONTROLLER2]") in caplog.text


def test_the_jmx_include_and_exclude_settings_are_regular_expressions():
    """JmxReporter.compilePredicate: the defaults export everything; one that does not compile is refused."""
    c = parse_server_config(props())
    assert (c.metrics_jmx_include, c.metrics_jmx_exclude) == (".*", "")
    assert parse_server_config(props() + "metrics.jmx.exclude=kafka.log:type=Log,.*\n").metrics_jmx_exclude == \
        "kafka.log:type=Log,.*"
    with pytest.raises(ConfigError, match=r"metrics\.jmx\.exclude: '\(' is not a valid regular expression"):
        parse_server_config(props() + "metrics.jmx.exclude=(\n")


def test_share_group_settings_are_read():
    c = parse_server_config(props(group_share_session_timeout_ms="20000", group_share_min_session_timeout_ms="10000",
                                  group_share_max_size="3", group_share_max_share_sessions="3",
                                  group_share_delivery_count_limit="3", group_share_record_lock_duration_ms="20000",
                                  group_share_partition_max_record_locks="500",
                                  group_share_initialize_retry_interval_ms="1000"))
    assert (c.group_share_session_timeout_ms, c.group_share_min_session_timeout_ms, c.group_share_max_size,
            c.group_share_max_share_sessions, c.group_share_delivery_count_limit,
            c.group_share_record_lock_duration_ms, c.group_share_partition_max_record_locks,
            c.group_share_initialize_retry_interval_ms) == (20_000, 10_000, 3, 3, 3, 20_000, 500, 1_000)
    defaults = parse_server_config(props())
    assert (defaults.group_share_session_timeout_ms, defaults.group_share_heartbeat_interval_ms,
            defaults.group_share_max_size, defaults.group_share_record_lock_duration_ms,
            defaults.group_share_delivery_count_limit, defaults.group_share_partition_max_record_locks,
            defaults.group_share_max_share_sessions, defaults.group_share_initialize_retry_interval_ms) == (
        45_000, 5_000, 200, 30_000, 5, 2_000, 2_000, 30_000)


def test_the_share_assignor_persister_and_purge_interval_are_read_as_kafkas_configdef_reads_them():
    """group.share.assignors takes Kafka's simple assignor by name or class; the purge interval any
    INT; the persister Kafka's default. group.share.assignor.offload.enable is not a key of Kafka
    4.3.1's ConfigDef (only a constant), so it is warned about as unknown, as Kafka does."""
    defaults = parse_server_config(props())
    assert (defaults.group_share_assignors, defaults.share_fetch_purgatory_purge_interval_requests,
            defaults.group_share_persister_class_name) == (
        ("simple",), 1000, "org.apache.kafka.server.share.persister.DefaultStatePersister")
    c = parse_server_config(props(share_fetch_purgatory_purge_interval_requests="-3") +
                            "group.share.assignors = org.apache.kafka.coordinator.group.assignor.SimpleAssignor \n"
                            "group.share.persister.class.name=org.apache.kafka.server.share.persister."
                            "DefaultStatePersister\ngroup.share.assignor.offload.enable=false\n")
    assert (c.group_share_assignors, c.share_fetch_purgatory_purge_interval_requests) == (("simple",), -3)
    assert c.unknown_keys == ("group.share.assignor.offload.enable",)
