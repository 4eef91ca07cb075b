"""The transaction checks of a Produce request before its appends, as Kafka's
KafkaApis.handleProduceRequest and ReplicaManager.handleProduceAppend make them (KIP-890
verification).

* Transactional batches in a request without a transactional id: every partition
  TRANSACTIONAL_ID_AUTHORIZATION_FAILED (KafkaApis' check, with no authorizer to ask).
* Transactional batches of more than one (producer id, epoch): every partition
  INVALID_PRODUCER_ID_MAPPING ("Transactional records contained more than one producer ID").
* With ``broker.txn_verifier`` set (it asks the transaction's coordinator, wherever it runs,
  kafkawire.broker.txn_verify_routing; an async callable
  ``(transactional_id, producer_id, producer_epoch, [(topic, partition), ...], *,
  produce_version) -> {(topic, partition): error code}``; the Produce version says whether the
  coordinator adds the partitions, v12+ with transaction version 2, or only checks them): each partition led here whose batch would open a transaction gets a
  verification guard (ProducerState.start_verification; an older epoch is INVALID_PRODUCER_EPOCH
  at once), the verifier is asked about those partitions, and a non-zero code is the partition's
  answer, translated as ReplicaManager does: INVALID_TXN_STATE says "Partition was not added to
  the transaction"; NETWORK_EXCEPTION, COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE,
  NOT_COORDINATOR (and CONCURRENT_TRANSACTIONS before Produce v12) become NOT_ENOUGH_REPLICAS,
  which old clients retry. The others append with their guard, which the producer state
  requires of a batch opening a transaction.
* Produce v12+: a CONCURRENT_TRANSACTIONS answer is asked again, every
  ``add.partitions.to.txn.retry.backoff.ms`` for ``add.partitions.to.txn.retry.backoff.max.ms``
  (ReplicaManager's retry, which spares the client a produce retry while its previous transaction
  completes); after that the produce answers CONCURRENT_TRANSACTIONS.
* ``transaction.partition.verification.enable`` false (``broker.txn_verification_enabled()``,
  kafkawire.broker.txn_verify_setting): Produce v11 and older are not verified; v12+ still adds
  its partitions at the coordinator, and no append needs a guard. Without a verifier nothing is
  verified.
"""
from __future__ import annotations

import asyncio
import logging
import struct
import time
from dataclasses import dataclass, field

from kafkawire.protocol.error_codes import Errors

from .producer_state import VERIFICATION_OFF
from .validation import ProduceRefused

__all__ = ["TxnChecks", "transaction_checks"]

log = logging.getLogger(__name__)
# v2 batch header: magic at 16, attributes at 21, producer id at 43, epoch at 51, base sequence at 53.
_HEADER = struct.Struct(">qhi")
_TRANSACTIONAL = 0x10
_RETRIABLE = {Errors.NETWORK_EXCEPTION, Errors.COORDINATOR_LOAD_IN_PROGRESS, Errors.COORDINATOR_NOT_AVAILABLE,
              Errors.NOT_COORDINATOR}
EPOCH_BUMP_PRODUCE_VERSION = 12       # AddPartitionsToTxnManager: Produce v12+ supports TV2's epoch bump


@dataclass
class TxnChecks:
    """Per (topic, partition): the answer already decided (code, message), or the guard to append with."""
    errors: dict = field(default_factory=dict)
    guards: dict = field(default_factory=dict)
    everything: tuple | None = None          # (code, message) for every partition of the request

    def refusal(self, topic: str, index: int):
        return self.everything if self.everything is not None else self.errors.get((topic, index))

    def guard(self, topic: str, index: int):
        return self.guards.get((topic, index), VERIFICATION_OFF)


def _transactional_header(records):
    """(producer id, epoch, base sequence) of a transactional v2 first batch (its producer id
    may be -1), else None."""
    if records is None or len(records) < 61 or records[16] != 2:
        return None
    if not int.from_bytes(records[21:23], "big") & _TRANSACTIONAL:
        return None
    return _HEADER.unpack_from(records, 43)


async def transaction_checks(broker, request, version: int, topic_name, now_ms: int) -> TxnChecks:
    """The checks for ``request``; ``topic_name(t)`` names a request topic (None when unknown);
    ``now_ms`` dates the verifications (they expire as producers do)."""
    checks = TxnChecks()
    batches = {}
    transactional = False       # KafkaApis' RequestUtils.hasTransactionalRecords: any producer id
    for t in request.topic_data:
        name = topic_name(t)
        for p in t.partition_data:
            header = _transactional_header(p.records)
            transactional = transactional or header is not None
            if header is not None and header[0] >= 0:
                batches[(name, p.index)] = header
    if not transactional:
        return checks
    if request.transactional_id is None:      # the error's own text: ApiError.fromThrowable sends none
        checks.everything = (Errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, None)
        return checks
    if not batches:
        return checks
    producers = {(pid, epoch) for pid, epoch, _ in batches.values()}
    if len(producers) > 1:
        checks.everything = (Errors.INVALID_PRODUCER_ID_MAPPING, "Transactional records contained more than one "
                                                                 "producer ID")
        return checks
    if broker.txn_verifier is None:
        return checks
    enabled = _enabled(broker)
    if not enabled and version < EPOCH_BUMP_PRODUCE_VERSION:
        return checks               # ReplicaManager skips what would only check the partition
    await _verify_retrying(broker, request.transactional_id, batches, checks, version, now_ms)
    if not enabled:
        checks.guards = {}          # verified (added), but the appends need no guard (batchMissingRequiredVerification)
    return checks


def _enabled(broker) -> bool:
    setting = getattr(broker, "txn_verification_enabled", None)
    return True if setting is None else setting()


async def _verify_retrying(broker, transactional_id: str, batches: dict, checks: TxnChecks, version: int,
                           now_ms: int) -> None:
    """ReplicaManager.handleProduceAppend's verification: for Produce v12+ a CONCURRENT_TRANSACTIONS
    answer (the producer's previous transaction still completing) is asked again every
    ``add.partitions.to.txn.retry.backoff.ms`` until ``add.partitions.to.txn.retry.backoff.max.ms``
    (at most ``request.timeout.ms``) has passed since the first ask; then the last answers stand."""
    config = broker.config
    retry_for_s = min(getattr(config, "add_partitions_to_txn_retry_backoff_max_ms", 100),
                      getattr(config, "request_timeout_ms", 30_000)) / 1000
    backoff_s = getattr(config, "add_partitions_to_txn_retry_backoff_ms", 20) / 1000
    started = time.monotonic()
    while True:
        checks.errors, checks.guards = {}, {}
        await _verify(broker, transactional_id, batches, checks, version, now_ms)
        if version < EPOCH_BUMP_PRODUCE_VERSION or time.monotonic() - started >= retry_for_s:
            return
        if not any(code == Errors.CONCURRENT_TRANSACTIONS for code, _ in checks.errors.values()):
            return
        await asyncio.sleep(backoff_s)      # ReplicaManager's scheduled retry


async def _verify(broker, transactional_id: str, batches: dict, checks: TxnChecks, version: int,
                  now_ms: int) -> None:
    epoch_bump = version >= EPOCH_BUMP_PRODUCE_VERSION
    producer_id = producer_epoch = None
    for key, (producer_id, producer_epoch, sequence) in batches.items():
        partition = broker.partitions.get(key)
        if partition is None:
            continue                        # the append answers NOT_LEADER_OR_FOLLOWER / unknown
        try:
            guard = partition.producers.start_verification(producer_id, producer_epoch, sequence, now_ms=now_ms,
                                                           supports_epoch_bump=epoch_bump)
        except ProduceRefused as exc:
            checks.errors[key] = (exc.code, str(exc))
            continue
        if guard is not None:
            checks.guards[key] = guard
    if not checks.guards:
        return
    try:
        answers = await broker.txn_verifier(transactional_id, producer_id, producer_epoch, list(checks.guards),
                                            produce_version=version)
    except Exception:
        log.exception("transaction verification of %s failed", transactional_id)
        answers = {key: Errors.COORDINATOR_NOT_AVAILABLE for key in checks.guards}
    for key in checks.guards:
        code = int(answers.get(key, Errors.NONE))
        if code != Errors.NONE:
            checks.errors[key] = _translated(code, epoch_bump)


def _translated(code: int, epoch_bump: bool) -> tuple[int, str]:
    """ReplicaManager's translation of a verification error into the produce answer."""
    error = Errors.for_code(code)
    if code == Errors.INVALID_TXN_STATE:
        return code, "Partition was not added to the transaction"
    if code in _RETRIABLE or (code == Errors.CONCURRENT_TRANSACTIONS and not epoch_bump):
        return (Errors.NOT_ENOUGH_REPLICAS,
                f"Unable to verify the partition has been added to the transaction. Underlying error: {error.name}")
    return code, error.message
