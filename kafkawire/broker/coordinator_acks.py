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
An answer another request completes after its write takes that request's appends along
(``appends_so_far``) and waits for them too (``wait_also_for``). What Kafka does in a write's
appendFuture, once the write is committed or has failed (a classic group's assignment made
Stable, every member answered), is a callback (``after_write``) run then; a request that parks
until it runs (the leader's SyncGroup) starts the wait itself (``settle_writes``).

    handlers = replicated_handlers(handlers, broker)         # GroupApis / TxnApis.handlers()
    note_append(partition)                                    # OffsetsTopic.persist, after an append
    refusal = not_enough_replicas(partition, min_isr)         # before a __transaction_state append
    appends = appends_so_far()                                # in the request that completes another's answer
    wait_also_for(appends)                                    # in the request answered, once it resumes
    after_write(callback)                                     # callback(error code) once committed or failed
    settle_writes(broker)                                     # ... now, in a task, not after the handler
"""
from __future__ import annotations

import asyncio
import contextvars
import dataclasses
import logging
from contextvars import ContextVar

from kafkawire.net import background
from kafkawire.protocol.error_codes import Errors
from kafkawire.protocol.handler import NO_RESPONSE
from kafkawire.protocol.message import Struct

from .produce import isr_and_min_isr
from .share_state_records import SHARE_STATE_TOPIC
from .txn_records import TRANSACTION_STATE_TOPIC

__all__ = ["after_write", "appends_so_far", "note_append", "not_enough_replicas", "replicated_handlers",
           "set_errors", "settle_writes", "wait_also_for", "wait_for_log_ends"]

log = logging.getLogger(__name__)

# (topic, partition) -> (partition, the offset the high watermark must reach), per request
_appended: ContextVar[dict | None] = ContextVar("kafkawire_coordinator_appends", default=None)
# what runs when the request's wait ends, per request (after_write)
_after_hooks: ContextVar[list | None] = ContextVar("kafkawire_coordinator_after_hooks", default=None)
_settling: set = set()          # the tasks of settle_writes, kept until done

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


def after_write(callback) -> None:
    """``callback(error code)`` runs once the running request's appends so far are committed (NONE)
    or their wait failed (the coordinator's error: a timeout, the partition led elsewhere), as
    Kafka's appendFuture completes; at once with NONE outside a wrapped handler (nothing waits)."""
    hooks = _after_hooks.get()
    if hooks is None:
        callback(Errors.NONE)
    else:
        hooks.append(callback)


def settle_writes(broker) -> None:
    """Start the running request's wait for its appends now, in a task of its own that runs its
    ``after_write`` callbacks at the end: for a request parked until they run. The request's answer
    then waits for nothing more after the handler."""
    pending, hooks = _appended.get(), _after_hooks.get()
    if not hooks:
        return
    appended, callbacks = list(pending.values()), list(hooks)
    pending.clear()
    hooks.clear()
    background.start(_settle(broker, appended, callbacks), "Settling the coordinator's writes", keep=_settling,
                     logger=log, context=contextvars.Context())     # no part of the request


async def _settle(broker, appended: list, callbacks: list) -> None:
    try:
        code = await _wait_by_topic(broker, appended)
    except asyncio.CancelledError:
        raise
    except Exception:                        # a bug: the parked answers still go out, with an error
        log.exception("Waiting for the coordinator's writes to %s to be replicated failed",
                      sorted({f"{p.topic}-{p.partition}" for p, _ in appended}))
        code = Errors.UNKNOWN_SERVER_ERROR
    for callback in callbacks:
        try:
            callback(code)
        except Exception:                    # one callback must not keep the others from running
            log.exception("coordinator write callback %r failed", callback)


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


async def _wait_by_topic(broker, appended: list) -> int:
    """The wait for ``appended`` ((partition, offset) pairs), each topic by its rules: the first error."""
    if not appended or getattr(broker, "replication", None) is None:
        return Errors.NONE
    by_topic: dict[str, list] = {}
    for partition, end in appended:
        by_topic.setdefault(partition.topic, []).append((partition, end))
    for topic, entries in by_topic.items():
        timeout_ms, errors = _rules(broker, topic)
        code = await _wait(broker, entries, timeout_ms, errors)
        if code != Errors.NONE:
            return code
    return Errors.NONE


def _wrap(handler, broker):
    async def handle(ctx, request):
        pending: dict = {}
        hooks: list = []
        token, hooks_token = _appended.set(pending), _after_hooks.set(hooks)
        try:
            response = await handler(ctx, request)
        finally:
            _appended.reset(token)
            _after_hooks.reset(hooks_token)
        code = Errors.NONE if response is NO_RESPONSE else await _wait_by_topic(broker, list(pending.values()))
        if code != Errors.NONE:
            set_errors(response, code)
        for hook in hooks:
            hook(code)
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

