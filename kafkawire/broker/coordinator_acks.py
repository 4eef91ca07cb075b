"""The coordinators' answers waiting for their writes to reach the in-sync replicas, as Kafka's do.

Kafka's group coordinator (CoordinatorRuntime, CoordinatorPartitionWriter) appends to
``__consumer_offsets`` on the leader and completes the request's answer only once the partition's
high watermark passed the records (a deferred event); after ``offsets.commit.timeout.ms`` the
answer is REQUEST_TIMED_OUT, which GroupCoordinatorService answers as COORDINATOR_NOT_AVAILABLE,
and a partition no longer led here NOT_COORDINATOR. Kafka's transaction coordinator
(TransactionStateManager.appendTransactionToLog) appends to ``__transaction_state`` with acks=-1
and a timeout of ``request.timeout.ms``: NOT_ENOUGH_REPLICAS (before the append),
NOT_ENOUGH_REPLICAS_AFTER_APPEND and REQUEST_TIMED_OUT become COORDINATOR_NOT_AVAILABLE,
NOT_LEADER_OR_FOLLOWER NOT_COORDINATOR.

kafkawire's coordinators are synchronous: their ``persist`` appends at once. So the request
handlers of the coordinator APIs are wrapped (``replicated_handlers``): the appends a handler's
``persist`` made (``note_append``, through a context variable of the request's task) are awaited
after the handler, with kafkawire.broker.delayed_produce's waiting (Kafka's DelayedProduce), and
a failed wait turns every error code of the answer that was NONE into the coordinator's error.
An answer another request completes after its write (the members' SyncGroup answers that the
leader's assignment completes, which Kafka gives in the write's appendFuture, once committed) takes
that request's appends along (``appends_so_far``) and waits for them too (``wait_also_for``).

    handlers = replicated_handlers(handlers, broker)         # GroupApis / TxnApis.handlers()
    note_append(partition)                                    # OffsetsTopic.persist, after an append
    refusal = not_enough_replicas(partition, min_isr)         # before a __transaction_state append
    appends = appends_so_far()                                # in the request that completes another's answer
    wait_also_for(appends)                                    # in the request answered, once it resumes
"""
from __future__ import annotations

import dataclasses
from contextvars import ContextVar

from kafkawire.protocol.error_codes import Errors
from kafkawire.protocol.handler import NO_RESPONSE
from kafkawire.protocol.message import Struct

from .produce import isr_and_min_isr
from .share_state_records import SHARE_STATE_TOPIC
from .txn_records import TRANSACTION_STATE_TOPIC

__all__ = ["appends_so_far", "note_append", "not_enough_replicas", "on_wait_failure", "replicated_handlers",
           "set_errors", "wait_also_for", "wait_for_log_ends"]

# (topic, partition) -> (partition, the offset the high watermark must reach), per request
_appended: ContextVar[dict | None] = ContextVar("kafkawire_coordinator_appends", default=None)
# what runs when the request's wait fails, per request (on_wait_failure)
_failure_hooks: ContextVar[list | None] = ContextVar("kafkawire_coordinator_failure_hooks", default=None)

# GroupCoordinatorService.handleOperationException of the runtime's write failures
GROUP_ERRORS = {Errors.REQUEST_TIMED_OUT: Errors.COORDINATOR_NOT_AVAILABLE,
                Errors.NOT_LEADER_OR_FOLLOWER: Errors.NOT_COORDINATOR,
                Errors.NOT_ENOUGH_REPLICAS_AFTER_APPEND: Errors.NONE}     # the runtime waits for the HW only
# TransactionStateManager.appendTransactionToLog's mapping
TXN_ERRORS = {Errors.REQUEST_TIMED_OUT: Errors.COORDINATOR_NOT_AVAILABLE,
              Errors.NOT_ENOUGH_REPLICAS_AFTER_APPEND: Errors.COORDINATOR_NOT_AVAILABLE,
              Errors.NOT_LEADER_OR_FOLLOWER: Errors.NOT_COORDINATOR}


def note_append(partition) -> None:
    """Record that the running request appended to ``partition`` up to its log end (nothing
    when no wrapped handler runs: a timer's write, which no client waits for)."""
    pending = _appended.get()
    if pending is not None:
        pending[(partition.topic, partition.partition)] = (partition, partition.log.log_end_offset)


def on_wait_failure(callback) -> None:
    """``callback(error code)`` runs if the running request's wait for its appends fails (Kafka's
    appendFuture completed exceptionally: a timeout, the partition led elsewhere); nothing outside
    a wrapped handler."""
    hooks = _failure_hooks.get()
    if hooks is not None:
        hooks.append(callback)


def appends_so_far() -> list:
    """The appends the running request made until now, as (partition, offset) pairs (none outside a
    wrapped handler)."""
    pending = _appended.get()
    return list(pending.values()) if pending else []


def wait_also_for(appends: list) -> None:
    """The running request's answer waits for ``appends`` (``appends_so_far`` of another request) too."""
    pending = _appended.get()
    if pending is None:
        return
    for partition, end in appends:
        key = (partition.topic, partition.partition)
        known = pending.get(key)
        if known is None or known[1] < end:
            pending[key] = (partition, end)


def not_enough_replicas(partition, min_insync_replicas: int) -> bool:
    """Partition.appendRecordsToLeader's acks=-1 check: the committed ISR under the effective min ISR."""
    if partition.replicas is None:
        return False
    isr, min_isr = isr_and_min_isr(partition, None, min_insync_replicas)
    return len(isr) < min_isr


class _Answer:
    __slots__ = ("error_code",)

    def __init__(self):
        self.error_code = Errors.NONE


async def _wait(broker, appended: list, timeout_ms: int, errors: dict) -> int:
    """Until the high watermark of every partition passed its appends: the coordinator's error."""
    answers = [(partition, _Answer(), end) for partition, end in appended]
    for partition, answer, _ in answers:
        if broker.partitions.get((partition.topic, partition.partition)) is not partition:
            answer.error_code = Errors.NOT_LEADER_OR_FOLLOWER      # led elsewhere since: nothing to wait for
    await broker.replication.wait_for_acks([a for a in answers if a[1].error_code == Errors.NONE], timeout_ms)
    for _, answer, _ in answers:
        code = errors.get(Errors.for_code(answer.error_code), answer.error_code)
        if code != Errors.NONE:
            return code
    return Errors.NONE


async def wait_for_log_ends(broker, partitions: list, timeout_ms: int) -> list[int]:
    """CoordinatorRuntime's write event without records (OffsetFetch with ``require_stable``): once
    each of ``partitions`` has its high watermark at its log end as it is now (the writes before
    the read committed), NONE; REQUEST_TIMED_OUT after ``timeout_ms``, NOT_LEADER_OR_FOLLOWER when
    led elsewhere meanwhile. A None in ``partitions`` is NONE at once; nothing waits without
    replication (a broker of one replica)."""
    if getattr(broker, "replication", None) is None:
        return [Errors.NONE] * len(partitions)
    answers = [(partition, _Answer(), partition.log.log_end_offset) for partition in partitions
               if partition is not None]
    codes = {}
    for partition, answer, _ in answers:
        if broker.partitions.get((partition.topic, partition.partition)) is not partition:
            answer.error_code = Errors.NOT_LEADER_OR_FOLLOWER
    await broker.replication.wait_for_acks([a for a in answers if a[1].error_code == Errors.NONE], timeout_ms)
    for partition, answer, _ in answers:                    # the runtime waits for the high watermark only
        codes[id(partition)] = Errors.NONE if answer.error_code == Errors.NOT_ENOUGH_REPLICAS_AFTER_APPEND \
            else answer.error_code
    return [Errors.NONE if p is None else codes[id(p)] for p in partitions]


def _rules(broker, topic: str) -> tuple[int, dict]:
    if topic == TRANSACTION_STATE_TOPIC:
        return broker.config.request_timeout_ms, TXN_ERRORS
    if topic == SHARE_STATE_TOPIC:            # the share coordinator's runtime: the group coordinator's rules
        return broker.config.share_coordinator_write_timeout_ms, GROUP_ERRORS
    return broker.config.offsets_commit_timeout_ms, GROUP_ERRORS


def _wrap(handler, broker):
    async def handle(ctx, request):
        pending: dict = {}
        hooks: list = []
        token, hooks_token = _appended.set(pending), _failure_hooks.set(hooks)
        try:
            response = await handler(ctx, request)
        finally:
            _appended.reset(token)
            _failure_hooks.reset(hooks_token)
        if not pending or response is NO_RESPONSE or getattr(broker, "replication", None) is None:
            return response
        by_topic: dict[str, list] = {}
        for (topic, _), entry in pending.items():
            by_topic.setdefault(topic, []).append(entry)
        for topic, appended in by_topic.items():
            timeout_ms, errors = _rules(broker, topic)
            code = await _wait(broker, appended, timeout_ms, errors)
            if code != Errors.NONE:
                set_errors(response, code)
                for hook in hooks:
                    hook(code)
                break
        return response
    return handle


def replicated_handlers(handlers: dict, broker) -> dict:
    """The ApiHandlers of ``handlers``, each answering only once its coordinator writes are replicated."""
    return {key: dataclasses.replace(h, handle=_wrap(h.handle, broker)) for key, h in handlers.items()}


_ERROR_FIELDS = ("error_code", "partition_error_code")


def _holders(message, depth: int, out: list) -> None:
    for f in type(message)._FIELDS:
        value = getattr(message, f.py_name, None)
        if f.py_name in _ERROR_FIELDS:
            out.append((depth, message, f.py_name))
        elif isinstance(value, Struct):
            _holders(value, depth + 1, out)
        elif isinstance(value, list):
            for item in value:
                if isinstance(item, Struct):
                    _holders(item, depth + 1, out)


def set_errors(response, code: int) -> None:
    """Every error code of ``response`` that says NONE becomes ``code``: the innermost ones (the
    partitions, groups or transactions the write was for) when the answer has any, else the top one."""
    holders: list = []
    _holders(response, 0, holders)
    deepest = max((depth for depth, _, _ in holders), default=0)
    for depth, message, name in holders:
        if (depth > 0 or deepest == 0) and getattr(message, name) == Errors.NONE:
            setattr(message, name, int(code))

