"""The metadata image: what a KRaft cluster's metadata says after replaying a snapshot and the
log, as Kafka's MetadataImage holds it (kafka-metadata-shell shows the same image).

``MetadataImage.apply(message)`` applies one metadata record the way Kafka's MetadataDelta
replay does, record kind by record kind (metadata/src/main/java/org/apache/kafka/image/
*Delta.java); a record Kafka would refuse raises ImageError naming the rule. Transactions,
control records, provenance and file handling live in ``replay.py``.

The image is a plain mutable object: a delta/image split buys Kafka cheap copies for its
publishers, which a replay tool does not need. What a snapshot needs, a view that later
records do not change, ``frozen()`` gives cheaply: the view takes shallow copies of the
top-level maps (C-level copies, no Python step per entry) and shares everything below them,
and from then on this image copies a topic, a config resource, a quota entity or a SCRAM
mechanism before the first record that changes it (copy on write), so another thread may
read the view while replay goes on. ``frozen(lookups=True)`` also gives the view the topics
by name and the ACL index (copied on the first ACL record after it), for readers that look
up. ``record_changes()``/``take_changes()`` record which key of which top-level map each
record set or removed, in order, with the values at the end: replayed on an image that was
this one when recording began, they make it this one again, orders included (the committed
image a combined node's broker and the node's authorizer read follows the controller's state
so, write by write: kafkawire.controller.committed).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from .acl_index import AclIndex
from .kafka_names import METADATA_VERSION_FEATURE
from .registrations import (BrokerRegistration, ControllerRegistration, DelegationToken, ImageError,
                            PartitionRegistration, ScramCredential, StandardAcl, kafka_uuid)

__all__ = ["MetadataImage", "ImageChanges", "TopicImage", "Provenance", "ImageError", "TOPIC_RESOURCE",
           "has_collision_chars", "unify_collision_chars"]

TOPIC_RESOURCE = 2   # ConfigResource.Type.TOPIC
BROKER_RESOURCE = 4
CLIENT_METRICS_RESOURCE = 16
GROUP_RESOURCE = 32

# The configs Kafka 4.3's DefaultSupportedConfigChecker lets into the image, by resource type
# (LogConfig.configNames(), ClientMetricsConfigs and GroupConfig's ConfigDef names; any broker
# config; nothing for other types). Older logs hold configs Kafka has since removed (e.g.
# message.timestamp.difference.max.ms): Kafka's loader skips them, and so does this image.
# tests/interop/test_metadata_shell_vs_kafka.py asks Kafka for these names.
SUPPORTED_CONFIGS = {
    TOPIC_RESOURCE: frozenset((
        "cleanup.policy", "compression.gzip.level", "compression.lz4.level", "compression.type",
        "compression.zstd.level", "delete.retention.ms", "file.delete.delay.ms", "flush.messages", "flush.ms",
        "follower.replication.throttled.replicas", "index.interval.bytes", "internal.segment.bytes",
        "leader.replication.throttled.replicas", "local.retention.bytes", "local.retention.ms",
        "max.compaction.lag.ms", "max.message.bytes", "message.timestamp.after.max.ms",
        "message.timestamp.before.max.ms", "message.timestamp.type", "min.cleanable.dirty.ratio",
        "min.compaction.lag.ms", "min.insync.replicas", "preallocate", "remote.log.copy.disable",
        "remote.log.delete.on.disable", "remote.storage.enable", "retention.bytes", "retention.ms",
        "segment.bytes", "segment.index.bytes", "segment.jitter.ms", "segment.ms",
        "unclean.leader.election.enable")),
    CLIENT_METRICS_RESOURCE: frozenset(("interval.ms", "match", "metrics")),
    GROUP_RESOURCE: frozenset((
        "consumer.assignment.interval.ms", "consumer.heartbeat.interval.ms", "consumer.session.timeout.ms",
        "share.assignment.interval.ms", "share.auto.offset.reset", "share.delivery.count.limit",
        "share.heartbeat.interval.ms", "share.isolation.level", "share.partition.max.record.locks",
        "share.record.lock.duration.ms", "share.renew.acknowledge.enable", "share.session.timeout.ms",
        "streams.assignment.interval.ms", "streams.heartbeat.interval.ms", "streams.initial.rebalance.delay.ms",
        "streams.num.standby.replicas", "streams.session.timeout.ms")),
}


def supported_config(resource_type: int, name: str) -> bool:
    """Whether Kafka 4.3 keeps this config in its image (and its controller in its state)."""
    if resource_type == BROKER_RESOURCE:
        return True
    names = SUPPORTED_CONFIGS.get(resource_type)
    return names is not None and name in names


def has_collision_chars(name: str) -> bool:
    """Topic.hasCollisionChars: '.' and '_' are the same character in metric names."""
    return "." in name or "_" in name


def unify_collision_chars(name: str) -> str:
    """Topic.unifyCollisionChars."""
    return name.replace(".", "_")


@dataclass
class TopicImage:
    name: str
    id: object
    partitions: dict = field(default_factory=dict)


@dataclass(frozen=True)
class Provenance:
    """MetadataProvenance: the last offset, epoch and batch time the image contains."""
    offset: int = -1
    epoch: int = -1
    time_ms: int = -1


class MetadataImage:
    """Kafka's metadata image as records build it (MetadataImage in Kafka): features and
    metadata.version, brokers and controllers, topics by id and name with their partitions,
    configs, client quotas, producer ids, ACLs, SCRAM credentials, delegation tokens, and the
    ``provenance`` (offset, epoch, timestamp) of the last record applied. ``apply(message)``
    applies one record and raises ImageError for a record Kafka's image would refuse.
    """
    def __init__(self):
        self.provenance = Provenance()
        self.metadata_version: int | None = None      # the metadata.version feature level
        self.finalized_features: dict[str, int] = {}  # every other feature, level > 0
        self.zk_migration_state: int | None = None
        self.brokers: dict[int, BrokerRegistration] = {}
        self.controllers: dict[int, ControllerRegistration] = {}
        self.topics_by_id: dict = {}
        self.topics_by_name: dict[str, TopicImage] = {}
        # ReplicationControlManager.topicsWithCollisionChars: the names in topics_by_name that
        # have '.' or '_', by unify_collision_chars(name), each group in the order added; kept
        # with topics_by_name so CreateTopics finds a collision with one lookup per name.
        self.topics_with_collision_chars: dict[str, dict[str, None]] = {}
        self.configs: dict[tuple[int, str], dict[str, str]] = {}
        self.client_quotas: dict[frozenset, dict[str, float]] = {}
        self.next_producer_id = -1
        self.acls: dict = {}
        self.acl_index = AclIndex()                   # the same ACLs by the resources they match
        self.scram: dict[int, dict[str, ScramCredential]] = {}
        self.delegation_tokens: dict[str, DelegationToken] = {}
        # Copy on write: the keys whose inner object (a TopicImage, a config resource's,
        # quota entity's or SCRAM mechanism's dict) this image made since the last frozen(),
        # by collection; only those may change in place. None: never frozen, all are its own.
        self._own: dict[str, set] | None = None
        self._acl_index_shared = False                # a frozen view shares acl_index: copy it first
        # While recorded (record_changes): each change to a top-level map, in order, as
        # (collection, key, removed); the committed image replays them (take_changes).
        self.changes: list | None = None

    # -- frozen views --

    def frozen(self, lookups: bool = False) -> MetadataImage:
        """A view of this image as it is now, which records applied later do not change and
        which may be read from another thread. Without ``lookups`` the maps only lookups need
        (topics by name, the collision map, the ACL index) are not in it; with it the view has
        the topics by name and the ACL index (shared until the next ACL record here), not the
        collision map, which only the controller's CreateTopics reads."""
        view = MetadataImage.__new__(MetadataImage)
        view.__dict__.update(self.__dict__)
        for name in _VIEW_COPIES:
            setattr(view, name, getattr(self, name).copy())
        view.topics_with_collision_chars = None
        if lookups:
            view.topics_by_name = self.topics_by_name.copy()
            self._acl_index_shared = True
        else:
            view.topics_by_name = view.acl_index = None
        view._own = {name: set() for name in _COPY_ON_WRITE}     # it shares everything below its maps
        view.changes = None
        self._own = {name: set() for name in _COPY_ON_WRITE}
        return view

    # -- changes recorded, for an image that follows this one (kafkawire.controller.committed) --

    def record_changes(self) -> None:
        """From now on, record every change to the top-level maps (``take_changes``), and copy
        every inner object before changing it (what was recorded before is shared)."""
        self._own = {name: set() for name in _COPY_ON_WRITE}
        self.changes = []

    def take_changes(self) -> ImageChanges:
        """The changes recorded since ``record_changes``, each with its value now (later records
        copy an inner object before changing it, so these stay as they are), and stop recording.
        Replayed in order on an image that was what this one was at ``record_changes``
        (``ImageChanges.replay``), they make it what this one is now, its maps' orders included:
        the same dict operations on the same keys, in the same order."""
        changes, self.changes = self.changes or [], None
        entries = []
        for collection, key, removed in changes:
            if removed:
                entries.append((collection, key, _REMOVED))
                continue
            value = getattr(self, collection).get(key, _REMOVED)
            if value is not _REMOVED:     # else removed later in these changes: that removal follows
                entries.append((collection, key, value))
        return ImageChanges(entries, (self.provenance, self.metadata_version, self.zk_migration_state,
                                      self.next_producer_id))

    def _changed(self, collection: str, key, removed: bool = False) -> None:
        if self.changes is not None:
            self.changes.append((collection, key, removed))

    def _writable_acl_index(self) -> AclIndex:
        if self._acl_index_shared:
            self.acl_index = self.acl_index.copy()
            self._acl_index_shared = False
        return self.acl_index

    def _writable(self, collection: str, key, copy):
        """The inner object of ``collection`` at ``key``, made this image's own (copied, and
        put in place of the one a frozen view may share) if it is not yet; None if absent."""
        own = self._own
        outer = getattr(self, collection)
        value = outer.get(key)
        if value is None or own is None or key in own[collection]:
            return value
        value = outer[key] = copy(value)
        own[collection].add(key)
        self._changed(collection, key)
        return value

    def _owned(self, collection: str, key) -> None:
        """``key``'s inner object in ``collection`` was made just now, by this image."""
        if self._own is not None:
            self._own[collection].add(key)
        self._changed(collection, key)

    def _writable_topic(self, topic_id) -> TopicImage | None:
        """``_writable("topics_by_id", ...)``, the copy put in topics_by_name too; written out
        with one lookup of the id fewer: a UUID hashes in Python, and a broker's fencing changes
        a partition per record (issue 28)."""
        topic = self.topics_by_id.get(topic_id)
        own = self._own
        if topic is None or own is None:
            return topic
        owned = own["topics_by_id"]
        if topic_id in owned:
            return topic
        copy = self.topics_by_id[topic_id] = _copied_topic(topic)
        owned.add(topic_id)
        changes = self.changes
        if changes is not None:
            changes.append(("topics_by_id", topic_id, False))
        if self.topics_by_name.get(topic.name) is topic:
            self.topics_by_name[topic.name] = copy
            if changes is not None:
                changes.append(("topics_by_name", topic.name, False))
        return copy

    # -- applying records --

    def apply(self, message) -> None:
        """Apply one metadata record (a generated message instance)."""
        handler = _HANDLERS.get(message.NAME)
        if handler is None:
            raise ImageError(f"{message.NAME} is not a record the image knows how to apply")
        handler(self, message)

    # features

    def _feature_level(self, r):
        if r.name == METADATA_VERSION_FEATURE:
            self.metadata_version = r.feature_level
            return
        if r.feature_level == 0:
            self.finalized_features.pop(r.name, None)   # level 0 removes the feature
        else:
            self.finalized_features[r.name] = r.feature_level
        self._changed("finalized_features", r.name, removed=r.feature_level == 0)

    def _zk_migration_state(self, r):
        self.zk_migration_state = r.zk_migration_state

    # cluster

    def _register_broker(self, r):
        self.brokers[r.broker_id] = BrokerRegistration.from_record(r)
        self._changed("brokers", r.broker_id)

    def _unregister_broker(self, r):
        self.brokers.pop(r.broker_id, None)
        self._changed("brokers", r.broker_id, removed=True)

    def _broker_or_throw(self, broker_id: int, epoch: int, action: str) -> BrokerRegistration:
        broker = self.brokers.get(broker_id)
        if broker is None:
            raise ImageError(f"Tried to {action} broker {broker_id}, but that broker was not registered.")
        if broker.epoch != epoch:
            raise ImageError(f"Tried to {action} broker {broker_id}, but the given epoch, {epoch}, did not match "
                             f"the current broker epoch, {broker.epoch}")
        return broker

    def _fence_broker(self, r):
        self.brokers[r.id] = self._broker_or_throw(r.id, r.epoch, "fence").clone_with(fenced=True)
        self._changed("brokers", r.id)

    def _unfence_broker(self, r):
        self.brokers[r.id] = self._broker_or_throw(r.id, r.epoch, "unfence").clone_with(fenced=False)
        self._changed("brokers", r.id)

    def _broker_registration_change(self, r):
        broker = self._broker_or_throw(r.broker_id, r.broker_epoch, "change")
        fencing = {1: True, 0: None, -1: False}
        if r.fenced not in fencing:
            raise ImageError(f"Unable to replay {r.NAME} for broker {r.broker_id}: unknown value for fenced "
                             f"field: {r.fenced}")
        shutdown = {0: None, 1: True}
        in_shutdown = getattr(r, "in_controlled_shutdown", 0)
        if in_shutdown not in shutdown:
            raise ImageError(f"Unable to replay {r.NAME} for broker {r.broker_id}: unknown value for "
                             f"inControlledShutdown field: {in_shutdown}")
        log_dirs = getattr(r, "log_dirs", None)
        self.brokers[r.broker_id] = broker.clone_with(fenced=fencing[r.fenced],
                                                      in_controlled_shutdown=shutdown[in_shutdown],
                                                      directories=log_dirs or None,
                                                      cordoned_directories=getattr(r, "cordoned_log_dirs", None))
        self._changed("brokers", r.broker_id)

    def _register_controller(self, r):
        self.controllers[r.controller_id] = ControllerRegistration.from_record(r)
        self._changed("controllers", r.controller_id)

    def _unregister_controller(self, r):
        self.controllers.pop(r.controller_id, None)
        self._changed("controllers", r.controller_id, removed=True)

    # topics

    def _topic(self, r):
        old = self.topics_by_id.get(r.topic_id)
        if old is not None and self.topics_by_name.get(old.name) is old:
            self._forget_topic_name(old.name)
        topic = TopicImage(r.name, r.topic_id)   # a TopicRecord starts the topic over, without partitions
        self.topics_by_id[r.topic_id] = topic
        self._owned("topics_by_id", r.topic_id)
        self.topics_by_name[r.name] = topic
        self._changed("topics_by_name", r.name)
        if has_collision_chars(r.name):
            self.topics_with_collision_chars.setdefault(unify_collision_chars(r.name), {})[r.name] = None

    def _forget_topic_name(self, name: str) -> None:
        del self.topics_by_name[name]
        self._changed("topics_by_name", name, removed=True)
        if has_collision_chars(name):
            unified = unify_collision_chars(name)
            colliding = self.topics_with_collision_chars[unified]
            del colliding[name]
            if not colliding:
                del self.topics_with_collision_chars[unified]

    def writable_topic(self, r) -> TopicImage:
        """The topic of a partition's record ``r``, this image's own to change (ImageError: no such
        topic). It stays the topic's, the same object, while only PartitionChangeRecords are
        applied and no view of the image is taken."""
        return self._topic_or_throw(r)

    def _topic_or_throw(self, r) -> TopicImage:
        """The topic of a partition's record ``r``, this image's own to change."""
        topic = self._writable_topic(r.topic_id)
        if topic is None:
            raise ImageError(f"{r.NAME} for partition {r.partition_id} names topic id {kafka_uuid(r.topic_id)}, "
                             f"which does not exist")
        return topic

    def _partition(self, r):
        topic = self._topic_or_throw(r)
        topic.partitions[r.partition_id] = PartitionRegistration.from_record(r)

    def _partition_change(self, r):
        self.apply_partition_change(r)

    def apply_partition_change(self, r, topic: TopicImage | None = None) -> tuple[PartitionRegistration, PartitionRegistration]:
        """``apply`` of a PartitionChangeRecord, returning the partition's registrations before
        and after (the controller's partition index needs both: one topic lookup, not three).
        ``topic``: ``writable_topic(r)``, when the caller has it from the record before (a run
        of changes to one topic's partitions, as a broker's fencing writes them)."""
        if topic is None:
            topic = self._topic_or_throw(r)
        partition = topic.partitions.get(r.partition_id)
        if partition is None:
            raise ImageError(f"Unable to find partition {kafka_uuid(r.topic_id)}:{r.partition_id}")
        after = topic.partitions[r.partition_id] = partition.merge(r)
        return partition, after

    def _remove_topic(self, r):
        topic = self.topics_by_id.pop(r.topic_id, None)
        if topic is None:
            raise ImageError(f"Unable to delete topic with id {kafka_uuid(r.topic_id)}: no such topic found.")
        self._changed("topics_by_id", r.topic_id, removed=True)
        if self.topics_by_name.get(topic.name) is topic:
            self._forget_topic_name(topic.name)
        # ConfigurationsDelta.replay(RemoveTopicRecord): the topic's configs go with it.
        self.configs.pop((TOPIC_RESOURCE, topic.name), None)
        self._changed("configs", (TOPIC_RESOURCE, topic.name), removed=True)

    def _clear_elr(self, r):
        if r.topic_name:
            topic = self.topics_by_name.get(r.topic_name)
            if topic is None:
                raise ImageError(f"Unable to clear elr for topic with name {r.topic_name}: no such topic found.")
            topics = [topic]
        else:
            topics = list(self.topics_by_id.values())
        for topic in [self._writable_topic(t.id) for t in topics]:
            for pid, partition in topic.partitions.items():
                topic.partitions[pid] = partition.cleared_elr()

    # configs, quotas, producer ids

    def _config(self, r):
        if not supported_config(r.resource_type, r.name):
            return      # as Kafka's MetadataLoader: a config removed from Kafka is not in the image
        key = (r.resource_type, r.resource_name)
        data = self._writable("configs", key, dict)
        if data is not None and r.resource_type == BROKER_RESOURCE:
            # A broker's map is replaced, never changed in place, so a reader notices each record
            # of the broker by the map's identity, one that sets a value it had included
            # (KAFKA-14136: such a record makes the node reread its key stores).
            data = self.configs[key] = dict(data)
        if r.value is None:
            if data is not None:
                data.pop(r.name, None)
                if not data:
                    del self.configs[key]
                    self._changed("configs", key, removed=True)
        else:
            if data is None:
                data = self.configs[key] = {}
                self._owned("configs", key)
            data[r.name] = r.value

    def _client_quota(self, r):
        entity = frozenset((e.entity_type, e.entity_name) for e in r.entity)
        if not entity:
            raise ImageError("ClientQuotaRecord with an empty entity")
        quotas = self._writable("client_quotas", entity, dict)
        if r.remove:
            if quotas is not None:
                quotas.pop(r.key, None)
                if not quotas:
                    del self.client_quotas[entity]
                    self._changed("client_quotas", entity, removed=True)
        else:
            if quotas is None:
                quotas = self.client_quotas[entity] = {}
                self._owned("client_quotas", entity)
            quotas[r.key] = r.value

    def _producer_ids(self, r):
        self.next_producer_id = r.next_producer_id

    # security

    def _acl(self, r):
        acl = self.acls[r.id] = StandardAcl.from_record(r)
        self._writable_acl_index().add(r.id, acl)
        self._changed("acls", r.id)

    def _remove_acl(self, r):
        self.acls.pop(r.id, None)
        self._writable_acl_index().remove(r.id)
        self._changed("acls", r.id, removed=True)

    def _scram(self, r):
        users = self._writable("scram", r.mechanism, dict)
        if users is None:
            users = self.scram[r.mechanism] = {}
            self._owned("scram", r.mechanism)
        users[r.name] = ScramCredential(r.salt, r.stored_key, r.server_key, r.iterations)

    def _remove_scram(self, r):
        users = self._writable("scram", r.mechanism, dict)
        if users is not None:
            users.pop(r.name, None)

    def _delegation_token(self, r):
        self.delegation_tokens[r.token_id] = DelegationToken.from_record(r)
        self._changed("delegation_tokens", r.token_id)

    def _remove_delegation_token(self, r):
        self.delegation_tokens.pop(r.token_id, None)
        self._changed("delegation_tokens", r.token_id, removed=True)

    def _no_op(self, r):
        pass


_REMOVED = object()


class ImageChanges:
    """What ``MetadataImage.take_changes`` recorded: ``entries``, (collection, key, the value
    then or _REMOVED) in the order made, and the image's scalars then."""
    __slots__ = ("entries", "scalars")

    def __init__(self, entries: list, scalars: tuple):
        self.entries, self.scalars = entries, scalars

    def replay(self, image: MetadataImage, writable) -> None:
        """Make ``image`` (without the collision map) what the recorded one was when taken;
        ``writable(name)``: ``image``'s map (or ``"acl_index"``) ``name``, its own to change."""
        maps = {}
        for collection, key, value in self.entries:
            target = maps.get(collection)
            if target is None:
                target = maps[collection] = writable(collection)
            if value is _REMOVED:
                target.pop(key, None)
                if collection == "acls":
                    writable("acl_index").remove(key)
            else:
                target[key] = value
                if collection == "acls":
                    writable("acl_index").add(key, value)
        image.provenance, image.metadata_version, image.zk_migration_state, image.next_producer_id = self.scalars


def _copied_topic(topic: TopicImage) -> TopicImage:
    return TopicImage(topic.name, topic.id, dict(topic.partitions))


# What frozen() copies (the maps a record changes in place) and the maps whose inner objects
# are copied on write; every other attribute is replaced, never changed in place, by replay.
_COPY_ON_WRITE = ("topics_by_id", "configs", "client_quotas", "scram")
_VIEW_COPIES = _COPY_ON_WRITE + ("finalized_features", "brokers", "controllers", "acls", "delegation_tokens")


_HANDLERS = {
    "FeatureLevelRecord": MetadataImage._feature_level,
    "ZkMigrationStateRecord": MetadataImage._zk_migration_state,
    "RegisterBrokerRecord": MetadataImage._register_broker,
    "UnregisterBrokerRecord": MetadataImage._unregister_broker,
    "FenceBrokerRecord": MetadataImage._fence_broker,
    "UnfenceBrokerRecord": MetadataImage._unfence_broker,
    "BrokerRegistrationChangeRecord": MetadataImage._broker_registration_change,
    "RegisterControllerRecord": MetadataImage._register_controller,
    "UnregisterControllerRecord": MetadataImage._unregister_controller,
    "TopicRecord": MetadataImage._topic,
    "PartitionRecord": MetadataImage._partition,
    "PartitionChangeRecord": MetadataImage._partition_change,
    "RemoveTopicRecord": MetadataImage._remove_topic,
    "ClearElrRecord": MetadataImage._clear_elr,
    "ConfigRecord": MetadataImage._config,
    "ClientQuotaRecord": MetadataImage._client_quota,
    "ProducerIdsRecord": MetadataImage._producer_ids,
    "AccessControlEntryRecord": MetadataImage._acl,
    "RemoveAccessControlEntryRecord": MetadataImage._remove_acl,
    "UserScramCredentialRecord": MetadataImage._scram,
    "RemoveUserScramCredentialRecord": MetadataImage._remove_scram,
    "DelegationTokenRecord": MetadataImage._delegation_token,
    "RemoveDelegationTokenRecord": MetadataImage._remove_delegation_token,
    "NoOpRecord": MetadataImage._no_op,
}
