"""KIP-890's verification of a transactional batch, asked of the transaction's coordinator
wherever it runs, as Kafka's AddPartitionsToTxnManager asks it: AddPartitionsToTxn requests of
the broker versions (4+, ``verify_only`` unless the client's version lets the partition be
added) to the leader of the transactional id's ``__transaction_state`` partition, over the
inter-broker listener with the replica fetchers' connection settings.

Batching, as AddPartitionsToTxnManager batches: the verifications bound for one coordinator
(node id and endpoint, Kafka's Node) wait in that node's queue; at most one request is in
flight per node, and it carries every transaction queued when it is built (the next one is built
from what queued meanwhile). The queue holds one verification per transactional id: when a newer
one comes, the older is answered INVALID_PRODUCER_EPOCH if its epoch is older, NETWORK_EXCEPTION
if the same (the client is likely retrying), and a newer one with an older epoch than the queued
one is answered INVALID_PRODUCER_EPOCH at once. So a node's queue is bounded as Kafka's is: one
entry per transactional id, each a Produce or TxnOffsetCommit request in process (which the
listeners' admission bounds); no other cap, as Kafka has none.

When the coordinator is this node, the request goes to this node's own AddPartitionsToTxn
handler in process, through the same wrapper as a client's request: its answer waits until the
coordinator's ``__transaction_state`` write reached the in-sync replicas (Kafka's broker sends
itself the request over the network, and the coordinator answers after its replicated append).

    router = VerificationRouter(broker, local=add_partitions_handler, coordinator_of=store_leader_of)
    codes = await router.verify("tx", producer_id, epoch, [("orders", 0)], produce_version=12)
    # {("orders", 0): Errors.NONE}: verified; another code: the partition's answer

``transaction.partition.verification.enable`` (dynamic, ``router.enabled()``): false, a
verification that only checks (Produce v11 and older, TxnOffsetCommit v4 and older) is not sent
and answers NONE; one that adds the partition (transaction.version 2) still goes, as Kafka's
ReplicaManager.maybeSendPartitionsToTransactionCoordinator rules.

The answers are mapped as AddPartitionsToTxnManager maps them: no leader or no endpoint for it
is COORDINATOR_NOT_AVAILABLE; a connection lost or timed out NETWORK_EXCEPTION; a peer without
the broker versions skips verification; a top-level error is every partition's error
(CLUSTER_AUTHORIZATION_FAILED shown as INVALID_TXN_STATE); PRODUCER_FENCED becomes
INVALID_PRODUCER_EPOCH, and TRANSACTION_ABORTABLE INVALID_TXN_STATE for clients too old for it
(decided per transaction; Kafka decides it for a whole request by the operation of the first
transaction queued, which would give TRANSACTION_ABORTABLE to an old client batched behind a new one).
"""
from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass

from kafkawire.messages.add_partitions_to_txn_request import (AddPartitionsToTxnRequest, AddPartitionsToTxnTopic,
                                                              AddPartitionsToTxnTransaction)
from kafkawire.net.client import NetworkClient, TransportError
from kafkawire.protocol.error_codes import Errors
from kafkawire.protocol.handler import RequestContext

from .inter_broker_client import InterBrokerClient
from .txn_verify import ADD_PARTITION, DEFAULT_ERROR, GENERIC_ERROR_SUPPORTED, produce_operation
from .txn_verify_setting import VerificationSetting

__all__ = ["VerificationRouter"]

log = logging.getLogger(__name__)

ADD_PARTITIONS_TO_TXN = 24
FIRST_BROKER_VERSION = 4           # AddPartitionsToTxn v4+: batched, verify_only, sent by brokers only


def _transaction(transactional_id: str, producer_id: int, producer_epoch: int, partitions: list,
                 operation: str) -> AddPartitionsToTxnTransaction:
    topics: dict[str, list[int]] = {}
    for topic, index in partitions:
        topics.setdefault(topic, []).append(index)
    return AddPartitionsToTxnTransaction(
        transactional_id=transactional_id, producer_id=producer_id, producer_epoch=producer_epoch,
        verify_only=operation != ADD_PARTITION,
        topics=[AddPartitionsToTxnTopic(name=name, partitions=indexes) for name, indexes in topics.items()])


def _client_code(code: int, operation: str) -> int:
    if code == Errors.PRODUCER_FENCED:
        return Errors.INVALID_PRODUCER_EPOCH
    if code == Errors.TRANSACTION_ABORTABLE and operation == DEFAULT_ERROR:
        return Errors.INVALID_TXN_STATE
    return code


@dataclass
class _Queued:
    """One transaction's verification waiting for (or in) its node's request."""
    transaction: AddPartitionsToTxnTransaction
    partitions: list
    operation: str
    answer: asyncio.Future

    def give(self, codes: dict) -> None:
        if not self.answer.done():
            self.answer.set_result(codes)

    def give_all(self, code: int) -> None:
        self.give(dict.fromkeys(self.partitions, int(code)))


class _NodeQueue:
    """What waits for a coordinator node's next request, and whether one is in flight."""

    def __init__(self):
        self.queued: dict[str, _Queued] = {}       # by transactional id, in arrival order
        self.sender: asyncio.Task | None = None    # sends while anything is queued; None: idle


def answers_of(response, batch: dict) -> dict:
    """transactional id -> {(topic, partition) -> error code}, from an AddPartitionsToTxn
    response of the broker versions to the request carrying ``batch`` (id -> _Queued)."""
    if response.error_code != Errors.NONE:
        code = Errors.INVALID_TXN_STATE if response.error_code == Errors.CLUSTER_AUTHORIZATION_FAILED \
            else response.error_code
        return {txn_id: dict.fromkeys(q.partitions, int(code)) for txn_id, q in batch.items()}
    answers = {txn_id: dict.fromkeys(q.partitions, int(Errors.NONE)) for txn_id, q in batch.items()}
    for result in response.results_by_transaction:
        codes, queued = answers.get(result.transactional_id), batch.get(result.transactional_id)
        if codes is None:
            continue
        for topic in result.topic_results:
            for p in topic.results_by_partition:
                if (topic.name, p.partition_index) in codes:
                    codes[(topic.name, p.partition_index)] = int(_client_code(p.partition_error_code,
                                                                              queued.operation))
    return answers


class VerificationRouter:
    """``broker``: node_id, config, replica_roles (None: a node without peers), image(); ``local``:
    this node's AddPartitionsToTxn handler ``(ctx, request) -> response``; ``coordinator_of``: the
    broker coordinating a transactional id (-1: none), the leader of its ``__transaction_state``
    partition (TransactionStateTopic.leader_of)."""

    def __init__(self, broker, local, coordinator_of, client: NetworkClient | None = None):
        self.broker = broker
        self.local = local
        self.coordinator_of = coordinator_of
        self.peers = InterBrokerClient(broker, "txn-verification", client)
        self.enabled = VerificationSetting(broker)
        self._nodes: dict[tuple, _NodeQueue] = {}      # (node id, endpoint or None when in process)
        self.requests_sent = 0                         # AddPartitionsToTxn requests sent, local ones too

    async def verify(self, transactional_id: str, producer_id: int, producer_epoch: int, partitions, *,
                     produce_version: int | None = None, operation: str | None = None) -> dict:
        """(topic, partition) -> error code (NONE: verified). Without ``produce_version`` or
        ``operation`` the partitions are only checked (Produce v11's rules)."""
        if operation is None:
            operation = GENERIC_ERROR_SUPPORTED if produce_version is None else produce_operation(produce_version)
        partitions = list(partitions)
        if operation != ADD_PARTITION and not self.enabled():
            return dict.fromkeys(partitions, int(Errors.NONE))
        node = self._node_of(self.coordinator_of(transactional_id))
        if node is None:
            return dict.fromkeys(partitions, int(Errors.COORDINATOR_NOT_AVAILABLE))
        entry = _Queued(_transaction(transactional_id, producer_id, producer_epoch, partitions, operation),
                        partitions, operation, asyncio.get_running_loop().create_future())
        if not self._enqueue(node, entry):
            return dict.fromkeys(partitions, int(Errors.INVALID_PRODUCER_EPOCH))
        try:
            return await entry.answer
        finally:
            queue = self._nodes.get(node)
            if queue is not None and queue.queued.get(transactional_id) is entry:
                del queue.queued[transactional_id]        # cancelled while queued: not sent

    def _node_of(self, coordinator: int) -> tuple | None:
        """The queue key of the coordinator: (node id, None) in process, (node id, endpoint) else."""
        roles = getattr(self.broker, "replica_roles", None)
        if coordinator == self.broker.node_id or (coordinator >= 0 and roles is None):
            return coordinator, None
        endpoint = None if coordinator < 0 else roles.endpoint_of(coordinator)
        return None if endpoint is None else (coordinator, endpoint)

    def _enqueue(self, node: tuple, entry: _Queued) -> bool:
        """Queue ``entry`` for ``node`` by AddPartitionsToTxnManager.addTxnData's rule for a
        transactional id already queued; False: ``entry`` is the fenced one."""
        queue = self._nodes.setdefault(node, _NodeQueue())
        transactional_id, epoch = entry.transaction.transactional_id, entry.transaction.producer_epoch
        older = queue.queued.get(transactional_id)
        if older is not None:
            if older.transaction.producer_epoch > epoch:
                return False
            del queue.queued[transactional_id]
            older.give_all(Errors.INVALID_PRODUCER_EPOCH if older.transaction.producer_epoch < epoch
                           else Errors.NETWORK_EXCEPTION)
        queue.queued[transactional_id] = entry
        if queue.sender is None:
            queue.sender = asyncio.get_running_loop().create_task(self._send_while_queued(node, queue))
        return True

    async def _send_while_queued(self, node: tuple, queue: _NodeQueue) -> None:
        """The node's one request in flight at a time, each carrying what queued before it."""
        batch: dict = {}
        try:
            while queue.queued:
                batch, queue.queued = queue.queued, {}
                try:
                    answers = await self._send(node, batch)
                except Exception as exc:          # a bug, not the peer: every waiter hears of it
                    log.exception("transaction verification request to node %s failed", node[0])
                    for entry in batch.values():
                        if not entry.answer.done():
                            entry.answer.set_exception(exc)
                    continue
                for transactional_id, entry in batch.items():
                    entry.give(answers[transactional_id])
        finally:
            queue.sender = None
            for entry in (*batch.values(), *queue.queued.values()):   # cancelled: nobody waits forever
                if not entry.answer.done():
                    entry.answer.cancel()
            if self._nodes.get(node) is queue:
                del self._nodes[node]

    async def _send(self, node: tuple, batch: dict) -> dict:
        request = AddPartitionsToTxnRequest(transactions=[entry.transaction for entry in batch.values()])
        self.requests_sent += 1
        node_id, endpoint = node
        if endpoint is None:
            return answers_of(await self.local(self._own_context(), request), batch)
        client = self.peers.client()
        try:
            theirs = (await client.connect(endpoint)).get(ADD_PARTITIONS_TO_TXN)
            if theirs is None or theirs[1] < FIRST_BROKER_VERSION:
                log.warning("node %s serves no AddPartitionsToTxn v%d+: transactions are not verified there",
                            node_id, FIRST_BROKER_VERSION)
                return {txn_id: dict.fromkeys(entry.partitions, int(Errors.NONE)) for txn_id, entry in batch.items()}
            response = await client.send(endpoint, request, api_version=min(theirs[1], request.VALID_VERSIONS[1]))
        except (TransportError, OSError, asyncio.TimeoutError):
            return {txn_id: dict.fromkeys(entry.partitions, int(Errors.NETWORK_EXCEPTION))
                    for txn_id, entry in batch.items()}
        return answers_of(response, batch)

    def _own_context(self) -> RequestContext:
        return RequestContext(api_key=ADD_PARTITIONS_TO_TXN, api_version=AddPartitionsToTxnRequest.VALID_VERSIONS[1],
                              correlation_id=0, client_id=f"broker-{self.broker.node_id}-txn-verification",
                              peer=("127.0.0.1", 0), listener_name="", connection_id="in-process")

    def close_soon(self) -> None:
        self.peers.close_soon()
