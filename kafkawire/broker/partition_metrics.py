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
partitions). Kafka limits them with ``metrics.jmx.include`` / ``metrics.jmx.exclude``, regular
expressions on the MBean names (``kafka.cluster:type=Partition,name=UnderReplicated,topic=t,
partition=0``; KIP-544): these families honour them the same way (``mbean_filter``); the
other families of the node are not filtered yet. The samples are written as text here,
without prometheus_client's sample objects (kafkawire.net.metrics_http.Family.lines), each
partition's label text made once for its ten samples.
"""
from __future__ import annotations

import re
from typing import Callable, Iterator

from kafkawire.net.metrics_http import PAUSE, Family, FamilyOrPause, number

PARTITION = "kafka_cluster_partition_"
LOG = "kafka_log_log_"
STEP = 1000         # partitions written between two PAUSEs (a few ms)


# A led partition's ISR as ReplicaManager's gauges read it (kafkawire.broker.metrics._collect_led_shapes), a
# plain tuple for its cost at 100k partitions: (partition, ISR size, replication factor, effective
# min ISR, reassigning).
LedShape = tuple


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
# Each family's MBean name up to its keys, for metrics.jmx.include / metrics.jmx.exclude.
MBEANS = tuple(f"kafka.cluster:type=Partition,name={name}" for name in (
    "UnderReplicated", "UnderMinIsr", "AtMinIsr", "InSyncReplicasCount", "ReplicasCount", "LastStableOffsetLag")) + \
    tuple(f"kafka.log:type=Log,name={name}" for name in ("LogStartOffset", "LogEndOffset", "Size", "NumLogSegments"))


def mbean_filter(config) -> Callable[[str], bool] | None:
    """JmxReporter.compilePredicate: an MBean is exported when ``metrics.jmx.include`` matches its
    whole name and ``metrics.jmx.exclude`` does not; None when both are the defaults (everything)."""
    include, exclude = config.metrics_jmx_include, config.metrics_jmx_exclude
    if include == ".*" and not exclude:
        return None
    included, excluded = re.compile(include), re.compile(exclude)
    return lambda name: included.fullmatch(name) is not None and excluded.fullmatch(name) is None


def partition_families(broker, led: list[LedShape]) -> Iterator[FamilyOrPause]:
    """The Partition and Log gauges of every replica held here: ``led`` (with their ISR shape)
    and the followed partitions (broker.replica_roles)."""
    heads = [f"{PARTITION}{name}{{" for name, _ in PARTITION_GAUGES] + [f"{name}{{" for name, _ in LOG_GAUGES]
    lines: list[list[str]] = [[] for _ in heads]
    held = [(shape[0], shape) for shape in led]
    held += [(follower.partition, None) for follower in list(broker.replica_roles.followers.values())]
    exported = mbean_filter(broker.config)
    for index, (p, shape) in enumerate(held):
        if index % STEP == 0:
            yield PAUSE
        values = FOLLOWER_VALUES if shape is None else _led_values(*shape[1:4])
        # A topic name is [a-zA-Z0-9._-] only (Kafka's rule, checked at creation): nothing to escape.
        labels = f'partition="{p.partition}",topic="{p.topic}"}} '
        if exported is None:
            for rows, head, value in zip(lines, heads, (*values, *_log_values(p))):
                rows.append(f"{head}{labels}{value}\n")
            continue
        for rows, head, value, mbean in zip(lines, heads, (*values, *_log_values(p)), MBEANS):
            if exported(f"{mbean},topic={p.topic},partition={p.partition}"):
                rows.append(f"{head}{labels}{value}\n")
    names = [(PARTITION + name, help_text) for name, help_text in PARTITION_GAUGES] + list(LOG_GAUGES)
    for (name, help_text), rows in zip(names, lines):
        if rows or exported is None:
            yield Family(name, help_text, lines=rows)


_FLAG = ("0.0", "1.0")          # a 0/1 gauge as the text format writes it


def _led_values(isr: int, replication_factor: int, min_isr: int) -> tuple[str, ...]:
    # counts of replicas: small integers, written "n.0" (kafkawire.net.metrics_http.number)
    return (_FLAG[isr < replication_factor], _FLAG[isr < min_isr], _FLAG[isr == min_isr], f"{isr}.0",
            f"{replication_factor}.0")


def _log_values(partition) -> tuple[str, ...]:
    log_ = partition.log
    return (number(partition.high_watermark() - partition.last_stable_offset()), number(log_.log_start_offset),
            number(log_.log_end_offset), number(log_.size), number(log_.segment_count))


__all__ = ["LedShape", "STEP", "partition_families", "mbean_filter"]
