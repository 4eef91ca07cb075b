"""Partition leadership when brokers come and go: ReplicationControlManager.
generateLeaderAndIsrUpdates and the lookups it needs, over the committed image.

Partitions are visited topic by topic in the image's order and by partition id. (Kafka walks
its BrokersToIsrs index, a TimelineHashMap whose order depends on its history; the records are
the same, their order within a batch may differ.)
"""
from __future__ import annotations

from kafkawire.metadata.image import TOPIC_RESOURCE, MetadataImage
from kafkawire.metadata.registrations import LOST, MIGRATING, NO_LEADER, UNASSIGNED

from .activation import BROKER_RESOURCE, MIN_INSYNC_REPLICAS
from .frames import frame
from .java_order import uuid_tree_order
from .partition_change import build_change, change_record
from .versions import elr_enabled, partition_record_version

UNCLEAN_LEADER_ELECTION = "unclean.leader.election.enable"


def is_active(image: MetadataImage, broker_id: int) -> bool:
    """ClusterControlManager.isActive: registered, unfenced and not shutting down."""
    broker = image.brokers.get(broker_id)
    return broker is not None and not broker.fenced and not broker.in_controlled_shutdown


def has_online_dir(image: MetadataImage, broker_id: int, directory) -> bool:
    """ClusterControlManager.hasOnlineDir (DirectoryId.isOnline): unassigned or migrating
    replicas count as online, a lost one does not, a broker that listed no directories has
    them all online."""
    broker = image.brokers.get(broker_id)
    if broker is None:
        return False
    if directory in (UNASSIGNED, MIGRATING):
        return True
    if directory == LOST:
        return False
    return not broker.directories or directory in broker.directories


def replica_directory(partition, broker_id: int):
    """PartitionRegistration.directory: the replica's directory, UNASSIGNED for a non-replica."""
    for replica, directory in zip(partition.replicas, partition.directories):
        if replica == broker_id:
            return directory
    return UNASSIGNED


def leader_acceptor(image: MetadataImage, partition, is_acceptable):
    """ReplicationControlManager.LeaderAcceptor: ``is_acceptable`` and the replica's directory online."""
    return lambda r: is_acceptable(r) and has_online_dir(image, r, replica_directory(partition, r))


def _config(image: MetadataImage, topic_name: str, key: str) -> str | None:
    """A topic config, else the cluster-level default (the BROKER resource named "")."""
    for resource in ((TOPIC_RESOURCE, topic_name), (BROKER_RESOURCE, "")):
        value = image.configs.get(resource, {}).get(key)
        if value is not None:
            return value
    return None


def effective_min_isr(image: MetadataImage, topic, static_min_isr: int) -> int:
    """getTopicEffectiveMinIsr: min.insync.replicas, at most the replication factor."""
    value = _config(image, topic.name, MIN_INSYNC_REPLICAS)
    try:
        min_isr = int(value) if value is not None else static_min_isr
    except ValueError:
        min_isr = static_min_isr
    replication_factor = min((len(p.replicas) for p in topic.partitions.values()), default=min_isr)
    return min(min_isr, replication_factor) if replication_factor > 0 else min_isr


def unclean_election_enabled(image: MetadataImage, topic) -> bool:
    value = _config(image, topic.name, UNCLEAN_LEADER_ELECTION)
    return value is not None and value.strip().lower() == "true"


def partitions(image: MetadataImage, wanted):
    """(topic, partition id, registration) for each partition where ``wanted(registration)``."""
    for topic_id in uuid_tree_order(image.topics_by_id):
        topic = image.topics_by_id[topic_id]
        for pid in sorted(topic.partitions):
            if wanted(topic.partitions[pid]):
                yield topic, pid, topic.partitions[pid]


def has_leaderships(image: MetadataImage, broker_id: int) -> bool:
    return any(True for _ in partitions(image, lambda p: p.leader == broker_id))


def leader_and_isr_updates(image: MetadataImage, *, broker_to_remove: int, broker_to_add: int, chosen,
                           static_min_isr: int, unclean_shutdown: int = NO_LEADER) -> list[bytes]:
    """generateLeaderAndIsrUpdates: PartitionChangeRecords for the ``chosen`` partitions (from
    ``partitions``) with ``broker_to_remove`` taken out of the ISR, ``broker_to_add`` an
    acceptable leader even while still fenced, and ``unclean_shutdown`` (a broker whose new
    incarnation found it had not shut down cleanly) out of both the ISR and the ELR
    (NO_LEADER for none)."""
    mv = image.metadata_version or 0
    elr = elr_enabled(image.metadata_version, image.finalized_features)
    gone = (broker_to_remove, unclean_shutdown)

    def acceptable(replica: int) -> bool:
        return replica not in gone and (replica == broker_to_add or is_active(image, replica))

    out = []
    for topic, pid, partition in chosen:
        change = build_change(partition, target_isr=[r for r in partition.isr if r not in gone],
                              acceptable_leader=leader_acceptor(image, partition, acceptable),
                              min_isr=effective_min_isr(image, topic, static_min_isr),
                              elr_enabled=elr, unclean=unclean_election_enabled(image, topic), metadata_version=mv,
                              unclean_shutdown_replicas=() if unclean_shutdown == NO_LEADER else (unclean_shutdown,))
        if change is not None:
            out.append(change_record(topic.id, pid, change, mv))
    return out


def updates_removing(image: MetadataImage, broker_id: int, static_min_isr: int) -> list[bytes]:
    """Every partition with ``broker_id`` in its ISR loses it (fencing, controlled shutdown)."""
    return leader_and_isr_updates(image, broker_to_remove=broker_id, broker_to_add=NO_LEADER,
                                  chosen=list(partitions(image, lambda p: broker_id in p.isr)),
                                  static_min_isr=static_min_isr)


def updates_for_shutdown(image: MetadataImage, broker_id: int, clean: bool, static_min_isr: int) -> list[bytes]:
    """handleBrokerShutdown, for a broker registering a new incarnation: with ELR on and an
    unclean shutdown it leaves every ISR and ELR; otherwise it leaves the ISRs as if fenced."""
    if elr_enabled(image.metadata_version, image.finalized_features) and not clean:
        return (leader_and_isr_updates(image, broker_to_remove=NO_LEADER, broker_to_add=NO_LEADER,
                                       chosen=list(partitions(image, lambda p: broker_id in p.isr)),
                                       static_min_isr=static_min_isr, unclean_shutdown=broker_id)
                + leader_and_isr_updates(image, broker_to_remove=NO_LEADER, broker_to_add=NO_LEADER,
                                         chosen=list(partitions(image, lambda p: broker_id in p.elr)),
                                         static_min_isr=static_min_isr, unclean_shutdown=broker_id))
    return updates_removing(image, broker_id, static_min_isr)


def updates_adding(image: MetadataImage, broker_id: int, static_min_isr: int) -> list[bytes]:
    """Partitions without a leader try an election with ``broker_id`` now acceptable (unfencing)."""
    return leader_and_isr_updates(image, broker_to_remove=NO_LEADER, broker_to_add=broker_id,
                                  chosen=list(partitions(image, lambda p: p.leader == NO_LEADER)),
                                  static_min_isr=static_min_isr)
