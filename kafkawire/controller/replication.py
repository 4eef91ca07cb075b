"""Partition leadership when brokers come and go: ReplicationControlManager.
generateLeaderAndIsrUpdates and the lookups it needs, over the committed image.

The partitions concerned come from the state's per-broker indexes (partition_index.py), so a
broker's change costs the partitions it is in, not the cluster's. They are visited topic by
topic in the image's order and by partition id. (Kafka walks its BrokersToIsrs index, a
TimelineHashMap whose order depends on its history; the records are the same, their order
within a batch may differ.)
"""
from __future__ import annotations

from kafkawire.metadata.image import TOPIC_RESOURCE, MetadataImage
from kafkawire.metadata.registrations import LOST, MIGRATING, NO_LEADER, UNASSIGNED

from .activation import BROKER_RESOURCE, MIN_INSYNC_REPLICAS
from .frames import frame
from .node_configs import NodeConfigs
from .partition_change import build_change, change_frame, isr_removal_change, without
from .state import ControllerState
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


def _node_layers(node: NodeConfigs) -> tuple:
    """The dynamic config resources a topic config falls back to on the active controller, in
    Kafka's order (KafkaConfigSchema.resolveEffectiveTopicConfig): its own node id's BROKER
    resource, then the cluster default (the BROKER resource named "")."""
    own = () if node.node_id is None else ((BROKER_RESOURCE, str(node.node_id)),)
    return (*own, (BROKER_RESOURCE, ""))


def min_isr_default(image: MetadataImage, node: NodeConfigs) -> int:
    """min.insync.replicas for a topic that does not set it: the active controller's own dynamic
    config, then the cluster default, then ``node.static_min_isr`` (its server.properties). The same
    for every topic, so a caller over many topics looks it up once."""
    for resource in _node_layers(node):
        value = image.configs.get(resource, {}).get(MIN_INSYNC_REPLICAS)
        if value is not None:
            try:
                return int(value)
            except ValueError:          # (never written: AlterConfigs checks the value)
                return node.static_min_isr
    return node.static_min_isr


def topic_min_isr(image: MetadataImage, topic, default: int) -> int:
    """getTopicEffectiveMinIsr: the topic's min.insync.replicas, else ``default``
    (min_isr_default), at most the replication factor, which Kafka reads from partition 0 (a
    reassignment can leave partitions with different factors)."""
    value = image.configs.get((TOPIC_RESOURCE, topic.name), {}).get(MIN_INSYNC_REPLICAS)
    try:
        min_isr = int(value) if value is not None else default
    except ValueError:
        min_isr = default
    first = topic.partitions.get(0)
    replication_factor = len(first.replicas) if first is not None else 0
    return min(min_isr, replication_factor) if replication_factor > 0 else min_isr


def effective_min_isr(image: MetadataImage, topic, node: NodeConfigs) -> int:
    """getTopicEffectiveMinIsr over ConfigurationControlManager.getTopicConfig's layers."""
    return topic_min_isr(image, topic, min_isr_default(image, node))


def _is_true(value: str) -> bool:
    return value.strip().lower() == "true"


def unclean_election_default(image: MetadataImage, node: NodeConfigs) -> bool:
    """unclean.leader.election.enable for a topic that does not set it: as Kafka's controller
    resolves it, the active controller's own dynamic config (its node id's BROKER resource),
    then the cluster default, then its static server.properties. The same for every topic, so
    a caller over many partitions looks it up once."""
    for resource in _node_layers(node):
        value = image.configs.get(resource, {}).get(UNCLEAN_LEADER_ELECTION)
        if value is not None:
            return _is_true(value)
    return node.static_unclean_election


def topic_unclean_election(image: MetadataImage, topic, default: bool) -> bool:
    """The topic's own unclean.leader.election.enable, else ``default`` (unclean_election_default)."""
    value = image.configs.get((TOPIC_RESOURCE, topic.name), {}).get(UNCLEAN_LEADER_ELECTION)
    return default if value is None else _is_true(value)


def unclean_election_enabled(image: MetadataImage, topic, node: NodeConfigs) -> bool:
    """ConfigurationControlManager.uncleanLeaderElectionEnabledForTopic."""
    return topic_unclean_election(image, topic, unclean_election_default(image, node))


def leader_and_isr_updates(image: MetadataImage, *, broker_to_remove: int, broker_to_add: int, chosen,
                           node_configs: NodeConfigs, unclean_shutdown: int = NO_LEADER,
                           out: list | None = None) -> list[bytes]:
    """generateLeaderAndIsrUpdates: PartitionChangeRecords for the ``chosen`` partitions (as
    (topic, partition id, registration), from the state's PartitionIndex) with ``broker_to_remove`` taken out of the ISR, ``broker_to_add`` an
    acceptable leader even while still fenced, ``node_configs`` the controller's own config
    layers (node_configs.py), and ``unclean_shutdown`` (a broker whose new
    incarnation found it had not shut down cleanly) out of both the ISR and the ELR
    (NO_LEADER for none). The records are appended to ``out`` (given: a BoundedList stops the
    walk when full, as Kafka's does) and returned.

    Nothing is applied while the records are generated, so what does not depend on the
    partition is looked up once: each broker's acceptability and directories, the unclean
    election and min ISR defaults, each topic's configs (``chosen`` comes topic by topic). A fencing moves up
    to 100,000 leaders of a broker at 1M partitions this way (issue 28), so a partition outside a reassignment takes
    partition_change.isr_removal_change, build_change's rules for this case written out (the
    same record bytes, tests/controller/test_move_cost.py); one being reassigned, build_change."""
    mv = image.metadata_version or 0
    record_version = partition_record_version(mv)
    elr = elr_enabled(image.metadata_version, image.finalized_features)
    gone = (broker_to_remove, unclean_shutdown)
    unclean_shutdown_replicas = () if unclean_shutdown == NO_LEADER else (unclean_shutdown,)
    online_dirs = _OnlineDirectories(image)
    unclean_default = unclean_election_default(image, node_configs)
    min_isr_fallback = min_isr_default(image, node_configs)
    # Each broker's acceptability, once per call: any other id is neither registered nor
    # broker_to_add, so not acceptable (the lookup's None).
    acceptable_by_broker = {b: b not in gone and (b == broker_to_add or is_active(image, b))
                            for b in (*image.brokers, broker_to_add)}
    acceptable = acceptable_by_broker.get

    def acceptor(partition):
        """leader_acceptor(image, partition, acceptable), with the lookups above."""
        return lambda r: acceptable(r) and online_dirs.has_online_dir(r, partition)

    out = [] if out is None else out
    has_online_dir_of = online_dirs.has_online_dir
    last_topic = min_isr = unclean = None
    for topic, pid, partition in chosen:
        if topic is not last_topic:
            last_topic = topic
            min_isr = topic_min_isr(image, topic, min_isr_fallback)
            unclean = topic_unclean_election(image, topic, unclean_default)
        target_isr = without(partition.isr, gone)         # (a comprehension: a function made per partition)
        if partition.removing_replicas or partition.adding_replicas:
            change = build_change(partition, target_isr=target_isr, acceptable_leader=acceptor(partition),
                                  min_isr=min_isr, elr_enabled=elr, unclean=unclean, metadata_version=mv,
                                  unclean_shutdown_replicas=unclean_shutdown_replicas)
        else:       # the same record, written out for the common case (partition_change.py)
            change = isr_removal_change(partition, target_isr, acceptable, has_online_dir_of, min_isr, elr, unclean,
                                        mv, unclean_shutdown_replicas)
        if change is not None:
            out.append(change_frame(topic.id, pid, change, record_version))
    return out


class _OnlineDirectories:
    """has_online_dir(image, broker, replica_directory(partition, broker)) over the directory ids
    as PartitionRegistration keeps them (ints), each broker's directories made a set of ints
    once: no UUID made or compared per partition."""

    def __init__(self, image: MetadataImage):
        self.image = image
        self._by_broker: dict[int, frozenset | None] = {}      # None: not registered

    def _directories(self, broker_id: int) -> frozenset | None:
        try:
            return self._by_broker[broker_id]
        except KeyError:
            broker = self.image.brokers.get(broker_id)
            known = None if broker is None else frozenset(d.int for d in broker.directories)
            self._by_broker[broker_id] = known
            return known

    def has_online_dir(self, broker_id: int, partition) -> bool:
        directories = self._directories(broker_id)
        if directories is None:
            return False
        replicas, directory_ids = partition.replicas, partition.directory_ids
        directory = _UNASSIGNED_INT
        if broker_id in replicas:
            at = replicas.index(broker_id)
            if at < len(directory_ids):
                directory = directory_ids[at]
        if directory == _UNASSIGNED_INT or directory == _MIGRATING_INT:
            return True
        if directory == _LOST_INT:
            return False
        return not directories or directory in directories


_UNASSIGNED_INT, _MIGRATING_INT, _LOST_INT = UNASSIGNED.int, MIGRATING.int, LOST.int


def updates_removing(state: ControllerState, broker_id: int) -> list[bytes]:
    """Every partition with ``broker_id`` in its ISR loses it (fencing, controlled shutdown)."""
    image = state.image
    return leader_and_isr_updates(image, broker_to_remove=broker_id, broker_to_add=NO_LEADER,
                                  chosen=state.partition_index.with_broker_in_isr(image, broker_id),
                                  node_configs=state.node_configs)


def unclean_shutdown_pass(image: MetadataImage, clean: bool) -> bool:
    """handleBrokerShutdown's choice: with ELR on and an unclean shutdown the broker leaves every
    ISR and ELR (handleBrokerUncleanShutdown); otherwise it leaves the ISRs as if fenced."""
    return elr_enabled(image.metadata_version, image.finalized_features) and not clean


def updates_for_shutdown(state: ControllerState, broker_id: int, clean: bool) -> list[bytes]:
    """handleBrokerShutdown, for a broker registering a new incarnation (unclean_shutdown_pass)."""
    image, index = state.image, state.partition_index
    if unclean_shutdown_pass(image, clean):
        return (leader_and_isr_updates(image, broker_to_remove=NO_LEADER, broker_to_add=NO_LEADER,
                                       chosen=index.with_broker_in_isr(image, broker_id),
                                       node_configs=state.node_configs,
                                       unclean_shutdown=broker_id)
                + leader_and_isr_updates(image, broker_to_remove=NO_LEADER, broker_to_add=NO_LEADER,
                                         chosen=index.with_broker_in_elr(image, broker_id),
                                         node_configs=state.node_configs,
                                       unclean_shutdown=broker_id))
    return updates_removing(state, broker_id)


def updates_adding(state: ControllerState, broker_id: int) -> list[bytes]:
    """Partitions without a leader try an election with ``broker_id`` now acceptable (unfencing)."""
    image = state.image
    return leader_and_isr_updates(image, broker_to_remove=NO_LEADER, broker_to_add=broker_id,
                                  chosen=state.partition_index.without_leader(image),
                                  node_configs=state.node_configs)
