"""MetadataImage.apply, record kind by record kind, against Kafka's *Delta replay rules and the
toString forms of its registrations (metadata/src/main/java/org/apache/kafka/{image,metadata})."""
from __future__ import annotations

import uuid

import pytest

from kafkawire.metadata.image import MetadataImage
from kafkawire.metadata.image_tree import client_quota_entity_name, config_node_name, image_node
from kafkawire.metadata.registrations import ImageError, MIGRATING, UNASSIGNED

from .image_testlib import DIR_1, DIR_2, DIR_3, TOPIC_A, TOPIC_B, record

TOPIC_A_TEXT = "EREiIjMzRERVVWZmd3eIiA"     # Kafka's Uuid.toString of TOPIC_A (base64url, unpadded)


def image_with(*records) -> MetadataImage:
    image = MetadataImage()
    for r in records:
        image.apply(r)
    return image


def leaf(image, *path):
    node = image_node(image)
    for name in path:
        node = node.child(name)
        assert node is not None, f"no {name} in {'/'.join(path)}"
    return node.text


def topic_with_partition(**partition_fields):
    fields = dict(partition_id=0, topic_id=TOPIC_A, replicas=[1, 2, 3], isr=[1, 2, 3], leader=1,
                  leader_epoch=5, partition_epoch=7, directories=[DIR_1, DIR_2, DIR_3])
    fields.update(partition_fields)
    return [record("TopicRecord", name="foo", topic_id=TOPIC_A), record("PartitionRecord", **fields)]


# --- topics and partitions --------------------------------------------------------------------

def test_topic_and_partition_strings():
    image = image_with(*topic_with_partition())
    assert leaf(image, "topics", "byName", "foo", "id") == TOPIC_A_TEXT
    assert leaf(image, "topics", "byId", TOPIC_A_TEXT, "name") == "foo"
    dirs = "AAAAAAAAAKEAAAAAAAAAsQ, AAAAAAAAAKIAAAAAAAAAsg, AAAAAAAAAKMAAAAAAAAAsw"
    # PartitionRegistration.toString
    assert leaf(image, "topics", "byName", "foo", "0") == (
        f"PartitionRegistration(replicas=[1, 2, 3], directories=[{dirs}], isr=[1, 2, 3], removingReplicas=[], "
        "addingReplicas=[], elr=[], lastKnownElr=[], leader=1, leaderRecoveryState=RECOVERED, leaderEpoch=5, "
        "partitionEpoch=7)")


def test_partition_record_without_directories_is_migrating():
    image = image_with(*topic_with_partition(directories=[]))
    assert image.topics_by_id[TOPIC_A].partitions[0].directories == (MIGRATING,) * 3
    assert "directories=[AAAAAAAAAAAAAAAAAAAAAA, AAAAAAAAAAAAAAAAAAAAAA" in leaf(image, "topics", "byName", "foo", "0")


def test_partition_change_leader_bumps_both_epochs():
    image = image_with(*topic_with_partition(),
                       record("PartitionChangeRecord", partition_id=0, topic_id=TOPIC_A, leader=2, isr=[2, 3]))
    p = image.topics_by_id[TOPIC_A].partitions[0]
    assert (p.leader, p.leader_epoch, p.partition_epoch, p.isr) == (2, 6, 8, (2, 3))
    assert p.replicas == (1, 2, 3) and p.directories == (DIR_1, DIR_2, DIR_3)


def test_partition_change_without_leader_keeps_leader_epoch():
    image = image_with(*topic_with_partition(),
                       record("PartitionChangeRecord", partition_id=0, topic_id=TOPIC_A, isr=[1]))
    p = image.topics_by_id[TOPIC_A].partitions[0]
    assert (p.leader, p.leader_epoch, p.partition_epoch, p.isr) == (1, 5, 8, (1,))


def test_partition_change_to_no_leader():
    image = image_with(*topic_with_partition(),
                       record("PartitionChangeRecord", partition_id=0, topic_id=TOPIC_A, leader=-1, isr=[]))
    p = image.topics_by_id[TOPIC_A].partitions[0]
    assert (p.leader, p.leader_epoch, p.isr) == (-1, 6, ())


def test_partition_change_replicas_keep_directories_of_staying_replicas():
    image = image_with(*topic_with_partition(),
                       record("PartitionChangeRecord", partition_id=0, topic_id=TOPIC_A, replicas=[3, 4],
                              adding_replicas=[4], removing_replicas=[1, 2]))
    p = image.topics_by_id[TOPIC_A].partitions[0]
    assert p.replicas == (3, 4)
    assert p.directories == (DIR_3, UNASSIGNED)       # DirectoryId.createDirectoriesFrom
    assert (p.adding_replicas, p.removing_replicas) == ((4,), (1, 2))
    assert (p.leader, p.leader_epoch, p.partition_epoch) == (1, 5, 8)


def test_partition_change_explicit_directories_and_elr_and_recovery():
    image = image_with(*topic_with_partition(),
                       record("PartitionChangeRecord", partition_id=0, topic_id=TOPIC_A,
                              directories=[DIR_3, DIR_2, DIR_1], eligible_leader_replicas=[2],
                              last_known_elr=[3], leader_recovery_state=1))
    p = image.topics_by_id[TOPIC_A].partitions[0]
    assert p.directories == (DIR_3, DIR_2, DIR_1)
    assert (p.elr, p.last_known_elr, p.leader_recovery_state) == ((2,), (3,), 1)
    assert "elr=[2], lastKnownElr=[3], leader=1, leaderRecoveryState=RECOVERING" in str(p)
    # -1 (the default) leaves the recovery state alone; null lists leave the ELR alone
    image.apply(record("PartitionChangeRecord", partition_id=0, topic_id=TOPIC_A, isr=[1, 2]))
    p = image.topics_by_id[TOPIC_A].partitions[0]
    assert (p.elr, p.last_known_elr, p.leader_recovery_state, p.partition_epoch) == ((2,), (3,), 1, 9)
    # an empty list is a change, to empty
    image.apply(record("PartitionChangeRecord", partition_id=0, topic_id=TOPIC_A, eligible_leader_replicas=[]))
    assert image.topics_by_id[TOPIC_A].partitions[0].elr == ()


def test_partition_change_errors():
    image = image_with(*topic_with_partition())
    with pytest.raises(ImageError, match="Unable to find partition"):
        image.apply(record("PartitionChangeRecord", partition_id=9, topic_id=TOPIC_A, leader=2))
    with pytest.raises(ImageError, match="does not exist"):
        image.apply(record("PartitionChangeRecord", partition_id=0, topic_id=TOPIC_B, leader=2))
    with pytest.raises(ImageError, match="InvalidReplicaDirectories"):
        image.apply(record("PartitionChangeRecord", partition_id=0, topic_id=TOPIC_A, directories=[DIR_1]))


def test_remove_topic_takes_its_configs():
    image = image_with(*topic_with_partition(),
                       record("ConfigRecord", resource_type=2, resource_name="foo", name="retention.ms", value="1"),
                       record("ConfigRecord", resource_type=4, resource_name="1", name="x", value="y"),
                       record("RemoveTopicRecord", topic_id=TOPIC_A))
    assert image.topics_by_id == {} and image.topics_by_name == {}
    assert list(image.configs) == [(4, "1")]
    with pytest.raises(ImageError, match="no such topic found"):
        image.apply(record("RemoveTopicRecord", topic_id=TOPIC_A))


def test_topic_record_starts_the_topic_over():
    image = image_with(*topic_with_partition(), record("TopicRecord", name="foo", topic_id=TOPIC_A))
    assert image.topics_by_id[TOPIC_A].partitions == {}


def test_clear_elr():
    image = image_with(*topic_with_partition(eligible_leader_replicas=[2], last_known_elr=[3]),
                       record("TopicRecord", name="bar", topic_id=TOPIC_B),
                       record("PartitionRecord", partition_id=0, topic_id=TOPIC_B, replicas=[1], isr=[1],
                              leader=1, eligible_leader_replicas=[1]))
    image.apply(record("ClearElrRecord", topic_name="foo"))
    foo, bar = image.topics_by_id[TOPIC_A].partitions[0], image.topics_by_id[TOPIC_B].partitions[0]
    assert (foo.elr, foo.last_known_elr, foo.partition_epoch) == ((), (), 8)
    assert bar.elr == (1,)
    image.apply(record("ClearElrRecord", topic_name=""))
    assert image.topics_by_id[TOPIC_B].partitions[0].elr == ()
    assert image.topics_by_id[TOPIC_A].partitions[0].partition_epoch == 8   # nothing left to clear
    with pytest.raises(ImageError, match="no such topic"):
        image.apply(record("ClearElrRecord", topic_name="nope"))


# --- brokers and controllers ------------------------------------------------------------------

def broker(broker_id=1, epoch=10, **extra):
    fields = dict(broker_id=broker_id, incarnation_id=uuid.UUID(int=5), broker_epoch=epoch,
                  end_points=[dict(name="PLAINTEXT", host="b1", port=9092, security_protocol=0),
                              dict(name="CONTROLLER", host="b1", port=9093, security_protocol=1)],
                  features=[dict(name="metadata.version", min_supported_version=1, max_supported_version=19)],
                  rack=None, fenced=True)
    fields.update(extra)
    from kafkawire import messages
    cls = messages.by_name("RegisterBrokerRecord")
    r = cls()
    for k, v in fields.items():
        if k == "end_points":
            v = [_struct(cls, "end_points", e) for e in v]
        elif k == "features":
            v = [_struct(cls, "features", f) for f in v]
        setattr(r, k, v)
    return r


def _struct(cls, field_name, values):
    f = next(f for f in cls._FIELDS if f.py_name == field_name)
    s = f.struct()
    for k, v in values.items():
        setattr(s, k, v)
    return s


def test_broker_registration_string():
    image = image_with(broker(log_dirs=[DIR_2, DIR_1]))
    # BrokerRegistration.toString: listeners sorted by name, features sorted, directories sorted
    # by Uuid.compareTo, rack as an Optional.
    assert leaf(image, "cluster", "brokers", "1") == (
        "BrokerRegistration(id=1, epoch=10, incarnationId=AAAAAAAAAAAAAAAAAAAABQ, listeners=["
        "Endpoint(listenerName='CONTROLLER', securityProtocol=SSL, host='b1', port=9093), "
        "Endpoint(listenerName='PLAINTEXT', securityProtocol=PLAINTEXT, host='b1', port=9092)], "
        "supportedFeatures={metadata.version: 1-19}, rack=Optional.empty, fenced=true, "
        "inControlledShutdown=false, isMigratingZkBroker=false, "
        "directories=[AAAAAAAAAKEAAAAAAAAAsQ, AAAAAAAAAKIAAAAAAAAAsg], cordonedDirectories=null)")
    # cordoned directories: null until reported, then kept in the order given
    image.apply(record("BrokerRegistrationChangeRecord", broker_id=1, broker_epoch=10,
                       cordoned_log_dirs=[DIR_2, DIR_1]))
    assert leaf(image, "cluster", "brokers", "1").endswith(
        "cordonedDirectories=[AAAAAAAAAKIAAAAAAAAAsg, AAAAAAAAAKEAAAAAAAAAsQ])")
    image.apply(record("BrokerRegistrationChangeRecord", broker_id=1, broker_epoch=10))     # null: no change
    assert leaf(image, "cluster", "brokers", "1").endswith("AAAAAAAAAKEAAAAAAAAAsQ])")


def test_fence_unfence_and_registration_change():
    image = image_with(broker())
    image.apply(record("UnfenceBrokerRecord", id=1, epoch=10))
    assert image.brokers[1].fenced is False
    image.apply(record("FenceBrokerRecord", id=1, epoch=10))
    assert image.brokers[1].fenced is True
    image.apply(record("BrokerRegistrationChangeRecord", broker_id=1, broker_epoch=10, fenced=-1,
                       in_controlled_shutdown=1, log_dirs=[DIR_3]))
    b = image.brokers[1]
    assert (b.fenced, b.in_controlled_shutdown, b.directories) == (False, True, (DIR_3,))
    image.apply(record("BrokerRegistrationChangeRecord", broker_id=1, broker_epoch=10, fenced=0))
    assert image.brokers[1].fenced is False and image.brokers[1].in_controlled_shutdown is True
    with pytest.raises(ImageError, match="did not match the current broker epoch, 10"):
        image.apply(record("FenceBrokerRecord", id=1, epoch=11))
    with pytest.raises(ImageError, match="was not registered"):
        image.apply(record("UnfenceBrokerRecord", id=2, epoch=10))
    with pytest.raises(ImageError, match="unknown value for fenced field: 5"):
        image.apply(record("BrokerRegistrationChangeRecord", broker_id=1, broker_epoch=10, fenced=5))
    image.apply(record("UnregisterBrokerRecord", broker_id=1, broker_epoch=10))
    assert image.brokers == {}


def test_controllers():
    from kafkawire import messages
    cls = messages.by_name("RegisterControllerRecord")
    r = cls(controller_id=3000, incarnation_id=uuid.UUID(int=7), zk_migration_ready=False)
    r.end_points = [_struct(cls, "end_points", dict(name="CONTROLLER", host="c", port=9093, security_protocol=0))]
    r.features = [_struct(cls, "features", dict(name="kraft.version", min_supported_version=0,
                                                 max_supported_version=1))]
    image = image_with(r)
    # ControllerRegistration.toString
    assert leaf(image, "cluster", "controllers", "3000") == (
        "ControllerRegistration(id=3000, incarnationId=AAAAAAAAAAAAAAAAAAAABw, zkMigrationReady=false, "
        "listeners=[Endpoint(listenerName='CONTROLLER', securityProtocol=PLAINTEXT, host='c', port=9093)], "
        "supportedFeatures={kraft.version: 0-1})")
    image.apply(record("UnregisterControllerRecord", controller_id=3000))
    assert image.controllers == {}


# --- features, configs, quotas, producer ids --------------------------------------------------

def test_features():
    image = image_with(record("FeatureLevelRecord", name="metadata.version", feature_level=19),
                       record("FeatureLevelRecord", name="group.version", feature_level=1),
                       record("FeatureLevelRecord", name="kraft.version", feature_level=1))
    features = image_node(image).child("features")
    assert sorted(features.child_names()) == ["finalized_group.version", "finalized_kraft.version",
                                              "metadataVersion"]
    assert features.child("metadataVersion").text == "Optional[3.7-IV4]"      # Kafka 4.3's text
    image.apply(record("FeatureLevelRecord", name="group.version", feature_level=0))   # 0 removes
    assert "finalized_group.version" not in image_node(image).child("features").child_names()


def test_configs():
    image = image_with(record("ConfigRecord", resource_type=4, resource_name="", name="a", value="1"),
                       record("ConfigRecord", resource_type=4, resource_name="2", name="b", value="2"),
                       record("ConfigRecord", resource_type=2, resource_name="t", name="retention.ms", value="3"),
                       record("ConfigRecord", resource_type=4, resource_name="2", name="b", value=None),
                       # removed from Kafka (4.0) or unknown to it: its loader skips them, as we do
                       record("ConfigRecord", resource_type=2, resource_name="t",
                              name="message.timestamp.difference.max.ms", value="9"),
                       record("ConfigRecord", resource_type=2, resource_name="u", name="c", value="3"),
                       record("ConfigRecord", resource_type=32, resource_name="g", name="consumer.session.timeout.ms",
                              value="45000"),
                       record("ConfigRecord", resource_type=32, resource_name="g", name="x", value="1"),
                       record("ConfigRecord", resource_type=0, resource_name="z", name="a", value="1"))
    assert sorted(image_node(image).child("configs").child_names()) == ["BROKER", "GROUP:g", "TOPIC:t"]
    assert leaf(image, "configs", "BROKER", "a") == "1"
    assert image_node(image).child("configs").child("TOPIC:t").child_names() == ["retention.ms"]
    assert image_node(image).child("configs").child("GROUP:g").child_names() == ["consumer.session.timeout.ms"]
    assert config_node_name(8, "x") == "BROKER_LOGGER:x" and config_node_name(16, "") == "CLIENT_METRICS"


def test_client_quotas():
    def quota(entity, key, value, remove=False):
        from kafkawire import messages
        cls = messages.by_name("ClientQuotaRecord")
        r = cls(key=key, value=value, remove=remove)
        r.entity = [_struct(cls, "entity", dict(entity_type=t, entity_name=n)) for t, n in entity]
        return r
    image = image_with(quota([("user", "alice"), ("client-id", "c(1)")], "producer_byte_rate", 1e7),
                       quota([("user", None)], "consumer_byte_rate", 1024.0),
                       quota([("ip", "1.2.3.4")], "connection_creation_rate", 5.0),
                       quota([("ip", "1.2.3.4")], "connection_creation_rate", 0.0, remove=True))
    names = sorted(image_node(image).child("clientQuotas").child_names())
    # ClientQuotasImageNode: clientId, ip, user in that order, "\(" escapes, empty name = default
    assert names == ["clientId(c\\(1\\))_user(alice)", "user()"]
    assert leaf(image, "clientQuotas", "clientId(c\\(1\\))_user(alice)", "producer_byte_rate") == "1.0E7"
    assert leaf(image, "clientQuotas", "user()", "consumer_byte_rate") == "1024.0"
    assert client_quota_entity_name(frozenset({("ip", "x")})) == "ip(x)"


def test_producer_ids():
    image = MetadataImage()
    assert image_node(image).child("producerIds").child("nextProducerId").text == "-1"
    image.apply(record("ProducerIdsRecord", broker_id=1, broker_epoch=3, next_producer_id=5000))
    assert leaf(image, "producerIds", "nextProducerId") == "5000"


# --- ACLs, SCRAM, delegation tokens -----------------------------------------------------------

def test_acls():
    acl_id = uuid.UUID(int=42)
    image = image_with(record("AccessControlEntryRecord", id=acl_id, resource_type=2, resource_name="foo",
                              pattern_type=3, principal="User:alice", host="*", operation=3, permission_type=3))
    # StandardAcl.toString; /image/acls/byId lists ACLs by id (AclsImageNode's one child, byId)
    assert image_node(image).child("acls").child_names() == ["byId"]
    assert leaf(image, "acls", "byId", "AAAAAAAAAAAAAAAAAAAAKg") == (
        "StandardAcl(resourceType=TOPIC, resourceName=foo, patternType=LITERAL, principal=User:alice, host=*, "
        "operation=READ, permissionType=ALLOW)")
    image.apply(record("RemoveAccessControlEntryRecord", id=acl_id))
    assert image_node(image).child("acls").child("byId").child_names() == []


def test_scram():
    image = image_with(record("UserScramCredentialRecord", name="alice", mechanism=2, salt=b"\x01\xab",
                              stored_key=b"\x02", server_key=b"\x03", iterations=8192))
    scram = image_node(image).child("scram")
    assert sorted(scram.child_names()) == ["SCRAM-SHA-256", "SCRAM-SHA-512"]
    assert scram.child("SCRAM-SHA-256").child_names() == []
    # ScramCredentialDataNode with the shell's printer (nothing redacted): hex bytes
    assert scram.child("SCRAM-SHA-512").child("alice").text == (
        "ScramCredentialData(salt=01ab, storedKey=02, serverKey=03, iterations=8192)")
    image.apply(record("RemoveUserScramCredentialRecord", name="alice", mechanism=2))
    assert image_node(image).child("scram").child("SCRAM-SHA-512").child_names() == []


def test_delegation_tokens():
    image = image_with(record("DelegationTokenRecord", owner="User:alice", requester="User:bob",
                              renewers=["User:carol", "User:dave"], issue_timestamp=1, max_timestamp=3,
                              expiration_timestamp=2, token_id="tok1"))
    # DelegationTokenDataNode.print, with its odd parentheses
    assert leaf(image, "delegationToken", "tok1") == (
        "DelegationTokenDatatokenId=tok1(owner=User:alice(tokenRequester=User:bob(renewers=User:carol User:dave, "
        "issueTimestamp=1, maxTimestamp=3), expiryTimestamp=2")
    image.apply(record("RemoveDelegationTokenRecord", token_id="tok1"))
    assert image.delegation_tokens == {}


def test_unknown_record_name_is_refused():
    from kafkawire import messages
    with pytest.raises(ImageError, match="not a record the image knows"):
        MetadataImage().apply(messages.by_name("SnapshotHeaderRecord")())


def test_each_record_of_a_broker_replaces_its_config_map_even_when_it_sets_the_value_it_had():
    """Even with no frozen view sharing it (a controller-only node's follower): a reader notices a
    record of the broker by the map's identity (KAFKA-14136: it makes the node reread its stores)."""
    image = MetadataImage()
    image.apply(record("ConfigRecord", resource_type=4, resource_name="1", name="log.retention.ms", value="1"))
    first = image.configs[(4, "1")]
    image.apply(record("ConfigRecord", resource_type=4, resource_name="1", name="log.retention.ms", value="1"))
    assert image.configs[(4, "1")] == first and image.configs[(4, "1")] is not first
