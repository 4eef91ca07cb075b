"""The Fetch edge cases of tests/interop/test_produce_refusals_vs_kafka.py without Java, and its
cases of a leader epoch older than the partition's (Fetch, ListOffsets, OffsetForLeaderEpoch): a
fresh kafkawire node, prepared as that test prepares both brokers, must answer each as Kafka
4.3.1's broker answered it there (the answers below were Kafka's, right after the preparation:
refusals-0 holds offset 0, refusals-trimmed offsets 1 and 2, refusals-txn a record, an aborted
transaction's, an open transaction's and the abort marker, refusals-fenced a record of leader
epoch 0 and leads at epoch 1)."""
from __future__ import annotations

from kafkawire.protocol.error_codes import Errors
from tests.interop.test_produce_refusals_vs_kafka import (FENCED_TOPIC, FETCH_CASES, LIST_OFFSETS_CASES,
                                                          OFFSET_FOR_LEADER_EPOCH_CASES, UNKNOWN_TOPIC_ID,
                                                          bump_leader_epoch, fetch, list_offsets,
                                                          offset_for_leader_epoch, prepare)

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
    "an older (fenced) leader epoch": {(FENCED_TOPIC, 0): (Errors.FENCED_LEADER_EPOCH, -1, -1, -1, 0, None)},
    "the leader epoch after a bump": {(FENCED_TOPIC, 0): (Errors.NONE, 1, 1, 0, 70, None)},
}
# name: (error, timestamp, offset, leader epoch)
KAFKAS_LIST_OFFSETS_ANSWERS = {
    "an older (fenced) leader epoch after a bump": (Errors.FENCED_LEADER_EPOCH, -1, -1, -1),
    "the leader epoch after a bump": (Errors.NONE, -1, 1, 1),
}
# name: (error, leader epoch, end offset)
KAFKAS_OFFSET_FOR_LEADER_EPOCH_ANSWERS = {
    "an older (fenced) current leader epoch": (Errors.FENCED_LEADER_EPOCH, -1, -1),
    "the current leader epoch, asking for the one before": (Errors.NONE, 0, 1),
    "the current leader epoch, asking for it": (Errors.NONE, 1, 1),
    "a newer current leader epoch": (Errors.UNKNOWN_LEADER_EPOCH, -1, -1),
}


def test_fetch_edges_and_older_leader_epochs_are_answered_as_kafkas_broker_answered_them(kafkawire_broker_per_test):
    address = kafkawire_broker_per_test.bootstrap_servers
    prepare(address)
    bump_leader_epoch(address, f"127.0.0.1:{kafkawire_broker_per_test.controller_port}")
    answers = {}
    for case in KAFKAS_ANSWERS:
        parts, options = FETCH_CASES[case]
        *partitions, top_level = fetch(address, parts, **options)
        assert top_level == ("top level", Errors.NONE), case
        answers[case] = {(topic, index): tuple(rest) for topic, index, *rest in partitions}
    assert answers == KAFKAS_ANSWERS
    listed = {case: list_offsets(address, *LIST_OFFSETS_CASES[case]) for case in KAFKAS_LIST_OFFSETS_ANSWERS}
    assert listed == {case: [(FENCED_TOPIC, 0, *answer)] for case, answer in KAFKAS_LIST_OFFSETS_ANSWERS.items()}
    ends = {case: offset_for_leader_epoch(address, OFFSET_FOR_LEADER_EPOCH_CASES[case])
            for case in KAFKAS_OFFSET_FOR_LEADER_EPOCH_ANSWERS}
    assert ends == {case: [(FENCED_TOPIC, 0, *answer)] for case, answer in KAFKAS_OFFSET_FOR_LEADER_EPOCH_ANSWERS.items()}
