"""The broker's answers from the committed metadata image: Metadata (3) and DescribeCluster (60).

Metadata (KafkaApis.handleTopicMetadataRequest over KRaftMetadataCache): the unfenced brokers
with an endpoint on the listener the request came in on; each topic's partitions with leader,
leader epoch, replicas and ISR (LEADER_NOT_AVAILABLE with leader -1 when the leader is not an
unfenced broker there; from version 6 LISTENER_NOT_FOUND when it is registered without an
endpoint on this listener, as on a listener added dynamically; the offline replicas as
KRaftMetadataCache.getOfflineReplicas names them, ``offline_replicas``); as controller id an alive broker (clients of a KRaft cluster never talk
to controllers: Kafka names a random alive broker, here this one). A topic the image lacks is
UNKNOWN_TOPIC_OR_PARTITION (or INVALID_TOPIC_EXCEPTION for an illegal name); when
``auto.create.topics.enable`` is true (Kafka's default) and the request allows it, the broker
also asks the controller to create it with ``num.partitions`` and ``default.replication.factor``
(AutoTopicCreationManager: one CreateTopics per request for the names not already in flight,
answered UNKNOWN_TOPIC_OR_PARTITION meanwhile, so the client asks again). Internal topic names
(``__consumer_offsets``, ``__transaction_state``, ``__share_group_state``) are not auto-created:
their coordinators (slices 2 and 3) create them.

CreateTopics and the other admin requests go to the active controller in an Envelope
(kafkawire.broker.forwarding).
"""
from __future__ import annotations

import asyncio
import dataclasses
import logging

from kafkawire.messages.create_topics_request import CreatableTopic, CreateTopicsRequest
from kafkawire.messages.describe_cluster_response import DescribeClusterBroker, DescribeClusterResponse
from kafkawire.messages.metadata_response import (MetadataResponse, MetadataResponseBroker,
                                                  MetadataResponsePartition, MetadataResponseTopic)
from kafkawire.metadata.registrations import LOST, MIGRATING, UNASSIGNED
from kafkawire.net import background
from kafkawire.net.client import TransportError
from kafkawire.net.metadata_topic import CLUSTER_OPERATIONS, INT32_MIN, TOPIC_OPERATIONS, legal_topic_name
from kafkawire.net.server import CloseConnection
from kafkawire.protocol.error_codes import Errors
from kafkawire.raft.contract import NoLeader, NotLeader

__all__ = ["MetadataApis", "INTERNAL_TOPICS", "offline_replicas"]

log = logging.getLogger(__name__)
INTERNAL_TOPICS = frozenset(("__consumer_offsets", "__transaction_state", "__share_group_state"))
CREATE_TOPICS, CREATE_TOPICS_VERSION = 19, 7


class MetadataApis:
    """Metadata and DescribeCluster (and the topics Metadata auto-creates) for ``broker`` (a kafkawire.broker.Broker: its
    ``image()``, ``node_id``, ``cluster_id``, ``config`` and ``forwarder``)."""

    def __init__(self, broker):
        self.broker = broker
        self._creating: set[str] = set()          # auto-created names in flight
        self._tasks: set[asyncio.Task] = set()

    # -- Metadata --

    async def metadata(self, ctx, request):
        v = ctx.api_version
        image = self.broker.image()
        brokers = self._alive_brokers(image, ctx.listener_name)
        wanted = request.topics
        if wanted is None or (v == 0 and not wanted):
            names = sorted(image.topics_by_name) if image is not None else []
            topics = [self._topic(image, image.topics_by_name[n], brokers, request, ctx) for n in names]
        else:
            topics = []
            missing = []
            for t in wanted:
                topic = self._find(image, t)
                if topic is not None:
                    topics.append(self._topic(image, topic, brokers, request, ctx))
                else:
                    topics.append(self._unknown(t, v))
                    if t.name is not None:
                        missing.append(t.name)
            allow = v < 4 or request.allow_auto_topic_creation
            if missing and allow and self.broker.config.auto_create_topics_enable:
                self._auto_create(missing, ctx)
        alive = self.broker.node_id if self.broker.node_id in brokers else -1
        return MetadataResponse(
            brokers=[MetadataResponseBroker(node_id=i, host=e.host, port=e.port, rack=r)
                     for i, (e, r) in sorted(brokers.items())],
            cluster_id=self.broker.cluster_id, controller_id=alive, topics=topics,
            cluster_authorized_operations=CLUSTER_OPERATIONS if getattr(
                request, "include_cluster_authorized_operations", False) and 8 <= v <= 10 else INT32_MIN)

    @staticmethod
    def _alive_brokers(image, listener_name: str) -> dict:
        """broker id -> (endpoint on this listener, rack) of the unfenced brokers."""
        if image is None:
            return {}
        alive = {}
        for broker_id, registration in image.brokers.items():
            endpoint = registration.listeners.get(listener_name)
            if not registration.fenced and endpoint is not None:
                alive[broker_id] = (endpoint, registration.rack)
        return alive

    @staticmethod
    def _find(image, t):
        if image is None:
            return None
        if t.name is None:
            return image.topics_by_id.get(t.topic_id)
        return image.topics_by_name.get(t.name)

    @staticmethod
    def _unknown(t, version: int) -> MetadataResponseTopic:
        if t.name is None:
            return MetadataResponseTopic(error_code=Errors.UNKNOWN_TOPIC_ID, name=None if version >= 12 else "",
                                         topic_id=t.topic_id, partitions=[])
        code = Errors.UNKNOWN_TOPIC_OR_PARTITION if legal_topic_name(t.name) else Errors.INVALID_TOPIC_EXCEPTION
        return MetadataResponseTopic(error_code=code, name=t.name, topic_id=t.topic_id,
                                     is_internal=t.name in INTERNAL_TOPICS, partitions=[])

    @staticmethod
    def _topic(image, topic, brokers: dict, request, ctx) -> MetadataResponseTopic:
        partitions = []
        for index in sorted(topic.partitions):
            p = topic.partitions[index]
            leader = p.leader if p.leader in brokers else -1
            partitions.append(MetadataResponsePartition(
                error_code=Errors.NONE if leader >= 0 else _no_leader(image, p.leader, ctx), partition_index=index,
                leader_id=leader, leader_epoch=p.leader_epoch, replica_nodes=list(p.replicas),
                isr_nodes=list(p.isr), offline_replicas=offline_replicas(image, p, ctx.listener_name)))
        return MetadataResponseTopic(
            name=topic.name, topic_id=topic.id, is_internal=topic.name in INTERNAL_TOPICS, partitions=partitions,
            topic_authorized_operations=TOPIC_OPERATIONS if request.include_topic_authorized_operations
            else INT32_MIN)

    def _auto_create(self, names: list[str], ctx) -> None:
        """Ask the active controller to create ``names`` on behalf of the client of ``ctx``: in an
        Envelope with its principal and client id (KRaftTopicCreator.createTopicWithPrincipal), so
        that the controller authorizes the creation as that client and counts it against the
        client's controller_mutation_rate (kafkawire.controller.mutation_quota)."""
        config = self.broker.config
        fresh = [n for n in dict.fromkeys(names)
                 if legal_topic_name(n) and n not in INTERNAL_TOPICS and n not in self._creating]
        if not fresh:
            return
        self._creating.update(fresh)
        request = CreateTopicsRequest(timeout_ms=30_000, validate_only=False, topics=[
            CreatableTopic(name=n, num_partitions=config.num_partitions,
                           replication_factor=config.default_replication_factor, assignments=[], configs=[])
            for n in fresh])
        # CreateTopics v7 (the newest both serve): the client's header, as Kafka's broker writes it
        on_behalf = dataclasses.replace(ctx, api_key=CREATE_TOPICS, api_version=CREATE_TOPICS_VERSION, header=None)
        background.start(self._create(request, fresh, on_behalf), f"Auto topic creation of {', '.join(fresh)}",
                         keep=self._tasks, logger=log)

    async def _create(self, request, names: list[str], ctx) -> None:
        try:
            response = await self.broker.forwarder.forward(ctx, request)
            for result in response.topics:
                if result.error_code not in (Errors.NONE, Errors.TOPIC_ALREADY_EXISTS):
                    log.warning("Auto topic creation failed for %s with error '%s': %s", result.name,
                                Errors.for_code(result.error_code).name, result.error_message)
        except (NoLeader, NotLeader, TransportError, TimeoutError, OSError, CloseConnection) as exc:
            log.warning("auto topic creation of %s failed: %r", ", ".join(names), exc)
        finally:
            self._creating.difference_update(names)

    # -- DescribeCluster --

    async def describe_cluster(self, ctx, request):
        brokers = self._alive_brokers(self.broker.image(), ctx.listener_name)
        return DescribeClusterResponse(
            endpoint_type=request.endpoint_type, cluster_id=self.broker.cluster_id,
            controller_id=self.broker.node_id if self.broker.node_id in brokers else -1,
            brokers=[DescribeClusterBroker(broker_id=i, host=e.host, port=e.port, rack=r)
                     for i, (e, r) in sorted(brokers.items())],
            cluster_authorized_operations=CLUSTER_OPERATIONS if request.include_cluster_authorized_operations
            else INT32_MIN)

    def close(self) -> None:
        for task in self._tasks:
            task.cancel()


def _no_leader(image, leader: int, ctx) -> Errors:
    """KRaftMetadataCache.partitionMetadata's error for a leader not served on the request's
    listener: LISTENER_NOT_FOUND (from version 6) when the leader is registered without an
    endpoint on it (a listener added dynamically is not registered, see
    kafkawire.broker.dynamic_listeners), else LEADER_NOT_AVAILABLE."""
    registration = image.brokers.get(leader)
    if ctx.api_version >= 6 and registration is not None and ctx.listener_name not in registration.listeners:
        return Errors.LISTENER_NOT_FOUND
    return Errors.LEADER_NOT_AVAILABLE


def offline_replicas(image, p, listener_name: str) -> list[int]:
    """KRaftMetadataCache.getOfflineReplicas: the replicas of partition ``p`` whose broker is not
    registered, is fenced, has no endpoint on the listener, or does not have the replica's
    directory online (BrokerRegistration.hasOnlineDir: an unassigned or migrating replica is
    online, a lost one is not, a broker that registered no directories has them all)."""
    offline, directories = [], None
    for index, replica in enumerate(p.replicas):
        broker = image.brokers.get(replica)
        if broker is None or broker.fenced or listener_name not in broker.listeners:
            offline.append(replica)
            continue
        if directories is None:
            directories = p.directories if getattr(p, "directory_ids", ()) else ()
        directory = directories[index] if index < len(directories) else UNASSIGNED
        if directory == LOST or (directory not in (UNASSIGNED, MIGRATING) and broker.directories
                                 and directory not in broker.directories):
            offline.append(replica)
    return offline
