"""CreateTopics on the active controller: ControllerApis.createTopics (duplicates, the metadata
topic) and ReplicationControlManager.createTopics/createTopic (names, existing topics, configs,
manual or placed assignments), with Kafka's errors and messages.

The records of one request are one atomic batch: for each created topic a TopicRecord, its
ConfigRecords (in the HashMap order Kafka builds them in), then a PartitionRecord per
partition. A validate-only request answers the same and writes nothing.

Topic configs are checked by name and value against Kafka 4.3's topic configs
(topic_configs.py; INVALID_CONFIG with LogConfig's message). Results carry the topic id (v7), the
partition count, the replication factor and the topic's effective configs (v5+,
effective_configs.py), as Kafka's controller answers a principal that may describe the topic's
configs (with an authorizer the others get TOPIC_AUTHORIZATION_FAILED instead:
kafkawire.net.admin_authorization).
"""
from __future__ import annotations

import random
from collections import Counter
import uuid
from dataclasses import dataclass

from kafkawire.messages.create_topics_response import CreatableTopicResult
from kafkawire.metadata.image import TOPIC_RESOURCE, has_collision_chars, unify_collision_chars
from kafkawire.metadata.registrations import MIGRATING, UNASSIGNED
from kafkawire.protocol.error_codes import Errors

from .cluster import has_uncordoned_dirs
from .effective_configs import effective_topic_configs
from .bounded import BoundedList
from .errors import ApiError
from .frames import frame
from .java_order import int_hashmap_order, string_hashmap_order, timeline_hash_set_order
from .placement import InvalidReplicationFactor, place
from .replication import is_active
from .state import ControllerState
from .topic_configs import ConfigValueError, validate_topic_configs
from .versions import directory_assignment_supported, partition_record_version
from kafkawire.protocol.message import uuid_to_kafka_string
from kafkawire.net.metadata_topic import invalid_topic_message

METADATA_TOPIC = "__cluster_metadata"
MAX_PARTITIONS_PER_BATCH = 10_000       # ReplicationControlManager's, beside MAX_RECORDS_PER_USER_OP

# LogConfig's topic configs in Kafka 4.x (message.format.version, message.downconversion.enable
# and message.timestamp.difference.max.ms were removed in 4.0).
TOPIC_CONFIGS = frozenset((
    "cleanup.policy", "compression.type", "compression.gzip.level", "compression.lz4.level",
    "compression.zstd.level", "delete.retention.ms", "file.delete.delay.ms", "flush.messages", "flush.ms",
    "follower.replication.throttled.replicas", "index.interval.bytes", "internal.segment.bytes",
    "leader.replication.throttled.replicas",
    "local.retention.bytes", "local.retention.ms", "max.compaction.lag.ms", "max.message.bytes",
    "message.timestamp.after.max.ms", "message.timestamp.before.max.ms", "message.timestamp.type",
    "min.cleanable.dirty.ratio", "min.compaction.lag.ms", "min.insync.replicas", "preallocate",
    "remote.log.copy.disable", "remote.log.delete.on.disable", "remote.storage.enable", "retention.bytes",
    "retention.ms", "segment.bytes", "segment.index.bytes", "segment.jitter.ms", "segment.ms",
    "unclean.leader.election.enable",
))


@dataclass(frozen=True)
class TopicDefaults:
    num_partitions: int = 1            # num.partitions
    replication_factor: int = 1        # default.replication.factor


def random_topic_id() -> uuid.UUID:
    """Uuid.randomUuid: random, but never the zero or metadata topic id, nor one whose base64
    form starts with '-' (it would read as a command-line option)."""
    while True:
        candidate = uuid.uuid4()
        if candidate.int > 1 and not uuid_to_kafka_string(candidate).startswith("-"):
            return candidate


def validate_topic_name(name: str) -> None:
    """Topic.validate, raising INVALID_TOPIC_EXCEPTION with Kafka 4.3's message."""
    message = invalid_topic_message(name)
    if message is None:
        return
    raise ApiError(Errors.INVALID_TOPIC_EXCEPTION, message)


def _collision(name: str, image) -> str | None:
    """ReplicationControlManager.validateNewTopicNames: an existing topic whose name differs from
    ``name`` only in '.' versus '_' (they collide in metric names), found with one lookup in the
    image's topics_with_collision_chars; the first in Kafka's set order when there are several."""
    if not has_collision_chars(name):
        return None
    colliding = image.topics_with_collision_chars.get(unify_collision_chars(name))
    if not colliding:
        return None
    return next(iter(colliding)) if len(colliding) == 1 else timeline_hash_set_order(colliding)[0]


def _default_dir(image, broker_id: int):
    """ClusterControlManager.defaultDir: the broker's only directory, else MIGRATING/UNASSIGNED."""
    broker = image.brokers.get(broker_id)
    if broker is None:
        return UNASSIGNED
    if not broker.directories:
        return MIGRATING
    return broker.directories[0] if len(broker.directories) == 1 else UNASSIGNED


def _manual_assignment(state: ControllerState, topic) -> dict[int, list[int]]:
    if topic.replication_factor != -1:
        raise ApiError(Errors.INVALID_REQUEST, "A manual partition assignment was specified, but replication "
                                               "factor was not set to -1.")
    if topic.num_partitions != -1:
        raise ApiError(Errors.INVALID_REQUEST, "A manual partition assignment was specified, but numPartitions "
                                               "was not set to -1.")
    parts: dict[int, list[int]] = {}
    replication_factor = None
    for assignment in topic.assignments:
        if assignment.partition_index in parts:
            raise ApiError(Errors.INVALID_REPLICA_ASSIGNMENT, "Found multiple manual partition assignments for "
                                                              f"partition {assignment.partition_index}")
        replicas = list(assignment.broker_ids)
        if not replicas:
            raise ApiError(Errors.INVALID_REPLICA_ASSIGNMENT, "The manual partition assignment includes an empty "
                                                              "replica list.")
        previous = None
        for broker_id in sorted(replicas):
            if broker_id not in state.image.brokers:
                raise ApiError(Errors.INVALID_REPLICA_ASSIGNMENT, "The manual partition assignment includes broker "
                                                                  f"{broker_id}, but no such broker is registered.")
            if broker_id == previous:
                raise ApiError(Errors.INVALID_REPLICA_ASSIGNMENT, "The manual partition assignment includes the "
                                                                  f"broker {previous} more than once.")
            previous = broker_id
        if replication_factor is not None and len(replicas) != replication_factor:
            raise ApiError(Errors.INVALID_REPLICA_ASSIGNMENT,
                           f"The manual partition assignment includes a partition with {len(replicas)} replica(s), "
                           f"but this is not consistent with previous partitions, which have {replication_factor} "
                           "replica(s).")
        replication_factor = len(replicas)
        if not any(is_active(state.image, r) for r in replicas):
            raise ApiError(Errors.INVALID_REPLICA_ASSIGNMENT,
                           "All brokers specified in the manual partition assignment for partition "
                           f"{assignment.partition_index} are fenced or in controlled shutdown.")
        parts[assignment.partition_index] = replicas
    for i in range(len(parts)):
        if i not in parts:
            raise ApiError(Errors.INVALID_REPLICA_ASSIGNMENT, "partitions should be a consecutive 0-based "
                                                              "integer sequence")
    return parts


def _placed_assignment(state: ControllerState, topic, defaults: TopicDefaults, rng) -> dict[int, list[int]]:
    if topic.replication_factor < -1 or topic.replication_factor == 0:
        raise ApiError(Errors.INVALID_REPLICATION_FACTOR, "Replication factor must be larger than 0, or -1 to use "
                                                          "the default value.")
    if topic.num_partitions < -1 or topic.num_partitions == 0:
        raise ApiError(Errors.INVALID_PARTITIONS, "Number of partitions was set to an invalid non-positive value.")
    num_partitions = defaults.num_partitions if topic.num_partitions == -1 else topic.num_partitions
    replication_factor = defaults.replication_factor if topic.replication_factor == -1 else topic.replication_factor
    image = state.image
    # BrokerHeartbeatManager.usableBrokers: not shutting down, and some directory not cordoned
    usable = [b for b in image.brokers.values() if not b.in_controlled_shutdown and has_uncordoned_dirs(b)]
    try:
        placements = place(num_partitions, replication_factor, [b.id for b in usable if not b.fenced],
                           [b.id for b in usable if b.fenced], rng)
    except InvalidReplicationFactor as exc:
        raise ApiError(Errors.INVALID_REPLICATION_FACTOR,
                       f"Unable to replicate the partition {replication_factor} time(s): {exc}") from None
    return dict(enumerate(placements))


def _topic_records(state: ControllerState, topic, parts: dict[int, list[int]], topic_id) -> list[bytes]:
    image = state.image
    mv = image.metadata_version or 0
    records = [frame("TopicRecord", name=topic.name, topic_id=topic_id)]
    configs = {c.name: c.value for c in topic.configs}
    for key in string_hashmap_order(configs):          # computeConfigChanges' HashMap
        records.append(frame("ConfigRecord", resource_type=TOPIC_RESOURCE, resource_name=topic.name,
                             name=key, value=configs[key]))
    for pid in int_hashmap_order(parts):
        replicas = parts[pid]
        isr = [r for r in replicas if is_active(image, r)]
        if not isr:
            raise ApiError(Errors.INVALID_REPLICATION_FACTOR,
                           f"Unable to replicate the partition {len(replicas)} time(s): All brokers are currently "
                           "fenced or in controlled shutdown.")
        fields = dict(partition_id=pid, topic_id=topic_id, replicas=replicas, isr=isr, removing_replicas=[],
                      adding_replicas=[], leader=isr[0], leader_recovery_state=0, leader_epoch=0, partition_epoch=0)
        if directory_assignment_supported(mv):
            fields["directories"] = [_default_dir(image, r) for r in replicas]
        records.append(frame("PartitionRecord", partition_record_version(mv), **fields))
    return records


def _config_error(topic) -> ApiError | None:
    """The topic's configs as the controller validates them (names, then values, as LogConfig)."""
    for config in topic.configs:
        if config.value is None:
            return ApiError(Errors.INVALID_CONFIG, f"Null value not supported for topic configs: {config.name}")
        if config.name not in TOPIC_CONFIGS:
            return ApiError(Errors.INVALID_CONFIG, f"Unknown topic config name: {config.name}")
    try:
        validate_topic_configs({c.name: c.value for c in topic.configs})
    except ConfigValueError as exc:
        return ApiError(Errors.INVALID_CONFIG, str(exc))
    return None


def _check_total_partitions(topics, defaults: TopicDefaults) -> None:
    """ReplicationControlManager.validateTotalNumberOfPartitions: the partitions asked for, all
    topics together, before any placement (Python ints: Kafka's int sum can wrap past the check)."""
    total = 0
    for topic in topics:
        if topic.assignments:
            total += len(topic.assignments)
        elif topic.num_partitions == -1:
            total += defaults.num_partitions
        elif topic.num_partitions > 0:
            total += topic.num_partitions
    if total > MAX_PARTITIONS_PER_BATCH:
        raise ApiError(Errors.POLICY_VIOLATION, "Excessively large number of partitions per request.")


def create_topics(state: ControllerState, request, *, defaults: TopicDefaults = TopicDefaults(),
                  rng: random.Random | None = None, new_topic_id=random_topic_id,
                  controller_id: int = -1, quota=None) -> tuple[list[bytes], list]:
    """The records to append and the CreatableTopicResults, in Kafka's answer order;
    ``controller_id``: whose dynamic broker configs count in the effective configs; ``quota``:
    called with each topic's partition count once the topic is checked (the controller mutation
    quota, mutation_quota.py), raising ApiError to refuse it."""
    rng = rng or random.Random()
    names = [t.name for t in request.topics]
    counts = Counter(names)
    duplicates = {n for n, count in counts.items() if count > 1}
    topics = [t for t in request.topics if t.name not in duplicates and t.name != METADATA_TOPIC]
    _check_total_partitions(topics, defaults)
    errors: dict[str, ApiError] = {}
    existing = state.image.topics_by_name
    for topic in topics:
        try:
            validate_topic_name(topic.name)
        except ApiError as exc:
            errors[topic.name] = exc
        other = _collision(topic.name, state.image)
        if other is not None:
            errors[topic.name] = ApiError(Errors.INVALID_TOPIC_EXCEPTION,
                                          f"Topic '{topic.name}' collides with existing topic: {other}")
        if topic.name in existing:
            errors[topic.name] = ApiError(Errors.TOPIC_ALREADY_EXISTS, f"Topic '{topic.name}' already exists.")
    records: list[bytes] = BoundedList()
    results: dict[str, CreatableTopicResult] = {}
    for topic in topics:
        if topic.name in errors:
            continue
        try:
            error = _config_error(topic)
            if error is not None:
                raise error
            parts = (_manual_assignment(state, topic) if topic.assignments
                     else _placed_assignment(state, topic, defaults, rng))
            topic_id = new_topic_id()
            topic_records = _topic_records(state, topic, parts, topic_id)
            if quota is not None:
                quota(len(parts))
        except ApiError as exc:
            errors[topic.name] = exc
            continue
        records += topic_records            # past the bound: the whole request fails (bounded.py)
        results[topic.name] = CreatableTopicResult(
            name=topic.name, topic_id=topic_id, error_code=0, error_message=None, topic_config_error_code=0,
            num_partitions=len(parts), replication_factor=len(next(iter(parts.values()))),
            configs=effective_topic_configs(state.image, controller_id, {c.name: c.value for c in topic.configs}))
    answer = []
    for topic in topics:
        if topic.name in errors:
            e = errors[topic.name]
            answer.append(CreatableTopicResult(name=topic.name, error_code=e.code, error_message=e.message))
        else:
            answer.append(results[topic.name])
    for name in dict.fromkeys(n for n in names if n in duplicates):     # first-seen order
        answer.append(CreatableTopicResult(name=name, error_code=int(Errors.INVALID_REQUEST),
                                           error_message="Duplicate topic name."))
    if METADATA_TOPIC in names and METADATA_TOPIC not in duplicates:
        answer.append(CreatableTopicResult(name=METADATA_TOPIC, error_code=int(Errors.INVALID_REQUEST),
                                           error_message=f"Creation of internal topic {METADATA_TOPIC} is prohibited."))
    return ([] if request.validate_only else records), answer
