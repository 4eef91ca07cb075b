"""The controller mutation quota (KIP-599, ``controller_mutation_rate``), applied where Kafka 4.3.1
applies it in KRaft: on the controller (ControllerApis with its ControllerMutationQuotaManager),
to CreateTopics, CreatePartitions and DeleteTopics, whether a client sent them to the controller
or a broker forwarded them in an Envelope (the forwarded principal and client id count).

* The quota is per (user, client id), found as every client quota is (kafkawire.net.client_quotas,
  the committed image's ``controller_mutation_rate`` entities), and measured with Kafka's
  TokenBucket: the bucket refills at the quota's rate (partitions per second) up to
  ``controller.quota.window.num`` x ``controller.quota.window.size.seconds`` x quota, and each
  topic takes its partitions out (a created topic's, a deleted topic's, a topic's added ones),
  once everything else about that topic has been checked.
* Strict (CreateTopics v6+, DeleteTopics v5+, CreatePartitions v3+: the versions whose clients
  know THROTTLING_QUOTA_EXCEEDED): a topic that finds the bucket below zero is refused with
  THROTTLING_QUOTA_EXCEEDED and takes nothing; one that finds it at zero or above is done, even
  if it takes the bucket below zero.
* Permissive (older versions): every topic is done and recorded; the answer is throttled.
* Throttle time: what the bucket needs to refill to zero, -tokens / quota seconds, less the time
  since it was measured (the write may wait its turn). It goes in the answer's throttle_time_ms
  and mutes the client's connection that long, unless the request was forwarded: then the broker
  mutes its client's connection by the answer's throttle time (kafkawire.broker.quotas).
"""
from __future__ import annotations

import math

from kafkawire.net.client_quotas import (CONTROLLER_MUTATION_RATE, ClientQuotaManager, QuotaIndexes, TokenBucket,
                                         java_int_cast, java_round, quota_limit, quota_tags, principal_user)
from kafkawire.protocol.error_codes import Errors
from kafkawire.protocol.handler import Throttled

from .errors import ApiError

__all__ = ["ControllerMutationQuotas", "MutationQuota", "THROTTLED_MESSAGE"]

CREATE_TOPICS, DELETE_TOPICS, CREATE_PARTITIONS = 19, 20, 37
# ControllerApis: newQuotaFor(session, header, strictSinceVersion)
STRICT_SINCE_VERSION = {CREATE_TOPICS: 6, DELETE_TOPICS: 5, CREATE_PARTITIONS: 3}
THROTTLED_MESSAGE = "The throttling quota has been exceeded."      # Errors.THROTTLING_QUOTA_EXCEEDED.message()


class ControllerMutationQuotas(ClientQuotaManager):
    """ControllerMutationQuotaManager: a TokenBucket per quota-sharing (user, client id), the
    quotas read from ``image()`` (the committed image)."""

    def __init__(self, image, samples: int, window_seconds: int, clock=None):
        super().__init__(samples, window_seconds, clock=clock)
        self.index = QuotaIndexes(image, (CONTROLLER_MUTATION_RATE,))

    def _new_stat(self) -> TokenBucket:
        return TokenBucket(self.samples, self.window_ms)

    def quota_for(self, ctx) -> "MutationQuota":
        """newQuotaFor: the request's quota, strict from its API's strict version on."""
        index = self.index(CONTROLLER_MUTATION_RATE)
        if not index.enabled:
            return MutationQuota(self, None, strict=False)
        tags = quota_tags(index, principal_user(ctx.principal), ctx.client_id)
        bound = quota_limit(index, tags)
        if bound is None:
            return MutationQuota(self, None, strict=False)
        return MutationQuota(self, (tags, bound), strict=ctx.api_version >= STRICT_SINCE_VERSION[ctx.api_key])


class MutationQuota:
    """One request's view of its client's bucket (Strict/PermissiveControllerMutationQuota;
    ``quota`` None: UNBOUNDED_CONTROLLER_MUTATION_QUOTA)."""
    __slots__ = ("manager", "quota", "strict", "_throttle_ms", "_throttled_at_ms")

    def __init__(self, manager: ControllerMutationQuotas, quota, *, strict: bool):
        self.manager, self.quota, self.strict = manager, quota, strict
        self._throttle_ms = 0
        self._throttled_at_ms = 0

    def record(self, partitions: int) -> None:
        """Take ``partitions`` out of the bucket; raises ApiError(THROTTLING_QUOTA_EXCEEDED) when
        strict and the bucket is already below zero."""
        if self.quota is None:
            return
        (tags, bound), manager = self.quota, self.manager
        now_ms = manager.clock()
        bucket = manager.stat_for(tags, now_ms)
        if self.strict:
            tokens = bucket.measure(bound, now_ms)
            if tokens < 0:
                self._note_throttle(tokens, bound, now_ms)
                raise ApiError(Errors.THROTTLING_QUOTA_EXCEEDED, THROTTLED_MESSAGE)
        tokens = bucket.record(bound, partitions, now_ms)
        if tokens < 0 and not self.strict:
            self._note_throttle(tokens, bound, now_ms)

    def _note_throttle(self, tokens: float, bound: float, now_ms: int) -> None:
        # ControllerMutationQuotaManager.throttleTimeMs: a long, infinite (Long.MAX_VALUE) for a zero quota.
        ms = java_round(-tokens / bound * 1000 if bound else math.inf)      # tokens < 0 here
        self._throttle_ms, self._throttled_at_ms = ms, now_ms

    def throttle_time_ms(self) -> int:
        """The throttle time left: the last one noted, less the time since, cast to an int as
        AbstractControllerMutationQuota.throttleTime does (so a zero quota's infinite time leaves none)."""
        if self._throttle_ms == 0:
            return 0
        return max(0, java_int_cast(self._throttle_ms - (self.manager.clock() - self._throttled_at_ms)))

    def answer(self, ctx, response):
        """``response`` with the throttle time (sendResponseMaybeThrottleWithControllerQuota): in
        its throttle_time_ms, and the connection muted unless the request was forwarded."""
        throttle_ms = self.throttle_time_ms()
        if throttle_ms <= 0:
            return response
        response.throttle_time_ms = max(response.throttle_time_ms, throttle_ms)
        return response if ctx.forwarded else Throttled(response, throttle_ms)
