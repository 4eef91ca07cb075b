"""The UNKNOWN_SERVER_ERROR answers Kafka 4.3.1's getErrorResponse gives and kafkawire's connection
did not before kafkawire.net.error_responses (found by tests/interop/test_error_responses_vs_kafka.py,
which compares every served API and version byte for byte with Kafka's request classes; these
are its differences, kept without Java). Before, a handler without its own error_response was
answered with a default response carrying only the top-level error code, and a version without
one closed the connection: 37 APIs of a broker and 26 of a controller answered otherwise than
Kafka. The requests are tests/net/error_response_requests.py's filled ones (two entries in every
array, distinct numbers and names)."""
from __future__ import annotations

from types import SimpleNamespace

import pytest

from kafkawire.net.error_responses import ERROR_RESPONSES, error_response, failed_request_response
from kafkawire.protocol.error_codes import Errors
from tests.net.error_response_requests import SERVED_KEYS, cases, versions

USE = int(Errors.UNKNOWN_SERVER_ERROR)
TEXT = Errors.UNKNOWN_SERVER_ERROR.message        # "The server experienced an unexpected error ..."
INT32_MIN = -2**31


def answer(api_key: int, version: int):
    request = dict(cases(api_key, version))["filled"]
    return request, error_response(api_key, request, version, USE)


def test_every_served_api_has_an_answer_at_every_version_but_where_kafka_answers_nothing():
    for api_key in SERVED_KEYS:
        for version in versions(api_key):
            for name, request in cases(api_key, version):
                response = error_response(api_key, request, version, USE)
                acks_0 = api_key == 0 and request.acks == 0
                every_user = api_key == 50 and request.users is None    # Kafka's throws: closed
                assert (response is None) == (acks_0 or every_user), (api_key, version, name)
                if response is not None:
                    response.encode(version)


@pytest.mark.parametrize("version", range(0, 6))
def test_init_producer_id_has_no_producer_id_and_no_epoch(version):
    _, response = answer(22, version)
    assert (response.error_code, response.producer_id, response.producer_epoch) == (USE, -1, -1)


def test_produce_answers_each_partition_in_the_order_of_kafkas_hash_map_and_acks_0_nothing():
    """A HashMap of TopicIdPartition filled by compute: by bucket, and within a bucket the last
    put first (v13's topic ids put partitions 4 and 6 of one topic in one bucket)."""
    for version, expected in ((3, [("name-8", [9, 11]), ("name-3", [4, 6])]),
                              (13, [(8, [9, 11]), (3, [6, 4])])):
        _, response = answer(0, version)
        topics = [(t.name if version < 13 else t.topic_id.int, [p.index for p in t.partition_responses])
                  for t in response.responses]
        assert topics == expected
        assert {(p.error_code, p.base_offset, p.log_append_time_ms, p.log_start_offset, p.error_message)
                for t in response.responses for p in t.partition_responses} == {(USE, -1, -1, -1, None)}
    zero = dict(cases(0, 9))["acks 0"]
    assert error_response(0, zero, 9, USE) is None


def test_fetch_answers_at_the_top_with_the_session_id_and_before_v13_on_every_partition():
    request, response = answer(1, 13)
    assert (response.error_code, response.session_id, response.responses) == (USE, request.session_id, [])
    request, response = answer(1, 12)
    assert (response.error_code, response.session_id) == (USE, request.session_id)
    assert [[(p.partition_index, p.error_code, p.high_watermark, p.records) for p in t.partitions]
            for t in response.responses] == [[(p.partition, USE, -1, b"") for p in t.partitions] for t in request.topics]


@pytest.mark.parametrize("version", [0, 12, 13])
def test_metadata_answers_each_topic_named(version):
    request, response = answer(3, version)
    assert [(t.name, t.error_code, t.is_internal, t.partitions) for t in response.topics] == \
        [(t.name, USE, False, []) for t in request.topics]
    if version >= 13:
        assert response.error_code == USE
    request.topics[0].name = None                      # a topic asked by id: its name is ""
    assert error_response(3, request, version, USE).topics[0].name == ""


def test_the_group_and_offset_apis_answer_each_group_topic_and_partition():
    request, response = answer(8, 9)
    assert [(t.name, [(p.partition_index, p.error_code) for p in t.partitions]) for t in response.topics] == \
        [(t.name, [(p.partition_index, USE) for p in t.partitions]) for t in request.topics]
    request, response = answer(9, 1)
    assert [[(p.partition_index, p.error_code, p.committed_offset, p.metadata) for p in t.partitions]
            for t in response.topics] == [[(p, USE, -1, "") for p in t.partition_indexes] for t in request.topics]
    assert answer(9, 7)[1].error_code == USE
    request, response = answer(9, 8)
    assert [(g.group_id, g.error_code) for g in response.groups] == [(g.group_id, USE) for g in request.groups]
    request, response = answer(15, 5)
    assert [(g.group_id, g.error_code, g.group_state, g.authorized_operations) for g in response.groups] == \
        [(g, USE, "", INT32_MIN) for g in request.groups]
    request, response = answer(42, 2)
    assert [(g.group_id, g.error_code) for g in response.results] == [(g, USE) for g in request.groups_names]
    request, response = answer(28, 4)
    assert [[p.error_code for p in t.partitions] for t in response.topics] == [[USE, USE], [USE, USE]]
    for api_key in (69, 77, 89):
        request, response = answer(api_key, 0 if api_key == 89 else 1)
        assert [(g.group_id, g.error_code) for g in response.groups] == [(g, USE) for g in request.group_ids]


def test_join_group_has_no_generation_and_from_v7_a_null_protocol_name():
    assert (answer(11, 6)[1].protocol_name, answer(11, 7)[1].protocol_name) == ("", None)
    assert answer(11, 9)[1].generation_id == -1


def test_find_coordinator_names_no_node_with_the_errors_text():
    response = answer(10, 3)[1]
    assert (response.error_code, response.error_message, response.node_id, response.host, response.port) == \
        (USE, TEXT, -1, "", -1)
    request, response = answer(10, 4)
    assert [(c.key, c.error_code, c.error_message, c.node_id) for c in response.coordinators] == \
        [(k, USE, TEXT, -1) for k in request.coordinator_keys]


def test_the_transaction_apis_answer_each_partition_and_write_txn_markers_in_kafkas_hash_map_order():
    request, response = answer(24, 3)
    assert [[(p.partition_index, p.partition_error_code) for p in t.results_by_partition]
            for t in response.results_by_topic_v3_and_below] == [[(p, USE) for p in t.partitions]
                                                                 for t in request.v3_and_below_topics]
    assert answer(24, 4)[1].error_code == USE
    response = answer(27, 1)[1]
    assert [(m.producer_id, [(t.name, [p.partition_index for p in t.partitions]) for t in m.topics])
            for m in response.markers] == [(1, [("name-7", [8, 9]), ("name-4", [5, 6])]),
                                           (11, [("name-14", [16, 15]), ("name-17", [19, 18])])]
    request, response = answer(65, 0)
    assert [(s.transactional_id, s.error_code) for s in response.transaction_states] == \
        [(t, USE) for t in request.transactional_ids]
    request, response = answer(61, 0)
    assert [[(p.partition_index, p.error_code) for p in t.partitions] for t in response.topics] == \
        [[(p, USE) for p in t.partition_indexes] for t in request.topics]


def test_delete_records_and_log_dirs_answer_each_partition():
    response = answer(21, 2)[1]
    assert {(p.error_code, p.low_watermark) for t in response.topics for p in t.partitions} == {(USE, -1)}
    request, response = answer(34, 2)
    assert [(r.topic_name, [p.partition_index for p in r.partitions]) for r in response.results] == \
        [(t.name, list(t.partitions)) for d in request.dirs for t in d.topics]
    assert answer(35, 1)[1].results == []          # v1-2: no place for the code, still answered


def test_messages_are_kafkas_null_or_default_text():
    assert answer(29, 3)[1].error_message is None and answer(36, 2)[1].error_message is None
    assert answer(55, 2)[1].error_message == TEXT and answer(64, 0)[1].error_message == TEXT
    assert answer(32, 4)[1].results[0].error_message == TEXT
    for api_key in (84, 85, 87):
        assert {p.error_message for r in answer(api_key, 0)[1].results for p in r.partitions} == {TEXT}
    for api_key in (83, 86):
        assert {(p.error_code, p.error_message) for r in answer(api_key, 0)[1].results for p in r.partitions} == \
            {(USE, None)}
    assert {g.error_message for g in answer(90, 1)[1].groups} == {TEXT}
    assert (answer(91, 0)[1].error_message, answer(92, 0)[1].error_message) == (TEXT, TEXT)


def test_the_admin_apis_answer_each_entry_on_a_controller_too():
    """A controller's admin handlers have no error_response of their own: before the table they
    were answered with the top-level code alone, or closed."""
    request, response = answer(19, 7)
    assert [(t.name, t.error_code) for t in response.topics] == [(t.name, USE) for t in request.topics]
    request, response = answer(46, 0)
    assert [(t.name, [p.partition_index for p in t.partitions]) for t in response.topics] == \
        [(t.name, list(t.partition_indexes)) for t in request.topics]
    assert answer(48, 1)[1].entries is None
    request, response = answer(50, 0)
    assert [(r.user, r.error_code) for r in response.results] == [("", USE)] * len(request.users)
    assert answer(70, 0)[1].error_message == TEXT and answer(80, 1)[1].error_message == TEXT
    assert [r.error_code for r in answer(30, 3)[1].results] == [USE, USE]


def test_a_handlers_own_error_response_still_wins():
    own = SimpleNamespace(error_response=lambda ctx, request, code: ("own", code))
    ctx = SimpleNamespace(api_key=22, api_version=4)
    assert failed_request_response(own, ctx, None, USE) == ("own", USE)
    table = SimpleNamespace(error_response=None)
    request = dict(cases(22, 4))["filled"]
    assert failed_request_response(table, ctx, request, USE).producer_id == -1
    assert set(ERROR_RESPONSES) <= SERVED_KEYS          # no builder for an API nobody serves
