"""The group coordinator's part of a share group's share-partition state (KIP-932), as Kafka
4.3.1's GroupMetadataManager and GroupCoordinatorService keep it: which subscribed partitions
the share coordinator has initialized (only those are assigned), which are being initialized,
and which topics' state is being deleted, in the group's ShareGroupStatePartitionMetadata record
(kafkawire.broker.share_records; ``group.initializing``, ``initialized``, ``deleting``).

    change = uninitialized(group, names, view, now_ms, RETRY_INTERVAL_MS)  # subscribed, not initialized
    records.append(initializing_record(group, change))      # written with the heartbeat's records
    initializer.start(group_id, group_epoch, change, adopt)  # then, in the background:
        InitializeShareGroupState (start offset -1: the leader resolves share.auto.offset.reset
        at its first read, as Kafka's SharePartition does), batched per share coordinator;
        the initialized partitions moved to ``initialized`` (assigned at the next heartbeat); if
        any failed, all of them dropped from ``initializing`` (asked for again at a later
        heartbeat), as Kafka's coordinator uninitializes the whole request.

A partition still initializing after ``RETRY_INTERVAL_MS`` (Kafka's
``group.share.initialize.retry.interval.ms``) is asked for again. Where the group has no
ShareGroupStatePartitionMetadata yet (a new group, or one an older kafkawire served, whose
leaders initialized their share-partitions themselves at their first fetch; today's leaders fail
that fetch, as Kafka's) a share-partition whose state the share coordinator already holds with
state epoch 0 (such a leader's initialization) and a start offset is recorded as initialized
without InitializeShareGroupState, so its progress is kept (docs/differences.md).
"""
from __future__ import annotations

import asyncio
import logging

from kafkawire.net import background
from kafkawire.protocol.error_codes import Errors

from . import share_records as rec
from .consumer_coordinator import GroupError, TopicsView

__all__ = ["uninitialized", "initializing_record", "pending_assignment", "assignable", "ShareGroupInitializer",
           "RETRY_INTERVAL_MS", "partitions_of", "without_deleted_topics"]

log = logging.getLogger(__name__)
RETRY_INTERVAL_MS = 30_000           # group.share.initialize.retry.interval.ms (Kafka's default)
UNINITIALIZED_START = -1             # PartitionFactory.UNINITIALIZED_START_OFFSET
LEADER_STATE_EPOCH = 0               # the state epoch of an older kafkawire leader's own initialization


def assignable(group) -> dict:
    """{topic id: frozenset(partitions)} the assignor may give out: the initialized ones."""
    return {t: ps for t, (_, ps) in group.initialized.items()}


def partitions_of(group, view: TopicsView) -> dict:
    """{topic id: set(partitions)} of every share-partition the group has initialized, is
    initializing, or is deleting (every partition the topic has), of topics that exist, as
    shareGroupBuildPartitionDeleteRequest names them."""
    keys: dict = {}
    for table in (group.initialized, group.initializing):
        for t, (_, ps) in table.items():
            if t in view.by_id:              # a deleted topic's state goes with it at the share coordinator
                keys.setdefault(t, set()).update(ps)
    for topic_id in group.deleting:
        if topic_id in view.by_id:
            keys.setdefault(topic_id, set()).update(range(view.by_name[view.by_id[topic_id]][1]))
    return keys


def uninitialized(group, names, view: TopicsView, now_ms: int, retry_ms: int = RETRY_INTERVAL_MS) -> dict:
    """subscribedTopicsChangeMap: {topic id: (name, frozenset(partitions))} of the subscribed
    topics' partitions neither initialized nor initializing for less than ``retry_ms``."""
    change = {}
    for name in sorted(names):
        if name not in view.by_name:
            continue
        topic_id, count = view.by_name[name]
        initialized = group.initialized.get(topic_id, ("", frozenset()))[1]
        if len(initialized) >= count:            # every partition (they never go): the common case
            continue
        done = set(initialized)
        since = group.initializing_since.get(topic_id)
        if topic_id in group.initializing and since is not None and now_ms - since < retry_ms:
            done |= group.initializing[topic_id][1]
        missing = frozenset(range(count)) - done
        if missing:
            change[topic_id] = (name, missing)
    return change


def initializing_record(group, change: dict, view: TopicsView):
    """addInitializingTopicsRecords: ``change`` added to the initializing topics (and dropped
    from the deleting ones), the topics the metadata no longer has left out."""
    initializing = {t: v for t, v in group.initializing.items() if t in view.by_id}
    for topic_id, (name, ps) in change.items():
        initializing[topic_id] = (name, initializing.get(topic_id, ("", frozenset()))[1] | ps)
    deleting = {t: n for t, n in group.deleting.items() if t not in change and t in view.by_id}
    initialized = {t: v for t, v in group.initialized.items() if t in view.by_id}
    return rec.state_partitions_record(group.group_id, initializing, initialized, deleting)


def _moved(group, done: dict, failed: dict):
    """initializeShareGroupState and uninitializeShareGroupState in one record: ``done``
    ({topic id: set}) moved from initializing to initialized, ``failed`` dropped from initializing."""
    initializing, initialized = {}, dict(group.initialized)
    for topic_id, (name, ps) in group.initializing.items():
        left = ps - done.get(topic_id, set()) - failed.get(topic_id, set())
        if left:
            initializing[topic_id] = (name, frozenset(left))
    for topic_id, ps in done.items():
        name = group.initializing.get(topic_id, group.initialized.get(topic_id, ("", frozenset())))[0]
        initialized[topic_id] = (name, initialized.get(topic_id, ("", frozenset()))[1] | frozenset(ps))
    return rec.state_partitions_record(group.group_id, initializing, initialized, group.deleting)


def pending_assignment(group, names, view: TopicsView) -> bool:
    """initializedAssignmentPending: a subscribed topic's initialized partitions differ from
    those the target assignment gives out (a new assignment is due)."""
    if not group.members or not group.initialized or not names:
        return False
    assigned: dict = {}
    for target in group.targets.values():
        for topic_id, ps in target.items():
            assigned.setdefault(topic_id, set()).update(ps)
    return any(name in names and topic_id in view.by_id and assigned.get(topic_id) != set(ps)
               for topic_id, (name, ps) in group.initialized.items())


def without_deleted_topics(group, view: TopicsView):
    """maybeCleanupShareGroupState: the record without the topics the metadata no longer has
    (None when the group names none), written when the metadata shows the deletion
    (ShareGroups.on_metadata, as Kafka's) and at the next heartbeat of a group loaded after it;
    the share coordinator drops their state itself."""
    gone = {t for table in (group.initializing, group.initialized, group.deleting) for t in table
            if t not in view.by_id}
    if not gone:
        return None
    return rec.state_partitions_record(
        group.group_id, {t: v for t, v in group.initializing.items() if t not in gone},
        {t: v for t, v in group.initialized.items() if t not in gone},
        {t: n for t, n in group.deleting.items() if t not in gone})


class ShareGroupInitializer:
    """Runs the share coordinator's part in the background: ``persister`` is a
    kafkawire.broker.share_persister.SharePersister, ``groups`` the kafkawire.broker.share_groups
    ShareGroups whose records say the outcome."""

    def __init__(self, groups, persister):
        self.groups = groups
        self.persister = persister
        self.tasks: set = set()

    def start(self, group_id: str, group_epoch: int, change: dict, adopt: bool) -> None:
        background.start(self.run_or_give_up(group_id, group_epoch, change, adopt),
                         f"[GroupId {group_id}] Initializing the state of share-partitions", keep=self.tasks, logger=log)

    async def run_or_give_up(self, group_id: str, group_epoch: int, change: dict, adopt: bool) -> None:
        """``run``; one that fails unexpectedly (logged by background.start) leaves every
        share-partition of ``change`` uninitialized, asked for again at a later heartbeat, as
        Kafka's coordinator does when the persister's future fails, not initializing until
        RETRY_INTERVAL_MS passes."""
        try:
            await self.run(group_id, group_epoch, change, adopt)
        except asyncio.CancelledError:
            raise
        except Exception:
            self.complete(group_id, {}, {t: set(ps) for t, (_, ps) in change.items()})
            raise

    async def run(self, group_id: str, group_epoch: int, change: dict, adopt: bool) -> None:
        keys = [(t, p) for t, (_, ps) in change.items() for p in sorted(ps)]
        kept: set = set()
        if adopt:
            summaries = await self.persister.summary_many(group_id, keys)
            kept = {k for k, r in summaries.items() if r.error_code == Errors.NONE
                    and r.start_offset != UNINITIALIZED_START and r.state_epoch == LEADER_STATE_EPOCH}
        wanted = [k for k in keys if k not in kept]
        codes = await self.persister.initialize_many(group_id, wanted, group_epoch, UNINITIALIZED_START) \
            if wanted else {}
        done: dict = {}
        failed: dict = {}
        # handlePersisterInitializeResponse: one share-partition's error uninitializes the whole request's
        all_initialized = all(codes.get(key) == Errors.NONE for key in wanted)
        for key in keys:
            ok = key in kept or all_initialized
            (done if ok else failed).setdefault(key[0], set()).add(key[1])
        if failed:
            log.warning("[GroupId %s] Initializing the state of %d share-partitions failed (%s); asked again at "
                        "a later heartbeat.", group_id, sum(len(ps) for ps in failed.values()),
                        sorted({Errors.for_code(c).name for c in codes.values() if c != Errors.NONE}))
        self.complete(group_id, done, failed)

    def complete(self, group_id: str, done: dict, failed: dict) -> None:
        """Write the outcome (a group deleted or moved away meanwhile: nothing to write)."""
        group = self.groups.groups.get(group_id)
        if group is None or not (done or failed):
            return
        try:
            self.groups.write(group_id, [_moved(group, done, failed)])
        except GroupError as exc:
            log.warning("[GroupId %s] Recording initialized share-partitions failed: %s", group_id,
                        Errors.for_code(exc.code).name)

    def close(self) -> None:
        for task in list(self.tasks):
            task.cancel()
