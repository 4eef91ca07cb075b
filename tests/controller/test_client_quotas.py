"""AlterClientQuotas as Kafka 4.3.1's controller answers it (ClientQuotaControlManager; issue 29):
the records it writes and Kafka's refusals, each failing its entity only. Sans-I/O: the
function is given the image's quotas and the request."""
from __future__ import annotations

import pytest

from kafkawire.controller.client_quotas import alter_client_quotas
from kafkawire.messages.alter_client_quotas_request import AlterClientQuotasRequest, EntityData, EntryData, OpData
from kafkawire.metadata import decode_metadata_record
from kafkawire.protocol.error_codes import Errors


def entry(ops, **entity):
    return EntryData(entity=[EntityData(entity_type=t.replace("_", "-"), entity_name=n) for t, n in entity.items()],
                     ops=[OpData(key=k, value=0.0 if v is None else v, remove=v is None) for k, v in ops])


def alter(*entries, current=None, validate_only=False):
    records, response = alter_client_quotas(AlterClientQuotasRequest(entries=list(entries),
                                                                     validate_only=validate_only), current or {})
    decoded = [decode_metadata_record(r).message for r in records]
    return [(sorted((e.entity_type, e.entity_name) for e in r.entity), r.key, r.value, r.remove) for r in decoded], \
        [(e.error_code, e.error_message) for e in response.entries]


def test_sets_new_values_removes_present_keys_and_skips_what_is_already_so():
    current = {frozenset({("user", "alice")}): {"producer_byte_rate": 1024.0, "consumer_byte_rate": 10.0}}
    records, results = alter(entry([("producer_byte_rate", 1024.0), ("consumer_byte_rate", None),
                                    ("request_percentage", 50.5), ("controller_mutation_rate", None)], user="alice"),
                             current=current)
    assert records == [([("user", "alice")], "consumer_byte_rate", 0.0, True),
                       ([("user", "alice")], "request_percentage", 50.5, False)]
    assert results == [(0, None)]
    assert alter(entry([("producer_byte_rate", 1.0)], user=None), validate_only=True) == ([], [(0, None)])


@pytest.mark.parametrize("bad_entry, message", [
    (entry([("producer_byte_rate", 1.0)]), "Invalid empty client quota entity"),
    (entry([("producer_byte_rate", 1.0)], group="g"), "Unhandled client quota entity type: group"),
    (entry([("producer_byte_rate", 1.0)], user=""), "Empty user not supported"),
    (entry([("connection_creation_rate", 1.0)], ip="10.0.0.1", user="u"),
     "Invalid quota entity combination, IP entity shouldnot be combined with User or ClientId"),
    (entry([("connection_creation_rate", 1.0)], ip="not an address"), "not an address is not a valid IP or "
                                                                       "resolvable host."),
    (entry([("connection_creation_rate", 1.0)], user="u"), "Invalid configuration key connection_creation_rate"),
    (entry([("producer_byte_rate", 0.0)], user="u"), "Quota producer_byte_rate must be greater than 0"),
    (entry([("producer_byte_rate", 1.5)], user="u"), "producer_byte_rate cannot be a fractional value."),
    (entry([("connection_creation_rate", 2.0**31)], ip="10.0.0.1"),
     "Proposed value for connection_creation_rate is too large for an INT."),
    (entry([("producer_byte_rate", 1.0), ("producer_byte_rate", 2.0)], user="u"),
     "Ignoring duplicate entity ClientQuotaEntity(entries={user=u})"),
], ids=["empty", "unknown type", "empty name", "ip with user", "bad ip", "wrong key", "zero", "fraction",
        "too large", "key twice"])
def test_kafkas_refusals_fail_only_their_entity(bad_entry, message):
    records, results = alter(bad_entry, entry([("producer_byte_rate", 1.0)], client_id="ok"))
    assert results == [(int(Errors.INVALID_REQUEST), message), (0, None)]
    assert records == [([("client-id", "ok")], "producer_byte_rate", 1.0, False)]
