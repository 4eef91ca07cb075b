"""The Fetch edge cases of tests/interop/test_produce_refusals_vs_kafka.py without Java: a fresh
kafkawire node, prepared as that test prepares both brokers, must answer each as Kafka 4.3.1's
broker answered it there (the answers below were Kafka's, right after the preparation:
refusals-0 holds offset 0, refusals-trimmed offsets 1 and 2, refusals-txn a record, an aborted
transaction's, an open transaction's and the abort marker)."""
from __future__ import annotations

from kafkawire.protocol.error_codes import Errors
from tests.interop.test_produce_refusals_vs_kafka import FETCH_CASES, UNKNOWN_TOPIC_ID, fetch, prepare

pytest_plugins = ["kafkawire.testing.pytest_plugin"]

OUT_OF_RANGE = (Errors.OFFSET_OUT_OF_RANGE, -1, -1, -1, 0, None)
ONE_FROM_THE_START = (Errors.NONE, 3, 3, 1, 140, None)        # both stored batches, 70 bytes each
# name: {(topic, partition): (error, high watermark, last stable offset, log start, record bytes, aborted)}
KAFKAS_ANSWERS = {
    "below the log start": {("refusals-trimmed", 0): OUT_OF_RANGE},
    "one past the log end": {("refusals-trimmed", 0): OUT_OF_RANGE},
    "exactly the log end": {("refusals-trimmed", 0): (Errors.NONE, 3, 3, 1, 0, None)},
    "exactly the log start": {("refusals-trimmed", 0): ONE_FROM_THE_START},
    "a partition the topic lacks": {("refusals-trimmed", 1): (Errors.UNKNOWN_TOPIC_OR_PARTITION, -1, -1, -1, 0, [])},
    "an unknown topic id (v13)": {(str(UNKNOWN_TOPIC_ID), 0): (Errors.UNKNOWN_TOPIC_ID, -1, -1, -1, 0, [])},
    "a negative leader epoch other than -1": {("refusals-trimmed", 0): ONE_FROM_THE_START},
    "an unknown (newer) leader epoch": {("refusals-trimmed", 0): (Errors.UNKNOWN_LEADER_EPOCH, -1, -1, -1, 0, None)},
    "max_bytes 0": {("refusals-trimmed", 0): (Errors.NONE, 3, 3, 1, 70, None),       # its first batch whole
                    ("refusals", 0): (Errors.NONE, 1, 1, 0, 0, None)},             # and nothing after it
    "partition_max_bytes 0": {("refusals-trimmed", 0): (Errors.NONE, 3, 3, 1, 70, None),
                              ("refusals", 0): (Errors.NONE, 1, 1, 0, 0, None)},
    "read committed": {("refusals-trimmed", 0): (*ONE_FROM_THE_START[:-1], [])},
    "a replica id that is no replica (v12)": {("refusals-trimmed", 0): (Errors.NOT_LEADER_OR_FOLLOWER, -1, -1, -1, 0, None)},
    "a replica state that is no replica (v15)": {
        ("refusals-trimmed", 0): (Errors.NOT_LEADER_OR_FOLLOWER, -1, -1, -1, 0, None)},
    "a known topic id (v13)": {("refusals-trimmed", 0): ONE_FROM_THE_START},
    # up to the open transaction (the last stable offset), the aborted one named by its first offset
    "read committed, an aborted and an open transaction": {("refusals-txn", 0): (Errors.NONE, 4, 2, 0, 140, [1])},
    "read uncommitted, an aborted and an open transaction": {("refusals-txn", 0): (Errors.NONE, 4, 2, 0, 288, None)},
    "read committed from the open transaction": {("refusals-txn", 0): (Errors.NONE, 4, 2, 0, 0, [])},
    "read committed from the abort marker": {("refusals-txn", 0): (Errors.NONE, 4, 2, 0, 0, [])},
}


def test_fetch_edges_are_answered_as_kafkas_broker_answered_them(kafkawire_broker_per_test):
    address = kafkawire_broker_per_test.bootstrap_servers
    prepare(address)
    answers = {}
    for case in KAFKAS_ANSWERS:
        parts, options = FETCH_CASES[case]
        *partitions, top_level = fetch(address, parts, **options)
        assert top_level == ("top level", Errors.NONE), case
        answers[case] = {(topic, index): tuple(rest) for topic, index, *rest in partitions}
    assert answers == KAFKAS_ANSWERS
