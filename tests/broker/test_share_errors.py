"""The messages sent beside share-partition errors (kafkawire.broker.share_errors): the share
coordinator's errors as Kafka's SharePartition.fetchPersisterError maps them, and the
acknowledgement refusals of kafkawire.broker.share_partition with Kafka's SharePartition's texts."""
from __future__ import annotations

import dataclasses
from types import SimpleNamespace

import pytest

from kafkawire.broker.share_errors import message_of, persister_error, persister_failure, with_message
from kafkawire.broker.share_partition import ACCEPT, RENEW, SharePartition, ShareSettings
from kafkawire.protocol.error_codes import Errors

SETTINGS = ShareSettings(record_lock_duration_ms=30_000, delivery_count_limit=5, max_record_locks=200)


def coordinator_answer(code, message=None):
    return SimpleNamespace(error_code=int(code), error_message=message)


@pytest.mark.parametrize("code, message, expected", [
    (Errors.INVALID_REQUEST, "Read operation on uninitialized share partition not allowed.",
     (Errors.UNKNOWN_SERVER_ERROR, "Read operation on uninitialized share partition not allowed.")),
    (Errors.FENCED_STATE_EPOCH, "old", (Errors.NOT_LEADER_OR_FOLLOWER, "old")),
    (Errors.COORDINATOR_LOAD_IN_PROGRESS, None,
     (Errors.COORDINATOR_NOT_AVAILABLE, Errors.COORDINATOR_LOAD_IN_PROGRESS.message)),     # the default text
    (Errors.UNSUPPORTED_VERSION, "hidden", (Errors.UNKNOWN_SERVER_ERROR,
                                            "Unable to complete operation due to server error.")),
    (Errors.GROUP_ID_NOT_FOUND, "gone", (Errors.GROUP_ID_NOT_FOUND, "gone")),
])
def test_a_share_coordinators_error_reaches_the_client_as_kafka_maps_it(code, message, expected):
    mapped = persister_error(persister_failure(coordinator_answer(code, message), "read", retries_ran_out=False))
    assert (mapped, message_of(mapped)) == expected


def test_retries_that_ran_out_say_so_and_a_plain_code_has_no_message():
    mapped = persister_error(persister_failure(coordinator_answer(Errors.NETWORK_EXCEPTION), "write", True))
    assert (mapped, message_of(mapped)) == (Errors.UNKNOWN_SERVER_ERROR,
                                            "Exhausted max retries to complete write state RPC without success.")
    assert message_of(Errors.NONE) is None and with_message(Errors.NONE, None) is Errors.NONE


def test_acknowledgement_refusals_carry_kafkas_messages():
    sp = SharePartition(start_offset=0)
    assert sp.acquire("m1", [(0, 4, False)], max_records=10, now_ms=0, settings=SETTINGS)
    no_renew = dataclasses.replace(SETTINGS, renew_acknowledge_enabled=False)
    refusals = [sp.acknowledge(member, first, last, types, now_ms=0, settings=no_renew, renew_allowed=True)
                for member, first, last, types in [("m2", 0, 0, [ACCEPT]), ("m1", 5, 5, [ACCEPT]),
                                                   ("m1", 3, 6, [ACCEPT]), ("m1", 0, 0, [RENEW])]]
    assert sp.acknowledge("m1", 1, 1, [ACCEPT], now_ms=0, settings=SETTINGS) == Errors.NONE
    refusals.append(sp.acknowledge("m1", 1, 1, [ACCEPT], now_ms=0, settings=SETTINGS))
    assert [(code, message_of(code)) for code in refusals] == [
        (Errors.INVALID_RECORD_STATE, "Member is not the owner of offset"),
        (Errors.INVALID_REQUEST, "Batch record not found. The first offset in request is past acquired records."),
        (Errors.INVALID_REQUEST, "Batch record not found. The last offset in request is past acquired records."),
        (Errors.INVALID_RECORD_STATE, "Renewing acquisition locks is not enabled for the group."),
        (Errors.INVALID_RECORD_STATE, "The offset cannot be acknowledged. The offset is not acquired.")]
