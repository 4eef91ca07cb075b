"""An array between fixed-width fields is read in the same unpack as they are when it is empty or
null (codegen's _decode_array_in_run). The values must not depend on which path was taken, and
a truncated message must still be blamed on the field it was cut in."""
from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st

from kafkawire.messages import fetch_response as fetch
from kafkawire.protocol.errors import DecodeError

TXN = st.builds(fetch.AbortedTransaction, producer_id=st.integers(-2**63, 2**63 - 1),
                first_offset=st.integers(-2**63, 2**63 - 1))


@settings(max_examples=80, deadline=None)
@given(aborted=st.lists(st.one_of(st.none(), st.lists(TXN, max_size=3), st.lists(TXN, min_size=130, max_size=131)),
                        min_size=1, max_size=3),
       replica=st.integers(-2**31, 2**31 - 1), version=st.sampled_from([4, 5, 11, 12, 16]))
def test_values_are_the_same_on_both_paths(aborted, replica, version):
    partitions = [fetch.PartitionData(partition_index=i, aborted_transactions=a, preferred_read_replica=replica,
                                      log_start_offset=7 if version >= 5 else -1)
                  for i, a in enumerate(aborted)]
    topic = "t" if version <= 12 else ""       # v13+ names topics by id only
    resp = fetch.FetchResponse(responses=[fetch.FetchableTopicResponse(topic=topic, partitions=partitions)])
    if version < 11:
        for p in partitions:
            p.preferred_read_replica = -1
    assert fetch.FetchResponse.decode(resp.encode(version), version) == resp


def _cut_errors(resp, version):
    data = resp.encode(version)
    errors = {}
    for end in range(len(data)):
        with pytest.raises(DecodeError) as info:
            fetch.FetchResponse.decode(data[:end], version)
        errors[end] = info.value.field
    return data, errors


# Where the first partition's AbortedTransactions length starts: after the response header
# fields (10 bytes), the responses count, the topic "t", the partitions count and the partition's
# 30 bytes of fixed fields. Compact counts and strings take 1 + 2 + 1 bytes in v12, classic 4 + 3 + 4.
LENGTH_AT = {11: 10 + 4 + 3 + 4 + 30, 12: 10 + 1 + 2 + 1 + 30}
LENGTH_SIZE = {11: 4, 12: 1}


@pytest.mark.parametrize("version", [11, 12])
def test_a_cut_inside_a_non_empty_array_is_blamed_on_the_array(version):
    one = fetch.FetchResponse(responses=[fetch.FetchableTopicResponse(topic="t", partitions=[
        fetch.PartitionData(aborted_transactions=[fetch.AbortedTransaction(producer_id=5, first_offset=6)],
                            preferred_read_replica=3)])])
    data, errors = _cut_errors(one, version)
    length_at = LENGTH_AT[version]
    assert data[length_at:length_at + LENGTH_SIZE[version]] == (b"\x02" if version == 12 else b"\x00\x00\x00\x01")
    # The speculative unpack reads 4 bytes after the length as PreferredReadReplica; a cut there
    # is inside the transaction, and must be reported so.
    for end in range(length_at, length_at + LENGTH_SIZE[version] + 4):
        assert errors[end].startswith("Responses.Partitions.AbortedTransactions"), (end, errors[end])
    assert errors[length_at - 1] == "Responses.Partitions.LogStartOffset"


@pytest.mark.parametrize("version", [11, 12])
def test_a_cut_after_an_empty_array_is_blamed_on_the_next_field(version):
    empty = fetch.FetchResponse(responses=[fetch.FetchableTopicResponse(topic="t", partitions=[
        fetch.PartitionData(aborted_transactions=[], preferred_read_replica=3, records=None)])])
    data, errors = _cut_errors(empty, version)
    replica_at = data.index(b"\x00\x00\x00\x03")
    for end in range(replica_at, replica_at + 4):
        assert errors[end] == "Responses.Partitions.PreferredReadReplica", (end, errors[end])
    assert errors[replica_at - 1] == "Responses.Partitions.AbortedTransactions"
