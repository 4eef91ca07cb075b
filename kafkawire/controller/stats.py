"""What the controller measures for Kafka's QuorumControllerMetrics and ControllerMetadataMetrics
beyond its committed image (whose counts the metrics endpoint computes when scraped).

Only raw measurements are kept here (counters, recent durations, contact times); the node's
metrics endpoint (kafkawire/raft/node/prometheus.py) turns them into Kafka's metrics when
scraped. Kafka's controller runs every operation as an event of one queue; kafkawire's runs its
writes one at a time (controller.py), so the "event queue" metrics describe the writes:

* EventQueueTimeMs: from a write's call until its turn (its records are generated);
* EventQueueProcessingTimeMs: generating its records (Kafka's event run, before the commit
  wait, which neither counts);
* EventQueueOperationsStartedCount / EventQueueOperationsTimedOutCount: writes that reached
  their turn / whose deadline passed first;
* AvgIdleRatio: from the processing time, the share of time no write was being generated.

Reads (Describe*, ListPartitionReassignments, ...) are answered from the committed image at
once and are not counted, as they need no turn.
"""
from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

# Yammer's ExponentiallyDecayingReservoir keeps 1028 samples; ours keeps the last 1028.
RECENT_SAMPLES = 1028


@dataclass
class Durations:
    """A Yammer histogram's inputs: every duration recorded (``count``) and the most recent ones."""
    count: int = 0
    total_ms: int = 0
    recent: deque = field(default_factory=lambda: deque(maxlen=RECENT_SAMPLES))

    def record(self, ms: int) -> None:
        self.count += 1
        self.total_ms += ms
        self.recent.append(ms)


@dataclass
class ControllerStats:
    """QuorumControllerMetrics' counters and timers, as the controller records them."""
    queue_time: Durations = field(default_factory=Durations)
    processing_time: Durations = field(default_factory=Durations)
    operations_started: int = 0
    operations_timed_out: int = 0
    timed_out_heartbeats: int = 0
    faults: int = 0                  # writes that failed with an unexpected error (Kafka's non-fatal faults)
    contact_ms: dict[int, int] = field(default_factory=dict)   # broker id -> its last heartbeat's arrival

    def write_started(self, queued_ms: int) -> None:
        self.operations_started += 1
        self.queue_time.record(max(queued_ms, 0))

    def contacted(self, broker_ids, now_ms: int) -> None:
        """Kafka's updateBrokerContactTime (a heartbeat arrived), and on activation and a new
        registration its addTimeSinceLastHeartbeatMetric, which starts the broker's count at now."""
        for broker_id in broker_ids:
            self.contact_ms[broker_id] = now_ms

    def since_last_heartbeat_ms(self, broker_id: int, now_ms: int, session_timeout_ms: int) -> int:
        """QuorumControllerMetrics.timeSinceLastHeartbeatMs: capped at the session timeout, which
        is also the value for a broker never heard from."""
        last = self.contact_ms.get(broker_id)
        return session_timeout_ms if last is None else min(now_ms - last, session_timeout_ms)


@dataclass
class ReplayStats:
    """What replaying committed records counts, for as long as the node runs (a snapshot load
    keeps them): ControllerMetadataMetrics' election meters and its MetadataErrorCount."""
    unclean_elections: int = 0       # UncleanLeaderElectionsPerSec's count
    elr_elections: int = 0           # ElectionFromEligibleLeaderReplicasPerSec's count
    errors: int = 0                  # records that could not be decoded or applied

    def partition_changed(self, before, record) -> None:
        """TopicDelta.updateElectionStats for a PartitionChangeRecord on ``before``: an unclean
        election leaves the partition RECOVERING; a new leader from the ELR is an ELR election."""
        if record.leader_recovery_state == RECOVERING:
            self.unclean_elections += 1
        if before is not None and record.leader in before.elr:
            self.elr_elections += 1


RECOVERING = 1           # LeaderRecoveryState.RECOVERING


__all__ = ["ControllerStats", "Durations", "ReplayStats"]
