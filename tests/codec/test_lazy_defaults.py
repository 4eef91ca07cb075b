"""Tagged struct fields whose default is an instance (FetchResponse's DivergingEpoch, CurrentLeader,
SnapshotId...) are made on first read instead of on every decode. These tests pin down that
nothing but the cost changed: each message gets a default of its own, mutating it is seen
only there, and encoding, equality, JSON, copies and pickles treat it as the default it is.
"""
from __future__ import annotations

import copy
import pickle

import pytest

from kafkawire.messages import fetch_response as fetch
from kafkawire.protocol.errors import EncodeError, UnsupportedVersionError

VERSION = 12


def _response(partitions=2):
    return fetch.FetchResponse(responses=[fetch.FetchableTopicResponse(topic="t", partitions=[
        fetch.PartitionData(partition_index=i, high_watermark=10 + i, records=b"batch %d" % i)
        for i in range(partitions)])])


def _decoded():
    data = _response().encode(VERSION)
    return data, fetch.FetchResponse.decode(data, VERSION)


def test_a_decoded_default_mutated_in_place_changes_only_that_partition():
    data, resp = _decoded()
    first, second = resp.responses[0].partitions
    first.diverging_epoch.epoch = 5
    assert first.diverging_epoch.epoch == 5
    assert second.diverging_epoch.epoch == -1
    assert fetch.PartitionData().diverging_epoch.epoch == -1
    assert fetch.FetchResponse.decode(data, VERSION).responses[0].partitions[0].diverging_epoch.epoch == -1
    assert fetch.EpochEndOffset() == fetch.EpochEndOffset(epoch=-1, end_offset=-1)

    # The change is on the wire for that partition only: tag 0 is written there, and nowhere else.
    again = fetch.FetchResponse.decode(resp.encode(VERSION), VERSION)
    first_again, second_again = again.responses[0].partitions
    assert first_again.diverging_epoch == fetch.EpochEndOffset(epoch=5, end_offset=-1)
    assert second_again.diverging_epoch == fetch.EpochEndOffset()
    assert len(resp.encode(VERSION)) > len(data)


def test_constructed_messages_do_not_share_defaults():
    a, b = fetch.PartitionData(), fetch.PartitionData()
    a.current_leader.leader_id = 3
    a.snapshot_id.epoch = 9
    assert (b.current_leader.leader_id, b.snapshot_id.epoch) == (-1, -1)
    assert a.current_leader is not b.current_leader


def test_reading_a_default_leaves_the_encoding_unchanged():
    data, resp = _decoded()
    for partition in resp.responses[0].partitions:
        assert partition.diverging_epoch == fetch.EpochEndOffset()
        assert partition.current_leader == fetch.LeaderIdAndEpoch()
        assert partition.snapshot_id == fetch.SnapshotId()
    assert resp.encode(VERSION) == data, "a tagged field equal to its default is not written"


def test_assignment_replaces_the_default():
    p = fetch.PartitionData()
    p.snapshot_id = fetch.SnapshotId(end_offset=100, epoch=2)
    decoded = fetch.FetchResponse.decode(
        fetch.FetchResponse(responses=[fetch.FetchableTopicResponse(partitions=[p])]).encode(VERSION), VERSION)
    assert decoded.responses[0].partitions[0].snapshot_id == fetch.SnapshotId(end_offset=100, epoch=2)
    given = fetch.LeaderIdAndEpoch(leader_id=1, leader_epoch=4)
    assert fetch.PartitionData(current_leader=given).current_leader is given


def test_null_in_a_non_nullable_struct_is_still_refused_naming_the_field():
    resp = _response(1)
    resp.responses[0].partitions[0].snapshot_id = None
    with pytest.raises(EncodeError, match="SnapshotId"):
        resp.encode(VERSION)


def test_equality_repr_and_json_see_the_default():
    _, resp = _decoded()
    explicit = _response()
    for p in explicit.responses[0].partitions:
        p.diverging_epoch, p.current_leader, p.snapshot_id = (
            fetch.EpochEndOffset(), fetch.LeaderIdAndEpoch(), fetch.SnapshotId())
    _, fresh = _decoded()
    assert fresh == explicit and explicit == fresh
    assert "diverging_epoch=EpochEndOffset(epoch=-1, end_offset=-1)" in repr(fresh)
    as_json = fresh.to_json(VERSION)
    assert "divergingEpoch" not in as_json["responses"][0]["partitions"][0]
    assert fetch.FetchResponse.from_json(as_json, VERSION) == resp


def test_a_version_without_the_field_refuses_only_a_changed_default():
    _, resp = _decoded()
    resp.responses[0].partitions[0].current_leader      # read, not changed
    resp.encode(11)
    resp.responses[0].partitions[1].current_leader.leader_epoch = 7
    with pytest.raises(UnsupportedVersionError, match="CurrentLeader"):
        resp.encode(11)


@pytest.mark.parametrize("clone", [copy.copy, copy.deepcopy, lambda m: pickle.loads(pickle.dumps(m))],
                         ids=["copy", "deepcopy", "pickle"])
def test_copies_and_pickles_keep_the_default_lazy_and_private(clone):
    _, resp = _decoded()
    partition = resp.responses[0].partitions[0]
    partition.records = bytes(partition.records)     # a memoryview of the input pickles as nothing
    twin = clone(partition)
    assert twin == partition
    assert isinstance(twin.diverging_epoch, fetch.EpochEndOffset)
    twin.diverging_epoch.epoch = 8
    assert partition.diverging_epoch.epoch == -1
