"""Controller and broker registrations and broker heartbeats: the record-generating half of
Kafka's ClusterControlManager and ReplicationControlManager.processBrokerHeartbeat.

Each function reads the committed state and returns the records to append (and the answer);
it raises ApiError with Kafka's error and message for a request Kafka refuses.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass

from kafkawire.metadata.kafka_names import SECURITY_PROTOCOLS
from kafkawire.metadata.registrations import kafka_uuid
from kafkawire.protocol.error_codes import Errors

from .errors import ApiError
from .fencing import REMOVE, UNCLEAN_SHUTDOWN, PartitionMoves
from .unfencing import offline_replica_updates
from .frames import frame, struct
from .heartbeats import BrokerHeartbeatManager, BrokerState, current_state
from .java_order import copied_capacity, grown_capacity, string_hashmap_order
from .replication import (is_active, unclean_shutdown_pass, updates_adding,
                          updates_for_shutdown, updates_removing)
from .snapshot import JDK
from .state import ControllerState
from .versions import (KRAFT_VERSION, METADATA_VERSION, controller_registration_supported,
                       cordoned_log_dirs_supported, directory_assignment_supported, migration_supported,
                       register_broker_record_version)

log = logging.getLogger(__name__)
FENCE, UNFENCE = 1, -1                  # BrokerRegistrationFencingChange
IN_CONTROLLED_SHUTDOWN = 1              # BrokerRegistrationInControlledShutdownChange


def _reserved(directory) -> bool:
    """DirectoryId.reserved: the first 100 ids with a zero high half."""
    return directory.int >> 64 == 0 and (directory.int & 0xFFFFFFFFFFFFFFFF) < 100


def checked_listeners(listeners, endpoint_struct) -> list:
    """ListenerInfo.fromControllerRegistrationRequest / fromBrokerRegistrationRequest: every
    listener's security protocol must be one Kafka knows, and a repeated listener name replaces
    the earlier one in its place (a LinkedHashMap keyed by name).

    Kafka throws a plain RuntimeException here, which its controller answers as
    UNKNOWN_SERVER_ERROR and treats as a fault that fails the controller over. We answer the same
    error with the same text but do not fail over: a request anyone can send must not move
    leadership. What matters most is that no record is written that replay would refuse."""
    by_name: dict[str, object] = {}
    for listener in listeners:
        if listener.security_protocol not in SECURITY_PROTOCOLS:
            raise ApiError(Errors.UNKNOWN_SERVER_ERROR,
                           f"java.lang.RuntimeException: Unknown security protocol {listener.security_protocol} "
                           f"in listener {listener.name}")
        by_name[listener.name] = endpoint_struct(name=listener.name, host=listener.host, port=listener.port,
                                                 security_protocol=listener.security_protocol)
    return list(by_name.values())


def controller_registration_records(state: ControllerState, request) -> list[bytes]:
    """ClusterControlManager.registerController."""
    if not controller_registration_supported(state.metadata_version or 0):
        raise ApiError(Errors.UNSUPPORTED_VERSION, "The current MetadataVersion is too old to support "
                                                   "controller registrations.")
    Endpoint = struct("RegisterControllerRecord", "ControllerEndpoint")
    Feature = struct("RegisterControllerRecord", "ControllerFeature")
    return [frame("RegisterControllerRecord", 0, controller_id=request.controller_id,
                  incarnation_id=request.incarnation_id, zk_migration_ready=False,
                  end_points=checked_listeners(request.listeners, Endpoint),
                  features=[Feature(name=f.name, min_supported_version=f.min_supported_version,
                                    max_supported_version=f.max_supported_version) for f in request.features])]


def _checked_feature(finalized: dict[str, int], name: str, low: int, high: int) -> None:
    """processRegistrationFeature: the finalized level (0 for a feature not finalized) must be
    in the broker's range."""
    level = finalized.get(name, 0)
    if not low <= level <= high:
        raise ApiError(Errors.UNSUPPORTED_VERSION,
                       f"Unable to register because the broker does not support finalized version {level} of "
                       f"{name}. The broker wants a version between {low} and {high}, inclusive.")


def _features_to_check(state: ControllerState, kraft_version: int) -> dict[str, int]:
    """QuorumController.registerBroker's map: FeatureControlManager.finalizedFeatures
    (metadata.version put first into a default HashMap, then the others; it never holds
    kraft.version), copied, with the raft client's kraft.version put last."""
    finalized = state.finalized_features()
    finalized.pop(KRAFT_VERSION, None)
    names = sorted(finalized, key=lambda n: n != METADATA_VERSION)       # stable: metadata.version first
    first = string_hashmap_order(names, grown_capacity(len(names)))
    levels = {name: finalized[name] for name in first}
    levels[KRAFT_VERSION] = kraft_version
    return levels


def _unverified_order(levels: dict[str, int]) -> list[str]:
    """The iteration order of registerBroker's unverifiedFeatures: the map above copied into
    QuorumController's map (kraft.version put into it last), that copied again; each copy
    sized as Java 21 sizes one."""
    names = list(levels)
    quorum_map = grown_capacity(len(names), copied_capacity(len(names) - 1, JDK))
    return string_hashmap_order(string_hashmap_order(names, quorum_map), copied_capacity(len(names), JDK))


def _checked_features(state: ControllerState, request, kraft_version: int) -> list:
    """registerBroker's feature checks, in Kafka's order: each feature the broker names, in
    request order; then a metadata.version range present; then each finalized feature (the
    quorum's kraft.version among them) the broker does not name must be at level 0 (a broker
    that names none supports only 0), in the order of Kafka's HashMap."""
    finalized = _features_to_check(state, kraft_version)
    Feature = struct("RegisterBrokerRecord", "BrokerFeature")
    features = []
    for f in request.features:
        _checked_feature(finalized, f.name, f.min_supported_version, f.max_supported_version)
        features.append(Feature(name=f.name, min_supported_version=f.min_supported_version,
                                max_supported_version=f.max_supported_version))
    named = {f.name for f in request.features}
    if METADATA_VERSION not in named:
        raise ApiError(Errors.INVALID_REGISTRATION, f"Request features do not contain '{METADATA_VERSION}'")
    for name in _unverified_order(finalized):
        if finalized[name] != 0 and name not in named:
            _checked_feature(finalized, name, 0, 0)
    return features


def _checked_log_dirs(image, request) -> list:
    log_dirs = list(getattr(request, "log_dirs", None) or [])
    if not log_dirs:
        raise ApiError(Errors.INVALID_REGISTRATION, "No directories specified in request")
    if any(_reserved(d) for d in log_dirs):
        raise ApiError(Errors.INVALID_REGISTRATION, "Reserved directory ID in request")
    if len(set(log_dirs)) != len(log_dirs):
        raise ApiError(Errors.INVALID_REGISTRATION, "Duplicate directory ID in request")
    for other in image.brokers.values():
        if other.id != request.broker_id:
            for directory in log_dirs:
                if directory in other.directories:
                    raise ApiError(Errors.INVALID_REGISTRATION, f"Broker {other.id} is already registered "
                                                                f"with directory {kafka_uuid(directory)}")
    return log_dirs


def broker_registration_records(state: ControllerState, request, *, cluster_id: str, broker_epoch: int,
                                sessions: BrokerHeartbeatManager, now_ms: int, kraft_version: int,
                                request_version: int = 0,
                                moves: PartitionMoves | None = None) -> tuple[list[bytes], int]:
    """ClusterControlManager.registerBroker: the records and the broker epoch. A new incarnation
    first leaves the ISRs (and, after an unclean shutdown with ELR on, the ELRs) its previous
    one was in (handleBrokerShutdown; a shutdown is clean when the request, v3 and later, names
    the epoch the controller has), then registers fenced with ``broker_epoch``, the offset the
    batch starts at (nextWriteOffset: the RegisterBrokerRecord's own offset when nothing
    precedes it); the same incarnation again amends its registration, keeping
    its epoch, fencing and controlled shutdown. ``kraft_version`` is the raft client's, checked
    against the broker's range as a finalized feature. With ``moves`` (the active controller's),
    a fenced previous incarnation in more ISRs (and ELRs) than one event moves leaves them first,
    in bounded events (fencing.py): then, having checked the request, this writes nothing and
    returns ([], the future of that job's end), and the registration's own event comes after it."""
    if request.cluster_id != cluster_id:
        raise ApiError(Errors.INCONSISTENT_CLUSTER_ID,
                       f"Expected cluster ID {cluster_id}, but got cluster ID {request.cluster_id}")
    image = state.image
    mv = image.metadata_version or 0
    existing = image.brokers.get(request.broker_id)
    if (existing is not None and existing.incarnation_id != request.incarnation_id
            and sessions.has_valid_session(request.broker_id, existing.fenced, now_ms)):
        raise ApiError(Errors.DUPLICATE_BROKER_REGISTRATION,
                       "Another broker is registered with that broker id. If the broker was recently restarted "
                       "this should self-resolve once the heartbeat manager expires the broker's session.")
    if getattr(request, "is_migrating_zk_broker", False):
        raise ApiError(Errors.BROKER_ID_NOT_REGISTERED, "Controller does not support registering ZK brokers.")
    log_dirs = _checked_log_dirs(image, request) if directory_assignment_supported(mv) else None

    Endpoint = struct("RegisterBrokerRecord", "BrokerEndpoint")
    end_points = checked_listeners(request.listeners, Endpoint)
    features = _checked_features(state, request, kraft_version)
    fields = dict(broker_id=request.broker_id, incarnation_id=request.incarnation_id, end_points=end_points,
                  features=features, rack=request.rack)
    if migration_supported(mv):
        fields["is_migrating_zk_broker"] = False
    if log_dirs is not None:
        fields["log_dirs"] = log_dirs
    records: list[bytes] = []
    if existing is None or existing.incarnation_id != request.incarnation_id:
        stored_epoch = existing.epoch if existing is not None else -2
        clean = request_version >= 3 and stored_epoch == getattr(request, "previous_broker_epoch", -1)
        if existing is not None:
            kind = UNCLEAN_SHUTDOWN if unclean_shutdown_pass(image, clean) else REMOVE
            if moves is not None and existing.fenced and moves.needs_job(state, request.broker_id, kind):
                moves.start(state, request.broker_id, kind)
                return [], moves.waiter(request.broker_id)
            records = updates_for_shutdown(state, request.broker_id, clean)
        fields.update(broker_epoch=broker_epoch, fenced=True)     # the batch's first offset, as in Kafka
    else:
        fields.update(broker_epoch=existing.epoch, fenced=existing.fenced,
                      in_controlled_shutdown=existing.in_controlled_shutdown)
    records.append(frame("RegisterBrokerRecord", register_broker_record_version(mv), **fields))
    return records, fields["broker_epoch"]


def fence_records(state: ControllerState, broker_id: int,
                  moves: PartitionMoves | None = None) -> list[bytes]:
    """handleBrokerFenced: partitions lose the broker first, then the fence record; with
    ``moves`` (the active controller's), for a broker in more ISRs than one event moves, the
    fence record alone, the partitions in later events (fencing.py)."""
    broker = state.image.brokers[broker_id]
    fence = frame("BrokerRegistrationChangeRecord", 0, broker_id=broker_id, broker_epoch=broker.epoch, fenced=FENCE)
    if moves is not None and moves.needs_job(state, broker_id):
        moves.start(state, broker_id)
        return [fence]
    return updates_removing(state, broker_id) + [fence]


def unfence_records(state: ControllerState, broker_id: int, broker_epoch: int,
                    moves: PartitionMoves | None = None) -> list[bytes]:
    """handleBrokerUnfenced: the unfence record, then leaders for partitions that have none; with
    ``moves`` (the active controller's), when more partitions have none than one event visits,
    the unfence record alone and the elections in later events (unfencing.py)."""
    records = [frame("BrokerRegistrationChangeRecord", 0, broker_id=broker_id, broker_epoch=broker_epoch,
                     fenced=UNFENCE)]
    if moves is not None and moves.needs_sweep(state):
        moves.start_sweep(state)
        return records
    return records + updates_adding(state, broker_id)


def controlled_shutdown_records(state: ControllerState, broker_id: int, broker_epoch: int,
                                moves: PartitionMoves | None = None) -> list[bytes]:
    """handleBrokerInControlledShutdown: mark it (once), then move its partitions away (with
    ``moves``, in later events when they are more than one event moves: fencing.py)."""
    records = []
    if not state.image.brokers[broker_id].in_controlled_shutdown:
        records.append(frame("BrokerRegistrationChangeRecord", 1, broker_id=broker_id, broker_epoch=broker_epoch,
                             in_controlled_shutdown=IN_CONTROLLED_SHUTDOWN))
    if moves is not None and moves.needs_job(state, broker_id):
        moves.start(state, broker_id)
        return records
    return records + updates_removing(state, broker_id)


def cordoned_dirs_records(broker, broker_epoch: int, cordoned) -> list[bytes]:
    """handleDirectoriesCordoned (metadata.version 4.3-IV0 on): a BrokerRegistrationChangeRecord v3
    when the heartbeat's CordonedLogDirs (null until the broker has caught up: ignored) is not the
    set the registration holds (BrokerRegistration.cordonedDirChanged: always, while that is null)."""
    if cordoned is None:
        return []
    known = broker.cordoned_directories
    if known is not None and set(known) == set(cordoned):
        return []
    return [frame("BrokerRegistrationChangeRecord", 3, broker_id=broker.id, broker_epoch=broker_epoch,
                  cordoned_log_dirs=list(cordoned))]


def _broker_isrs_and_elrs(state: ControllerState, broker_id: int) -> list:
    """The partitions whose ISR or ELR holds the broker, once each, as (topic, id, registration)."""
    image, chosen = state.image, {}
    for found in (state.partition_index.walk_isr(image, broker_id), state.partition_index.walk_elr(image, broker_id)):
        for topic, pid, partition in found:
            chosen.setdefault((topic.id, pid), (topic, pid, partition))
    return list(chosen.values())


def offline_dirs_records(state: ControllerState, broker, broker_epoch: int, offline,
                         moves: PartitionMoves | None = None) -> list[bytes]:
    """handleDirectoriesOffline (metadata.version 3.7-IV2 on): for each of the heartbeat's
    OfflineLogDirs the registration still lists, the broker's replicas assigned to it leave the
    ISR and leadership (generateLeaderAndIsrUpdates, as for a fenced broker, over those
    partitions only), then a BrokerRegistrationChangeRecord v2 lists the directories left online.
    With ``moves`` (the active controller's): for a broker in more ISRs and ELRs than one event
    visits, the registration change alone and the partitions in later events; and directories
    reported offline that the registration no longer lists have their partitions checked once
    by this controller, as what a previous one's job left (unfencing.py)."""
    offline = list(offline or ())
    newly_offline = [d for d in broker.directories if d in offline]
    if not newly_offline:
        if moves is not None and offline and broker.id not in moves.dirs_checked:
            return _recheck_offline_dirs(state, broker, offline, moves)
        return []
    gone = set(newly_offline)
    online = [d for d in broker.directories if d not in gone]
    change = frame("BrokerRegistrationChangeRecord", 2, broker_id=broker.id, broker_epoch=broker_epoch, log_dirs=online)
    if moves is not None and moves.needs_dir_job(state, broker.id):
        moves.start_dir_job(state, broker.id, gone)
        records = [change]
    else:
        records = offline_replica_updates(state, broker.id, gone, _broker_isrs_and_elrs(state, broker.id)) + [change]
        if moves is not None:
            moves.dirs_checked.add(broker.id)
    log.warning("Directories %s in broker %d marked offline, remaining directories: %s",
                [kafka_uuid(d) for d in newly_offline], broker.id, [kafka_uuid(d) for d in online])
    return records


def _recheck_offline_dirs(state: ControllerState, broker, offline,
                          moves: PartitionMoves) -> list[bytes]:
    """The broker's replicas in ``offline`` directories its registration no longer lists that
    are still in an ISR or ELR (a previous active controller's directory job cut short): in this
    event when they are one event's worth, else in steps."""
    gone = set(offline) - set(broker.directories)
    if moves.needs_dir_job(state, broker.id):
        moves.start_dir_job(state, broker.id, gone)
        return []
    moves.dirs_checked.add(broker.id)
    return offline_replica_updates(state, broker.id, gone, _broker_isrs_and_elrs(state, broker.id))


def has_uncordoned_dirs(broker) -> bool:
    """BrokerRegistration.hasUncordonedDirs: a broker whose every directory is cordoned gets no new replicas."""
    if not broker.directories or broker.cordoned_directories is None:
        return True
    return bool(set(broker.directories) - set(broker.cordoned_directories))


@dataclass(frozen=True)
class HeartbeatReply:
    is_caught_up: bool
    is_fenced: bool
    in_controlled_shutdown: bool
    should_shut_down: bool


def heartbeat(state: ControllerState, request, *, sessions: BrokerHeartbeatManager, now_ms: int,
              moves: PartitionMoves | None = None) -> tuple[list[bytes], HeartbeatReply]:
    """QuorumController.processBrokerHeartbeat + ReplicationControlManager.processBrokerHeartbeat.
    ``moves``: the active controller's partition moves (fencing.py); a fenced broker whose
    partitions are still being moved stays fenced until they are, as in Kafka, where the
    unfencing heartbeat comes after the whole fencing event."""
    broker_id = request.broker_id
    register_offset = state.register_broker_offsets.get(broker_id)
    if register_offset is None:
        raise ApiError(Errors.STALE_BROKER_EPOCH, f"Receive a heartbeat from broker {broker_id} before registration")
    broker = state.image.brokers.get(broker_id)
    if broker is None:
        raise ApiError(Errors.STALE_BROKER_EPOCH, f"No broker registration found for broker id {broker_id}")
    if broker.epoch != request.broker_epoch:
        raise ApiError(Errors.STALE_BROKER_EPOCH, f"Expected broker epoch {broker.epoch}, but got broker epoch "
                                                  f"{request.broker_epoch}")
    image = state.image
    current = current_state(broker)
    # Both asked only by the states that need them (Kafka's Supplier): the first is an index
    # lookup, the second a pass over the brokers, and neither touches a partition.
    next_state = sessions.next_state(
        broker_id, current, want_fence=request.want_fence or (current is BrokerState.FENCED and moves is not None
                                                           and moves.in_progress(broker_id)),
        want_shut_down=request.want_shut_down,
        metadata_offset=request.current_metadata_offset, register_offset=register_offset,
        has_leaderships=lambda: state.partition_index.has_leaderships(broker_id),
        lowest_active_offset=lambda: sessions.lowest_active_offset(
            b for b in image.brokers if b != broker_id and is_active(image, b)))
    records: list[bytes] = []
    if next_state is not current:
        if next_state in (BrokerState.FENCED, BrokerState.SHUTDOWN_NOW):
            records = fence_records(state, broker_id, moves)
        elif next_state is BrokerState.UNFENCED:
            records = unfence_records(state, broker_id, broker.epoch, moves)
        elif next_state is BrokerState.CONTROLLED_SHUTDOWN:
            records = controlled_shutdown_records(state, broker_id, broker.epoch, moves)
    sessions.touch(broker_id, now_ms, request.current_metadata_offset)
    if directory_assignment_supported(image.metadata_version or 0):
        records = records + offline_dirs_records(state, broker, broker.epoch, getattr(request, "offline_log_dirs", None),
                                                 moves)
    if cordoned_log_dirs_supported(image.metadata_version or 0):
        records = records + cordoned_dirs_records(broker, broker.epoch, getattr(request, "cordoned_log_dirs", None))
    reply = HeartbeatReply(is_caught_up=request.current_metadata_offset >= register_offset,
                           is_fenced=next_state.fenced, in_controlled_shutdown=next_state.in_controlled_shutdown,
                           should_shut_down=next_state.should_shut_down)
    return records, reply
