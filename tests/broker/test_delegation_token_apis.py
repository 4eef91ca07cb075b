"""The broker's delegation token APIs (KafkaApis' checks before forwarding, Describe from the image;
issue 29) and the SASL/SCRAM ``tokenauth`` login (ScramSaslServer), in process: an image built from
records, the handlers called directly, a SCRAM client written out here because scramp's client
cannot send Kafka's extensions."""
from __future__ import annotations

import asyncio
import base64
import hashlib
import hmac
import os
from types import SimpleNamespace

import pytest

from kafkawire.broker.delegation_token_apis import DelegationTokenApis, delegation_token_checks
from kafkawire.messages.create_delegation_token_request import CreatableRenewers, CreateDelegationTokenRequest
from kafkawire.messages.delegation_token_record import DelegationTokenRecord
from kafkawire.messages.describe_delegation_token_request import (DescribeDelegationTokenOwner,
                                                                   DescribeDelegationTokenRequest)
from kafkawire.messages.renew_delegation_token_request import RenewDelegationTokenRequest
from kafkawire.metadata.image import MetadataImage
from kafkawire.net.sasl import SaslFailure, SaslServerSession
from kafkawire.protocol.error_codes import Errors
from kafkawire.protocol.handler import RequestContext

SECRET = "broker-secret"


def token(token_id, owner="User:alice", renewers=(), requester=None):
    return DelegationTokenRecord(owner=owner, requester=requester or owner, renewers=list(renewers),
                                 issue_timestamp=1, max_timestamp=3, expiration_timestamp=2, token_id=token_id)


def broker_with(*records, secret=SECRET):
    image = MetadataImage()
    for record in records:
        image.apply(record)
    forwarded = []

    async def forward(ctx, request):
        forwarded.append((ctx.api_key, request))
        return "forwarded"
    broker = SimpleNamespace(image=lambda: image, config=SimpleNamespace(delegation_token_secret_key=secret),
                             forwarder=SimpleNamespace(forward=forward))
    return DelegationTokenApis(broker), forwarded


def ctx(api_key, principal="User:alice", protocol="SASL_PLAINTEXT", token_authenticated=False, version=3):
    """At v3 (the owner principal fields and the requester of CreateDelegationToken's answer)."""
    return RequestContext(api_key, version, 0, "", ("127.0.0.1", 1), "L", "c", principal=principal,
                          security_protocol=protocol, token_authenticated=token_authenticated)


def call(apis, context, request, denied=()):
    """The handler behind a fake authorizer that denies the (operation, resource type, name) in ``denied``."""
    def may(operation, resource_type, name, quiet=False):
        return (operation, resource_type, name) not in denied
    check = delegation_token_checks(apis)[context.api_key]
    return asyncio.run(check(context, request, may, None))


@pytest.mark.parametrize("context", [
    ctx(38, protocol="PLAINTEXT"), ctx(38, protocol="SSL", principal="User:ANONYMOUS"),
    ctx(38, protocol="SASL_SSL", token_authenticated=True),
], ids=["plaintext", "anonymous ssl", "token-authenticated"])
def test_token_requests_kafka_does_not_allow_are_refused_before_forwarding(context):
    apis, forwarded = broker_with()
    for key, request in ((38, CreateDelegationTokenRequest()), (39, RenewDelegationTokenRequest(hmac=b"h")),
                         (41, DescribeDelegationTokenRequest(owners=None))):
        response = call(apis, ctx(key, context.principal, context.security_protocol, context.token_authenticated),
                        request)
        assert response.error_code == int(Errors.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED)
    assert forwarded == []


def test_create_is_forwarded_unless_the_owner_is_another_user_without_create_tokens_or_a_renewer_is_not_a_user():
    apis, forwarded = broker_with()
    assert call(apis, ctx(38), CreateDelegationTokenRequest()) == "forwarded"
    for_bob = CreateDelegationTokenRequest(owner_principal_type="User", owner_principal_name="bob")
    refused = call(apis, ctx(38), for_bob, denied={(13, 7, "User:bob")})
    assert (refused.error_code, refused.principal_name, refused.token_requester_principal_name,
            refused.max_timestamp_ms) == (int(Errors.DELEGATION_TOKEN_AUTHORIZATION_FAILED), "bob", "alice", -1)
    assert call(apis, ctx(38), for_bob) == "forwarded"
    group_renewer = CreateDelegationTokenRequest(renewers=[CreatableRenewers(principal_type="Group",
                                                                             principal_name="g")])
    assert call(apis, ctx(38), group_renewer).error_code == int(Errors.INVALID_PRINCIPAL_TYPE)
    assert [key for key, _ in forwarded] == [38, 38]


def described(response):
    assert response.error_code == 0, response
    return sorted(t.token_id for t in response.tokens)


def test_describe_lists_own_and_renewed_tokens_and_others_only_with_describe_acls():
    apis, _ = broker_with(token("a1"), token("b1", owner="User:bob", renewers=["User:carol"]), token("b2", "User:bob"))
    everything = DescribeDelegationTokenRequest(owners=None)
    assert described(call(apis, ctx(41), everything, denied={(8, 6, "b1"), (8, 6, "b2"), (14, 7, "User:bob")})) == \
        ["a1"]
    assert described(call(apis, ctx(41, "User:carol"), everything,
                          denied={(8, 6, "a1"), (8, 6, "b2"), (14, 7, "User:alice"), (14, 7, "User:bob")})) == ["b1"]
    assert described(call(apis, ctx(41), everything, denied={(8, 6, "b1"), (14, 7, "User:bob")})) == ["a1", "b2"]
    assert described(call(apis, ctx(41), everything, denied={(8, 6, "b1"), (8, 6, "b2")})) == ["a1", "b1", "b2"]
    only_bob = DescribeDelegationTokenRequest(owners=[DescribeDelegationTokenOwner(principal_type="User",
                                                                                   principal_name="bob")])
    assert described(call(apis, ctx(41), only_bob)) == ["b1", "b2"]
    assert described(call(apis, ctx(41), DescribeDelegationTokenRequest(owners=[]))) == []


def test_describe_answers_kafkas_fields_with_the_hmac_and_is_disabled_without_a_secret():
    apis, _ = broker_with(token("a1", renewers=["User:bob"], requester="User:admin"))
    (answer,) = call(apis, ctx(41), DescribeDelegationTokenRequest(owners=None)).tokens
    assert (answer.principal_name, answer.token_requester_principal_name, answer.issue_timestamp,
            answer.expiry_timestamp, answer.max_timestamp) == ("alice", "admin", 1, 2, 3)
    assert [(r.principal_type, r.principal_name) for r in answer.renewers] == [("User", "bob")]
    assert answer.hmac == hmac.new(SECRET.encode(), b"a1", hashlib.sha512).digest()
    disabled, _ = broker_with(token("a1"), secret=None)
    assert call(disabled, ctx(41), DescribeDelegationTokenRequest(owners=None)).error_code == \
        int(Errors.DELEGATION_TOKEN_AUTH_DISABLED)


# --- SASL/SCRAM with tokenauth=true ----------------------------------------------------------------

def scram_login(session, mechanism, user, password, extensions=",tokenauth=true"):
    """Kafka's ScramSaslClient: client-first with the extensions after the nonce, signed as sent."""
    digest = {"SCRAM-SHA-256": hashlib.sha256, "SCRAM-SHA-512": hashlib.sha512}[mechanism]
    assert session.handshake(mechanism, 1) == 0
    bare = f"n={user},r={base64.b64encode(os.urandom(12)).decode()}{extensions}"
    server_first = session.evaluate(f"n,,{bare}".encode()).decode()
    fields = dict(part.split("=", 1) for part in server_first.split(","))
    salted = hashlib.pbkdf2_hmac(digest().name, password.encode(), base64.b64decode(fields["s"]), int(fields["i"]))
    client_key = hmac.new(salted, b"Client Key", digest).digest()
    without_proof = f"c=biws,r={fields['r']}"
    auth_message = f"{bare},{server_first},{without_proof}".encode()
    signature = hmac.new(digest(client_key).digest(), auth_message, digest).digest()
    proof = bytes(a ^ b for a, b in zip(client_key, signature))
    server_final = session.evaluate(f"{without_proof},p={base64.b64encode(proof).decode()}".encode()).decode()
    server_key = hmac.new(salted, b"Server Key", digest).digest()
    assert server_final == "v=" + base64.b64encode(hmac.new(server_key, auth_message, digest).digest()).decode()
    return session


def session_for(apis, user_credentials=None):
    return SaslServerSession(("SCRAM-SHA-256", "SCRAM-SHA-512"), None,
                             lambda mechanism, user: (user_credentials or {}).get(user), apis.credentials)


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_a_token_logs_in_with_its_id_and_base64_hmac_as_its_owner_token_authenticated(mechanism):
    apis, _ = broker_with(token("tok1", owner="User:alice"))
    password = base64.b64encode(hmac.new(SECRET.encode(), b"tok1", hashlib.sha512).digest()).decode()
    session = scram_login(session_for(apis), mechanism, "tok1", password)
    assert (session.principal, session.token_authenticated) == ("User:alice", True)


@pytest.mark.parametrize("user, password, extensions", [
    ("tok1", "wrong", ",tokenauth=true"),
    ("no-such-token", "x", ",tokenauth=true"),
    ("tok1", None, ""),                          # the token's password without tokenauth: a user tok1
], ids=["wrong hmac", "unknown token", "no tokenauth extension"])
def test_token_logins_kafka_refuses(user, password, extensions):
    apis, _ = broker_with(token("tok1"))
    password = password or apis.hmacs.password("tok1")
    with pytest.raises((SaslFailure, AssertionError)) as refused:
        scram_login(session_for(apis), "SCRAM-SHA-256", user, password, extensions)
    assert isinstance(refused.value, SaslFailure)
    assert "invalid credentials with SASL mechanism SCRAM-SHA-256" in refused.value.message


def test_a_user_login_with_other_extensions_ignores_them_and_is_not_token_authenticated():
    from kafkawire.net.sasl import scram_credential
    apis, _ = broker_with(token("tok1"))
    credentials = {"carol": scram_credential("SCRAM-SHA-256", "carol-secret", os.urandom(16), 4096)}
    session = scram_login(session_for(apis, credentials), "SCRAM-SHA-256", "carol", "carol-secret",
                          ",tokenauth=false,other=x")
    assert (session.principal, session.token_authenticated) == ("User:carol", False)


def test_tokens_disabled_refuse_token_logins():
    apis, _ = broker_with(token("tok1"), secret="")
    with pytest.raises(SaslFailure):
        scram_login(session_for(apis), "SCRAM-SHA-256", "tok1", "anything")


def test_an_owner_without_a_principal_type_is_unknown_server_error_as_kafkas_null_pointer():
    apis, forwarded = broker_with()
    request = CreateDelegationTokenRequest(owner_principal_type=None, owner_principal_name="bob")
    response = call(apis, ctx(38), request)
    assert (response.error_code, response.principal_name, forwarded) == (int(Errors.UNKNOWN_SERVER_ERROR),
                                                                          "ANONYMOUS", [])


def test_describe_configs_never_shows_the_secret():
    from kafkawire.controller.describe_configs import is_sensitive
    assert is_sensitive("delegation.token.secret.key")


def test_create_answers_name_the_requester_from_v3_on_only():
    """prepareResponse sets TokenRequesterPrincipal* for v3+; v1 and v2 lack the fields, and an
    answer that set them could not be encoded (test_every_api_version found it)."""
    from kafkawire.metadata.delegation_tokens import create_refusal, token_error_response
    request = CreateDelegationTokenRequest()
    for version, requester in ((1, ""), (2, ""), (3, "alice")):
        refusal = create_refusal(ctx(38, version=version), request, Errors.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED)
        assert refusal.token_requester_principal_name == requester
        refusal.encode(version)
        token_error_response(38, request, int(Errors.UNKNOWN_SERVER_ERROR), version).encode(version)
