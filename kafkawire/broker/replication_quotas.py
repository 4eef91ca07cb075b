"""Replication quotas (KIP-73), as Kafka 4.3.1's ReplicationQuotaManager: a leader quota and a
follower quota, each one broker-wide byte rate over the partitions marked throttled.

* The rates: the dynamic broker configs ``leader.replication.throttled.rate`` and
  ``follower.replication.throttled.rate`` (bytes per second; this broker's id first, then the
  cluster default, as DynamicBrokerConfig; unset: no bound). As in Kafka they can only be set
  dynamically (IncrementalAlterConfigs or ``kafka-configs --entity-type brokers``).
* The throttled partitions: the topic configs ``leader.replication.throttled.replicas`` and
  ``follower.replication.throttled.replicas``, ``*`` (every partition) or ``partition:broker``
  pairs, of which this broker takes the partitions paired with its own id (ConfigHandler.
  parseThrottledPartitions).
* The rate is measured as Kafka's SimpleRate over ``replication.quota.window.num`` samples of
  ``replication.quota.window.size.seconds``: the bytes of the samples over the time since the
  oldest began, at least one window. The quota is exceeded while the rate is above the bound.
* Leader (kafkawire.broker.fetch): a follower's fetch of a throttled partition gets no records
  while the quota is exceeded, unless that follower is in the ISR (no ISR thrashing); the
  answer's size over its throttled partitions is recorded (in-sync followers' too).
* Follower (kafkawire.broker.replica_fetcher): a throttled partition that has not caught up with
  its leader's high watermark is left out of the fetch while the quota is exceeded; the records
  fetched for throttled partitions are recorded.
"""
from __future__ import annotations

import logging
import time
from typing import Callable

from kafkawire.metadata.topic_config_synonyms import dynamic_broker_configs, image_version
from kafkawire.net.client_quotas import SampledRate

__all__ = ["ReplicationQuota", "SimpleRate", "throttled_partitions", "LEADER", "FOLLOWER"]

log = logging.getLogger(__name__)

TOPIC_RESOURCE = 2
ALL_PARTITIONS = "*"
# (rate config, replicas config) of each quota
LEADER = ("leader.replication.throttled.rate", "leader.replication.throttled.replicas")
FOLLOWER = ("follower.replication.throttled.rate", "follower.replication.throttled.replicas")


class SimpleRate(SampledRate):
    """Kafka's SimpleRate: the window is the time since the oldest sample began, at least one
    sample's span (Rate would count ``samples - 1`` of them at first)."""
    __slots__ = ()

    def window_size_ms(self, now_ms: int) -> int:
        self._purge(now_ms)
        oldest = min((s.start_ms for s in self._slots), default=now_ms)
        return max(now_ms - oldest, self.window_ms)


def throttled_partitions(value: str, broker_id: int):
    """parseThrottledPartitions: ALL_PARTITIONS for ``*``, else the partitions paired with
    ``broker_id`` (entries that do not parse are skipped: the controller validated the value)."""
    value = value.strip()
    if value == ALL_PARTITIONS:
        return ALL_PARTITIONS
    partitions = set()
    for entry in value.split(","):
        partition, _, broker = entry.strip().partition(":")
        try:
            if int(broker) == broker_id:
                partitions.add(int(partition))
        except ValueError:
            continue
    return frozenset(partitions)


class ReplicationQuota:
    """One of a broker's two replication quotas (``kind``: LEADER or FOLLOWER), its bound and
    throttled partitions read from ``image()`` (rebuilt when the image changes)."""

    def __init__(self, kind: tuple[str, str], image: Callable, broker_id: int, samples: int, window_seconds: int,
                 clock: Callable[[], int] | None = None):
        self.rate_key, self.replicas_key = kind
        self.image, self.broker_id = image, broker_id
        self.clock = clock or (lambda: int(time.monotonic() * 1000))
        self.rate = SimpleRate(samples, window_seconds * 1000)
        self._image = None
        self._bound: float | None = None
        self._throttled: dict = {}

    def _refresh(self) -> None:
        image = self.image()
        version = image_version(image)
        if version == self._image:
            return
        self._image = version
        self._bound, self._throttled = None, {}
        if image is None:
            return
        for name in (str(self.broker_id), ""):
            value = dynamic_broker_configs(image, name).get(self.rate_key)
            if value is not None:
                try:
                    self._bound = float(int(value))
                except ValueError:
                    log.warning("%s=%r is not a number; no replication quota", self.rate_key, value)
                break
        for (resource_type, topic), configs in image.configs.items():
            value = configs.get(self.replicas_key) if resource_type == TOPIC_RESOURCE else None
            if value:
                self._throttled[topic] = throttled_partitions(value, self.broker_id)

    def is_throttled(self, topic: str, partition: int) -> bool:
        self._refresh()
        partitions = self._throttled.get(topic)
        return partitions is not None and (partitions == ALL_PARTITIONS or partition in partitions)

    def is_quota_exceeded(self) -> bool:
        self._refresh()
        if self._bound is None:
            return False
        return self.rate.measure(self.clock()) > self._bound

    def record(self, size: int) -> None:
        self.rate.record(float(size), self.clock())
