"""Incremental fetch sessions (KIP-227), sans-I/O: Kafka 4.3.1's FetchManager, FetchSession,
FetchSessionCacheShard and the FetchContext kinds (SessionErrorContext, SessionlessFetchContext,
FullFetchContext, IncrementalFetchContext).

A fetch with session epoch 0 (or any request from v7 on naming no session) is *full*: it names
every partition; the broker answers all of them and, if the cache has room, creates a session
holding each partition's request parameters and last answered high watermark and log start
offset, answering its id. The client's next fetches are *incremental* (that id, epochs 1, 2, ...):
they name only partitions added or changed, drop others in ``forgotten_topics_data``, and the
broker reads every partition of the session but answers only those with records, a new high
watermark or log start offset, or an error. Epoch -1 closes the session (the fetch itself is
answered sessionless, id 0); a full fetch naming a session closes that one too. Sessions created
at v13+ key partitions by topic id, older ones by name; a session is used only at versions on the
same side of 13 (else FETCH_SESSION_TOPIC_ID_ERROR).

The cache holds at most ``max.incremental.fetch.session.cache.slots`` sessions. When it is full a
new session may evict, as Kafka's tryEvict: the least recently used session if it has not been
used for more than ``EVICTION_MS``; else the least valuable evictable one (unprivileged before
privileged, then fewest partitions, then lowest id) when the newcomer is worth at least as much.
A session is evictable by any newcomer once it was last used more than ``EVICTION_MS`` after its
creation, and by a follower's (privileged) newcomer if it is a consumer's. Kafka splits the slots
into 8 shards (for lock contention) and evicts within one; here one cache holds them all.
Times are milliseconds from the injected clock.
"""
from __future__ import annotations

import random
import time
from contextvars import ContextVar

from kafkawire.messages.fetch_request import FetchPartition
from kafkawire.messages.fetch_response import PartitionData
from kafkawire.protocol.error_codes import Errors

__all__ = ["EVICTION_MS", "FetchManager", "FetchSession", "FetchSessionCache", "READABLE_TOPIC", "next_epoch",
           "topic_authorization_failed"]

# A consumer's fetch under an authorizer: whether its principal may READ a topic (by name), set by
# the broker's ACL check around the fetch (kafkawire.broker.authorization). Every partition of the
# fetch context, the session's included, is checked, as KafkaApis checks fetchContext.foreachPartition.
READABLE_TOPIC: ContextVar = ContextVar("READABLE_TOPIC", default=None)


def topic_authorization_failed(index: int) -> PartitionData:
    """FetchResponse.partitionResponse(TOPIC_AUTHORIZATION_FAILED): no data, offsets -1."""
    return PartitionData(partition_index=index, error_code=Errors.TOPIC_AUTHORIZATION_FAILED, high_watermark=-1,
                         last_stable_offset=-1, log_start_offset=-1, records=b"")

INVALID_SESSION_ID = 0
INITIAL_EPOCH = 0
FINAL_EPOCH = -1
EVICTION_MS = 120_000       # KafkaBroker.MIN_INCREMENTAL_FETCH_SESSION_EVICTION_MS (not a setting)
INT_MAX = 2**31 - 1


def next_epoch(epoch: int) -> int:
    """Kafka's FetchMetadata.nextEpoch: 0 -> 1, ..., INT_MAX wraps to 1; a negative epoch stays final."""
    if epoch < 0:
        return FINAL_EPOCH
    return 1 if epoch == INT_MAX else epoch + 1


def monotonic_ms() -> int:
    return int(time.monotonic() * 1000)


class CachedPartition:
    """A session's partition: the request parameters last sent and the answer last given."""
    __slots__ = ("topic", "topic_id", "request", "high_watermark", "local_log_start_offset")

    def __init__(self, topic: str, topic_id, request: FetchPartition):
        self.topic, self.topic_id, self.request = topic, topic_id, request
        self.high_watermark = self.local_log_start_offset = -1

    def would_respond(self, data) -> bool:
        """Whether must_respond would carry ``data``, remembering nothing (Kafka's
        PartitionIterator without updates, for the size a quota records)."""
        return (len(data.records or b"") > 0 or self.high_watermark != data.high_watermark
                or self.local_log_start_offset != data.log_start_offset or data.preferred_read_replica != -1
                or data.error_code != Errors.NONE or data.diverging_epoch.epoch >= 0)

    def must_respond(self, data) -> bool:
        """Whether an incremental answer carries ``data``; remembers what it carried (Kafka's
        CachedPartition.maybeUpdateResponseData): records, a changed high watermark or log start
        offset, an error (which also forgets the high watermark, so the partition is answered
        again once the error is gone), a diverging epoch."""
        respond = len(data.records or b"") > 0
        if self.high_watermark != data.high_watermark:
            self.high_watermark, respond = data.high_watermark, True
        if self.local_log_start_offset != data.log_start_offset:
            self.local_log_start_offset, respond = data.log_start_offset, True
        if data.preferred_read_replica != -1:
            respond = True
        if data.error_code != Errors.NONE:
            self.high_watermark, respond = -1, True
        if data.diverging_epoch.epoch >= 0:        # a follower must hear it to truncate
            respond = True
        return respond


class FetchSession:
    """One session: its partitions in order (those that last returned records go last, so every
    partition gets its turn at the fetch byte budget), epoch, and times."""

    def __init__(self, session_id: int, privileged: bool, partitions: dict, uses_topic_ids: bool, now: int):
        self.id, self.privileged, self.partitions = session_id, privileged, partitions
        self.uses_topic_ids = uses_topic_ids
        self.creation_ms = self.last_used_ms = now
        self.epoch = next_epoch(INITIAL_EPOCH)
        self.evictable_by_all = self.evictable_by_privileged = False

    def update(self, fetch_data: dict, forgotten: list) -> None:
        """Adds or updates the partitions an incremental request names, drops those it forgets."""
        for key, (topic, topic_id, request) in fetch_data.items():
            cached = self.partitions.get(key)
            if cached is None:
                self.partitions[key] = CachedPartition(topic, topic_id, request)
            else:
                cached.request = request
        for key in forgotten:
            self.partitions.pop(key, None)

    def evictable_key(self) -> tuple:
        return (self.privileged, len(self.partitions), self.id)


class FetchSessionCache:
    """At most ``max_entries`` sessions, Kafka's FetchSessionCacheShard (one shard)."""

    def __init__(self, max_entries: int = 1000, eviction_ms: int = EVICTION_MS, rng: random.Random | None = None):
        self.max_entries, self.eviction_ms = max_entries, eviction_ms
        self.sessions: dict[int, FetchSession] = {}
        self.evictions = 0
        self._rng = rng or random.Random()

    def get(self, session_id: int) -> FetchSession | None:
        return self.sessions.get(session_id)

    def remove(self, session_id: int) -> FetchSession | None:
        return self.sessions.pop(session_id, None)

    def touch(self, session: FetchSession, now: int) -> None:
        """Marks ``session`` used now; whether it may be evicted for its size is decided here, as
        Kafka re-sorts its eviction trees only on a touch."""
        session.last_used_ms = now
        old_enough = now - session.creation_ms > self.eviction_ms
        session.evictable_by_all = old_enough
        session.evictable_by_privileged = old_enough or not session.privileged

    def maybe_create(self, now: int, privileged: bool, partitions: dict, uses_topic_ids: bool) -> int:
        """The new session's id, or INVALID_SESSION_ID when the cache is full and nothing may go."""
        if len(self.sessions) >= self.max_entries and not self._try_evict(privileged, len(partitions), now):
            return INVALID_SESSION_ID
        session = FetchSession(self._new_id(), privileged, partitions, uses_topic_ids, now)
        self.sessions[session.id] = session
        self.touch(session, now)
        return session.id

    def _new_id(self) -> int:
        while True:
            session_id = self._rng.randrange(1, INT_MAX)
            if session_id not in self.sessions:
                return session_id

    def _try_evict(self, privileged: bool, size: int, now: int) -> bool:
        # Linear in the cache (at most max_entries), and only when it is full.
        if not self.sessions:
            return False
        stale = min(self.sessions.values(), key=lambda s: (s.last_used_ms, s.id))
        if now - stale.last_used_ms > self.eviction_ms:
            return self._evict(stale)
        candidates = [s for s in self.sessions.values()
                      if (s.evictable_by_privileged if privileged else s.evictable_by_all)]
        if not candidates:
            return False
        cheapest = min(candidates, key=FetchSession.evictable_key)
        if (privileged, size, 0) < cheapest.evictable_key():
            return False
        return self._evict(cheapest)

    def _evict(self, session: FetchSession) -> bool:
        del self.sessions[session.id]
        self.evictions += 1
        return True


def partition_key(uses_topic_ids: bool, topic: str, topic_id, partition: int) -> tuple:
    """Kafka's CachedPartition equality: by topic id from v13 on, else by name."""
    return (topic_id if uses_topic_ids else topic, partition)


def request_fetch_data(request, uses_topic_ids: bool) -> dict:
    """key -> (topic, topic_id, FetchPartition) in the request's order (a repeat wins)."""
    data = {}
    for t in request.topics:
        for p in t.partitions:
            data[partition_key(uses_topic_ids, t.topic, t.topic_id, p.partition)] = (t.topic, t.topic_id, p)
    return data


def request_forgotten(request, uses_topic_ids: bool) -> list:
    return [partition_key(uses_topic_ids, t.topic, t.topic_id, p)
            for t in request.forgotten_topics_data for p in t.partitions]


class SessionErrorContext:
    """A session the request cannot use: no partition is read, the answer is the error alone."""

    def __init__(self, error: int):
        self.error = error

    def partitions(self) -> list:
        return []

    def response(self, updates: list) -> tuple[int, int, list]:
        return self.error, INVALID_SESSION_ID, []

    def would_answer(self, updates: list) -> list:
        return []

    def throttled(self) -> tuple[int, int]:
        """(error, session id) of a throttled answer: FetchContext.getThrottledResponse's default."""
        return Errors.NONE, INVALID_SESSION_ID


class SessionlessFetchContext:
    """A full fetch that creates no session (epoch -1, or a fetch before v7): every partition, id 0."""

    def __init__(self, fetch_data: dict):
        self.fetch_data = fetch_data

    def partitions(self) -> list:
        return list(self.fetch_data.values())

    def response(self, updates: list) -> tuple[int, int, list]:
        return Errors.NONE, INVALID_SESSION_ID, updates

    def would_answer(self, updates: list) -> list:
        """The partitions ``response`` would carry, nothing changed (for the size a quota records)."""
        return updates

    def throttled(self) -> tuple[int, int]:
        """(error, session id) of a throttled answer: no partitions and no session made."""
        return Errors.NONE, INVALID_SESSION_ID


class FullFetchContext(SessionlessFetchContext):
    """A full fetch with epoch 0: every partition answered, and a session made of them if the
    cache takes it (else id 0, and the client goes on with full fetches)."""

    def __init__(self, manager: "FetchManager", fetch_data: dict, uses_topic_ids: bool, privileged: bool):
        super().__init__(fetch_data)
        self.manager, self.uses_topic_ids, self.privileged = manager, uses_topic_ids, privileged

    def response(self, updates: list) -> tuple[int, int, list]:
        cached = {}
        for topic, topic_id, data in updates:
            key = partition_key(self.uses_topic_ids, topic, topic_id, data.partition_index)
            entry = self.fetch_data.get(key)
            if entry is not None:
                partition = cached[key] = CachedPartition(topic, topic_id, entry[2])
                partition.must_respond(data)
        session_id = self.manager.cache.maybe_create(self.manager.clock(), self.privileged, cached,
                                                     self.uses_topic_ids)
        return Errors.NONE, session_id, updates


class IncrementalFetchContext:
    """A fetch in a session: every partition of the session is read; the answer keeps those that
    changed. Answers INVALID_FETCH_SESSION_EPOCH if another fetch used the session meanwhile."""

    def __init__(self, session: FetchSession):
        self.session, self.expected_epoch = session, session.epoch

    def partitions(self) -> list:
        return [(c.topic, c.topic_id, c.request) for c in self.session.partitions.values()]

    def would_answer(self, updates: list) -> list:
        session = self.session
        if session.epoch != self.expected_epoch:
            return []
        return [u for u in updates if (c := session.partitions.get(partition_key(
            session.uses_topic_ids, u[0], u[1], u[2].partition_index))) is not None and c.would_respond(u[2])]

    def throttled(self) -> tuple[int, int]:
        """The session kept as it is (its partitions' last answers unchanged), as Kafka's
        IncrementalFetchContext.getThrottledResponse."""
        if self.session.epoch != self.expected_epoch:
            return Errors.INVALID_FETCH_SESSION_EPOCH, self.session.id
        return Errors.NONE, self.session.id

    def response(self, updates: list) -> tuple[int, int, list]:
        session = self.session
        if session.epoch != self.expected_epoch:
            return Errors.INVALID_FETCH_SESSION_EPOCH, session.id, []
        kept = []
        for topic, topic_id, data in updates:
            key = partition_key(session.uses_topic_ids, topic, topic_id, data.partition_index)
            cached = session.partitions.get(key)
            if cached is None or not cached.must_respond(data):
                continue
            kept.append((topic, topic_id, data))
            if len(data.records or b"") > 0:
                session.partitions[key] = session.partitions.pop(key)
        return Errors.NONE, session.id, kept


class FetchManager:
    """Kafka's FetchManager.newContext: which context a Fetch request gets."""

    def __init__(self, cache: FetchSessionCache, clock=monotonic_ms):
        self.cache, self.clock = cache, clock

    def new_context(self, version: int, request, privileged: bool):
        session_id, epoch = (request.session_id, request.session_epoch) if version >= 7 else (0, FINAL_EPOCH)
        uses_topic_ids = version >= 13
        fetch_data = request_fetch_data(request, uses_topic_ids)
        if epoch in (INITIAL_EPOCH, FINAL_EPOCH):
            if session_id != INVALID_SESSION_ID:
                self.cache.remove(session_id)
            if epoch == FINAL_EPOCH:
                return SessionlessFetchContext(fetch_data)
            return FullFetchContext(self, fetch_data, uses_topic_ids, privileged)
        session = self.cache.get(session_id)
        if session is None:
            return SessionErrorContext(Errors.FETCH_SESSION_ID_NOT_FOUND)
        if session.epoch != epoch:
            return SessionErrorContext(Errors.INVALID_FETCH_SESSION_EPOCH)
        if session.uses_topic_ids != uses_topic_ids:
            return SessionErrorContext(Errors.FETCH_SESSION_TOPIC_ID_ERROR)
        session.update(fetch_data, request_forgotten(request, uses_topic_ids))
        if not session.partitions:
            self.cache.remove(session.id)
            return SessionlessFetchContext(fetch_data)
        self.cache.touch(session, self.clock())
        session.epoch = next_epoch(session.epoch)
        return IncrementalFetchContext(session)
