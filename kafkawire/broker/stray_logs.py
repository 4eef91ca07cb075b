"""Stray logs: partition directories a broker finds in its log directory at start that the metadata
image does not assign to it, set aside as Kafka 4.3.1's LogManager.loadLog sets them aside (the
``isStray`` test BrokerMetadataPublisher.initializeManagers hands it, LogManager.isStrayReplica).

    renamed = mark_stray_logs(log_dir, image, node_id)     # once, before the first log opens

A directory ``<topic>-<partition>`` is stray when its ``partition.metadata`` names no topic id
(missing: Kafka's reading is that nothing was appended yet), or names a topic id the image does not
have (the topic was deleted while the broker was down, maybe created again under the same name
with another id), or the image's partition of that id does not list this broker among its replicas
(reassigned away while the broker was down, or a partition index the topic does not have). The
topic is looked up by id, never by name: a topic created again does not inherit the old one's
records. A stray directory is renamed ``<topic>-<partition>.<uuid>-stray`` and kept: neither
opened nor deleted (Kafka keeps them; an operator removes them). ``-stray`` directories already
there are kept too, with Kafka's "Loaded stray log" warning. ``-delete`` directories are the log
deleter's (kafkawire.broker.log_deletion), ``__cluster_metadata-0`` the raft layer's.

Deliberate differences: Kafka stops on a directory whose name is not a partition's and takes the
log directory offline on an unreadable ``partition.metadata``; kafkawire (run over each log
directory in turn) leaves the first with a warning and sets the second aside as stray, so that neither stops the
broker and no record of an unidentified log is served or deleted.
"""
from __future__ import annotations

import logging
import os
import uuid

from kafkawire.storage.reader import parse_partition_dir_name, parse_retired_dir_name
from kafkawire.storage.state_files import StateFileError, read_partition_metadata

__all__ = ["STRAY_SUFFIX", "mark_stray_logs", "retired_dir_name", "stray_reason"]

log = logging.getLogger(__name__)
STRAY_SUFFIX = "-stray"
METADATA_TOPIC = "__cluster_metadata"
PARTITION_METADATA = "partition.metadata"
_MAX_NAME = 255                 # LocalLog caps a renamed directory's name at a file name's length


def retired_dir_name(topic: str, partition: int, suffix: str) -> str:
    """``<topic>-<partition>.<uuid><suffix>``, the topic cut so that the name fits 255 characters
    (LocalLog.logDirNameWithSuffixCappedLength: the partition and uuid are always kept)."""
    tail = f"-{partition}.{uuid.uuid4().hex}{suffix}"
    return topic[:_MAX_NAME - len(tail)] + tail


def stray_reason(directory: str, topic: str, partition: int, image, node_id: int) -> str | None:
    """Why the partition directory is stray (Kafka's log line), or None when the image assigns it here."""
    try:
        topic_id = read_partition_metadata(os.path.join(directory, PARTITION_METADATA))
    except FileNotFoundError:
        return "the topicId does not exist in it, treat it as a stray log"
    except (StateFileError, OSError, ValueError) as exc:
        return f"its {PARTITION_METADATA} cannot be read ({exc}), treat it as a stray log"
    topic_image = image.topics_by_id.get(topic_id)
    registration = None if topic_image is None else topic_image.partitions.get(partition)
    if registration is None or not registration.replicas:
        return f"the topicId {topic_id} does not exist in the metadata image"
    if node_id not in registration.replicas:
        return (f"the current replica assignment [{', '.join(map(str, registration.replicas))}] does not "
                f"contain the local brokerId {node_id}")
    return None


def mark_stray_logs(log_dir: str, image, node_id: int) -> list[str]:
    """Rename every stray partition directory of ``log_dir`` ``-stray``; the new paths."""
    try:
        names = sorted(os.listdir(log_dir))
    except OSError as exc:
        log.error("cannot list %s to find stray logs: %s", log_dir, exc)
        return []
    renamed = []
    for name in names:
        path = os.path.join(log_dir, name)
        if not os.path.isdir(path):
            continue
        retired = parse_retired_dir_name(name)
        if retired is not None:
            if retired[2] == "stray":
                log.warning("Loaded stray log: %s", path)
            continue                      # -delete: the log deleter's; -future: none are made here
        parsed = parse_partition_dir_name(name)
        if parsed is None:
            log.warning("%s is not a <topic>-<partition> directory: left as it is", path)
            continue
        topic, partition = parsed
        if topic == METADATA_TOPIC:
            continue
        reason = stray_reason(path, topic, partition, image, node_id)
        if reason is None:
            continue
        log.info("Found stray log dir %s: %s.", path, reason)
        aside = os.path.join(log_dir, retired_dir_name(topic, partition, STRAY_SUFFIX))
        try:
            os.rename(path, aside)
        except OSError as exc:
            log.error("cannot rename the stray log %s: %s", path, exc)
            continue
        log.warning("Log in %s marked stray and renamed to %s", path, aside)
        renamed.append(aside)
    return renamed
