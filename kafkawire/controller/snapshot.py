"""The metadata image as record frames, in the order Kafka's snapshot writer emits them
(MetadataImage.write: features, cluster, topics, configs, client quotas, producer ids, ACLs,
SCRAM credentials, delegation tokens), each record in the version the image's
metadata.version calls for (ImageWriterOptions).

Within a section, records follow the iteration order of the Java map Kafka keeps them in
(see java_order): finalized features and config keys by String hash, brokers, controllers
and partitions by id hash, topics by Uuid hash (a persistent hash map), the listeners and
features of a registration by String hash. Where Kafka's order depends on identity hash
codes (config resources and SCRAM mechanisms are keyed by Java enums) it is not
reproducible from one JVM to the next; here config resources keep the order they entered the
image and SCRAM mechanisms go by type id.

Kafka 4.x writes no ZkMigrationStateRecord; an image replayed from a 3.x log that holds one
keeps it (after the features, where 3.x wrote it), so a 3.x snapshot reads back unchanged.
"""
from __future__ import annotations

from kafkawire.metadata.image import MetadataImage

from .frames import frame, struct
from .java_order import (copied_capacity, grown_capacity, hashmap_order, int_hashmap_order, sized_capacity, string_hashmap_order,
                         uuid_hash, uuid_tree_order)
from .versions import (METADATA_VERSION, controller_registration_supported, directory_assignment_supported,
                       elr_enabled, migration_supported, partition_record_version, register_broker_record_version)

# Kafka 4.x's docker image runs Java 21; see java_order.copied_capacity for why it matters.
JDK = 21
SCRAM_SUPPORTED_FROM = 11            # IBP_3_5_IV2
DELEGATION_TOKENS_SUPPORTED_FROM = 14  # IBP_3_6_IV2


def image_records(image: MetadataImage, feature_order: list[str] | None = None, *, jdk: int = JDK) -> list[bytes]:
    """``image`` as snapshot records. ``feature_order`` is the order finalized features entered
    the image (ControllerState.feature_order); without it, name order stands in. ``jdk`` is the
    Java version whose HashMap copy sizing to follow (see java_order.copied_capacity)."""
    return list(iter_image_records(image, feature_order, jdk=jdk))


def iter_image_records(image: MetadataImage, feature_order: list[str] | None = None, *, jdk: int = JDK):
    """``image_records`` one record at a time (a partition's record is encoded when it is asked for)."""
    mv = image.metadata_version
    if mv is None and not image.finalized_features and not image.brokers and not image.topics_by_id:
        return
    level = mv if mv is not None else 0
    yield from _features(image, feature_order)
    yield from _cluster(image, level, jdk)
    yield from _topics(image, level)
    yield from _configs(image)
    yield from _client_quotas(image)
    if image.next_producer_id >= 0:
        yield frame("ProducerIdsRecord", broker_id=-1, broker_epoch=-1, next_producer_id=image.next_producer_id)
    yield from _acls(image)
    if level >= SCRAM_SUPPORTED_FROM:
        yield from _scram(image)
    if level >= DELEGATION_TOKENS_SUPPORTED_FROM:
        yield from _delegation_tokens(image)


def _features(image: MetadataImage, feature_order) -> list[bytes]:
    out = []
    if image.metadata_version is not None:
        # Written first and in version 0, so any reader learns the metadata.version before the rest.
        out.append(frame("FeatureLevelRecord", name=METADATA_VERSION, feature_level=image.metadata_version))
    names = [n for n in (feature_order or sorted(image.finalized_features)) if n in image.finalized_features]
    names += [n for n in sorted(image.finalized_features) if n not in names]
    # FeaturesDelta.apply builds `new HashMap<>(previous size)` and fills it.
    for name in string_hashmap_order(names, grown_capacity(len(names), 1)):
        out.append(frame("FeatureLevelRecord", name=name, feature_level=image.finalized_features[name]))
    if image.zk_migration_state is not None and migration_supported(image.metadata_version or 0):
        out.append(frame("ZkMigrationStateRecord", zk_migration_state=image.zk_migration_state))
    return out


def _endpoints(record: str, struct_name: str, listeners: dict, capacity: int) -> list:
    cls = struct(record, struct_name)
    return [cls(name=name, host=listeners[name].host, port=listeners[name].port,
                security_protocol=listeners[name].security_protocol)
            for name in string_hashmap_order(listeners, capacity)]


def _supported(record: str, struct_name: str, features: dict, capacity: int) -> list:
    cls = struct(record, struct_name)
    return [cls(name=name, min_supported_version=features[name][0], max_supported_version=features[name][1])
            for name in string_hashmap_order(features, capacity)]


def broker_record(broker, level: int, jdk: int = JDK) -> bytes:
    """BrokerRegistration.toRecord. Its constructor keeps the listeners in ``new HashMap<>(size)``
    and the features in ``new HashMap<>(features)``."""
    version = register_broker_record_version(level)
    features = broker.supported_features
    fields = dict(broker_id=broker.id, incarnation_id=broker.incarnation_id, broker_epoch=broker.epoch,
                  end_points=_endpoints("RegisterBrokerRecord", "BrokerEndpoint", broker.listeners,
                                        sized_capacity(len(broker.listeners))),
                  features=_supported("RegisterBrokerRecord", "BrokerFeature", features,
                                      copied_capacity(len(features), jdk)),
                  rack=broker.rack, fenced=broker.fenced)
    if version >= 1:
        fields["in_controlled_shutdown"] = broker.in_controlled_shutdown
    if version >= 2:
        fields["is_migrating_zk_broker"] = broker.is_migrating_zk_broker
    if version >= 3:
        fields["log_dirs"] = list(broker.directories)
    if version >= 4:       # 4.3-IV0: null until the broker reports its cordoned directories
        cordoned = getattr(broker, "cordoned_directories", None)
        fields["cordoned_log_dirs"] = None if cordoned is None else list(cordoned)
    return frame("RegisterBrokerRecord", version, **fields)


def controller_record(controller) -> bytes:
    """ControllerRegistration.toRecord; its Builder fills two ``new HashMap<>()``."""
    listeners, features = controller.listeners, controller.supported_features
    return frame("RegisterControllerRecord", 0, controller_id=controller.id, incarnation_id=controller.incarnation_id,
                 zk_migration_ready=controller.zk_migration_ready,
                 end_points=_endpoints("RegisterControllerRecord", "ControllerEndpoint", listeners,
                                       grown_capacity(len(listeners))),
                 features=_supported("RegisterControllerRecord", "ControllerFeature", features,
                                     grown_capacity(len(features))))


def _cluster(image: MetadataImage, level: int, jdk: int) -> list[bytes]:
    out = [broker_record(image.brokers[i], level, jdk)
           for i in int_hashmap_order(image.brokers, copied_capacity(len(image.brokers), jdk))]
    if image.controllers and controller_registration_supported(level):
        out += [controller_record(image.controllers[i])
                for i in int_hashmap_order(image.controllers, copied_capacity(len(image.controllers), jdk))]
    return out


def partition_record(topic_id, partition_id: int, p, level: int, elr: bool) -> bytes:
    """PartitionRegistration.toRecord."""
    version = partition_record_version(level)
    fields = dict(partition_id=partition_id, topic_id=topic_id, replicas=list(p.replicas), isr=list(p.isr),
                  removing_replicas=list(p.removing_replicas), adding_replicas=list(p.adding_replicas),
                  leader=p.leader, leader_recovery_state=p.leader_recovery_state, leader_epoch=p.leader_epoch,
                  partition_epoch=p.partition_epoch)
    if version >= 2 and elr:
        # Tagged fields, set only when they hold something.
        if p.elr:
            fields["eligible_leader_replicas"] = list(p.elr)
        if p.last_known_elr:
            fields["last_known_elr"] = list(p.last_known_elr)
    if directory_assignment_supported(level):
        fields["directories"] = list(p.directories)
    return frame("PartitionRecord", version, **fields)


def _topics(image: MetadataImage, level: int):
    elr = elr_enabled(image.metadata_version, image.finalized_features)
    for topic_id in uuid_tree_order(image.topics_by_id):
        topic = image.topics_by_id[topic_id]
        yield frame("TopicRecord", name=topic.name, topic_id=topic.id)
        for pid in int_hashmap_order(topic.partitions, copied_capacity(len(topic.partitions))):
            yield partition_record(topic.id, pid, topic.partitions[pid], level, elr)


def _configs(image: MetadataImage) -> list[bytes]:
    out = []
    for (resource_type, resource_name), data in image.configs.items():
        for key in string_hashmap_order(data, grown_capacity(len(data), 1)):
            out.append(frame("ConfigRecord", resource_type=resource_type, resource_name=resource_name,
                             name=key, value=data[key]))
    return out


def _client_quotas(image: MetadataImage) -> list[bytes]:
    EntityData = struct("ClientQuotaRecord", "EntityData")
    out = []
    for entity, quotas in image.client_quotas.items():
        names = dict(entity)
        data = [EntityData(entity_type=t, entity_name=names[t]) for t in string_hashmap_order(names)]
        for key in string_hashmap_order(quotas):
            out.append(frame("ClientQuotaRecord", entity=data, key=key, value=quotas[key], remove=False))
    return out


def _acls(image: MetadataImage) -> list[bytes]:
    out = []
    for acl_id in hashmap_order(list(image.acls), uuid_hash, copied_capacity(len(image.acls))):
        a = image.acls[acl_id]
        out.append(frame("AccessControlEntryRecord", id=acl_id, resource_type=a.resource_type,
                         resource_name=a.resource_name, pattern_type=a.pattern_type, principal=a.principal,
                         host=a.host, operation=a.operation, permission_type=a.permission_type))
    return out


def _scram(image: MetadataImage) -> list[bytes]:
    out = []
    for mechanism in sorted(image.scram):
        users = image.scram[mechanism]
        for name in string_hashmap_order(users):
            c = users[name]
            out.append(frame("UserScramCredentialRecord", name=name, mechanism=mechanism, salt=c.salt,
                             stored_key=c.stored_key, server_key=c.server_key, iterations=c.iterations))
    return out


def _delegation_tokens(image: MetadataImage) -> list[bytes]:
    out = []
    for token_id in string_hashmap_order(image.delegation_tokens):
        t = image.delegation_tokens[token_id]
        out.append(frame("DelegationTokenRecord", owner=t.owner, requester=t.requester, renewers=list(t.renewers),
                         issue_timestamp=t.issue_timestamp, max_timestamp=t.max_timestamp,
                         expiration_timestamp=t.expiration_timestamp, token_id=t.token_id))
    return out
