"""The keys of server.properties kafkawire reads: each with Kafka's name, parser, default and the
Kafka class that defines it (the table ``kafkawire.net.config`` parses a file against).

Split from kafkawire.net.config so that the table (one row per setting, the part that grows)
and the parsing and cross-key rules stay readable apart. ``KNOWN_KEYS`` maps a key's name to its
row; ``REQUIRED`` marks a key without a default.
"""
from __future__ import annotations

from dataclasses import dataclass

from .config_values import (COMPRESSION_TYPES, DEFAULT_STATE_PERSISTER, INT_MAX, JMX_REPORTER, MIGRATION_POLICIES,
                            SECURITY_PROTOCOLS, TIMESTAMP_TYPES, _assignors, _bool, _cleanup_policy, _double, _gzip_level,
                            _http_listener, _int, _int_between, _list, _long, _names, _one_of, _one_of_any_case,
                            _per_ip_overrides, _regex, _reporters, _roles, _share_assignors,
                            _share_persister, _short, _string,
                            parse_host_ports, parse_security_protocol_map, parse_voters)

__all__ = ["KNOWN_KEYS", "REQUIRED"]

@dataclass(frozen=True)
class _Key:
    name: str
    parse: object       # (key, raw) -> value
    default: object     # raw string as Kafka's default, or None (unset), or REQUIRED
    source: str         # the Kafka class defining it


REQUIRED = object()

_KEYS = (
    # KRaftConfigs (4.x): NO_DEFAULT_VALUE, atLeast(0)
    _Key("node.id", lambda k, v: _int(k, v, 0), REQUIRED, "KRaftConfigs"),
    # KRaftConfigs (4.x): LIST, NO_DEFAULT_VALUE, ValidList.in(false, "broker", "controller")
    _Key("process.roles", lambda k, v: _roles(k, v), REQUIRED, "KRaftConfigs"),
    # QuorumConfig: LIST, DEFAULT_QUORUM_VOTERS = empty list, ControllerQuorumVotersValidator
    _Key("controller.quorum.voters", parse_voters, "", "QuorumConfig"),
    # QuorumConfig: LIST, DEFAULT_QUORUM_BOOTSTRAP_SERVERS = empty list
    _Key("controller.quorum.bootstrap.servers", parse_host_ports, "", "QuorumConfig"),
    # QuorumConfig: BOOLEAN, DEFAULT_QUORUM_AUTO_JOIN_ENABLE = false
    _Key("controller.quorum.auto.join.enable", _bool, "false", "QuorumConfig"),
    # QuorumConfig: INT, atLeast(0); 1000 / 2000 / 1000 / 2000 / 20 / 25 ms
    _Key("controller.quorum.election.timeout.ms", lambda k, v: _int(k, v, 0), "1000", "QuorumConfig"),
    _Key("controller.quorum.fetch.timeout.ms", lambda k, v: _int(k, v, 0), "2000", "QuorumConfig"),
    _Key("controller.quorum.election.backoff.max.ms", lambda k, v: _int(k, v, 0), "1000", "QuorumConfig"),
    _Key("controller.quorum.request.timeout.ms", lambda k, v: _int(k, v, 0), "2000", "QuorumConfig"),
    _Key("controller.quorum.retry.backoff.ms", lambda k, v: _int(k, v, 0), "20", "QuorumConfig"),
    _Key("controller.quorum.append.linger.ms", lambda k, v: _int(k, v, 0), "25", "QuorumConfig"),
    # SocketServerConfigs: STRING, LISTENERS_DEFAULT = "PLAINTEXT://:9092"; advertised: null
    _Key("listeners", None, "PLAINTEXT://:9092", "SocketServerConfigs"),
    _Key("advertised.listeners", None, None, "SocketServerConfigs"),
    # KRaftConfigs (4.x): LIST, NO_DEFAULT_VALUE, ValidList.anyNonDuplicateValues(false, false)
    _Key("controller.listener.names", lambda k, v: _names(k, v), REQUIRED, "KRaftConfigs"),
    # SocketServerConfigs: STRING, LISTENER_SECURITY_PROTOCOL_MAP_DEFAULT
    _Key("listener.security.protocol.map", parse_security_protocol_map, None, "SocketServerConfigs"),
    # ReplicationConfigs: STRING, null
    _Key("inter.broker.listener.name", lambda k, v: _string(v).upper() or None, None, "ReplicationConfigs"),
    # ReplicationConfigs: STRING, PLAINTEXT, ValidString.in(SecurityProtocol's names): names the
    # inter-broker listener when inter.broker.listener.name is unset (kafkawire.net.config_listeners)
    _Key("security.inter.broker.protocol", lambda k, v: _one_of(k, v, SECURITY_PROTOCOLS), "PLAINTEXT",
         "ReplicationConfigs"),
    # MetadataLogConfig: STRING, null (the first of log.dirs when unset)
    _Key("metadata.log.dir", lambda k, v: _string(v) or None, None, "MetadataLogConfig"),
    # ServerLogConfigs: log.dirs null, log.dir "/tmp/kafka-logs" (log.dirs wins when set)
    _Key("log.dirs", lambda k, v: _names(k, v, upper=False), None, "ServerLogConfigs"),
    _Key("log.dir", lambda k, v: _names(k, v, upper=False), "/tmp/kafka-logs", "ServerLogConfigs"),
    # ServerLogConfigs (KIP-1066): LIST, empty; "*" cordons every log directory
    _Key("cordoned.log.dirs", lambda k, v: _list(v), "", "ServerLogConfigs"),
    # MetadataLogConfig: INT 1 GiB atLeast(8 MiB); LONG 7 days; LONG 100 MiB; LONG 7 days
    _Key("metadata.log.segment.bytes", lambda k, v: _int(k, v, 8 * 1024 * 1024), str(1024 * 1024 * 1024),
         "MetadataLogConfig"),
    _Key("metadata.log.segment.ms", _long, str(7 * 24 * 60 * 60 * 1000), "MetadataLogConfig"),
    _Key("metadata.max.retention.bytes", _long, str(100 * 1024 * 1024), "MetadataLogConfig"),
    _Key("metadata.max.retention.ms", _long, str(7 * 24 * 60 * 60 * 1000), "MetadataLogConfig"),
    # MetadataLogConfig: LONG 20 MiB atLeast(1); LONG 1 hour atLeast(0)
    _Key("metadata.log.max.record.bytes.between.snapshots", lambda k, v: _long(k, v, 1), str(20 * 1024 * 1024),
         "MetadataLogConfig"),
    _Key("metadata.log.max.snapshot.interval.ms", lambda k, v: _long(k, v, 0), str(60 * 60 * 1000),
         "MetadataLogConfig"),
    # QuorumControllerConfig (KRaftConfigs): INT 500 atLeast(0); 0 writes no NoOpRecords at all
    _Key("metadata.max.idle.interval.ms", lambda k, v: _int(k, v, 0), "500", "KRaftConfigs"),
    # KRaftConfigs: INT 9000, no validator; the active controller fences a broker silent this long
    _Key("broker.session.timeout.ms", lambda k, v: _int(k, v), "9000", "KRaftConfigs"),
    # ReplicationConfigs: LONG 5 minutes atLeast(1), internal; the active controller's electUnclean
    # task (kafkawire.controller.unclean_elections)
    _Key("unclean.leader.election.interval.ms", lambda k, v: _long(k, v, 1), "300000", "ReplicationConfigs"),
    # ReplicationConfigs BOOLEAN false: on the active controller, the default of a topic that sets
    # none when neither its node's nor the cluster's dynamic config does (controller/node_configs.py)
    _Key("unclean.leader.election.enable", _bool, "false", "ReplicationConfigs"),
    # ReplicationConfigs: BOOLEAN true; LONG 300 atLeast(1). Read once by the controller
    # (ControllerServer), not dynamic: its electPreferred task (kafkawire.controller.leader_balance)
    _Key("auto.leader.rebalance.enable", _bool, "true", "ReplicationConfigs"),
    _Key("leader.imbalance.check.interval.seconds", lambda k, v: _long(k, v, 1), "300", "ReplicationConfigs"),
    # The broker role (process.roles=broker,controller): KRaftConfigs INT 2000; ServerLogConfigs
    # BOOLEAN true, INT 1 atLeast(1); ReplicationConfigs INT 1; ServerConfigs INT 1048588 atLeast(0),
    # INT 55 MiB atLeast(1024); LogConfig INT 1 GiB atLeast(1 MiB), STRING in(CreateTime, LogAppendTime),
    # INT 1 atLeast(1). On the controller, a BrokerHeartbeat's deadline is half of broker.heartbeat.interval.ms
    _Key("broker.heartbeat.interval.ms", lambda k, v: _int(k, v), "2000", "KRaftConfigs"),
    _Key("auto.create.topics.enable", _bool, "true", "ServerLogConfigs"),
    _Key("num.partitions", lambda k, v: _int(k, v, 1), "1", "ServerLogConfigs"),
    _Key("default.replication.factor", lambda k, v: _int(k, v), "1", "ReplicationConfigs"),
    _Key("message.max.bytes", lambda k, v: _int(k, v, 0), str(1024 * 1024 + 12), "ServerConfigs"),
    _Key("fetch.max.bytes", lambda k, v: _int(k, v, 1024), str(55 * 1024 * 1024), "ServerConfigs"),
    # ServerConfigs: INT 1000 atLeast(0); the most incremental fetch sessions the broker keeps
    _Key("max.incremental.fetch.session.cache.slots", lambda k, v: _int(k, v, 0), "1000", "ServerConfigs"),
    # QuotaConfig: INT 11 atLeast(1); INT 1 atLeast(1): the samples and the sample span of the client
    # quotas' rates (kafkawire.net.client_quotas)
    _Key("quota.window.num", lambda k, v: _int(k, v, 1), "11", "QuotaConfig"),
    _Key("quota.window.size.seconds", lambda k, v: _int(k, v, 1), "1", "QuotaConfig"),
    # QuotaConfig: INT 11 atLeast(1); INT 1 atLeast(1): the controller mutation quota's token bucket
    # (kafkawire.controller.mutation_quota)
    _Key("controller.quota.window.num", lambda k, v: _int(k, v, 1), "11", "QuotaConfig"),
    _Key("controller.quota.window.size.seconds", lambda k, v: _int(k, v, 1), "1", "QuotaConfig"),
    # QuotaConfig: INT 11 atLeast(1); INT 1 atLeast(1): the replication quotas' rates
    # (kafkawire.broker.replication_quotas)
    _Key("replication.quota.window.num", lambda k, v: _int(k, v, 1), "11", "QuotaConfig"),
    _Key("replication.quota.window.size.seconds", lambda k, v: _int(k, v, 1), "1", "QuotaConfig"),
    # QuotaConfig: INT 11 atLeast(1); INT 1 atLeast(1): the rate of the copies between log
    # directories (kafkawire.broker.log_dir_copy, replica.alter.log.dirs.io.max.bytes.per.second)
    _Key("alter.log.dirs.replication.quota.window.num", lambda k, v: _int(k, v, 1), "11", "QuotaConfig"),
    _Key("alter.log.dirs.replication.quota.window.size.seconds", lambda k, v: _int(k, v, 1), "1", "QuotaConfig"),
    _Key("log.segment.bytes", lambda k, v: _int(k, v, 1024 * 1024), str(1024 * 1024 * 1024), "ServerLogConfigs"),
    _Key("log.message.timestamp.type", lambda k, v: _one_of(k, v, TIMESTAMP_TYPES), "CreateTime", "ServerLogConfigs"),
    _Key("min.insync.replicas", lambda k, v: _int(k, v, 1), "1", "ServerLogConfigs"),
    # The partition logs (LogConfig's server keys; kafkawire.broker.log_config resolves them per topic):
    # retention LONG null / INT null / INT 168; LONG -1; LONG 5 minutes atLeast(1); roll LONG null / INT 168
    # atLeast(1); INT 10 MiB atLeast(4); LONG 60000 atLeast(0); LIST delete in(compact, delete)
    _Key("log.retention.ms", _long, None, "ServerLogConfigs"),
    _Key("log.retention.minutes", lambda k, v: _int(k, v), None, "ServerLogConfigs"),
    _Key("log.retention.hours", lambda k, v: _int(k, v), "168", "ServerLogConfigs"),
    _Key("log.retention.bytes", _long, "-1", "ServerLogConfigs"),
    _Key("log.retention.check.interval.ms", lambda k, v: _long(k, v, 1), "300000", "ServerLogConfigs"),
    _Key("log.roll.ms", _long, None, "ServerLogConfigs"),
    _Key("log.roll.hours", lambda k, v: _int(k, v, 1), "168", "ServerLogConfigs"),
    # LONG null (KafkaConfig requires the result >= 0) / INT 0 atLeast(0): a segment's random roll jitter
    _Key("log.roll.jitter.ms", _long, None, "ServerLogConfigs"),
    _Key("log.roll.jitter.hours", lambda k, v: _int(k, v, 0), "0", "ServerLogConfigs"),
    _Key("log.index.size.max.bytes", lambda k, v: _int(k, v, 4), str(10 * 1024 * 1024), "ServerLogConfigs"),
    # ServerLogConfigs: INT 4096 atLeast(0): the bytes between two index entries of a segment; LONG
    # Long.MAX_VALUE atLeast(1): the offsets appended between two flushes of a log; LONG null, else
    # log.flush.scheduler.interval.ms (LONG Long.MAX_VALUE), the time between two: how often the flusher looks
    _Key("log.index.interval.bytes", lambda k, v: _int(k, v, 0), "4096", "ServerLogConfigs"),
    _Key("log.flush.interval.messages", lambda k, v: _long(k, v, 1), str((1 << 63) - 1), "ServerLogConfigs"),
    _Key("log.flush.interval.ms", _long, None, "ServerLogConfigs"),
    _Key("log.flush.scheduler.interval.ms", _long, str((1 << 63) - 1), "ServerLogConfigs"),
    # ServerLogConfigs: LONG Long.MAX_VALUE atLeast(0); LONG 3600000 atLeast(0): the record checks of a produced batch (LogValidator)
    _Key("log.message.timestamp.before.max.ms", lambda k, v: _long(k, v, 0), str((1 << 63) - 1), "ServerLogConfigs"),
    _Key("log.message.timestamp.after.max.ms", lambda k, v: _long(k, v, 0), "3600000", "ServerLogConfigs"),
    # ServerConfigs: STRING "producer" ValidString.in(BrokerCompressionType names): a produced batch in
    # another codec is written again in this one (LogValidator)
    _Key("compression.type", lambda k, v: _one_of(k, v, COMPRESSION_TYPES), "producer", "ServerConfigs"),
    # ServerLogConfigs: LONG 60000 atLeast(0); a deleted topic's log waits this long before removal
    _Key("log.segment.delete.delay.ms", lambda k, v: _long(k, v, 0), "60000", "ServerLogConfigs"),
    _Key("log.cleanup.policy", lambda k, v: _cleanup_policy(k, v), "delete", "ServerLogConfigs"),
    # The checkpoints of the log directory: INT 60000 atLeast(0) twice (ServerLogConfigs); LONG 5000
    # (ReplicationConfigs); the internal LONG 30000 atLeast(0) delaying the log manager's first tasks
    _Key("log.flush.offset.checkpoint.interval.ms", lambda k, v: _int(k, v, 0), "60000", "ServerLogConfigs"),
    _Key("log.flush.start.offset.checkpoint.interval.ms", lambda k, v: _int(k, v, 0), "60000", "ServerLogConfigs"),
    _Key("replica.high.watermark.checkpoint.interval.ms", _long, "5000", "ReplicationConfigs"),
    # ServerConfigs: STRING null; ReplicationConfigs: STRING null (the class is checked when the broker
    # starts, as Kafka's ReplicaManager instantiates it: kafkawire.broker.replica_selector)
    _Key("broker.rack", lambda k, v: _string(v), None, "ServerConfigs"),
    _Key("replica.selector.class", lambda k, v: _string(v), None, "ReplicationConfigs"),
    # ReplicationConfigs: LONG 30000; a follower not caught up for this long leaves the ISR
    _Key("replica.lag.time.max.ms", _long, "30000", "ReplicationConfigs"),
    _Key("log.initial.task.delay.ms", lambda k, v: _long(k, v, 0), "30000", "ServerLogConfigs"),
    # The log cleaner (CleanerConfig; kafkawire.broker.log_cleaner): BOOLEAN true; INT 1 atLeast(0) (only
    # one thread here: more are refused); LONG 15000 atLeast(0); DOUBLE Double.MAX_VALUE; LONG 128 MiB;
    # INT 512 KiB atLeast(0); DOUBLE 0.9; and the topic configs' synonyms: LONG 86400000 atLeast(0),
    # LONG 0 atLeast(0), LONG Long.MAX_VALUE atLeast(1), DOUBLE 0.5 between(0, 1)
    _Key("log.cleaner.enable", _bool, "true", "CleanerConfig"),
    _Key("log.cleaner.threads", lambda k, v: _int(k, v, 0), "1", "CleanerConfig"),
    _Key("log.cleaner.backoff.ms", lambda k, v: _long(k, v, 0), "15000", "CleanerConfig"),
    _Key("log.cleaner.io.max.bytes.per.second", _double, "1.7976931348623157E308", "CleanerConfig"),
    _Key("log.cleaner.dedupe.buffer.size", _long, str(128 * 1024 * 1024), "CleanerConfig"),
    _Key("log.cleaner.io.buffer.size", lambda k, v: _int(k, v, 0), str(512 * 1024), "CleanerConfig"),
    _Key("log.cleaner.io.buffer.load.factor", _double, "0.9", "CleanerConfig"),
    _Key("log.cleaner.delete.retention.ms", lambda k, v: _long(k, v, 0), "86400000", "CleanerConfig"),
    _Key("log.cleaner.min.compaction.lag.ms", lambda k, v: _long(k, v, 0), "0", "CleanerConfig"),
    _Key("log.cleaner.max.compaction.lag.ms", lambda k, v: _long(k, v, 1), str((1 << 63) - 1), "CleanerConfig"),
    _Key("log.cleaner.min.cleanable.ratio", lambda k, v: _double(k, v, 0, 1), "0.5", "CleanerConfig"),
    # The group coordinator (GroupCoordinatorConfig): INT 3000 atLeast(0); INT 6000; INT 1800000;
    # INT Int.MaxValue atLeast(1); INT 50 atLeast(1); SHORT 3 atLeast(1); INT 100 MiB atLeast(1); INT 4096
    _Key("group.initial.rebalance.delay.ms", lambda k, v: _int(k, v, 0), "3000", "GroupCoordinatorConfig"),
    _Key("group.min.session.timeout.ms", lambda k, v: _int(k, v), "6000", "GroupCoordinatorConfig"),
    _Key("group.max.session.timeout.ms", lambda k, v: _int(k, v), "1800000", "GroupCoordinatorConfig"),
    _Key("group.max.size", lambda k, v: _int(k, v, 1), str(INT_MAX), "GroupCoordinatorConfig"),
    _Key("offsets.topic.num.partitions", lambda k, v: _int(k, v, 1), "50", "GroupCoordinatorConfig"),
    _Key("offsets.topic.replication.factor", lambda k, v: _short(k, v), "3", "GroupCoordinatorConfig"),
    _Key("offsets.topic.segment.bytes", lambda k, v: _int(k, v, 1), str(100 * 1024 * 1024), "GroupCoordinatorConfig"),
    _Key("offset.metadata.max.bytes", lambda k, v: _int(k, v), "4096", "GroupCoordinatorConfig"),
    # GroupCoordinatorConfig: INT 7 days atLeast(1); LONG 10 minutes atLeast(1)
    _Key("offsets.retention.minutes", lambda k, v: _int(k, v, 1), str(7 * 24 * 60), "GroupCoordinatorConfig"),
    _Key("offsets.retention.check.interval.ms", lambda k, v: _long(k, v, 1), "600000", "GroupCoordinatorConfig"),
    # KIP-848 consumer groups (GroupCoordinatorConfig): INT 45000 atLeast(1); INT 5000 atLeast(1);
    # INT Int.MaxValue atLeast(1); LIST "uniform,range" (kafkawire: builtin names only); INT 1000 atLeast(0)
    _Key("group.consumer.session.timeout.ms", lambda k, v: _int(k, v, 1), "45000", "GroupCoordinatorConfig"),
    _Key("group.consumer.heartbeat.interval.ms", lambda k, v: _int(k, v, 1), "5000", "GroupCoordinatorConfig"),
    _Key("group.consumer.max.size", lambda k, v: _int(k, v, 1), str(INT_MAX), "GroupCoordinatorConfig"),
    _Key("group.consumer.assignors", lambda k, v: _assignors(k, v), "uniform,range", "GroupCoordinatorConfig"),
    _Key("group.consumer.assignment.interval.ms", lambda k, v: _int(k, v, 0), "1000", "GroupCoordinatorConfig"),
    # an internal setting of Kafka's (defineInternal), INT atLeast(10 s)
    _Key("group.consumer.regex.refresh.interval.ms", lambda k, v: _int(k, v, 10_000), "600000",
         "GroupCoordinatorConfig"),
    # STRING "bidirectional" CaseInsensitiveValidString.in(ConsumerGroupMigrationPolicy's names)
    _Key("group.consumer.migration.policy", lambda k, v: _one_of_any_case(k, v, MIGRATION_POLICIES),
         "bidirectional", "GroupCoordinatorConfig"),
    # their bounds, INT atLeast(1) each (atLeast(0) for the assignment interval's), checked together as
    # GroupCoordinatorConfig requires them
    _Key("group.consumer.min.session.timeout.ms", lambda k, v: _int(k, v, 1), "45000", "GroupCoordinatorConfig"),
    _Key("group.consumer.max.session.timeout.ms", lambda k, v: _int(k, v, 1), "60000", "GroupCoordinatorConfig"),
    _Key("group.consumer.min.heartbeat.interval.ms", lambda k, v: _int(k, v, 1), "5000", "GroupCoordinatorConfig"),
    _Key("group.consumer.max.heartbeat.interval.ms", lambda k, v: _int(k, v, 1), "15000", "GroupCoordinatorConfig"),
    _Key("group.consumer.min.assignment.interval.ms", lambda k, v: _int(k, v, 0), "0", "GroupCoordinatorConfig"),
    _Key("group.consumer.max.assignment.interval.ms", lambda k, v: _int(k, v, 0), "15000", "GroupCoordinatorConfig"),
    # KIP-1071 streams groups (GroupCoordinatorConfig), each INT atLeast(1) but the standby counts,
    # the initial delay and the assignment intervals (atLeast(0)); checked together as
    # GroupCoordinatorConfig requires them (kafkawire.net.config._GROUP_BOUNDS)
    _Key("group.streams.session.timeout.ms", lambda k, v: _int(k, v, 1), "45000", "GroupCoordinatorConfig"),
    _Key("group.streams.min.session.timeout.ms", lambda k, v: _int(k, v, 1), "45000", "GroupCoordinatorConfig"),
    _Key("group.streams.max.session.timeout.ms", lambda k, v: _int(k, v, 1), "60000", "GroupCoordinatorConfig"),
    _Key("group.streams.heartbeat.interval.ms", lambda k, v: _int(k, v, 1), "5000", "GroupCoordinatorConfig"),
    _Key("group.streams.min.heartbeat.interval.ms", lambda k, v: _int(k, v, 1), "5000", "GroupCoordinatorConfig"),
    _Key("group.streams.max.heartbeat.interval.ms", lambda k, v: _int(k, v, 1), "15000", "GroupCoordinatorConfig"),
    _Key("group.streams.max.size", lambda k, v: _int(k, v, 1), str(INT_MAX), "GroupCoordinatorConfig"),
    _Key("group.streams.num.standby.replicas", lambda k, v: _int(k, v, 0), "0", "GroupCoordinatorConfig"),
    _Key("group.streams.max.standby.replicas", lambda k, v: _int(k, v, 0), "2", "GroupCoordinatorConfig"),
    _Key("group.streams.initial.rebalance.delay.ms", lambda k, v: _int(k, v, 0), "3000", "GroupCoordinatorConfig"),
    _Key("group.streams.assignment.interval.ms", lambda k, v: _int(k, v, 0), "1000", "GroupCoordinatorConfig"),
    _Key("group.streams.min.assignment.interval.ms", lambda k, v: _int(k, v, 0), "0", "GroupCoordinatorConfig"),
    _Key("group.streams.max.assignment.interval.ms", lambda k, v: _int(k, v, 0), "15000", "GroupCoordinatorConfig"),
    # KIP-932 share groups (GroupCoordinatorConfig): INT atLeast(1) each (atLeast(0) the assignment
    # intervals), the group size between(1, 1000), the initialize retry interval an internal setting
    # (atLeast(1)); checked together as GroupCoordinatorConfig requires them (_GROUP_BOUNDS)
    _Key("group.share.session.timeout.ms", lambda k, v: _int(k, v, 1), "45000", "GroupCoordinatorConfig"),
    _Key("group.share.min.session.timeout.ms", lambda k, v: _int(k, v, 1), "45000", "GroupCoordinatorConfig"),
    _Key("group.share.max.session.timeout.ms", lambda k, v: _int(k, v, 1), "60000", "GroupCoordinatorConfig"),
    _Key("group.share.heartbeat.interval.ms", lambda k, v: _int(k, v, 1), "5000", "GroupCoordinatorConfig"),
    _Key("group.share.min.heartbeat.interval.ms", lambda k, v: _int(k, v, 1), "5000", "GroupCoordinatorConfig"),
    _Key("group.share.max.heartbeat.interval.ms", lambda k, v: _int(k, v, 1), "15000", "GroupCoordinatorConfig"),
    _Key("group.share.max.size", lambda k, v: _int_between(k, v, 1, 1000), "200", "GroupCoordinatorConfig"),
    _Key("group.share.assignment.interval.ms", lambda k, v: _int(k, v, 0), "1000", "GroupCoordinatorConfig"),
    _Key("group.share.min.assignment.interval.ms", lambda k, v: _int(k, v, 0), "0", "GroupCoordinatorConfig"),
    _Key("group.share.max.assignment.interval.ms", lambda k, v: _int(k, v, 0), "15000", "GroupCoordinatorConfig"),
    _Key("group.share.initialize.retry.interval.ms", lambda k, v: _int(k, v, 1), "30000", "GroupCoordinatorConfig"),
    # LIST, ValidList.anyNonDuplicateValues(false, false), then exactly one (GroupCoordinatorConfig)
    _Key("group.share.assignors", lambda k, v: _share_assignors(k, v), "simple", "GroupCoordinatorConfig"),
    # ShareGroupConfig: INT between(...) each, in its ConfigDef's order; the share sessions INT atLeast(1);
    # checked together as ShareGroupConfig.validate requires them (_GROUP_BOUNDS)
    _Key("group.share.delivery.count.limit", lambda k, v: _int_between(k, v, 2, 10), "5", "ShareGroupConfig"),
    _Key("group.share.max.delivery.count.limit", lambda k, v: _int_between(k, v, 5, 25), "10", "ShareGroupConfig"),
    _Key("group.share.min.delivery.count.limit", lambda k, v: _int_between(k, v, 2, 5), "2", "ShareGroupConfig"),
    _Key("group.share.record.lock.duration.ms", lambda k, v: _int_between(k, v, 1000, 3_600_000), "30000",
         "ShareGroupConfig"),
    _Key("group.share.min.record.lock.duration.ms", lambda k, v: _int_between(k, v, 1000, 30_000), "15000",
         "ShareGroupConfig"),
    _Key("group.share.max.record.lock.duration.ms", lambda k, v: _int_between(k, v, 30_000, 3_600_000), "60000",
         "ShareGroupConfig"),
    _Key("group.share.partition.max.record.locks", lambda k, v: _int_between(k, v, 100, 10_000), "2000",
         "ShareGroupConfig"),
    _Key("group.share.max.partition.max.record.locks", lambda k, v: _int_between(k, v, 2000, 10_000), "4000",
         "ShareGroupConfig"),
    _Key("group.share.min.partition.max.record.locks", lambda k, v: _int_between(k, v, 100, 2000), "100",
         "ShareGroupConfig"),
    _Key("group.share.max.share.sessions", lambda k, v: _int(k, v, 1), "2000", "ShareGroupConfig"),
    # ShareGroupConfig: INT without a validator; STRING (internal), BrokerServer.createShareStatePersister
    _Key("share.fetch.purgatory.purge.interval.requests", lambda k, v: _int(k, v), "1000", "ShareGroupConfig"),
    _Key("group.share.persister.class.name", lambda k, v: _share_persister(k, v), DEFAULT_STATE_PERSISTER,
         "ShareGroupConfig"),
    # TransactionLogConfig: INT 1 day atLeast(1); INT 10 minutes atLeast(1) (internal);
    # TransactionStateManagerConfig: INT 15 minutes atLeast(1)
    _Key("producer.id.expiration.ms", lambda k, v: _int(k, v, 1), "86400000", "TransactionLogConfig"),
    _Key("producer.id.expiration.check.interval.ms", lambda k, v: _int(k, v, 1), "600000", "TransactionLogConfig"),
    _Key("transaction.max.timeout.ms", lambda k, v: _int(k, v, 1), "900000", "TransactionStateManagerConfig"),
    # TransactionStateManagerConfig: BOOLEAN false (KIP-939's two-phase commit; InitProducerId v6,
    # advertised only with unstable.api.versions.enable, ServerConfigs: BOOLEAN false)
    _Key("transaction.two.phase.commit.enable", _bool, "false", "TransactionStateManagerConfig"),
    _Key("unstable.api.versions.enable", _bool, "false", "ServerConfigs"),
    # TransactionLogConfig: BOOLEAN true (dynamic: kafkawire.broker.txn_verify_setting);
    # AddPartitionsToTxnConfig: INT 100 atLeast(0), INT 20 atLeast(1)
    _Key("transaction.partition.verification.enable", _bool, "true", "TransactionLogConfig"),
    _Key("add.partitions.to.txn.retry.backoff.max.ms", lambda k, v: _int(k, v, 0), "100", "AddPartitionsToTxnConfig"),
    _Key("add.partitions.to.txn.retry.backoff.ms", lambda k, v: _int(k, v, 1), "20", "AddPartitionsToTxnConfig"),
    # The transaction coordinator: TransactionLogConfig INT 50, SHORT 3, INT 100 MiB, INT 2 (all
    # atLeast(1)); TransactionStateManagerConfig INT 7 days, INT 10 s, INT 1 hour (atLeast(1))
    _Key("transaction.state.log.num.partitions", lambda k, v: _int(k, v, 1), "50", "TransactionLogConfig"),
    _Key("transaction.state.log.replication.factor", lambda k, v: _short(k, v), "3", "TransactionLogConfig"),
    _Key("transaction.state.log.segment.bytes", lambda k, v: _int(k, v, 1), str(100 * 1024 * 1024),
         "TransactionLogConfig"),
    _Key("transaction.state.log.min.isr", lambda k, v: _int(k, v, 1), "2", "TransactionLogConfig"),
    _Key("transactional.id.expiration.ms", lambda k, v: _int(k, v, 1), str(7 * 24 * 3600 * 1000),
         "TransactionStateManagerConfig"),
    _Key("transaction.abort.timed.out.transaction.cleanup.interval.ms", lambda k, v: _int(k, v, 1), "10000",
         "TransactionStateManagerConfig"),
    _Key("transaction.remove.expired.transaction.cleanup.interval.ms", lambda k, v: _int(k, v, 1), "3600000",
         "TransactionStateManagerConfig"),
    # The share coordinator (ShareCoordinatorConfig): INT 50, SHORT 3, SHORT 2, INT 100 MiB (all
    # atLeast(1)); INT 500 between(0, 500); INT 5 s atLeast(1)
    _Key("share.coordinator.state.topic.num.partitions", lambda k, v: _int(k, v, 1), "50", "ShareCoordinatorConfig"),
    _Key("share.coordinator.state.topic.replication.factor", lambda k, v: _short(k, v), "3",
         "ShareCoordinatorConfig"),
    _Key("share.coordinator.state.topic.min.isr", lambda k, v: _short(k, v), "2", "ShareCoordinatorConfig"),
    _Key("share.coordinator.state.topic.segment.bytes", lambda k, v: _int(k, v, 1), str(100 * 1024 * 1024),
         "ShareCoordinatorConfig"),
    _Key("share.coordinator.snapshot.update.records.per.snapshot", lambda k, v: _int_between(k, v, 0, 500), "500",
         "ShareCoordinatorConfig"),
    _Key("share.coordinator.write.timeout.ms", lambda k, v: _int(k, v, 1), "5000", "ShareCoordinatorConfig"),
    # ShareCoordinatorConfig (internal): INT 5 minutes atLeast(1), twice
    _Key("share.coordinator.state.topic.prune.interval.ms", lambda k, v: _int(k, v, 1), str(5 * 60 * 1000),
         "ShareCoordinatorConfig"),
    _Key("share.coordinator.cold.partition.snapshot.interval.ms", lambda k, v: _int(k, v, 1), str(5 * 60 * 1000),
         "ShareCoordinatorConfig"),
    # SocketServerConfigs: INT 100 MiB atLeast(1); LONG 10 minutes
    _Key("socket.request.max.bytes", lambda k, v: _int(k, v, 1), str(100 * 1024 * 1024), "SocketServerConfigs"),
    _Key("connections.max.idle.ms", _long, str(10 * 60 * 1000), "SocketServerConfigs"),
    # SocketServerConfigs: LONG -1 (no limit); INT Int.MaxValue atLeast(0) twice; STRING ""
    _Key("queued.max.request.bytes", _long, "-1", "SocketServerConfigs"),
    _Key("max.connections", lambda k, v: _int(k, v, 0), str(INT_MAX), "SocketServerConfigs"),
    _Key("max.connections.per.ip", lambda k, v: _int(k, v, 0), str(INT_MAX), "SocketServerConfigs"),
    _Key("max.connections.per.ip.overrides", lambda k, v: _per_ip_overrides(k, v), "", "SocketServerConfigs"),
    # SocketServerConfigs: INT Int.MaxValue atLeast(0): connections accepted per second (kafkawire.net.admission)
    _Key("max.connection.creation.rate", lambda k, v: _int(k, v, 0), str(INT_MAX), "SocketServerConfigs"),
    # SocketServerConfigs: INT 100 atLeast(0); one value for every listener (no listener prefix)
    _Key("connection.failed.authentication.delay.ms", lambda k, v: _int(k, v, 0), "100", "SocketServerConfigs"),
    # BrokerSecurityConfigs: LONG 0 (no re-authentication); listener and mechanism prefixes are read by
    # kafkawire.net.reauthentication
    _Key("connections.max.reauth.ms", _long, "0", "BrokerSecurityConfigs"),
    # MetricConfigs: LIST, JmxReporter; INT 2 atLeast(1); LONG 30000 atLeast(1)
    _Key("metric.reporters", lambda k, v: _reporters(k, v), JMX_REPORTER, "MetricConfigs"),
    _Key("metrics.num.samples", lambda k, v: _int(k, v, 1), "2", "MetricConfigs"),
    _Key("metrics.sample.window.ms", lambda k, v: _long(k, v, 1), "30000", "MetricConfigs"),
    # JmxReporter: which MBeans are exported (KIP-544); kafkawire applies them to the per-partition families
    _Key("metrics.jmx.include", lambda k, v: _regex(k, v), ".*", "JmxReporter"),
    _Key("metrics.jmx.exclude", lambda k, v: _regex(k, v), "", "JmxReporter"),
    # MetricConfigs: INT 1 MiB atLeast(1): the largest PushTelemetry payload, and decompressed (KIP-714)
    _Key("telemetry.max.bytes", lambda k, v: _int(k, v, 1), str(1024 * 1024), "MetricConfigs"),
    # kafkawire's: where PrometheusReporter serves GET /metrics (9404, the JMX exporter's usual port)
    _Key("kafkawire.metrics.prometheus.listener", lambda k, v: _http_listener(k, v), "http://:9404", "kafkawire"),
    # kafkawire's: freeze what survived a full garbage collection this long (kafkawire.raft.node.gc_pauses)
    _Key("kafkawire.gc.freeze.after.ms", lambda k, v: _int(k, v, 0), "50", "kafkawire"),
    # kafkawire's: a raft leader's time bound on scheduled appends (kafkawire.raft.node.driver_appends)
    _Key("kafkawire.quorum.append.queue.max.ms", lambda k, v: _int(k, v, 0), "40", "kafkawire"),
    # The replica fetchers (ReplicationConfigs; kafkawire.broker.replica_fetcher): INT 1 atLeast(1);
    # INT 1 MiB atLeast(0); INT 10 MiB atLeast(0); INT 500; INT 1; INT 1000 atLeast(0); INT 30000
    _Key("num.replica.fetchers", lambda k, v: _int(k, v, 1), "1", "ReplicationConfigs"),
    _Key("replica.fetch.max.bytes", lambda k, v: _int(k, v, 0), str(1024 * 1024), "ReplicationConfigs"),
    _Key("replica.fetch.response.max.bytes", lambda k, v: _int(k, v, 0), str(10 * 1024 * 1024), "ReplicationConfigs"),
    _Key("replica.fetch.wait.max.ms", lambda k, v: _int(k, v), "500", "ReplicationConfigs"),
    _Key("replica.fetch.min.bytes", lambda k, v: _int(k, v), "1", "ReplicationConfigs"),
    _Key("replica.fetch.backoff.ms", lambda k, v: _int(k, v, 0), "1000", "ReplicationConfigs"),
    _Key("replica.socket.timeout.ms", lambda k, v: _int(k, v), "30000", "ReplicationConfigs"),
    # The coordinators' writes waiting for the ISR (kafkawire.broker.coordinator_acks):
    # GroupCoordinatorConfig INT 5000 atLeast(1); ServerConfigs INT 30000
    _Key("offsets.commit.timeout.ms", lambda k, v: _int(k, v, 1), "5000", "GroupCoordinatorConfig"),
    _Key("request.timeout.ms", lambda k, v: _int(k, v), "30000", "ServerConfigs"),
    # ServerConfigs: INT, each codec's default level and levelValidator: the level a produced batch is
    # written again in when the topic's compression.type names that codec (LogValidator)
    _Key("compression.gzip.level", _gzip_level, "-1", "ServerConfigs"),
    _Key("compression.lz4.level", lambda k, v: _int_between(k, v, 1, 17), "9", "ServerConfigs"),
    _Key("compression.zstd.level", lambda k, v: _int_between(k, v, -131072, 22), "3", "ServerConfigs"),
    # DelegationTokenManagerConfigs: PASSWORD null (unset or empty: tokens disabled); LONG 7 days,
    # 1 day, 1 hour, each atLeast(1) (kafkawire.controller.delegation_tokens)
    _Key("delegation.token.secret.key", lambda k, v: v, None, "DelegationTokenManagerConfigs"),
    _Key("delegation.token.max.lifetime.ms", lambda k, v: _long(k, v, 1), str(7 * 24 * 3600 * 1000),
         "DelegationTokenManagerConfigs"),
    _Key("delegation.token.expiry.time.ms", lambda k, v: _long(k, v, 1), str(24 * 3600 * 1000),
         "DelegationTokenManagerConfigs"),
    _Key("delegation.token.expiry.check.interval.ms", lambda k, v: _long(k, v, 1), "3600000",
         "DelegationTokenManagerConfigs"),
)
KNOWN_KEYS = {k.name: k for k in _KEYS}
