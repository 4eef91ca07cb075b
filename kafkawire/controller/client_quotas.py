"""AlterClientQuotas as Kafka's controller answers it (ClientQuotaControlManager.alterClientQuotas
under QuorumController.alterClientQuotas): a ClientQuotaRecord for each quota set to a new value
or removed, none for one already so; ``validate_only`` checks and writes nothing.

    records, response = alter_client_quotas(request, image.client_quotas)

Kafka's checks and messages, each failing its entity only (INVALID_REQUEST): a key twice in one
entity, or an entity altered twice ("Ignoring duplicate entity <entity>"), an empty entity
("Invalid empty client quota entity"), a type twice ("Invalid client quota entity, duplicate
entity entry <type>"), a type other than user, client-id and ip ("Unhandled client quota entity
type: <type>"), an empty name ("Empty <type> not supported"), ip with user or client-id, an ip
name that is not an address, a key the entity's kind has not ("Invalid configuration key <key>"),
a value not above 0 ("Quota <key> must be greater than 0"), a fraction for an integral key ("<key>
cannot be a fractional value."). Differences kept: an ip name is checked as a literal address
(Kafka also resolves host names); the entities are answered, and an entity's types printed, in
the request's order (Kafka's: its HashMaps').
"""
from __future__ import annotations

import ipaddress

from kafkawire.messages.alter_client_quotas_response import AlterClientQuotasResponse, EntityData, EntryData
from kafkawire.messages.client_quota_record import ClientQuotaRecord
from kafkawire.messages.client_quota_record import EntityData as RecordEntity
from kafkawire.metadata import encode_metadata_record
from kafkawire.protocol.error_codes import Errors

from .bounded import MAX_RECORDS_PER_USER_OP, excessive_batch

__all__ = ["alter_client_quotas", "ALTER_CLIENT_QUOTAS", "refusal"]

ALTER_CLIENT_QUOTAS = 49
USER, CLIENT_ID, IP = "user", "client-id", "ip"
# QuotaConfig.userAndClientQuotaConfigs and ipConfigs: key -> integral (LONG or INT) or not (DOUBLE)
USER_AND_CLIENT_KEYS = {"producer_byte_rate": 2**63 - 1, "consumer_byte_rate": 2**63 - 1,
                        "request_percentage": None, "controller_mutation_rate": None}
IP_KEYS = {"connection_creation_rate": 2**31 - 1}
TOO_LARGE = {2**63 - 1: "a LONG", 2**31 - 1: "an INT"}


class QuotaRefused(Exception):
    pass


def alter_client_quotas(request, quotas: dict):
    """(records, AlterClientQuotasResponse); ``quotas``: the image's entity -> key -> value."""
    records, results = [], {}          # entity -> (its entry, error, message), one answer per entity
    for entry in request.entries:
        entity = [(e.entity_type, e.entity_name) for e in entry.entity]
        key = frozenset(entity)
        if key in results or _duplicate_key(entry.ops):
            # Kafka's result map: a second alteration of an entity, or one naming a key twice,
            # answers the entity with this (the first one's records stay)
            results[key] = (entry, Errors.INVALID_REQUEST, f"Ignoring duplicate entity {_entity_text(entity)}")
            continue
        try:
            changes = _changes(entity, entry.ops, quotas.get(key, {}))
        except QuotaRefused as exc:
            results[key] = (entry, Errors.INVALID_REQUEST, str(exc))
            continue
        records += [encode_metadata_record(ClientQuotaRecord(
            entity=[RecordEntity(entity_type=t, entity_name=n) for t, n in entity], key=name,
            value=0.0 if value is None else value, remove=value is None), 0) for name, value in changes]
        results[key] = (entry, Errors.NONE, None)
    if len(records) > MAX_RECORDS_PER_USER_OP:
        raise excessive_batch()
    response = AlterClientQuotasResponse(entries=[_result(*result) for result in results.values()])
    return ([] if request.validate_only else records), response


def _duplicate_key(ops) -> bool:
    seen: set[str] = set()
    for op in ops:
        if op.key in seen:
            return True
        seen.add(op.key)
    return False


def _result(entry, error: Errors, message):
    return EntryData(error_code=int(error), error_message=message, entity=[
        EntityData(entity_type=e.entity_type, entity_name=e.entity_name) for e in entry.entity])


def _changes(entity: list, ops, current: dict) -> list:
    """The (key, value or None to remove) records the entity's ops make, after Kafka's checks."""
    wanted = {op.key: None if op.remove else op.value for op in ops}
    keys = _keys_of(entity)
    changes = []
    for key, value in wanted.items():
        if value is None:
            if key in current:
                changes.append((key, None))
            continue
        _check_value(keys, key, value)
        if current.get(key) != value:
            changes.append((key, value))
    return changes


def _keys_of(entity: list) -> dict:
    if not entity:
        raise QuotaRefused("Invalid empty client quota entity")
    named: dict[str, str | None] = {}
    for kind, name in entity:
        if kind in named:
            raise QuotaRefused(f"Invalid client quota entity, duplicate entity entry {kind}")
        if kind not in (USER, CLIENT_ID, IP):
            raise QuotaRefused(f"Unhandled client quota entity type: {kind}")
        if name is not None and not name:
            raise QuotaRefused(f"Empty {kind} not supported")
        named[kind] = name
    if IP not in named:
        return USER_AND_CLIENT_KEYS
    if len(named) > 1:
        raise QuotaRefused("Invalid quota entity combination, IP entity shouldnot be combined with User or ClientId")
    if named[IP] is not None:
        try:
            ipaddress.ip_address(named[IP])
        except ValueError:
            raise QuotaRefused(f"{named[IP]} is not a valid IP or resolvable host.") from None
    return IP_KEYS


def _check_value(keys: dict, key: str, value: float) -> None:
    if key not in keys:
        raise QuotaRefused(f"Invalid configuration key {key}")
    if value <= 0.0:
        raise QuotaRefused(f"Quota {key} must be greater than 0")
    bound = keys[key]
    if bound is not None:
        if value > bound:
            raise QuotaRefused(f"Proposed value for {key} is too large for {TOO_LARGE[bound]}.")
        if abs(value % 1.0) > 1e-6:
            raise QuotaRefused(f"{key} cannot be a fractional value.")


def _entity_text(entity: list) -> str:
    """ClientQuotaEntity.toString: ClientQuotaEntity(entries={type=name, ...})."""
    return "ClientQuotaEntity(entries={" + ", ".join(f"{t}={n}" for t, n in entity) + "})"


def refusal(request, error: int):
    """AlterClientQuotasRequest.getErrorResponse: the error, with its default text, on each entity."""
    error = Errors.for_code(error)
    return AlterClientQuotasResponse(entries=[_result(entry, error, error.message) for entry in request.entries])

