"""KIP-890's verification of a transactional batch, asked of the transaction's coordinator
wherever it runs, as Kafka's AddPartitionsToTxnManager asks it: an AddPartitionsToTxn request
of the broker versions (4+, one transaction, ``verify_only`` unless the client's version lets
the partition be added) to the leader of the transactional id's ``__transaction_state``
partition, over the inter-broker listener with the replica fetchers' connection settings.

When that leader is this node, the request goes to this node's own AddPartitionsToTxn handler
in process, through the same wrapper as a client's request: its answer waits until the
coordinator's ``__transaction_state`` write reached the in-sync replicas (Kafka's broker sends
itself the request over the network, and the coordinator answers after its replicated append).

    router = VerificationRouter(broker, local=add_partitions_handler, coordinator_of=store_leader_of)
    codes = await router.verify("tx", producer_id, epoch, [("orders", 0)], produce_version=12)
    # {("orders", 0): Errors.NONE}: verified; another code: the partition's answer

The answers are mapped as AddPartitionsToTxnManager maps them: no leader or no endpoint for it
is COORDINATOR_NOT_AVAILABLE; a connection lost or timed out NETWORK_EXCEPTION; a peer without
the broker versions skips verification; a top-level error is every partition's error
(CLUSTER_AUTHORIZATION_FAILED shown as INVALID_TXN_STATE); PRODUCER_FENCED becomes
INVALID_PRODUCER_EPOCH, and TRANSACTION_ABORTABLE INVALID_TXN_STATE for clients too old for it.

Deliberately different from Kafka: Kafka batches the verifications bound for one coordinator
into one request with at most one in flight per node, and answers an older pending request of
the same transactional id NETWORK_EXCEPTION (or INVALID_PRODUCER_EPOCH) when a newer one comes.
kafkawire sends each verification as its own request; the coordinator's epoch checks still
fence an older producer, so only the batching (fewer requests under load) is missing.
"""
from __future__ import annotations

import asyncio

from kafkawire.messages.add_partitions_to_txn_request import (AddPartitionsToTxnRequest, AddPartitionsToTxnTopic,
                                                              AddPartitionsToTxnTransaction)
from kafkawire.net.client import NetworkClient, TransportError
from kafkawire.protocol.error_codes import Errors
from kafkawire.protocol.handler import RequestContext

from .inter_broker_client import InterBrokerClient
from .txn_verify import ADD_PARTITION, DEFAULT_ERROR, GENERIC_ERROR_SUPPORTED, produce_operation

__all__ = ["VerificationRouter"]

ADD_PARTITIONS_TO_TXN = 24
FIRST_BROKER_VERSION = 4           # AddPartitionsToTxn v4+: batched, verify_only, sent by brokers only


def _request(transactional_id: str, producer_id: int, producer_epoch: int, partitions: list,
             operation: str) -> AddPartitionsToTxnRequest:
    topics: dict[str, list[int]] = {}
    for topic, index in partitions:
        topics.setdefault(topic, []).append(index)
    return AddPartitionsToTxnRequest(transactions=[AddPartitionsToTxnTransaction(
        transactional_id=transactional_id, producer_id=producer_id, producer_epoch=producer_epoch,
        verify_only=operation != ADD_PARTITION,
        topics=[AddPartitionsToTxnTopic(name=name, partitions=indexes) for name, indexes in topics.items()])])


def _client_code(code: int, operation: str) -> int:
    if code == Errors.PRODUCER_FENCED:
        return Errors.INVALID_PRODUCER_EPOCH
    if code == Errors.TRANSACTION_ABORTABLE and operation == DEFAULT_ERROR:
        return Errors.INVALID_TXN_STATE
    return code


def answers_of(response, partitions: list, operation: str) -> dict:
    """(topic, partition) -> error code, from an AddPartitionsToTxn response of the broker versions."""
    if response.error_code != Errors.NONE:
        code = Errors.INVALID_TXN_STATE if response.error_code == Errors.CLUSTER_AUTHORIZATION_FAILED \
            else response.error_code
        return dict.fromkeys(partitions, int(code))
    codes = dict.fromkeys(partitions, int(Errors.NONE))
    for result in response.results_by_transaction:
        for topic in result.topic_results:
            for p in topic.results_by_partition:
                if (topic.name, p.partition_index) in codes:
                    codes[(topic.name, p.partition_index)] = int(_client_code(p.partition_error_code, operation))
    return codes


class VerificationRouter:
    """``broker``: node_id, config, replica_roles (None: a node without peers); ``local``: this
    node's AddPartitionsToTxn handler ``(ctx, request) -> response``; ``coordinator_of``: the
    broker coordinating a transactional id (-1: none), the leader of its ``__transaction_state``
    partition (TransactionStateTopic.leader_of)."""

    def __init__(self, broker, local, coordinator_of, client: NetworkClient | None = None):
        self.broker = broker
        self.local = local
        self.coordinator_of = coordinator_of
        self.peers = InterBrokerClient(broker, "txn-verification", client)

    async def verify(self, transactional_id: str, producer_id: int, producer_epoch: int, partitions, *,
                     produce_version: int | None = None, operation: str | None = None) -> dict:
        """(topic, partition) -> error code (NONE: verified). Without ``produce_version`` or
        ``operation`` the partitions are only checked (Produce v11's rules)."""
        if operation is None:
            operation = GENERIC_ERROR_SUPPORTED if produce_version is None else produce_operation(produce_version)
        partitions = list(partitions)
        coordinator = self.coordinator_of(transactional_id)
        request = _request(transactional_id, producer_id, producer_epoch, partitions, operation)
        roles = getattr(self.broker, "replica_roles", None)
        if coordinator == self.broker.node_id or (coordinator >= 0 and roles is None):
            return answers_of(await self.local(self._own_context(), request), partitions, operation)
        endpoint = None if coordinator < 0 else roles.endpoint_of(coordinator)
        if endpoint is None:
            return dict.fromkeys(partitions, int(Errors.COORDINATOR_NOT_AVAILABLE))
        return await self._remote(endpoint, request, partitions, operation)

    async def _remote(self, endpoint, request, partitions: list, operation: str) -> dict:
        client = self.peers.client()
        try:
            theirs = (await client.connect(endpoint)).get(ADD_PARTITIONS_TO_TXN)
            if theirs is None or theirs[1] < FIRST_BROKER_VERSION:
                return dict.fromkeys(partitions, int(Errors.NONE))      # no verification there: skip it
            response = await client.send(endpoint, request, api_version=min(theirs[1], request.VALID_VERSIONS[1]))
        except (TransportError, OSError, asyncio.TimeoutError):
            return dict.fromkeys(partitions, int(Errors.NETWORK_EXCEPTION))
        return answers_of(response, partitions, operation)

    def _own_context(self) -> RequestContext:
        return RequestContext(api_key=ADD_PARTITIONS_TO_TXN, api_version=AddPartitionsToTxnRequest.VALID_VERSIONS[1],
                              correlation_id=0, client_id=f"broker-{self.broker.node_id}-txn-verification",
                              peer=("127.0.0.1", 0), listener_name="", connection_id="in-process")

    def close_soon(self) -> None:
        self.peers.close_soon()
