"""The per-partition metrics of a broker, as Kafka registers them, renamed by the JMX exporter's
usual Kafka rule for an MBean with two keys (``kafka.X<type=T, name=N, topic=.., partition=..>``
``Value`` is ``kafka_x_t_n{topic, partition}``, lowercased):

* ``kafka.cluster:type=Partition`` (Kafka's Partition, one per partition this broker holds a
  replica of, leader or follower): UnderReplicated, UnderMinIsr, AtMinIsr (1 or 0),
  InSyncReplicasCount, ReplicasCount (0 on a follower, as Kafka's gauges read 0 when not the
  leader), LastStableOffsetLag (the high watermark less the last stable offset, on any replica);
* ``kafka.log:type=Log`` (Kafka's UnifiedLog, one per local log): LogStartOffset, LogEndOffset,
  Size (bytes), NumLogSegments.

Their size is Kafka's: ten samples per partition held (about 7 MB of text per 10,000
partitions). Kafka's operators limit them with ``metrics.jmx.exclude`` / ``metrics.jmx.include``
(regular expressions on the MBean names) or at the exporter; kafkawire does not read those
settings yet (docs/node-and-configuration.md says so). The samples are written as text here,
without prometheus_client's sample objects (kafkawire.net.metrics_http.Family.lines), each
partition's label text made once for its ten samples.
"""
from __future__ import annotations

from typing import Iterator

from kafkawire.net.metrics_http import Family, number

PARTITION = "kafka_cluster_partition_"
LOG = "kafka_log_log_"


class LedShape:
    """A led partition's ISR as ReplicaManager's gauges read it (kafkawire.broker.metrics)."""
    __slots__ = ("partition", "isr_size", "replication_factor", "min_isr", "reassigning")

    def __init__(self, partition, isr_size: int, replication_factor: int, min_isr: int, reassigning: bool):
        self.partition, self.isr_size, self.replication_factor = partition, isr_size, replication_factor
        self.min_isr, self.reassigning = min_isr, reassigning


# (family, help): the Partition gauges, then the Log gauges, in the order of _led_values/_log_values.
PARTITION_GAUGES = (
    ("underreplicated", "1 when this broker leads the partition and its ISR is smaller than its replicas"),
    ("underminisr", "1 when this broker leads the partition and its ISR is below min.insync.replicas"),
    ("atminisr", "1 when this broker leads the partition and its ISR is at min.insync.replicas"),
    ("insyncreplicascount", "The ISR's size, when this broker leads the partition (else 0)"),
    ("replicascount", "The replication factor, when this broker leads the partition (else 0)"))
LOG_GAUGES = (
    (PARTITION + "laststableoffsetlag", "The high watermark less the last stable offset"),
    (LOG + "logstartoffset", "The log's start offset"),
    (LOG + "logendoffset", "The log's end offset"),
    (LOG + "size", "The log's size in bytes"),
    (LOG + "numlogsegments", "The log's segments"))
FOLLOWER_VALUES = ("0.0",) * len(PARTITION_GAUGES)        # Kafka's gauges read 0 when not the leader


def partition_families(broker, led: list[LedShape]) -> Iterator[Family]:
    """The Partition and Log gauges of every replica held here: ``led`` (with their ISR shape)
    and the followed partitions (broker.replica_roles)."""
    heads = [f"{PARTITION}{name}{{" for name, _ in PARTITION_GAUGES] + [f"{name}{{" for name, _ in LOG_GAUGES]
    lines: list[list[str]] = [[] for _ in heads]
    held = [(shape.partition, _led_values(shape)) for shape in led]
    held += [(follower.partition, FOLLOWER_VALUES) for follower in broker.replica_roles.followers.values()]
    for p, values in held:
        # A topic name is [a-zA-Z0-9._-] only (Kafka's rule, checked at creation): nothing to escape.
        labels = f'partition="{p.partition}",topic="{p.topic}"}} '
        for rows, head, value in zip(lines, heads, (*values, *_log_values(p))):
            rows.append(f"{head}{labels}{value}\n")
    names = [(PARTITION + name, help_text) for name, help_text in PARTITION_GAUGES] + list(LOG_GAUGES)
    for (name, help_text), rows in zip(names, lines):
        yield Family(name, help_text, lines=rows)


def _led_values(shape: LedShape) -> tuple[str, ...]:
    isr = shape.isr_size
    return (number(int(isr < shape.replication_factor)), number(int(isr < shape.min_isr)),
            number(int(isr == shape.min_isr)), number(isr), number(shape.replication_factor))


def _log_values(partition) -> tuple[str, ...]:
    log_ = partition.log
    return (number(partition.high_watermark() - partition.last_stable_offset()), number(log_.log_start_offset),
            number(log_.log_end_offset), number(log_.size), number(log_.segment_count))


__all__ = ["LedShape", "partition_families"]
