"""The settings of one raft replica, named after Kafka's controller.quorum.* keys."""
from __future__ import annotations

import uuid
from dataclasses import dataclass

from .types import EMPTY_ENDPOINTS, Endpoints, ReplicaKey
from .voters import VoterSet


@dataclass(frozen=True)
class RaftConfig:
    node_id: int
    directory_id: uuid.UUID | None = None
    cluster_id: str | None = None
    listener: str = "CONTROLLER"                     # controller.listener.names (the first)
    endpoints: Endpoints = EMPTY_ENDPOINTS           # this node's advertised controller listeners
    static_voters: VoterSet | None = None            # controller.quorum.voters (kraft.version 0)
    bootstrap_servers: tuple[tuple[str, int], ...] = ()   # controller.quorum.bootstrap.servers
    election_timeout_ms: int = 1000                  # controller.quorum.election.timeout.ms
    election_backoff_max_ms: int = 1000              # controller.quorum.election.backoff.max.ms
    fetch_timeout_ms: int = 2000                     # controller.quorum.fetch.timeout.ms
    request_timeout_ms: int = 2000                   # controller.quorum.request.timeout.ms
    retry_backoff_ms: int = 20                       # controller.quorum.retry.backoff.ms
    append_linger_ms: int = 25                       # controller.quorum.append.linger.ms
    # The driver's time bound on scheduled appends (kafkawire.quorum.append.queue.max.ms; 0: none):
    # no more queued and uncommitted records than the quorum commits in this long plus the
    # linger at its measured rate (kafkawire.raft.node.driver_appends). Not the core's business.
    append_queue_max_ms: int = 40
    fetch_max_wait_ms: int = 500                     # Kafka's raft fetch long-poll
    fetch_max_bytes: int = 8 * 1024 * 1024
    fetch_snapshot_max_bytes: int = 8 * 1024 * 1024
    max_batch_records: int = 1000
    kraft_version_min: int = 0                       # the kraft.version range this node supports
    kraft_version_max: int = 1
    pre_vote: bool = True                            # KIP-996 (Vote v2)
    auto_join: bool = False                          # controller.quorum.auto.join.enable
    # process.roles holds "controller" (every kafkawire node): an observer may become a voter,
    # and a leader counts a fetch of a replica it just added before that replica knows it, so
    # a follower fsyncs what it fetches even as an observer (Kafka's canBecomeVoter). A pure
    # broker (False) fsyncs only as a voter, which it never becomes.
    can_become_voter: bool = True
    # Delete the log behind a new snapshot at once (metadata.max.retention.* set to minimum);
    # the simulator uses it so that lagging replicas must catch up through FetchSnapshot.
    clean_log_on_snapshot: bool = False
    # The driver fsyncs in the background and reports each flush with a LogFlushed input (io.py):
    # a leader then counts its own log end toward the high watermark only up to what is
    # durable, and its appends' messages need not wait for the fsync (Ready.hold_until_flushed).
    # False: the driver fsyncs before the next input, and the log end counts at once.
    async_flush: bool = False

    @property
    def local_key(self) -> ReplicaKey:
        return ReplicaKey.of(self.node_id, self.directory_id)

    def __post_init__(self):
        for name in ("election_timeout_ms", "fetch_timeout_ms", "request_timeout_ms"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must not be negative")
        if self.node_id < 0:
            raise ValueError(f"node_id must not be negative, got {self.node_id}")
