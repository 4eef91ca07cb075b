"""The value objects of Kafka's metadata image and the text their ``toString`` gives, which is
what kafka-metadata-shell's ``cat`` prints: PartitionRegistration (with ``merge`` of a
PartitionChangeRecord, as Kafka applies it), BrokerRegistration, ControllerRegistration,
StandardAcl, SCRAM credentials and delegation tokens.

Sources: metadata/src/main/java/org/apache/kafka/metadata/{PartitionRegistration,
BrokerRegistration, ControllerRegistration, VersionRange}.java, clients Endpoint and
DirectoryId, metadata authorizer StandardAcl (apache/kafka, 3.7-4.x).
"""
from __future__ import annotations

import uuid
from dataclasses import dataclass, replace

from kafkawire._native import records as _native_records
from kafkawire.protocol.message import uuid_to_kafka_string

from .java_text import java_list, java_optional
from .kafka_names import (ACL_OPERATIONS, ACL_PERMISSION_TYPES, LEADER_RECOVERY_STATES, PATTERN_TYPES,
                          RESOURCE_TYPES, SECURITY_PROTOCOLS)

__all__ = ["ImageError", "PartitionRegistration", "BrokerRegistration", "ControllerRegistration", "Endpoint",
           "StandardAcl", "ScramCredential", "DelegationToken", "kafka_uuid", "uuid_sort_key",
           "MIGRATING", "UNASSIGNED", "LOST", "NO_LEADER", "NO_LEADER_CHANGE"]

# DirectoryId's reserved ids.
MIGRATING = uuid.UUID(int=0)
UNASSIGNED = uuid.UUID(int=1)
LOST = uuid.UUID(int=2)
# LeaderConstants
NO_LEADER = -1
NO_LEADER_CHANGE = -2
# LeaderRecoveryState.NO_CHANGE
NO_RECOVERY_STATE_CHANGE = -1


class ImageError(ValueError):
    """A record the image cannot apply (Kafka's replay would throw), saying which rule it broke."""


def kafka_uuid(value: uuid.UUID) -> str:
    """Kafka's ``Uuid.toString``."""
    return uuid_to_kafka_string(value)


def uuid_sort_key(value: uuid.UUID) -> tuple[int, int]:
    """``Uuid.compareTo``: most, then least significant 64 bits, compared as signed longs."""
    msb, lsb = value.int >> 64, value.int & ((1 << 64) - 1)
    return (msb - (1 << 64) if msb >> 63 else msb, lsb - (1 << 64) if lsb >> 63 else lsb)


def _uuids(values) -> str:
    return java_list(kafka_uuid(v) for v in values)


# --- partitions -----------------------------------------------------------------------------

# A partition keeps its replicas' directory ids as ints, not UUIDs. A full (generation 2) garbage
# collection walks every object CPython tracks: a UUID is one (an instance of a Python class), so
# is a tuple holding one, while a tuple of ints is untracked once a collection has seen it. With
# three UUIDs and their tuple per partition the controller's image was five tracked objects a
# partition, and a full collection at a million partitions took 2.9-4.0 s on the loaded
# machine, longer than the quorum's fetch timeout (issue 28); as ints it is one, the
# registration. ``directories`` gives the UUIDs back, shared through a table by int: each
# broker's few directory ids are then one UUID each, not one per partition. The table is
# emptied when full, which bounds its memory; a UUID made again is equal to the one dropped.
_SHARED_UUIDS_LIMIT = 1 << 16
_uuid_by_int: dict[int, uuid.UUID] = {}


def _shared_uuid(value: int) -> uuid.UUID:
    shared = _uuid_by_int.get(value)
    if shared is None:
        if len(_uuid_by_int) >= _SHARED_UUIDS_LIMIT:
            _uuid_by_int.clear()
        shared = _uuid_by_int[value] = uuid.UUID(int=value)
    return shared


def _shared_if_equal(values: tuple, other: tuple) -> tuple:
    """``other`` if it holds the same as ``values`` (an ISR that is all the replicas, as most
    are, is then one tuple less to keep and for a collection to visit)."""
    return other if values == other else values


# A registration refers to ints and tuples of ints only, so it is in no reference cycle, and the
# C extension untracks each one made (untrack_acyclic checks that it is so): the garbage
# collector then never walks the image's registrations, which at 1M partitions were nearly all
# a full collection walked, 100k-400k made by a fence (issue 28, benchmarks/README.md "Paced
# full collections"). Without the extension they stay tracked (kafkawire.raft.node.gc_pauses
# keeps the collections' walks short all the same).
_untrack = getattr(_native_records, "untrack_acyclic", None)


def directory_ints(directories) -> tuple:
    """Directory ids (UUIDs) as PartitionRegistration keeps them; each int is the shared UUID's
    own, so that partitions on the same directory share it too."""
    return tuple([_shared_uuid(d.int).int for d in directories])


@dataclass(frozen=True, slots=True)
class PartitionRegistration:
    """Kafka's PartitionRegistration. ``directory_ids`` are the replicas' directories as ints
    (``directories``: as UUIDs), so that no field holds an object the garbage collector tracks
    (see above); every field is an int or a tuple of ints."""
    replicas: tuple
    directory_ids: tuple
    isr: tuple
    removing_replicas: tuple
    adding_replicas: tuple
    leader: int
    leader_recovery_state: int
    leader_epoch: int
    partition_epoch: int
    elr: tuple = ()
    last_known_elr: tuple = ()

    def __post_init__(self) -> None:
        if _untrack is not None:
            _untrack(self)

    @classmethod
    def from_record(cls, record) -> PartitionRegistration:
        """``new PartitionRegistration(PartitionRecord)``."""
        replicas = tuple(record.replicas)
        directories = tuple(getattr(record, "directories", None) or ())
        if directories and len(directories) != len(replicas):
            raise ImageError(f"PartitionRecord for partition {record.partition_id} has {len(replicas)} replicas "
                             f"but {len(directories)} directories (InvalidReplicaDirectoriesException)")
        if record.leader_recovery_state not in LEADER_RECOVERY_STATES:
            raise ImageError(f"unknown leader recovery state {record.leader_recovery_state}")
        return cls(replicas=replicas, directory_ids=directory_ints(directories or (MIGRATING,) * len(replicas)),
                   isr=_shared_if_equal(tuple(record.isr), replicas), removing_replicas=tuple(record.removing_replicas),
                   adding_replicas=tuple(record.adding_replicas), leader=record.leader,
                   leader_recovery_state=record.leader_recovery_state, leader_epoch=record.leader_epoch,
                   partition_epoch=record.partition_epoch,
                   elr=tuple(getattr(record, "eligible_leader_replicas", None) or ()),
                   last_known_elr=tuple(getattr(record, "last_known_elr", None) or ()))

    @property
    def directories(self) -> tuple:
        """The replicas' directory ids, as UUIDs."""
        shared = tuple(map(_uuid_by_int.get, self.directory_ids))     # no Python call per id (snapshots)
        return shared if all(shared) else tuple([_shared_uuid(d) for d in self.directory_ids])

    def merge(self, record) -> PartitionRegistration:
        """``PartitionRegistration.merge(PartitionChangeRecord)``: null fields keep their value,
        a leader other than -2 bumps the leader epoch, every change bumps the partition epoch."""
        replicas = self.replicas if record.replicas is None else tuple(record.replicas)
        directories_in = getattr(record, "directories", None)
        if directories_in:
            if len(directories_in) != len(replicas):
                raise ImageError(f"PartitionChangeRecord for partition {record.partition_id} leaves "
                                 f"{len(replicas)} replicas but names {len(directories_in)} directories "
                                 f"(InvalidReplicaDirectoriesException)")
            directories = directory_ints(directories_in)
        elif record.replicas is not None:
            # DirectoryId.createDirectoriesFrom: replicas that stay keep their directory.
            if len(set(self.replicas)) != len(self.replicas):
                raise ImageError(f"duplicate broker id in the replicas {java_list(self.replicas)} of partition "
                                 f"{record.partition_id}")
            directories = _kept_directories(self.replicas, self.directory_ids, record.replicas)
        else:
            directories = self.directory_ids
        if not directories:
            directories = (MIGRATING.int,) * len(self.replicas)
        if record.leader == NO_LEADER_CHANGE:
            leader, leader_epoch = self.leader, self.leader_epoch
        else:
            leader, leader_epoch = record.leader, self.leader_epoch + 1
        recovery = self.leader_recovery_state
        if record.leader_recovery_state != NO_RECOVERY_STATE_CHANGE:
            if record.leader_recovery_state not in LEADER_RECOVERY_STATES:
                raise ImageError(f"unknown leader recovery state {record.leader_recovery_state}")
            recovery = record.leader_recovery_state
        elr_in = getattr(record, "eligible_leader_replicas", None)
        last_known_in = getattr(record, "last_known_elr", None)
        return _new_partition_registration(
            replicas, directories, _shared_if_equal(self.isr if record.isr is None else tuple(record.isr), replicas),
            self.removing_replicas if record.removing_replicas is None else tuple(record.removing_replicas),
            self.adding_replicas if record.adding_replicas is None else tuple(record.adding_replicas),
            leader, recovery, leader_epoch, self.partition_epoch + 1,
            self.elr if elr_in is None else tuple(elr_in),
            self.last_known_elr if last_known_in is None else tuple(last_known_in))

    def cleared_elr(self) -> PartitionRegistration:
        """What a ClearElrRecord does to one partition: a merge that empties both ELR lists."""
        if not self.elr and not self.last_known_elr:
            return self
        return replace(self, elr=(), last_known_elr=(), partition_epoch=self.partition_epoch + 1)

    def __str__(self) -> str:
        return (f"PartitionRegistration(replicas={java_list(self.replicas)}, "
                f"directories={_uuids(self.directories)}, isr={java_list(self.isr)}, "
                f"removingReplicas={java_list(self.removing_replicas)}, "
                f"addingReplicas={java_list(self.adding_replicas)}, elr={java_list(self.elr)}, "
                f"lastKnownElr={java_list(self.last_known_elr)}, leader={self.leader}, "
                f"leaderRecoveryState={LEADER_RECOVERY_STATES[self.leader_recovery_state]}, "
                f"leaderEpoch={self.leader_epoch}, partitionEpoch={self.partition_epoch})")


def _kept_directories(replicas, directory_ids, new_replicas) -> tuple:
    """DirectoryId.createDirectoriesFrom: each of ``new_replicas`` keeps its directory if it was a
    replica, else UNASSIGNED. (Not a comprehension in ``merge``: that would make a cell on every
    merge, one per PartitionChangeRecord applied.)"""
    current = dict(zip(replicas, directory_ids))
    return tuple([current.get(r, UNASSIGNED.int) for r in new_replicas])


_SLOT_SETTERS = tuple(getattr(PartitionRegistration, name).__set__ for name in (
    "replicas", "directory_ids", "isr", "removing_replicas", "adding_replicas", "leader", "leader_recovery_state",
    "leader_epoch", "partition_epoch", "elr", "last_known_elr"))


def _new_partition_registration(replicas, directory_ids, isr, removing_replicas, adding_replicas, leader,
                                leader_recovery_state, leader_epoch, partition_epoch, elr, last_known_elr):
    """PartitionRegistration(...) with its fields in order, the slots set directly: the frozen
    dataclass's __init__ goes through object.__setattr__ per field, twice the time, and every
    PartitionChangeRecord applied makes one (a fencing at 1M partitions, 300,000; issue 28)."""
    self = object.__new__(PartitionRegistration)
    (set_replicas, set_directory_ids, set_isr, set_removing, set_adding, set_leader, set_recovery, set_leader_epoch,
     set_partition_epoch, set_elr, set_last_known_elr) = _SLOT_SETTERS
    set_replicas(self, replicas)
    set_directory_ids(self, directory_ids)
    set_isr(self, isr)
    set_removing(self, removing_replicas)
    set_adding(self, adding_replicas)
    set_leader(self, leader)
    set_recovery(self, leader_recovery_state)
    set_leader_epoch(self, leader_epoch)
    set_partition_epoch(self, partition_epoch)
    set_elr(self, elr)
    set_last_known_elr(self, last_known_elr)
    if _untrack is not None:
        _untrack(self)
    return self


# --- brokers and controllers ----------------------------------------------------------------

@dataclass(frozen=True)
class Endpoint:
    name: str
    security_protocol: int
    host: str
    port: int

    def __str__(self) -> str:
        # Endpoint.toString; SecurityProtocol.forId gives null for an id it does not know.
        protocol = SECURITY_PROTOCOLS.get(self.security_protocol, "null")
        return f"Endpoint(listenerName='{self.name}', securityProtocol={protocol}, host='{self.host}', port={self.port})"


def _version_range(low: int, high: int) -> str:
    """VersionRange.toString."""
    if low == high:
        return str(low)
    if high == 0x7FFF:
        return f"{low}+"
    return f"{low}-{high}"


def _listeners_and_features(endpoints: dict, features: dict) -> str:
    listeners = ", ".join(str(endpoints[name]) for name in sorted(endpoints))
    supported = ", ".join(f"{name}: {_version_range(*features[name])}" for name in sorted(features))
    return f"listeners=[{listeners}], supportedFeatures={{{supported}}}"


def _endpoints(record) -> dict:
    return {e.name: Endpoint(e.name, e.security_protocol, e.host, e.port) for e in record.end_points}


def _features(record) -> dict:
    return {f.name: (f.min_supported_version, f.max_supported_version) for f in record.features}


@dataclass(frozen=True)
class BrokerRegistration:
    id: int
    epoch: int
    incarnation_id: uuid.UUID
    listeners: dict
    supported_features: dict
    rack: str | None
    fenced: bool
    in_controlled_shutdown: bool
    is_migrating_zk_broker: bool
    directories: tuple
    # null until the broker reports them (RegisterBrokerRecord v4+, BrokerRegistrationChangeRecord v3+)
    cordoned_directories: tuple | None = None

    @classmethod
    def from_record(cls, record) -> BrokerRegistration:
        return cls(id=record.broker_id, epoch=record.broker_epoch, incarnation_id=record.incarnation_id,
                   listeners=_endpoints(record), supported_features=_features(record), rack=record.rack,
                   fenced=record.fenced, in_controlled_shutdown=getattr(record, "in_controlled_shutdown", False),
                   is_migrating_zk_broker=getattr(record, "is_migrating_zk_broker", False),
                   directories=tuple(sorted(getattr(record, "log_dirs", None) or (), key=uuid_sort_key)),
                   cordoned_directories=_optional_tuple(getattr(record, "cordoned_log_dirs", None)))

    def clone_with(self, fenced: bool | None = None, in_controlled_shutdown: bool | None = None,
                   directories=None, cordoned_directories=None) -> BrokerRegistration:
        """``cloneWith``: each argument left None keeps the current value."""
        return replace(
            self,
            cordoned_directories=self.cordoned_directories if cordoned_directories is None
            else tuple(cordoned_directories),
            fenced=self.fenced if fenced is None else fenced,
            in_controlled_shutdown=self.in_controlled_shutdown if in_controlled_shutdown is None
            else in_controlled_shutdown,
            directories=self.directories if directories is None else tuple(sorted(directories, key=uuid_sort_key)))

    def __str__(self) -> str:
        return (f"BrokerRegistration(id={self.id}, epoch={self.epoch}, incarnationId={kafka_uuid(self.incarnation_id)}, "
                f"{_listeners_and_features(self.listeners, self.supported_features)}, "
                f"rack={java_optional(self.rack)}, fenced={str(self.fenced).lower()}, "
                f"inControlledShutdown={str(self.in_controlled_shutdown).lower()}, "
                f"isMigratingZkBroker={str(self.is_migrating_zk_broker).lower()}, "
                f"directories={_uuids(self.directories)}, "
                f"cordonedDirectories={'null' if self.cordoned_directories is None else _uuids(self.cordoned_directories)})")


def _optional_tuple(values) -> tuple | None:
    return None if values is None else tuple(values)


@dataclass(frozen=True)
class ControllerRegistration:
    id: int
    incarnation_id: uuid.UUID
    zk_migration_ready: bool
    listeners: dict
    supported_features: dict

    @classmethod
    def from_record(cls, record) -> ControllerRegistration:
        for e in record.end_points:
            if e.security_protocol not in SECURITY_PROTOCOLS:
                raise ImageError(f"Unknown security protocol {e.security_protocol} in the registration of "
                                 f"controller {record.controller_id}")
        return cls(id=record.controller_id, incarnation_id=record.incarnation_id,
                   zk_migration_ready=record.zk_migration_ready, listeners=_endpoints(record),
                   supported_features=_features(record))

    def __str__(self) -> str:
        return (f"ControllerRegistration(id={self.id}, incarnationId={kafka_uuid(self.incarnation_id)}, "
                f"zkMigrationReady={str(self.zk_migration_ready).lower()}, "
                f"{_listeners_and_features(self.listeners, self.supported_features)})")


# --- ACLs, SCRAM, delegation tokens ---------------------------------------------------------

@dataclass(frozen=True)
class StandardAcl:
    resource_type: int
    resource_name: str
    pattern_type: int
    principal: str
    host: str
    operation: int
    permission_type: int

    @classmethod
    def from_record(cls, record) -> StandardAcl:
        return cls(record.resource_type, record.resource_name, record.pattern_type, record.principal,
                   record.host, record.operation, record.permission_type)

    def __str__(self) -> str:
        return (f"StandardAcl(resourceType={RESOURCE_TYPES.get(self.resource_type, 'UNKNOWN')}, "
                f"resourceName={self.resource_name}, patternType={PATTERN_TYPES.get(self.pattern_type, 'UNKNOWN')}, "
                f"principal={self.principal}, host={self.host}, "
                f"operation={ACL_OPERATIONS.get(self.operation, 'UNKNOWN')}, "
                f"permissionType={ACL_PERMISSION_TYPES.get(self.permission_type, 'UNKNOWN')})")


@dataclass(frozen=True)
class ScramCredential:
    salt: bytes
    stored_key: bytes
    server_key: bytes
    iterations: int

    def __str__(self) -> str:
        # ScramCredentialDataNode with the shell's printer, which redacts nothing.
        return (f"ScramCredentialData(salt={bytes(self.salt).hex()}, storedKey={bytes(self.stored_key).hex()}, "
                f"serverKey={bytes(self.server_key).hex()}, iterations={self.iterations})")


@dataclass(frozen=True)
class DelegationToken:
    token_id: str
    owner: str
    requester: str
    renewers: tuple
    issue_timestamp: int
    max_timestamp: int
    expiration_timestamp: int

    @classmethod
    def from_record(cls, record) -> DelegationToken:
        return cls(record.token_id, record.owner, record.requester, tuple(record.renewers),
                   record.issue_timestamp, record.max_timestamp, record.expiration_timestamp)

    def __str__(self) -> str:
        # DelegationTokenDataNode.print, parentheses and all.
        return (f"DelegationTokenDatatokenId={self.token_id}(owner={self.owner}(tokenRequester={self.requester}"
                f"(renewers={' '.join(self.renewers)}, issueTimestamp={self.issue_timestamp}, "
                f"maxTimestamp={self.max_timestamp}), expiryTimestamp={self.expiration_timestamp}")
