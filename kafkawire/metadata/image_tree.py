"""The metadata image as kafka-metadata-shell's file tree (Kafka's image/node/*.java and
shell/node/*.java):

    /local/version, /local/commitId
    /image/provenance                              offset N, epoch E, time <ISO UTC>
    /image/features/metadataVersion                e.g. Optional[3.7-IV4] (Kafka 4.3 prints the Optional)
    /image/features/finalized_<feature>            level
    /image/cluster/brokers/<id>                    BrokerRegistration(...)
    /image/cluster/controllers/<id>                ControllerRegistration(...)
    /image/topics/byName/<name>/{name,id,<partition>}   PartitionRegistration(...)
    /image/topics/byId/<id>/...                    the same topics by Kafka uuid
    /image/configs/<TYPE>[:<name>]/<key>           value
    /image/clientQuotas/<entity>/<key>             Double.toString of the value
    /image/producerIds/nextProducerId
    /image/acls/byId/<id>                          StandardAcl(...)
    /image/scram/<SCRAM-SHA-256|SCRAM-SHA-512>/<user>   ScramCredentialData(...)
    /image/delegationToken/<tokenId>               DelegationTokenData...

Kafka's names throughout. Additions, none of which Kafka has, all under ``/local``: what the
replay knows beyond the image: ``lastReadOffset``, ``lastReadEpoch``, ``sources``, ``problems``,
``pendingTransaction``, ``zkMigrationState`` (only when a ZkMigrationStateRecord was read; Kafka
3.x showed it in /image/features) and ``raft/`` (leaderId, leaderEpoch, kraftVersion,
leaderChange, voters/<id>) from the control records.

A node is a directory (``child_names``/``child``) or a leaf (``text``); children are built on
demand, so a large image costs nothing until it is looked at.
"""
from __future__ import annotations

from importlib import metadata as _package_metadata

from kafkawire.records.kraft_control import json_version, value_json

from .image import MetadataImage
from .java_text import iso_zoned_utc, jackson_json, java_double, java_optional
from .kafka_names import SCRAM_MECHANISMS, ZK_MIGRATION_STATES, config_resource_type, metadata_version_name
from .registrations import kafka_uuid

__all__ = ["Node", "Directory", "Leaf", "root_node", "image_node"]


class Node:
    is_directory = True

    def child_names(self) -> list[str]:
        return []

    def child(self, name: str):
        return None


class Leaf(Node):
    is_directory = False

    def __init__(self, text: str):
        self.text = text


class Directory(Node):
    """A directory whose children are given as a mapping name -> factory()."""

    def __init__(self, children: dict):
        self._children = children

    def child_names(self):
        return list(self._children)

    def child(self, name):
        factory = self._children.get(name)
        return None if factory is None else factory()


def _kafkawire_version() -> str:
    try:
        return _package_metadata.version("kafkawire")
    except _package_metadata.PackageNotFoundError:
        return "unknown"


# --- /image ---------------------------------------------------------------------------------

def _provenance(image: MetadataImage) -> Leaf:
    p = image.provenance
    return Leaf(f"offset {p.offset}, epoch {p.epoch}, time {iso_zoned_utc(p.time_ms)}")


def _features(image: MetadataImage) -> Directory:
    version = image.metadata_version
    children = {"metadataVersion": lambda: Leaf(java_optional(None if version is None
                                                              else metadata_version_name(version)))}
    for name, level in image.finalized_features.items():
        children[f"finalized_{name}"] = (lambda level=level: Leaf(str(level)))
    return Directory(children)


def _mapping(items: dict, render) -> Directory:
    return Directory({str(key): (lambda value=value: Leaf(render(value))) for key, value in items.items()})


def _cluster(image: MetadataImage) -> Directory:
    return Directory({"brokers": lambda: _mapping(image.brokers, str),
                      "controllers": lambda: _mapping(image.controllers, str)})


def _topic(topic) -> Directory:
    children = {"name": lambda: Leaf(topic.name), "id": lambda: Leaf(kafka_uuid(topic.id))}
    for pid, partition in topic.partitions.items():
        children[str(pid)] = (lambda partition=partition: Leaf(str(partition)))
    return Directory(children)


def _topics(image: MetadataImage) -> Directory:
    return Directory({
        "byName": lambda: Directory({name: (lambda t=t: _topic(t)) for name, t in image.topics_by_name.items()}),
        "byId": lambda: Directory({kafka_uuid(tid): (lambda t=t: _topic(t)) for tid, t in image.topics_by_id.items()}),
    })


def config_node_name(resource_type: int, resource_name: str) -> str:
    """ConfigurationsImageNode: ``TYPE`` for a default resource (empty name), ``TYPE:name`` otherwise."""
    type_name = config_resource_type(resource_type)
    return type_name if resource_name == "" else f"{type_name}:{resource_name}"


def _configs(image: MetadataImage) -> Directory:
    children = {}
    for (resource_type, resource_name), data in image.configs.items():
        children[config_node_name(resource_type, resource_name)] = (lambda data=data: _mapping(data, str))
    return Directory(children)


def _escape_entity_name(name: str) -> str:
    return name.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")


def client_quota_entity_name(entity: frozenset) -> str:
    """ClientQuotasImageNode.clientQuotaEntityToString: ``clientId(a)_ip(b)_user(c)``, in that
    order; a null name (the default entity) is written as an empty one."""
    by_type = dict(entity)
    parts = []
    for entity_type, label in (("client-id", "clientId"), ("ip", "ip"), ("user", "user")):
        if entity_type in by_type:
            parts.append(f"{label}({_escape_entity_name(by_type[entity_type] or '')})")
    # Kafka throws on other entity types; show them after the known ones rather than fail.
    for entity_type in sorted(t for t in by_type if t not in ("client-id", "ip", "user")):
        parts.append(f"{entity_type}({_escape_entity_name(by_type[entity_type] or '')})")
    return "_".join(parts)


def _client_quotas(image: MetadataImage) -> Directory:
    return Directory({client_quota_entity_name(entity): (lambda q=quotas: _mapping(q, java_double))
                      for entity, quotas in image.client_quotas.items()})


def _scram(image: MetadataImage) -> Directory:
    return Directory({name: (lambda m=mechanism: _mapping(image.scram.get(m, {}), str))
                      for mechanism, name in SCRAM_MECHANISMS.items()})


def image_node(image: MetadataImage) -> Directory:
    return Directory({
        "provenance": lambda: _provenance(image),
        "features": lambda: _features(image),
        "cluster": lambda: _cluster(image),
        "topics": lambda: _topics(image),
        "configs": lambda: _configs(image),
        "clientQuotas": lambda: _client_quotas(image),
        "producerIds": lambda: Directory({"nextProducerId": lambda: Leaf(str(image.next_producer_id))}),
        "acls": lambda: Directory({"byId": lambda: Directory({kafka_uuid(acl_id): (lambda a=acl: Leaf(str(a)))
                                                              for acl_id, acl in image.acls.items()})}),
        "scram": lambda: _scram(image),
        "delegationToken": lambda: _mapping(image.delegation_tokens, str),
    })


# --- /local ---------------------------------------------------------------------------------

def _raft(replay) -> Directory:
    raft = replay.raft
    children = {
        "leaderId": lambda: Leaf("none" if raft.leader_id is None else str(raft.leader_id)),
        "leaderEpoch": lambda: Leaf("none" if raft.leader_epoch is None else str(raft.leader_epoch)),
        # No KRaftVersionRecord means kraft.version 0 (a static quorum).
        "kraftVersion": lambda: Leaf("0" if raft.kraft_version is None else str(raft.kraft_version)),
    }
    if raft.leader_change is not None:
        lc = raft.leader_change
        children["leaderChange"] = lambda: Leaf(jackson_json(value_json(lc)))
    voters = {}
    if raft.voters is not None:
        for voter in raft.voters.voters:
            voters[str(voter.voter_id)] = (lambda v=voter: Leaf(jackson_json(v.to_json(json_version(raft.voters)))))
    elif raft.leader_change is not None:
        for voter in raft.leader_change.voters:
            voters[str(voter.voter_id)] = (lambda v=voter: Leaf(jackson_json(v.to_json(json_version(raft.leader_change)))))
    children["voters"] = lambda: Directory(voters)
    return Directory(children)


def _local(replay) -> Directory:
    children = {
        "version": lambda: Leaf(_kafkawire_version()),
        "commitId": lambda: Leaf("unknown"),
        "lastReadOffset": lambda: Leaf(str(replay.last_offset)),
        "lastReadEpoch": lambda: Leaf(str(replay.last_epoch)),
        "sources": lambda: Leaf("\n".join(replay.sources) or "none"),
        "problems": lambda: Leaf("\n".join(map(str, replay.problems)) or "none"),
        "raft": lambda: _raft(replay),
    }
    state = replay.image.zk_migration_state
    if state is not None:
        children["zkMigrationState"] = lambda: Leaf(ZK_MIGRATION_STATES.get(state, str(state)))
    if replay.transaction is not None:
        txn = replay.transaction
        children["pendingTransaction"] = lambda: Leaf(f"{txn.name!r} begun at offset {txn.offset} in {txn.file}, "
                                                      f"{len(txn.records)} records not applied")
    return Directory(children)


def root_node(replay) -> Directory:
    """The shell's root: ``/local`` and ``/image``."""
    return Directory({"local": lambda: _local(replay), "image": lambda: image_node(replay.image)})

