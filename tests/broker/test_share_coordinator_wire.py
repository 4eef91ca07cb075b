"""The share coordinator through the wire, on the session's embedded broker (kafkawire.testing):
FindCoordinator(SHARE) creates ``__share_group_state`` and names its leader; the five
share-state APIs initialize, write, read, summarize and delete a share-partition's state, as a
share-partition leader (another broker's persister) asks Kafka 4.3.1's share coordinator."""
from __future__ import annotations

import time

from kafkawire.broker.share_state_records import coordinator_key
from kafkawire.messages.delete_share_group_state_request import (DeleteShareGroupStateRequest, DeleteStateData,
                                                                 PartitionData as DeletePartition)
from kafkawire.messages.find_coordinator_request import FindCoordinatorRequest
from kafkawire.messages.initialize_share_group_state_request import (InitializeShareGroupStateRequest,
                                                                     InitializeStateData,
                                                                     PartitionData as InitializePartition)
from kafkawire.messages.read_share_group_state_request import (PartitionData as ReadPartition,
                                                               ReadShareGroupStateRequest, ReadStateData)
from kafkawire.messages.read_share_group_state_summary_request import (PartitionData as SummaryPartition,
                                                                       ReadShareGroupStateSummaryRequest,
                                                                       ReadStateSummaryData)
from kafkawire.messages.write_share_group_state_request import (PartitionData as WritePartition, StateBatch,
                                                                WriteShareGroupStateRequest, WriteStateData)
from kafkawire.protocol.error_codes import Errors

from .test_share_groups_wire import create_topic
from .wire import call

pytest_plugins = ["kafkawire.testing.pytest_plugin"]

GROUP = "share-coordinator-wire"


def find_share_coordinator(node, key: str):
    """FindCoordinator(SHARE) until it names a coordinator whose partition is loaded (the first
    one creates __share_group_state)."""
    for _ in range(200):
        found = call(node, FindCoordinatorRequest(key_type=2, coordinator_keys=[key]), 6).coordinators[0]
        if found.error_code == Errors.NONE:
            return found
        time.sleep(0.05)
    raise AssertionError(f"no share coordinator: {found}")


def read(node, topic_id, leader_epoch=0):
    response = call(node, ReadShareGroupStateRequest(group_id=GROUP, topics=[ReadStateData(
        topic_id=topic_id, partitions=[ReadPartition(partition=0, leader_epoch=leader_epoch)])]), 0)
    return response.results[0].partitions[0]


def until_loaded(send):
    """``send()`` again while the state partition loads (COORDINATOR_LOAD_IN_PROGRESS), bounded."""
    for _ in range(200):
        result = send()
        if result.error_code != Errors.COORDINATOR_LOAD_IN_PROGRESS:
            return result
        time.sleep(0.05)
    raise AssertionError("__share_group_state never loaded")


def test_share_state_is_initialized_written_read_summarized_and_deleted_through_the_wire(kafkawire_broker):
    node = kafkawire_broker
    topic_id = create_topic(node, "share-coordinator-wire", 1)
    found = find_share_coordinator(node, coordinator_key(GROUP, topic_id, 0))
    assert found.node_id == 1
    bad = call(node, FindCoordinatorRequest(key_type=2, coordinator_keys=["no-colons"]), 6).coordinators[0]
    assert bad.error_code == Errors.INVALID_REQUEST
    old = call(node, FindCoordinatorRequest(key_type=2, coordinator_keys=[coordinator_key(GROUP, topic_id, 0)]), 5)
    assert old.coordinators[0].error_code == Errors.INVALID_REQUEST          # SHARE needs v6

    assert until_loaded(lambda: read(node, topic_id)).error_code == Errors.INVALID_REQUEST     # uninitialized
    init = call(node, InitializeShareGroupStateRequest(group_id=GROUP, topics=[InitializeStateData(
        topic_id=topic_id, partitions=[InitializePartition(partition=0, state_epoch=1, start_offset=5)])]), 0)
    assert init.results[0].partitions[0].error_code == Errors.NONE
    written = call(node, WriteShareGroupStateRequest(group_id=GROUP, topics=[WriteStateData(
        topic_id=topic_id, partitions=[WritePartition(
            partition=0, state_epoch=1, leader_epoch=0, start_offset=7, delivery_complete_count=2,
            state_batches=[StateBatch(first_offset=7, last_offset=8, delivery_state=2, delivery_count=1),
                           StateBatch(first_offset=9, last_offset=9, delivery_state=0, delivery_count=2)])])]), 1)
    assert written.results[0].partitions[0].error_code == Errors.NONE
    state = read(node, topic_id, leader_epoch=3)
    assert (state.error_code, state.state_epoch, state.start_offset) == (Errors.NONE, 1, 7)
    assert [(b.first_offset, b.last_offset, b.delivery_state, b.delivery_count) for b in state.state_batches] == \
        [(7, 8, 2, 1), (9, 9, 0, 2)]
    assert read(node, topic_id, leader_epoch=2).error_code == Errors.FENCED_LEADER_EPOCH

    summary = call(node, ReadShareGroupStateSummaryRequest(group_id=GROUP, topics=[ReadStateSummaryData(
        topic_id=topic_id, partitions=[SummaryPartition(partition=0, leader_epoch=0)])]), 1).results[0].partitions[0]
    assert (summary.error_code, summary.start_offset, summary.leader_epoch, summary.delivery_complete_count) == \
        (Errors.NONE, 7, 3, 2)
    deleted = call(node, DeleteShareGroupStateRequest(group_id=GROUP, topics=[DeleteStateData(
        topic_id=topic_id, partitions=[DeletePartition(partition=0)])]), 0)
    assert deleted.results[0].partitions[0].error_code == Errors.NONE
    assert read(node, topic_id).error_code == Errors.INVALID_REQUEST
    empty = call(node, DeleteShareGroupStateRequest(group_id="", topics=[DeleteStateData(
        topic_id=topic_id, partitions=[DeletePartition(partition=0)])]), 0)
    assert empty.results == []                                  # the service answers no results
