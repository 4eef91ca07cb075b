"""Per-destination request bookkeeping: at most one request in flight to each node, a
timeout on it, and a backoff after a failure (Kafka's RequestManager). Time is passed in.

The network may lose a request or its response without telling us; that is why timeouts are
ours. A response whose correlation id is not the one in flight is stale and is dropped.
"""
from __future__ import annotations

import random
from dataclasses import dataclass


@dataclass(slots=True)
class _Connection:
    correlation_id: int | None = None
    api: str | None = None
    timeout_at_ms: int = 0
    backoff_until_ms: int = 0
    timed_out: bool = False          # its last request timed out (Kafka's hasRequestTimedOut)


class RequestManager:
    def __init__(self, request_timeout_ms: int, retry_backoff_ms: int, rng: random.Random,
                 bootstrap: dict[int, tuple[str, int]] | None = None):
        self.request_timeout_ms = request_timeout_ms
        self.retry_backoff_ms = retry_backoff_ms
        self.rng = rng
        self.bootstrap = dict(bootstrap or {})   # pseudo node id (-2, -3, ...) -> address
        self.connections: dict[int, _Connection] = {}
        self._next_correlation_id = 1
        # After a bootstrap server's answer taught nothing, every bootstrap server waits: the
        # others would answer the same while no leader is elected.
        self.bootstrap_backoff_until_ms = 0

    def next_correlation_id(self) -> int:
        cid = self._next_correlation_id
        self._next_correlation_id = cid + 1 if cid < 2 ** 31 - 1 else 1
        return cid

    def _conn(self, node: int) -> _Connection:
        conn = self.connections.get(node)
        if conn is None:
            conn = self.connections[node] = _Connection()
        return conn

    def expire(self, now_ms: int) -> None:
        """Turn timed-out requests into failures (with backoff)."""
        for conn in self.connections.values():
            if conn.correlation_id is not None and now_ms >= conn.timeout_at_ms:
                conn.correlation_id = None
                conn.api = None
                conn.backoff_until_ms = now_ms + self.retry_backoff_ms
                conn.timed_out = True

    def is_ready(self, node: int, now_ms: int) -> bool:
        conn = self.connections.get(node)
        return conn is None or (conn.correlation_id is None and now_ms >= conn.backoff_until_ms)

    def in_flight(self, node: int) -> str | None:
        conn = self.connections.get(node)
        return conn.api if conn and conn.correlation_id is not None else None

    def next_ready_ms(self, node: int, now_ms: int) -> int:
        """When ``node`` can take a request: now, the end of its backoff, or its timeout."""
        conn = self.connections.get(node)
        if conn is None:
            return now_ms
        if conn.correlation_id is not None:
            return conn.timeout_at_ms
        return max(now_ms, conn.backoff_until_ms)

    def on_sent(self, node: int, correlation_id: int, api: str, now_ms: int) -> None:
        conn = self._conn(node)
        conn.correlation_id = correlation_id
        conn.api = api
        conn.timeout_at_ms = now_ms + self.request_timeout_ms
        conn.timed_out = False

    def is_expected(self, node: int, correlation_id: int) -> bool:
        conn = self.connections.get(node)
        return conn is not None and conn.correlation_id == correlation_id

    def on_response(self, node: int, correlation_id: int, success: bool, now_ms: int) -> None:
        conn = self.connections.get(node)
        if conn is None or conn.correlation_id != correlation_id:
            return
        conn.correlation_id = None
        conn.api = None
        conn.backoff_until_ms = now_ms if success else now_ms + self.retry_backoff_ms
        if not success and node in self.bootstrap:
            self.bootstrap_backoff_until_ms = now_ms + self.retry_backoff_ms

    def has_timed_out(self, node: int) -> bool:
        """The last request to ``node`` timed out and nothing was sent to it since."""
        conn = self.connections.get(node)
        return conn is not None and conn.timed_out

    def is_backing_off(self, node: int, now_ms: int) -> bool:
        """``node`` failed (or timed out) and its retry backoff has not ended."""
        conn = self.connections.get(node)
        return conn is not None and conn.correlation_id is None and now_ms < conn.backoff_until_ms

    def has_any_in_flight(self) -> bool:
        return any(conn.correlation_id is not None for conn in self.connections.values())

    def reset(self, node: int) -> None:
        self.connections.pop(node, None)

    def reset_all(self) -> None:
        """A state change: forget in-flight requests (their answers will be dropped as stale)."""
        self.connections.clear()

    def ready_bootstrap_server(self, now_ms: int) -> int | None:
        if now_ms < self.bootstrap_backoff_until_ms:
            return None
        ready = [node for node in sorted(self.bootstrap) if self.is_ready(node, now_ms)]
        return self.rng.choice(ready) if ready else None

    def has_bootstrap_in_flight(self) -> bool:
        return any(self.in_flight(node) for node in self.bootstrap)

    def earliest_bootstrap_ready_ms(self, now_ms: int) -> int:
        earliest = min((self.next_ready_ms(node, now_ms) for node in self.bootstrap), default=now_ms)
        return max(earliest, self.bootstrap_backoff_until_ms)
