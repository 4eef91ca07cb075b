"""The resolution of KIP-848 subscribed regexes as Kafka 4.3.1's GroupMetadataManager runs it
(maybeUpdateRegularExpressions, handleRegularExpressionsResult): a regex is not matched at each
heartbeat but resolved for the whole group at once, off the heartbeat (a coordinator timer here,
Kafka's executor there), and the result written as ConsumerGroupRegularExpression records; the
group's topics are then the members' names and their regexes' resolved topics.

A heartbeat asks for a resolution when the group subscribes to regexes, none is pending, the last
one is over 10 s old (REGEX_BATCH_REFRESH_MIN_INTERVAL_MS) and either a regex is not resolved yet,
a topic was created since the image the last one used, or the last one is older than
``group.consumer.regex.refresh.interval.ms`` (10 minutes). A resolution matches every topic of
the image once against each regex, so a group matches at most once per 10 s whatever its
members' heartbeats.
"""
from __future__ import annotations

import logging
import time

from . import consumer_records as rec
from .consumer_hash import group_hash
from .consumer_regex import compiled

__all__ = ["RegexRefresher", "Scan", "NO_CHANGE", "REGEX_UPDATED", "REGEX_UPDATED_AND_RESOLVED",
           "REGEX_BATCH_REFRESH_MIN_INTERVAL_MS", "regex_key", "leaving_tombstones"]

log = logging.getLogger(__name__)

REGEX_BATCH_REFRESH_MIN_INTERVAL_MS = 10_000
SCAN_SLICE_S = 0.01        # matching per turn of the loop, before other work gets its turn
NO_CHANGE, REGEX_UPDATED, REGEX_UPDATED_AND_RESOLVED = 0, 1, 2


def regex_key(group_id: str) -> str:
    return f"consumer-regex-{group_id}"


def resolve(regexes, view) -> dict:
    """TopicRegexResolver.resolveRegularExpressions before its DESCRIBE filter: regex -> the
    topics of ``view`` it matches whole."""
    scan = Scan(regexes, view)
    scan.advance(None)
    return scan.found


class Scan:
    """A resolution's matching, done in slices: every topic of ``view`` against each regex, once.
    A match costs at most a step per character of the name, but a step over a regex of many
    states is not cheap (kafkawire.broker.consumer_regex_match), so many topics and such a regex
    would hold the loop: Kafka matches on an executor thread, kafkawire in slices of the loop."""

    def __init__(self, regexes, view):
        self.view = view
        self.found: dict = {regex: set() for regex in regexes}
        patterns = [(regex, compiled(regex)) for regex in regexes]
        self.patterns = [(regex, p) for regex, p in patterns if p is not None]   # refused at the heartbeat already
        self.names = iter(list(view.by_name))

    def advance(self, deadline: float | None) -> bool:
        """Match until ``deadline`` (time.perf_counter(); None: to the end); True once done."""
        found, patterns = self.found, self.patterns
        for count, name in enumerate(self.names, 1):
            for regex, pattern in patterns:
                if pattern.fullmatch(name):
                    found[regex].add(name)
            if deadline is not None and count % 64 == 0 and time.perf_counter() >= deadline:
                return False
        return True


def leaving_tombstones(group, member_ids) -> list:
    """maybeDeleteResolvedRegularExpressions: the regexes only ``member_ids`` subscribe with."""
    counts = group.subscribed_regexes()
    leaving: dict = {}
    for member_id in member_ids:
        regex = group.members[member_id].subscribed_topic_regex if member_id in group.members else None
        if regex:
            leaving[regex] = leaving.get(regex, 0) + 1
    return [rec.regex_tombstone(group.group_id, regex) for regex, n in leaving.items() if counts.get(regex) == n]


class RegexRefresher:
    """The regex resolutions of ``coordinator`` (a ConsumerCoordinator: its groups, timer, clock,
    topics and write)."""

    def __init__(self, coordinator, refresh_interval_ms: int = 600_000):
        self.coordinator = coordinator
        self.refresh_interval_ms = refresh_interval_ms       # group.consumer.regex.refresh.interval.ms
        self.pending: set = set()                            # groups with a resolution scheduled
        self.last_version_with_new_topics = -1               # lastMetadataImageWithNewTopics
        # may(topic name) -> bool: DESCRIBE for the principal of the heartbeat or classic JoinGroup
        # being handled (set around it by kafkawire.broker.consumer_apis; None: no authorizer,
        # every topic kept)
        self.describe = None

    def topics_created(self, version: int) -> None:
        """onMetadataUpdate: every group re-resolves at its next heartbeat (deleted topics leave
        through the metadata hash and are cleaned up at the next resolution)."""
        self.last_version_with_new_topics = version

    def on_heartbeat(self, group, member, updated, records: list) -> int:
        """maybeUpdateRegularExpressions: the regex status of ``member`` becoming ``updated`` (the
        old regex's tombstone added when it loses its last member), a resolution scheduled when due."""
        now = self.coordinator.classic.now_ms()
        old, new = member.subscribed_topic_regex, updated.subscribed_topic_regex
        counts = group.subscribed_regexes()
        status, require = NO_CHANGE, False
        if old != new:
            status = REGEX_UPDATED
            if old and counts.get(old, 0) == 1:
                records.append(rec.regex_tombstone(group.group_id, old))
            if new:
                if counts.get(new, 0) == 0:
                    require = True
                elif new in group.resolved:
                    status = REGEX_UPDATED_AND_RESOLVED
            elif old:
                status = REGEX_UPDATED_AND_RESOLVED
        if not require and not counts:
            return status
        if group.group_id in self.pending:
            return status
        if self.last_version_with_new_topics == -1:
            self.last_version_with_new_topics = self.coordinator.topics().version
        last_time, last_version = group.last_regex_refresh()
        if now <= last_time + REGEX_BATCH_REFRESH_MIN_INTERVAL_MS:
            return status
        if old and old in counts:
            counts[old] -= 1
            if counts[old] == 0:
                del counts[old]
        if new:
            counts[new] = counts.get(new, 0) + 1
        require = require or len(counts) != len(group.resolved) or \
            last_version < self.last_version_with_new_topics or now > last_time + self.refresh_interval_ms
        if require and counts:
            self.pending.add(group.group_id)
            regexes, describe = frozenset(counts), self.describe
            self.coordinator.classic.timer.schedule(regex_key(group.group_id), 0,
                                                    lambda: self._scan(group.group_id, regexes, describe))
        return status

    def _scan(self, group_id: str, regexes: frozenset, describe, scan: Scan | None = None) -> None:
        """A slice of the resolution's matching (of the image as it is at the first), then the
        next slice at the loop's next turn, then the resolution written."""
        group = self.coordinator.groups.get(group_id)
        if group is None:
            self.pending.discard(group_id)
            return
        if scan is None:
            counts = group.subscribed_regexes()
            scan = Scan([r for r in regexes if counts.get(r)], self.coordinator.topics())
        if not scan.advance(time.perf_counter() + SCAN_SLICE_S):
            self.coordinator.classic.timer.schedule(regex_key(group_id), 0,
                                                    lambda: self._scan(group_id, regexes, describe, scan))
            return
        self._resolved(group_id, scan, describe)

    def _resolved(self, group_id: str, scan: Scan, describe=None) -> None:
        """handleRegularExpressionsResult: the resolution (only the topics ``describe`` allows, the
        principal of the member that asked for it) written, the group epoch bumped when a regex's
        topics or the subscribed topics' metadata hash changed."""
        self.pending.discard(group_id)
        c = self.coordinator
        group = c.groups.get(group_id)
        if group is None:
            return
        view, now = scan.view, c.classic.now_ms()
        counts = group.subscribed_regexes()
        records, bump = [], False
        found = {regex: topics for regex, topics in scan.found.items() if counts.get(regex)}   # still subscribed
        if describe is not None:
            denied = {t for t in set().union(*found.values()) if not describe(t)}   # each topic asked once
            found = {regex: topics - denied for regex, topics in found.items()}
        resolved = dict(group.resolved)
        for regex, topics in found.items():
            old = group.resolved.get(regex)
            if old is None or old.topics != topics:
                bump = True
            resolved[regex] = topics
            records.append(rec.regex_record(group_id, regex, topics, view.version, now))
        names = set()
        for member in group.members.values():
            names |= member.subscribed_topic_names
            regex = member.subscribed_topic_regex
            if regex in found:
                names |= found[regex]
            elif regex in resolved:
                names |= resolved[regex].topics
        new_hash = group_hash({n: view.topic_hash(n) for n in names if n in view.by_name})
        if bump or new_hash != group.metadata_hash:
            records.append(rec.group_epoch_record(group_id, group.group_epoch + 1, new_hash))
        log.info("[GroupId %s] Scanned %d topics to refresh regular expressions %s.", group_id, len(view.by_name),
                 sorted(found))
        if c.write(group_id, records) == 0 and bump:
            log.info("[GroupId %s] Bumped group epoch to %d with metadata hash %d.", group_id, group.group_epoch,
                     new_hash)
