"""The transaction coordinator on the broker's listeners, as Kafka 4.3.1's KafkaApis hands
requests to its TransactionCoordinator: InitProducerId (22) with a transactional id,
AddPartitionsToTxn (24; v0-v3 from clients, v4-v5 batched, verify-only or not, as brokers send
it), AddOffsetsToTxn (25), EndTxn (26), TxnOffsetCommit (28, into the group coordinator),
DescribeTransactions (65) and ListTransactions (66); FindCoordinator(TRANSACTION) is answered
through ``find``.

    apis = TxnApis(broker)                # after broker.group_apis and broker.txn_marker_listeners
    apis.install()                         # broker.txn_verifier and the marker listener
    handlers.update(apis.handlers())
    apis.on_metadata()                     # load newly led __transaction_state partitions

What ``install`` puts on the broker: ``broker.txn_verifier = apis.verify`` (KIP-890: the
produce path's check of a transactional batch, kafkawire.broker.txn_verification),
``broker.txn_verification_enabled`` (``transaction.partition.verification.enable`` as it stands,
kafkawire.broker.txn_verify_setting) and a
listener in ``broker.txn_marker_listeners`` (TxnOffsetCommit's offsets become committed on a
COMMIT marker).

The state machine is kafkawire.broker.txn_coordinator; its records go to __transaction_state
(kafkawire.broker.txn_state_topic); the markers are written in process through
``broker.txn_markers.write_txn_markers(request)`` (kafkawire.broker.txn_marker_sender). The
transaction version a request uses is Kafka's: EndTxn v5+ and AddPartitionsToTxn v4+ are
transaction.version 2, older versions 0; the coordinator's own aborts (fencing, timeouts) use
the cluster's finalized ``transaction.version``.

The ACL checks (TRANSACTIONAL_ID_AUTHORIZATION_FAILED and the others) run before these handlers
(kafkawire.broker.authorization); here TRANSACTIONAL_ID_AUTHORIZATION_FAILED is only the answer
Kafka gives to a 2PC InitProducerId (v6, KIP-939; advertised with unstable.api.versions.enable)
while ``transaction.two.phase.commit.enable`` is false, its default.
"""
from __future__ import annotations

import time

from kafkawire.feature_versions import TRANSACTION_VERSION
from kafkawire.messages.add_offsets_to_txn_response import AddOffsetsToTxnResponse
from kafkawire.messages.add_partitions_to_txn_request import AddPartitionsToTxnTransaction
from kafkawire.messages.add_partitions_to_txn_response import AddPartitionsToTxnResponse
from kafkawire.messages.describe_transactions_response import (DescribeTransactionsResponse, TopicData,
                                                               TransactionState)
from kafkawire.messages.end_txn_response import EndTxnResponse
from kafkawire.messages.init_producer_id_response import InitProducerIdResponse
from kafkawire.protocol.error_codes import Errors
from kafkawire.protocol.handler import ApiHandler

from .coordinator_acks import replicated_handlers
from .group_log import LoopTimer
from .group_records import OFFSETS_TOPIC
from .txn_coordinator import TransactionCoordinator, TxnSettings
from .txn_state_topic import TransactionStateTopic, TxnLoader
from .txn_marker_routing import MarkerRouter
from .txn_marker_sender import MarkerSender
from .txn_offset_commit import TxnOffsetCommitApi
from .txn_records import TRANSACTION_STATE_TOPIC, partition_for
from .txn_state import NO_PRODUCER_EPOCH, NO_PRODUCER_ID
from .txn_verify import add_or_verify
from .txn_verify_routing import VerificationRouter

__all__ = ["TxnApis"]

INIT_PRODUCER_ID, ADD_PARTITIONS_TO_TXN, ADD_OFFSETS_TO_TXN, END_TXN, TXN_OFFSET_COMMIT = 22, 24, 25, 26, 28
DESCRIBE_TRANSACTIONS, LIST_TRANSACTIONS = 65, 66
ABORT_KEY, EXPIRE_KEY = "transaction-abort", "transactional-id-expiration"


class TxnApis:
    def __init__(self, broker):
        self.broker = broker
        c = broker.config
        self.timer = LoopTimer()
        self.markers = MarkerSender(write=self._write_markers, leader_known=self._leader_known)
        self.router = MarkerRouter(broker)
        self.coordinator = TransactionCoordinator(
            TxnSettings(transaction_max_timeout_ms=c.transaction_max_timeout_ms,
                        transactional_id_expiration_ms=c.transactional_id_expiration_ms,
                        two_phase_commit_enable=c.transaction_two_phase_commit_enable),
            owner=self._owner, persist=lambda txn_id, records: self.store.append(txn_id, records),
            generate_producer_id=broker.producer_ids.generate, markers=self.markers,
            now_ms=lambda: int(time.time() * 1000), tv_level=self.tv_level)
        self.markers.coordinator = self.coordinator
        self.loader = TxnLoader(self.coordinator, resume=self.coordinator.resume_markers)
        self.store = TransactionStateTopic(broker, None, self.loader)
        # KIP-890's checks, asked of the transaction's coordinator (this node's through the
        # replicated AddPartitionsToTxn handler, so an added partition's write is in the ISR first)
        add_partitions = replicated_handlers({ADD_PARTITIONS_TO_TXN: ApiHandler(self.add_partitions_to_txn)}, broker)
        self.verifier = VerificationRouter(broker, add_partitions[ADD_PARTITIONS_TO_TXN].handle,
                                           lambda txn_id: self.store.leader_of(txn_id, broker.image()))
        self.txn_offset_commit_api = TxnOffsetCommitApi(broker, self.verifier)     # after broker.group_apis
        self._scheduled = False

    def handlers(self) -> dict[int, ApiHandler]:
        return replicated_handlers({       # answers wait for their coordinator writes' ISR
            INIT_PRODUCER_ID: ApiHandler(self.init_producer_id),
            ADD_PARTITIONS_TO_TXN: ApiHandler(self.add_partitions_to_txn),
            ADD_OFFSETS_TO_TXN: ApiHandler(self.add_offsets_to_txn),
            END_TXN: ApiHandler(self.end_txn),
            TXN_OFFSET_COMMIT: ApiHandler(self.txn_offset_commit_api.txn_offset_commit, max_version=5),  # Kafka's 0-5
            DESCRIBE_TRANSACTIONS: ApiHandler(self.describe_transactions),
            LIST_TRANSACTIONS: ApiHandler(self.list_transactions),
        }, self.broker)

    async def verify(self, transactional_id: str, producer_id: int, producer_epoch: int, partitions, *,
                     produce_version: int | None = None) -> dict:
        """The KIP-890 check of a transactional batch (Broker.txn_verifier), asked of its coordinator: see
        kafkawire.broker.txn_verify_routing."""
        return await self.verifier.verify(transactional_id, producer_id, producer_epoch, partitions,
                                          produce_version=produce_version)

    # -- plumbing --

    def tv_level(self) -> int:
        image = self.broker.image()
        return 0 if image is None else image.finalized_features.get(TRANSACTION_VERSION, 0)

    def _owner(self, transactional_id: str) -> tuple[int, int]:
        code = self.store.coordinator_error(transactional_id)
        if code != Errors.NONE:
            return code, -1
        count = self.store.partitions(self.broker.image())
        partition = self.broker.partitions.get((TRANSACTION_STATE_TOPIC, partition_for(transactional_id, count)))
        return (Errors.NOT_COORDINATOR, -1) if partition is None else (Errors.NONE, partition.leader_epoch)

    def _leader_known(self, topic: str, partition: int) -> bool:
        image = self.broker.image()
        found = None if image is None else image.topics_by_name.get(topic)
        return found is not None and partition in found.partitions and found.partitions[partition].leader >= 0

    async def _write_markers(self, request):
        writer = getattr(self.broker, "txn_markers", None)
        if writer is None:
            raise RuntimeError("this broker writes no transaction markers (WriteTxnMarkers is not installed)")
        if getattr(self.broker, "replica_roles", None) is None:      # a broker without peers: all led here
            return await writer.write_txn_markers(request)
        return await self.router.write(request)      # each partition's marker to its leader

    def on_metadata(self) -> None:
        if not self._scheduled:
            self._scheduled = True
            self._schedule(ABORT_KEY)
            self._schedule(EXPIRE_KEY)
        self.store.on_metadata()

    def install(self) -> None:
        """Set the broker's KIP-890 verifier and add TxnOffsetCommit's marker listener."""
        self.broker.txn_verifier = self.verify
        self.broker.txn_verification_enabled = self.verifier.enabled
        self.broker.txn_marker_listeners.append(self.txn_offset_commit_api.on_marker)

    def _schedule(self, key: str) -> None:
        c = self.broker.config
        if key == ABORT_KEY:
            self.timer.schedule(key, c.transaction_abort_timed_out_transaction_cleanup_interval_ms,
                                lambda: self._periodic(key, self.coordinator.abort_timed_out))
        else:
            self.timer.schedule(key, c.transaction_remove_expired_transaction_cleanup_interval_ms,
                                lambda: self._periodic(key, self.coordinator.expire_transactional_ids))

    def _periodic(self, key: str, task) -> None:
        try:
            task()
        finally:
            self._schedule(key)

    def close(self) -> None:
        self.timer.close()
        self.markers.close()
        self.store.close()
        self.router.close_soon()
        self.verifier.close_soon()

    def find(self, transactional_id: str) -> tuple[int, int]:
        return self.store.find(transactional_id)

    # -- InitProducerId --

    async def init_producer_id(self, ctx, request):
        if request.transactional_id is None:
            return await self.broker.init_producer_id_api.init_producer_id(ctx, request)
        v = ctx.api_version
        code, producer_id, epoch = self._init(request)
        if v < 4 and code == Errors.PRODUCER_FENCED:
            code = Errors.INVALID_PRODUCER_EPOCH
        return InitProducerIdResponse(error_code=code, producer_id=producer_id, producer_epoch=epoch)

    def _init(self, request) -> tuple[int, int, int]:
        if (request.producer_id == -1) != (request.producer_epoch == -1):
            return Errors.INVALID_REQUEST, NO_PRODUCER_ID, NO_PRODUCER_EPOCH
        if request.transactional_id == "":
            return Errors.INVALID_REQUEST, NO_PRODUCER_ID, NO_PRODUCER_EPOCH
        expected = None if request.producer_id == -1 else (request.producer_id, request.producer_epoch)
        return self.coordinator.init_producer_id(request.transactional_id, request.transaction_timeout_ms, expected,
                                                 two_phase=request.enable2_pc, keep_prepared=request.keep_prepared_txn)

    # -- AddPartitionsToTxn, AddOffsetsToTxn --

    async def add_partitions_to_txn(self, ctx, request):
        v = ctx.api_version
        image = self.broker.image()
        if v < 4:
            result = add_or_verify(self.coordinator, image, AddPartitionsToTxnTransaction(
                transactional_id=request.v3_and_below_transactional_id, producer_id=request.v3_and_below_producer_id,
                producer_epoch=request.v3_and_below_producer_epoch, topics=request.v3_and_below_topics), v)
            return AddPartitionsToTxnResponse(results_by_topic_v3_and_below=result.topic_results)
        return AddPartitionsToTxnResponse(error_code=Errors.NONE, results_by_transaction=[
            add_or_verify(self.coordinator, image, t, v) for t in request.transactions])

    async def add_offsets_to_txn(self, ctx, request):
        offsets_partition = (OFFSETS_TOPIC, self.txn_offset_commit_api.partition_of(request.group_id))
        code = self.coordinator.add_partitions(request.transactional_id, request.producer_id, request.producer_epoch,
                                               {offsets_partition}, 0)
        if ctx.api_version < 2 and code == Errors.PRODUCER_FENCED:
            code = Errors.INVALID_PRODUCER_EPOCH
        return AddOffsetsToTxnResponse(error_code=code)

    # -- EndTxn --

    async def end_txn(self, ctx, request):
        v = ctx.api_version
        code, producer_id, epoch = self.coordinator.end_transaction(
            request.transactional_id, request.producer_id, request.producer_epoch, request.committed,
            tv=2 if v > 4 else 0)
        if v < 2 and code == Errors.PRODUCER_FENCED:
            code = Errors.INVALID_PRODUCER_EPOCH
        return EndTxnResponse(error_code=code, producer_id=producer_id, producer_epoch=epoch)

    # -- DescribeTransactions, ListTransactions --

    async def describe_transactions(self, ctx, request):
        states = []
        for transactional_id in request.transactional_ids:
            code, metadata = self.coordinator.describe(transactional_id)
            state = TransactionState(error_code=code, transactional_id=transactional_id, topics=[])
            if metadata is not None:
                by_topic: dict[str, list[int]] = {}
                for topic, partition in sorted(metadata.partitions):
                    by_topic.setdefault(topic, []).append(partition)
                state.transaction_state, state.transaction_timeout_ms = metadata.state, metadata.txn_timeout_ms
                state.transaction_start_time_ms = metadata.txn_start_ms
                state.producer_id, state.producer_epoch = metadata.producer_id, metadata.producer_epoch
                state.topics = [TopicData(topic=t, partitions=p) for t, p in by_topic.items()]
            states.append(state)
        return DescribeTransactionsResponse(transaction_states=states)

    async def list_transactions(self, ctx, request):
        loading = self.store.still_loading()
        return self.coordinator.list_transactions(
            request.state_filters, request.producer_id_filters, getattr(request, "duration_filter", -1),
            getattr(request, "transactional_id_pattern", None), loading)

