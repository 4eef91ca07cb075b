"""The partitions a broker follows and the role changes of its replicas, as Kafka's
ReplicaManager.applyDelta makes them (Partition.makeFollower / makeLeader) in KRaft mode.

    roles = ReplicaRoles(broker)
    roles.make_follower(partition, leader_id, leader_epoch)   # a partition led here until now
    partition = roles.take(key, topic_id)                     # this broker leads it from now on
    roles.apply(image, followed)                              # every partition followed here
    await roles.close()

A partition whose replicas include this broker and whose leader is another broker (or none: -1,
offline) is followed: its log is opened (or kept, when it was led here: makeFollower keeps the log,
its producer state and epochs; nothing is assigned to the epoch cache, whose entries come from the
leader's batches), the leader and leader epoch of the metadata recorded, and the replica fetcher of
its leader fetches it (kafkawire.broker.replica_fetcher; none while the leader is -1). Followed
partitions are not in ``Broker.partitions``: produce and ListOffsets find no led partition and
answer NOT_LEADER_OR_FOLLOWER, as Kafka's leader-only paths do; a consumer's fetch from v11 on
reads a followed partition below its high watermark (KIP-392, kafkawire.broker.fetch), and a high
watermark the leader moves wakes the long polls waiting here. A followed partition
whose leader becomes this broker is handed back to ``Broker.partitions`` with its open log; one no
longer assigned here (moved away, or its topic gone) is closed and deleted, as Kafka's
ReplicaManager.applyDelta deletes it.

The fetchers connect to each leader's endpoint of the inter-broker listener as the leader's broker
registration in the metadata image gives it: ``inter.broker.listener.name``, else the listener
named as ``security.inter.broker.protocol`` (default PLAINTEXT; ServerConfig.inter_broker_listener,
a broker listener, as the node's start checked). They connect as Kafka's
BrokerBlockingSender does: TLS with the listener's ``ssl.*`` settings as a client's, SASL with
``sasl.mechanism.inter.broker.protocol`` and the ``username`` and ``password`` of the listener's
JAAS entry for it (ServerConfig.inter_broker_security; a mechanism kafkawire does not implement
stops the broker at start). A leader that refuses the credentials is retried after the backoff,
its refusal logged each time; the follower stays out of the ISR.
"""
from __future__ import annotations

import dataclasses
import logging

from kafkawire.net.client import NetworkClient
from kafkawire.net.config import ConfigError
from kafkawire.net.security import client_options

from .follower import FollowerReplica
from .metrics import REPLICATION_BYTES_IN
from .log_dir_failure import append_step, storage_failure
from .replica_fetcher import FetcherSettings, ReplicaFetcherManager

__all__ = ["ReplicaRoles"]

log = logging.getLogger(__name__)
FRAME_SLACK = 64 * 1024         # a Fetch answer's headers around its records


class ReplicaRoles:
    """The followers of ``broker`` (kafkawire.broker.Broker) and their fetchers."""

    def __init__(self, broker):
        self.broker = broker
        self.followers: dict[tuple[str, int], FollowerReplica] = {}
        c = broker.config
        self.listener = c.inter_broker_listener
        self.manager: ReplicaFetcherManager | None = None
        self._unusable: str | None = None       # why no fetcher can run (logged once)

    # -- role changes --

    def make_follower(self, partition, leader_id: int, leader_epoch: int) -> None:
        """A partition led here until now is followed from now on, its log kept (makeFollower)."""
        self.followers[(partition.topic, partition.partition)] = FollowerReplica(
            partition, leader_id=leader_id, leader_epoch=leader_epoch, high_watermark=partition.high_watermark(),
            truncation=self.broker.log_manager.truncation,
            on_high_watermark=self.broker.data_appended)
        log.info("broker %d: following %s from broker %d in epoch %d (was leader)", self.broker.node_id,
                 partition.name, leader_id, leader_epoch)

    def take(self, key: tuple[str, int], topic_id):
        """The open partition of a follower this broker now leads (makeLeader), or None."""
        follower = self.followers.get(key)
        if follower is None or follower.partition.topic_id != topic_id:
            return None
        del self.followers[key]       # its fetcher lets it go in the apply() that follows, before any await
        log.info("broker %d: %s was followed up to offset %d (high watermark %d); leading it now",
                 self.broker.node_id, follower.name, follower.log.log_end_offset, follower.high_watermark)
        return follower.partition

    def apply(self, image, followed: dict) -> bool:
        """``followed``: key -> (topic image, partition index, PartitionRegistration) of every partition
        followed here; whether a log was opened. Called at the end of every Broker.on_metadata (after
        any take()), it hands the fetchers their partitions."""
        for key in [k for k in self.followers if k not in followed]:
            follower = self.followers.pop(key, None)        # None: dropped, its directory failed meanwhile
            if follower is not None:
                self._remove(follower)
        opened = False
        for key, (topic, index, registration) in followed.items():
            if self.broker.offline_replica(key, topic.id, registration):
                continue        # its directory failed in this update (a log that could not be opened)
            follower = self.followers.get(key)
            if follower is not None and follower.partition.topic_id != topic.id:     # deleted, created again
                self.broker.log_deleter.delete(self.followers.pop(key).partition)
                follower = None
            if follower is None:
                follower = self._open(image, topic, index)
                if follower is None:
                    continue
                opened = True
            else:
                self.broker.log_manager.configure(follower.partition, image)
            if (follower.leader_id, follower.leader_epoch) != (registration.leader, registration.leader_epoch):
                log.info("broker %d: following %s from broker %d in epoch %d", self.broker.node_id, follower.name,
                         registration.leader, registration.leader_epoch)
            follower.leader_id, follower.leader_epoch = registration.leader, registration.leader_epoch
        manager = self._manager()
        if manager is not None:
            manager.settings = self._resized(image, manager.settings)
            manager.apply(self._fetched())
        return opened

    def _resized(self, image, settings: FetcherSettings) -> FetcherSettings:
        """num.replica.fetchers as set dynamically (ReplicaManager.resizeFetcherThreadPool): the
        next apply() hands each partition to the fetcher of its new fetcher id, with its position."""
        count = self.broker.topic_configs.cached_broker_value(image, "num.replica.fetchers",
                                                              self.broker.config.num_replica_fetchers)
        if count < 1 or count == settings.num_fetchers:
            return settings
        log.info("broker %d: %d replica fetchers per source broker (was %d)", self.broker.node_id, count,
                 settings.num_fetchers)
        return dataclasses.replace(settings, num_fetchers=count)

    def drop(self, key: tuple[str, int]):
        """Stop following ``key`` without deleting its log (a failed directory, a move to another
        one): its fetcher lets it go now, before any await; the FollowerReplica, or None."""
        follower = self.followers.pop(key, None)
        if follower is not None and self.manager is not None:
            self.manager.apply(self._fetched())
        return follower

    def _open(self, image, topic, index: int) -> FollowerReplica | None:
        partition = self.broker.open_partition(image, topic, index, leader_epoch=-1)
        if partition is None:
            return None
        follower = FollowerReplica(partition, leader_id=-1, leader_epoch=-1, high_watermark=partition.high_watermark(),
                                   truncation=self.broker.log_manager.truncation,
                                   on_high_watermark=self.broker.data_appended)
        self.followers[(topic.name, index)] = follower
        return follower

    def _remove(self, follower: FollowerReplica) -> None:
        """Closed and deleted now (no longer a replica here); its fetcher drops it at the end of this
        apply(), before it can touch the log again (the fetchers run on this loop and check their
        partitions after each await)."""
        self.broker.log_deleter.delete(follower.partition)

    def _fetched(self) -> dict:
        return {key: (f, f.partition.topic_id) for key, f in self.followers.items()}

    # -- the fetchers --

    def _manager(self) -> ReplicaFetcherManager | None:
        if self.manager is not None or not self.followers or self._unusable is not None:
            return self.manager
        options, self._unusable = self.client_options()
        if self._unusable is not None:
            log.error("broker %d: the followed partitions are not fetched: %s", self.broker.node_id, self._unusable)
            return None
        c = self.broker.config
        client = NetworkClient(client_id=f"broker-{c.node_id}-fetcher", request_timeout_ms=c.replica_socket_timeout_ms,
                               max_response_bytes=c.replica_fetch_response_max_bytes + c.message_max_bytes + FRAME_SLACK,
                               **options)
        self.broker.inter_broker_clients.add(client)
        settings = FetcherSettings(
            replica_id=c.node_id, num_fetchers=c.num_replica_fetchers, max_bytes=c.replica_fetch_max_bytes,
            response_max_bytes=c.replica_fetch_response_max_bytes, wait_max_ms=c.replica_fetch_wait_max_ms,
            min_bytes=c.replica_fetch_min_bytes, backoff_ms=c.replica_fetch_backoff_ms,
            request_timeout_ms=c.replica_socket_timeout_ms)
        lifecycle = self.broker.lifecycle
        stats = self.broker.topic_stats
        self.manager = ReplicaFetcherManager(settings, client, self.endpoint_of,
                                             lambda: lifecycle.broker_epoch if lifecycle is not None else -1,
                                             lambda size: stats.mark_all_topics(REPLICATION_BYTES_IN, size),
                                             quota=getattr(self.broker, "follower_quota", None),
                                             on_storage_error=lambda follower, error: storage_failure(
                                                 self.broker, follower.partition, append_step(error), error))
        return self.manager

    def client_options(self) -> tuple[dict, str | None]:
        """NetworkClient options for connections to the other brokers' inter-broker listener, and
        None; or {} and why no such connection can be made."""
        if self.listener is None:
            return {}, "the broker has no listener for inter-broker traffic"
        try:
            options = client_options(self.broker.config.inter_broker_security())
        except ConfigError as exc:
            return {}, str(exc)
        reloaded = self.broker.ssl_reload.client_context        # the stores as last changed dynamically
        if reloaded is not None and "ssl_context" in options:
            options["ssl_context"] = reloaded
        dynamic = getattr(self.broker, "dynamic_listeners", None)
        if dynamic is not None and dynamic.inter_broker_sasl is not None and "sasl" in options:
            options["sasl"] = dynamic.inter_broker_sasl         # the mechanism as last changed dynamically
        return options, None

    def endpoint_of(self, broker_id: int) -> tuple[str, int] | None:
        image = self.broker.image()
        registration = None if image is None else image.brokers.get(broker_id)
        endpoint = None if registration is None else registration.listeners.get(self.listener)
        return None if endpoint is None else (endpoint.host, endpoint.port)

    async def stop_fetchers(self) -> None:
        """Stop the fetchers; the followed logs stay open (a clean stop checkpoints them first)."""
        if self.manager is not None:
            await self.manager.close()
            self.manager = None

    async def close(self) -> None:
        """Stop the fetchers, then close the followed logs."""
        await self.stop_fetchers()
        for follower in self.followers.values():
            self.broker.close_partition(follower.partition)
        self.followers.clear()
