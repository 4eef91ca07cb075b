"""Write a __cluster_metadata log as KRaft does (LeaderChange control batches, framed metadata
records, leader epochs), with our writers, and remember every record for the checks."""
from __future__ import annotations

import os
import uuid
from dataclasses import dataclass

from kafkawire import messages
from kafkawire.messages.leader_change_message import LeaderChangeMessage, Voter
from kafkawire.metadata import encode_metadata_record
from kafkawire.records import RecordBatchBuilder, build_control_batch
from kafkawire.records.control import ControlRecordType
from kafkawire.records.kraft_control import encode_value
from kafkawire.storage.log import Log
from kafkawire.storage.state_files import MetaProperties, write_meta_properties, write_partition_metadata

CLUSTER_ID = "Z9u6YcZ7TaqDxXq9uhjOSg"
NODE_ID = 1
BASE_TS = 1_700_000_000_000
METADATA_TOPIC_ID = uuid.UUID(int=1)


@dataclass(frozen=True)
class Written:
    offset: int
    timestamp: int
    value: bytes | None       # None for control records
    epoch: int
    is_control: bool


def _leader_change(leader: int) -> bytes:
    return encode_value(LeaderChangeMessage(version=0, leader_id=leader, voters=[Voter(voter_id=leader)],
                                            granting_voters=[Voter(voter_id=leader)]))


def metadata_values(count: int, prefix: str = "topic"):
    """``count`` framed metadata records: a feature level, topics with partitions, configs, no-ops."""
    FeatureLevel = messages.by_name("FeatureLevelRecord")
    Topic = messages.by_name("TopicRecord")
    Partition = messages.by_name("PartitionRecord")
    Config = messages.by_name("ConfigRecord")
    NoOp = messages.by_name("NoOpRecord")
    out = []
    i = 0
    while len(out) < count:
        kind = i % 5
        tid = uuid.UUID(int=0x1000 + i)
        if i == 0:
            out.append(encode_metadata_record(FeatureLevel(name="metadata.version", feature_level=21), 0))
        elif kind == 1:
            out.append(encode_metadata_record(Topic(name=f"{prefix}-{i}", topic_id=tid), 0))
        elif kind == 2:
            out.append(encode_metadata_record(Partition(partition_id=0, topic_id=tid, replicas=[NODE_ID], isr=[NODE_ID],
                                                        leader=NODE_ID, leader_epoch=0, partition_epoch=0), 0))
        elif kind == 3:
            out.append(encode_metadata_record(Config(resource_type=2, resource_name=f"{prefix}-{i}",
                                                     name="retention.ms", value=str(1000 * i)), 0))
        else:
            out.append(encode_metadata_record(NoOp(), 0))
        i += 1
    return out


def write_metadata_log(data_dir, *, epochs: int = 3, batches_per_epoch: int = 6, records_per_batch: int = 4,
                       segment_bytes: int = 1 << 30) -> tuple[str, list[Written]]:
    """A log in ``data_dir/__cluster_metadata-0`` (with meta.properties and partition.metadata);
    returns its directory and every record written, in offset order."""
    log_dir = os.path.join(data_dir, "__cluster_metadata-0")
    os.makedirs(log_dir, exist_ok=True)
    write_meta_properties(os.path.join(data_dir, "meta.properties"),
                          MetaProperties(1, CLUSTER_ID, NODE_ID, uuid.UUID(int=0x5EED)))
    write_partition_metadata(os.path.join(log_dir, "partition.metadata"), METADATA_TOPIC_ID)
    written: list[Written] = []
    offset = 0
    ts = BASE_TS
    values = iter(metadata_values(epochs * batches_per_epoch * records_per_batch))
    with Log(log_dir, segment_bytes=segment_bytes) as log_:
        for epoch in range(1, epochs + 1):
            value = _leader_change(NODE_ID)
            log_.append(build_control_batch(ControlRecordType.LEADER_CHANGE, value, base_offset=offset,
                                            partition_leader_epoch=epoch, timestamp=ts))
            written.append(Written(offset, ts, None, epoch, True))
            offset += 1
            ts += 1000
            for _ in range(batches_per_epoch):
                b = RecordBatchBuilder(base_offset=offset, partition_leader_epoch=epoch)
                for _ in range(records_per_batch):
                    v = next(values)
                    b.append(None, v, (), ts)
                    written.append(Written(offset, ts, v, epoch, False))
                    offset += 1
                    ts += 1000
                log_.append(b.build())
        log_.flush()
    return log_dir, written
