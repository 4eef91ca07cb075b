"""A follower's side of an incremental fetch session (KIP-227), as Kafka's FetchSessionHandler
keeps it for a replica fetcher: sans-I/O, one per (leader, fetcher).

    session = FetchSessionClient()
    plan = session.build({("orders", 0): PartitionFetch(topic_id, 42, 0, 1048576, 3, 3), ...})
    # send plan.session_id, plan.epoch, plan.to_send as partitions, plan.forgotten as forgotten topics
    usable = session.handle_response(response.error_code, response.session_id, response.responses, version)
    # or handle_error() when the request failed

The first request is full (session 0, epoch 0: "create a session"); once the leader answers with a
session id, each request names only the partitions added or whose fetch state changed since the
last one (fetch offset, log start, max bytes, current leader epoch, last fetched epoch), forgets
those no longer fetched, and counts the epoch up (wrapping to 1 after 2^31-1). The leader answers
only the partitions with something new. An answer that names a partition or (v13+) a topic id
the session does not hold, or a full answer that leaves one out, is not used and the next request
starts a new session (FetchSessionHandler's verify...FetchResponsePartitions; ``problem`` says
what was wrong). FETCH_SESSION_ID_NOT_FOUND starts over with a new session; any other top-level error or a failed request closes the session and asks for a new one
(epoch 0 with the old id). A leader that answers with session id 0 keeps every request full.
"""
from __future__ import annotations

import uuid
from dataclasses import dataclass

from kafkawire.protocol.error_codes import Errors

__all__ = ["FetchSessionClient", "PartitionFetch", "SessionPlan", "INITIAL_EPOCH", "FINAL_EPOCH"]

INITIAL_EPOCH, FINAL_EPOCH = 0, -1
TOPIC_ID_VERSION = 13           # Fetch v13: topics by id, in requests and answers
_MAX_EPOCH = (1 << 31) - 1


@dataclass(frozen=True)
class PartitionFetch:
    """FetchRequest.PartitionData: what a request says of one partition (equal values: unchanged)."""
    topic_id: uuid.UUID | None
    fetch_offset: int
    log_start_offset: int
    max_bytes: int
    current_leader_epoch: int
    last_fetched_epoch: int


@dataclass(frozen=True)
class SessionPlan:
    """One request: its session id and epoch, the partitions to name and those to forget
    (key, topic id)."""
    session_id: int
    epoch: int
    to_send: list
    forgotten: list


class FetchSessionClient:
    def __init__(self):
        self.session_id = 0
        self.epoch = INITIAL_EPOCH
        self.partitions: dict = {}          # key -> PartitionFetch, as the leader's session holds them
        self.problem: str | None = None     # what was wrong with the last answer not used

    @property
    def is_full(self) -> bool:
        return self.epoch in (INITIAL_EPOCH, FINAL_EPOCH)

    def build(self, wanted: dict) -> SessionPlan:
        """The next request for ``wanted`` (key -> PartitionFetch, in the order to send them)."""
        if self.is_full:
            self.partitions = dict(wanted)
            return SessionPlan(self.session_id, self.epoch, list(wanted), [])
        to_send, forgotten = [], []
        for key, before in list(self.partitions.items()):
            now = wanted.get(key)
            if now is None:
                del self.partitions[key]
                forgotten.append((key, before.topic_id))
            elif now.topic_id != before.topic_id and None not in (now.topic_id, before.topic_id):
                forgotten.append((key, before.topic_id))          # replaced: forgotten by its old id
                self.partitions[key] = now
                to_send.append(key)
            elif now != before:
                self.partitions[key] = now
                to_send.append(key)
        for key, now in wanted.items():
            if key not in self.partitions:
                self.partitions[key] = now
                to_send.append(key)
        return SessionPlan(self.session_id, self.epoch, to_send, forgotten)

    def handle_response(self, error_code: int, session_id: int, responses=(), version: int = TOPIC_ID_VERSION,
                        throttle_time_ms: int = 0) -> bool:
        """FetchSessionHandler.handleResponse: whether the answer's partitions may be used
        (``responses``: the answer's topics, each with its ``partitions``). An answer naming
        partitions (or, from Fetch v13, topic ids) the session does not hold, or a full answer
        leaving some out, is not used and the next request is full; ``problem`` then says what was
        wrong, for the fetcher's log line."""
        self.problem = None
        if error_code:                                  # the fetcher logs it, naming the leader
            if error_code == Errors.FETCH_SESSION_ID_NOT_FOUND:
                self.session_id, self.epoch = 0, INITIAL_EPOCH
            else:
                self.epoch = INITIAL_EPOCH              # close the existing one, attempt a new one
            return False
        answered, extra_ids = self._answered(responses, version)
        if self.is_full and not answered and throttle_time_ms > 0:     # KIP-219: throttled, not invalid
            self.session_id, self.epoch = 0, INITIAL_EPOCH
            return False
        self.problem = self._check_partitions(answered, extra_ids)
        if self.problem is not None:
            if self.is_full:
                self.session_id = 0
            self.epoch = INITIAL_EPOCH                  # incremental: close the session, attempt a new one
            return False
        if session_id == 0:                             # full answer, or the session was closed
            self.session_id, self.epoch = 0, INITIAL_EPOCH
        elif self.is_full:
            self.session_id, self.epoch = session_id, 1
        else:
            self.epoch = 1 if self.epoch == _MAX_EPOCH else self.epoch + 1
        return True

    def _answered(self, responses, version: int) -> tuple[dict, dict]:
        """The answer's partitions (keys, in its order) and, from v13 on, its topic ids the
        session does not hold (FetchResponse.responseData and topicIds)."""
        names = {fetch.topic_id: key[0] for key, fetch in self.partitions.items()}
        answered: dict = {}
        extra_ids: dict = {}
        for topic in responses:
            name = names.get(topic.topic_id) if version >= TOPIC_ID_VERSION else topic.topic
            if name is None:
                extra_ids[topic.topic_id] = None
                continue
            for data in topic.partitions:
                answered[(name, data.partition_index)] = None
        return answered, extra_ids

    def _check_partitions(self, answered: dict, extra_ids: dict) -> str | None:
        """verifyFullFetchResponsePartitions / verifyIncrementalFetchResponsePartitions: None, or
        the partitions a full answer omitted, those it should not name, and the topic ids unknown."""
        omitted = [key for key in self.partitions if key not in answered] if self.is_full else []
        extra = [key for key in answered if key not in self.partitions]
        if not omitted and not extra and not extra_ids:
            return None
        parts = [f"{label}=({', '.join(items)})" for label, items in (
            ("omittedPartitions", [f"{t}-{p}" for t, p in omitted]),
            ("extraPartitions", [f"{t}-{p}" for t, p in extra]),
            ("extraIds", [str(i) for i in extra_ids])) if items]
        kind = "full" if self.is_full else "incremental"
        response = ", ".join(f"{t}-{p}" for t, p in answered)
        return f"an invalid {kind} fetch response with {', '.join(parts)}, response=({response})"

    def handle_error(self) -> None:
        """The request failed to be sent or answered: close the session, ask for a new one."""
        self.epoch = INITIAL_EPOCH
