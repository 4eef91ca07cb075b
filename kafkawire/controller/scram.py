"""AlterUserScramCredentials as Kafka's controller answers it (ScramControlManager.alterCredentials):
UserScramCredentialRecord for each upsertion (the stored and server keys computed from the salted
password the client sent, RFC 5802), RemoveUserScramCredentialRecord for each deletion.

Kafka's checks and messages: an empty user name (UNACCEPTABLE_CREDENTIAL "Username must not be
empty"), an unknown mechanism (UNSUPPORTED_SASL_MECHANISM "Unknown SCRAM mechanism"), iterations
below the mechanism's minimum or above 16384 ("Too few iterations", "Too many iterations"), the
same user twice in one request (DUPLICATE_RESOURCE "A user credential cannot be altered twice in
the same request"), deleting what does not exist (RESOURCE_NOT_FOUND "Attempt to delete a user
credential that does not exist"), a metadata.version before 3.5-IV2 (UNSUPPORTED_VERSION "The
current metadata.version does not support SCRAM"). The results come in Kafka's order: deletions,
then upsertions, then errors, each in the iteration order of the Java HashMap keyed by user name
that Kafka collects them in.
"""
from __future__ import annotations

import hashlib
import hmac

from kafkawire.controller.java_order import string_hashmap_order
from kafkawire.metadata import encode_metadata_record
from kafkawire.protocol.error_codes import Errors
from kafkawire import messages
from kafkawire.messages.alter_user_scram_credentials_response import (AlterUserScramCredentialsResponse,
                                                                      AlterUserScramCredentialsResult)

__all__ = ["alter_user_scram_credentials", "ALTER_USER_SCRAM_CREDENTIALS"]

ALTER_USER_SCRAM_CREDENTIALS = 51
# ScramMechanism type -> (hash, minimum iterations)
MECHANISMS = {1: ("sha256", 4096), 2: ("sha512", 4096)}
MAX_ITERATIONS = 16384
SCRAM_METADATA_VERSION = 11           # MetadataVersion.IBP_3_5_IV2
TWICE = (Errors.DUPLICATE_RESOURCE, "A user credential cannot be altered twice in the same request")


def _name_and_mechanism_error(name: str, mechanism: int):
    if not name:
        return Errors.UNACCEPTABLE_CREDENTIAL, "Username must not be empty"
    if mechanism not in MECHANISMS:
        return Errors.UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism"
    return None


def _upsertion_error(u):
    error = _name_and_mechanism_error(u.name, u.mechanism)
    if error is None and u.iterations < MECHANISMS[u.mechanism][1]:
        error = Errors.UNACCEPTABLE_CREDENTIAL, "Too few iterations"
    elif error is None and u.iterations > MAX_ITERATIONS:
        error = Errors.UNACCEPTABLE_CREDENTIAL, "Too many iterations"
    return error


def _keys(mechanism: int, salted_password: bytes) -> tuple[bytes, bytes]:
    digest = MECHANISMS[mechanism][0]
    client_key = hmac.new(salted_password, b"Client Key", digest).digest()
    return hashlib.new(digest, client_key).digest(), hmac.new(salted_password, b"Server Key", digest).digest()


def _sort(request, scram: dict, metadata_version: int):
    """(deletions, upsertions, errors) by user, as alterCredentials sorts the request."""
    supported = metadata_version is not None and metadata_version >= SCRAM_METADATA_VERSION
    deletions, upsertions, errors = {}, {}, {}
    for d in request.deletions:
        if d.name in errors:
            continue
        if deletions.pop(d.name, None) is not None:
            errors[d.name] = TWICE
        elif not supported:
            errors[d.name] = (Errors.UNSUPPORTED_VERSION, "The current metadata.version does not support SCRAM")
        else:
            error = _name_and_mechanism_error(d.name, d.mechanism)
            if error is None and d.name not in scram.get(d.mechanism, {}):
                error = Errors.RESOURCE_NOT_FOUND, "Attempt to delete a user credential that does not exist"
            if error is None:
                deletions[d.name] = d
            else:
                errors[d.name] = error
    for u in request.upsertions:
        if u.name in errors:
            continue
        if deletions.pop(u.name, None) is not None or upsertions.pop(u.name, None) is not None:
            errors[u.name] = TWICE
        elif not supported:
            errors[u.name] = (Errors.UNSUPPORTED_VERSION, "The current metadata.version does not support SCRAM")
        else:
            error = _upsertion_error(u)
            if error is None:
                upsertions[u.name] = u
            else:
                errors[u.name] = error
    return deletions, upsertions, errors


def alter_user_scram_credentials(request, scram: dict, metadata_version: int | None):
    """(records, AlterUserScramCredentialsResponse); ``scram``: the image's mechanism -> user -> credential."""
    deletions, upsertions, errors = _sort(request, scram, metadata_version)
    records, results = [], []
    remove_cls, upsert_cls = (messages.by_name("RemoveUserScramCredentialRecord"),
                              messages.by_name("UserScramCredentialRecord"))
    for name in string_hashmap_order(deletions):
        d = deletions[name]
        results.append(AlterUserScramCredentialsResult(user=name, error_code=0, error_message=None))
        records.append(encode_metadata_record(remove_cls(name=name, mechanism=d.mechanism), 0))
    for name in string_hashmap_order(upsertions):
        u = upsertions[name]
        stored_key, server_key = _keys(u.mechanism, bytes(u.salted_password))
        records.append(encode_metadata_record(upsert_cls(name=name, mechanism=u.mechanism, salt=bytes(u.salt),
                                                         stored_key=stored_key, server_key=server_key,
                                                         iterations=u.iterations), 0))
        results.append(AlterUserScramCredentialsResult(user=name, error_code=0, error_message=None))
    for name in string_hashmap_order(errors):
        error, message = errors[name]
        results.append(AlterUserScramCredentialsResult(user=name, error_code=int(error), error_message=message))
    return records, AlterUserScramCredentialsResponse(results=results)
