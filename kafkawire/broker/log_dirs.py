"""The broker's log directories (``log.dirs``, JBOD with KIP-858's directory ids), as Kafka's
LogManager keeps them: each directory's id from its meta.properties, where a partition's log is or
goes, and which directory a log lives in.

    dirs = LogDirs.load(config.log_dirs, node_id=1, cluster_id="...", known={metadata_dir: its_id})
    dirs.ids()                                  # what the broker registers (BrokerRegistration LogDirs)
    path = dirs.place("orders", 0, assigned, counts)   # the log directory of a log to open
    dirs.id_of_log(partition.log.directory)    # the directory id a replica is in

Placement (LogManager.getOrCreateLog): a log already in one of the directories stays there; else
the directory AlterReplicaLogDirs named for it before it was hosted here (preferredLogDirs), else
the directory the metadata assigned the replica to (PartitionRecord ``Directories``) when it is
one of ours, else the one with the fewest logs (nextLogDirs; ties in ``log.dirs`` order) among
those not cordoned (``cordoned``: the paths ``cordoned.log.dirs`` names, KIP-1066), or the first
online one when every one is cordoned (a replica assigned just before the last was cordoned).

One directory (the common case) keeps what the node read (the metadata directory's id, perhaps
none) and writes nothing. With several, a directory without meta.properties gets one (node.id,
cluster.id, a new directory.id), as KafkaRaftServer formats the empty log directories of a
formatted node; one of another node or cluster stops the start. A directory that is not a readable
directory, or whose meta.properties cannot be read, starts offline (no id, nothing opened there),
as Kafka's MetaPropertiesEnsemble and LogManager.createAndValidateLogDirs leave it, with their log
lines; when none is left the start stops with Kafka's message.
"""
from __future__ import annotations

import logging
import os
import uuid
from dataclasses import dataclass

from kafkawire.metadata.registrations import LOST, MIGRATING, UNASSIGNED
from kafkawire.storage.state_files import MetaProperties, StateFileError, read_meta_properties, write_meta_properties

from .partition import partition_dir_name

__all__ = ["LogDir", "LogDirs", "LogDirsError", "META_PROPERTIES", "assigned_directory"]

log = logging.getLogger(__name__)
META_PROPERTIES = "meta.properties"
_RESERVED_IDS = 100        # DirectoryId reserves the ids below 100 (UNASSIGNED, LOST, MIGRATING, ...)


def assigned_directory(registration, broker_id: int):
    """The directory the metadata names for ``broker_id``'s replica (PartitionRegistration.directory)."""
    for replica, directory in zip(registration.replicas, getattr(registration, "directories", ())):
        if replica == broker_id:
            return directory
    return UNASSIGNED


class LogDirsError(RuntimeError):
    """A log directory cannot be used: the reason names the directory or file."""


class _Unreadable(Exception):
    """A directory that starts offline (Kafka's IOException of createAndValidateLogDirs)."""


@dataclass(frozen=True)
class LogDir:
    path: str                          # absolute, as Kafka's LogManager keeps it
    directory_id: uuid.UUID | None


def _new_directory_id() -> uuid.UUID:
    """DirectoryId.random: a random id that is none of the reserved ones."""
    while True:
        candidate = uuid.uuid4()
        if candidate.int >= _RESERVED_IDS:
            return candidate


def _directory_id(path: str, node_id: int, cluster_id: str) -> uuid.UUID:
    """The directory's id from its meta.properties, written first when it has none."""
    meta_path = os.path.join(path, META_PROPERTIES)
    if os.path.lexists(path) and not (os.path.isdir(path) and os.access(path, os.R_OK | os.X_OK)):
        raise _Unreadable(f"{path} is not a readable log directory.")
    try:
        os.makedirs(path, exist_ok=True)
    except OSError as exc:
        raise LogDirsError(f"log directory {path}: {exc}") from None
    try:
        meta = read_meta_properties(meta_path) if os.path.lexists(meta_path) else None
    except (StateFileError, OSError, ValueError) as exc:
        log.error("Error while reading meta.properties file %s: %s", meta_path, exc)      # MetaPropertiesEnsemble
        raise _Unreadable(f"Failed to load {path} during broker startup") from None
    if meta is not None:
        if meta.node_id != node_id:
            raise LogDirsError(f"{meta_path}: node.id {meta.node_id} does not match node.id {node_id}")
        if meta.cluster_id != cluster_id:
            raise LogDirsError(f"{meta_path}: cluster.id {meta.cluster_id} does not match the cluster {cluster_id}")
        if meta.directory_id is not None:
            return meta.directory_id
    meta = MetaProperties(version=1, cluster_id=cluster_id, node_id=node_id, directory_id=_new_directory_id(),
                          **({} if meta is None else {"properties": meta.properties}))
    try:
        write_meta_properties(meta_path, meta)
    except OSError as exc:
        raise LogDirsError(f"cannot write {meta_path}: {exc}") from None
    log.info("log directory %s: wrote meta.properties with directory.id %s", path, meta.directory_id)
    return meta.directory_id


class LogDirs:
    """The broker's log directories, in ``log.dirs`` order."""

    def __init__(self, dirs: list[LogDir]):
        self.dirs = dirs
        self._by_path = {d.path: d for d in dirs}
        self._by_id = {d.directory_id: d for d in dirs if d.directory_id is not None}
        # (topic, partition) -> (topic id, directory id) of a replica not opened, its directory not online
        # (kafkawire.broker.log_dir_failure.skips_creation: warned once per assignment)
        self.creations_skipped: dict = {}
        self.preferred: dict[tuple[str, int], str] = {}     # AlterReplicaLogDirs' choice for a log not here yet
        self.offline: set[str] = set()      # failed directories (KIP-858): no log opens there any more
        self.cordoned: frozenset[str] = frozenset()     # cordoned.log.dirs (KIP-1066): no new log goes there

    @classmethod
    def load(cls, paths, *, node_id: int, cluster_id: str, known: dict | None = None) -> LogDirs:
        """``known``: path -> directory id the node already read (its metadata directory's)."""
        absolute = [os.path.abspath(p) for p in dict.fromkeys(paths)]
        known = {os.path.abspath(p): i for p, i in (known or {}).items()}
        if len(absolute) == 1:
            return cls([LogDir(absolute[0], known.get(absolute[0]))])
        dirs, offline = [], set()
        for path in absolute:
            try:
                dirs.append(LogDir(path, known.get(path) or _directory_id(path, node_id, cluster_id)))
            except _Unreadable as exc:
                log.error("Failed to create or validate data directory %s: %s", path, exc)   # LogDirFailureChannel
                dirs.append(LogDir(path, None))
                offline.add(path)
        if len(offline) == len(absolute):
            raise LogDirsError(f"Shutdown broker because none of the specified log dirs from {', '.join(absolute)} "
                               "can be created or validated")
        seen: dict = {}
        for d in dirs:
            if d.directory_id is None:
                continue
            if d.directory_id in seen:
                raise LogDirsError(f"log directories {seen[d.directory_id]} and {d.path} have the same directory.id "
                                   f"{d.directory_id}")
            seen[d.directory_id] = d.path
        loaded = cls(dirs)
        loaded.offline.update(offline)
        return loaded

    @property
    def first(self) -> str:
        return self.dirs[0].path

    @property
    def paths(self) -> list[str]:
        return [d.path for d in self.dirs]

    @property
    def online_paths(self) -> list[str]:
        """The directories not offline (Kafka's liveLogDirs), in ``log.dirs`` order."""
        return [d.path for d in self.dirs if d.path not in self.offline]

    def ids(self) -> tuple:
        return tuple(d.directory_id for d in self.dirs if d.directory_id is not None)

    def offline_ids(self) -> list:
        """The failed directories' ids (BrokerHeartbeat OfflineLogDirs)."""
        return [d.directory_id for d in self.dirs if d.path in self.offline and d.directory_id is not None]

    def by_path(self, path: str) -> LogDir | None:
        return self._by_path.get(os.path.abspath(path)) if path else None

    def by_id(self, directory_id) -> LogDir | None:
        return self._by_id.get(directory_id)

    def id_of_log(self, log_directory: str):
        """The directory id of the log directory a partition's log lives in (None: unknown)."""
        d = self._by_path.get(os.path.dirname(os.path.abspath(log_directory)))
        return None if d is None else d.directory_id

    def locate(self, topic: str, index: int) -> str | None:
        """The log directory already holding the partition's log (the first, logged, if several do)."""
        name = partition_dir_name(topic, index)
        found = [d.path for d in self.dirs if d.path not in self.offline and os.path.isdir(os.path.join(d.path, name))]
        if len(found) > 1:
            log.error("%s is in several log directories (%s): the one in %s is used", name, ", ".join(found), found[0])
        return found[0] if found else None

    def place(self, topic: str, index: int, assigned, counts: dict[str, int]) -> str:
        """The log directory of a log to open (see the module docstring); ``assigned`` is the
        replica's directory in the metadata, ``counts`` path -> logs open there."""
        if len(self.dirs) == 1:
            return self.first
        online = [d for d in self.dirs if d.path not in self.offline]
        if not online:
            raise OSError(f"no log directory is online (failed: {', '.join(sorted(self.offline))})")
        existing = self.locate(topic, index)
        if existing is not None:
            return existing
        preferred = self.preferred.pop((topic, index), None)
        if preferred is not None and preferred in self._by_path and preferred not in self.offline:
            return preferred
        if assigned not in (None, UNASSIGNED, LOST, MIGRATING) and assigned in self._by_id:
            if self._by_id[assigned].path not in self.offline:
                return self._by_id[assigned].path
        open_to_new = [d for d in online if d.path not in self.cordoned] or online[:1]
        return min(open_to_new, key=lambda d: counts.get(d.path, 0)).path     # min keeps the first of equals

    def cordoned_ids(self) -> list:
        """The cordoned directories' ids (BrokerHeartbeat CordonedLogDirs), in ``log.dirs`` order."""
        return [d.directory_id for d in self.dirs if d.path in self.cordoned and d.directory_id is not None]
