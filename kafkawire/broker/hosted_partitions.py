"""The partitions a broker leads, as it opens, leads and closes their logs: a partition led from
now on (its log opened in the directory LogDirs.place gives, or taken over from the follower
side, kafkawire.broker.replica_roles, Partition.makeLeader), its leader epoch updated, a log
closed, and each replica whose log is not in the directory the metadata names assigned to its
own (ReplicaManager.maybeUpdateTopicAssignment, KIP-858).

They live here, apart from broker.py, because opening and closing the hosted logs is one concern
that replica_roles.py and the log directory failure handling call too, and broker.py would
otherwise pass the project's module-size limit. HostedPartitions is a base class of Broker, not a
separate object: it works on the broker's ``partitions``, log manager, log directories and
replica roles, and its methods keep their names (``broker.open_partition``, ``close_partition``).
"""
from __future__ import annotations

import logging
import os

from .log_dir_failure import open_failure
from .log_dirs import assigned_directory
from .partition import LeaderPartition, partition_dir_name

log = logging.getLogger(__name__)

DIRECTORY_ASSIGNMENT_LEVEL = 17           # metadata.version 3.7-IV2: KIP-858's directory assignment


def directory_assignment_supported(image) -> bool:
    """The metadata.version of ``image`` has replicas' directories (the controller takes AssignReplicasToDirs)."""
    return (getattr(image, "metadata_version", None) or 0) >= DIRECTORY_ASSIGNMENT_LEVEL


class HostedPartitions:
    """Opening, leading and closing the partitions hosted here (Broker's base class; every
    attribute used here is the broker's)."""

    def _assign_directories(self, image) -> None:
        """ReplicaManager.maybeUpdateTopicAssignment: each replica here whose log is not in the
        directory the metadata names is assigned to its own (from metadata.version 3.7-IV2); not
        one whose move waits for its swap (the controller accepted or not yet the new directory)."""
        if not directory_assignment_supported(image):
            return
        moving = self.alter_log_dirs.futures.waiting()     # the metadata may name either directory
        for (name, index), partition in self.log_manager.replicas().items():
            if (name, index) in moving:
                continue
            actual = self.log_dirs.id_of_log(partition.log.directory)
            topic = image.topics_by_name.get(name)
            registration = None if topic is None else topic.partitions.get(index)
            if actual is None or registration is None or topic.id != partition.topic_id:
                continue
            if assigned_directory(registration, self.node_id) != actual:
                self.dir_assignments.submit(topic.id, index, actual)

    def _take_from_followers(self, key, topic_id) -> None:
        """A partition followed here until now is led from now on with its open log (makeLeader)."""
        partition = self.replica_roles.take(key, topic_id)
        if partition is not None:
            self.partitions[key] = partition

    def _lead(self, image, topic, index: int, leader_epoch: int) -> bool:
        """Lead the partition; whether its log was opened now."""
        partition = self.partitions.get((topic.name, index))
        if partition is not None and partition.topic_id == topic.id:
            partition.leader_epoch = leader_epoch
            self.log_manager.configure(partition, image)
            return False
        if partition is not None:          # the topic was deleted and created again
            self.log_deleter.delete(self.partitions.pop((topic.name, index)))
        partition = self.open_partition(image, topic, index, leader_epoch)
        if partition is None:
            return False
        self.partitions[(topic.name, index)] = partition
        log.info("broker %d: leading %s-%d in epoch %d", self.node_id, topic.name, index, leader_epoch)
        return True

    def open_partition(self, image, topic, index: int, leader_epoch: int) -> LeaderPartition | None:
        """The partition's log opened (recovered), or None with the reason logged. A leader epoch of
        -1 assigns none (a follower's epochs come from its leader's batches)."""
        registration = topic.partitions.get(index)
        assigned = None if registration is None else assigned_directory(registration, self.node_id)
        log_dir = self.log_dirs.place(topic.name, index, assigned, self.log_manager.logs_per_dir())
        directory = os.path.join(log_dir, partition_dir_name(topic.name, index))
        existed = os.path.isdir(directory)
        try:
            if existed:
                self.log_manager.remove_stray_files(directory, f"{topic.name}-{index}")
            partition = LeaderPartition.open(
                log_dir, topic.name, index, topic.id, leader_epoch=leader_epoch,
                producer_id_expiration_ms=self.log_manager.producer_id_expiration_ms(image),
                expiration_check_interval_ms=self.config.producer_id_expiration_check_interval_ms,
                state_writes=self.state_writes,
                **self.log_manager.open_options(image, topic.name, index, topic.id, log_dir),
                high_watermark=self.log_manager.checkpointed_high_watermark(topic.name, index, topic.id, log_dir))
            self.log_manager.opened(partition)
        except OSError as exc:          # the directory goes offline, as LogManager.getOrCreateLog's failure
            open_failure(self, (topic.name, index), topic.id, log_dir, exc, existed=existed)
            return None
        return partition

    @staticmethod
    def close_partition(partition: LeaderPartition) -> None:
        try:
            partition.close()
        except OSError as exc:
            log.warning("closing %s: %s", partition.name, exc)
