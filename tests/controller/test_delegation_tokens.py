"""Delegation tokens as Kafka 4.3.1's controller manages them (DelegationTokenControlManager and
ControllerApis' checks; issue 29): Create, Renew and Expire, their records, Kafka's refusals and
the expiry sweep. Sans-I/O: the functions are given an image and the clock; the handlers are run
on an in-process controller where the rule is about the request's connection."""
from __future__ import annotations

import base64
import hashlib
import hmac
import random

import pytest

from kafkawire import messages
from kafkawire.controller.delegation_tokens import (MAX_RECORDS_PER_EXPIRATION, DelegationTokenSettings,
                                                    create_token, expire_token, expired_token_records, renew_token)
from kafkawire.messages.create_delegation_token_request import CreatableRenewers, CreateDelegationTokenRequest
from kafkawire.messages.expire_delegation_token_request import ExpireDelegationTokenRequest
from kafkawire.messages.renew_delegation_token_request import RenewDelegationTokenRequest
from kafkawire.metadata import decode_metadata_record
from kafkawire.metadata.delegation_tokens import TokenHmacs
from kafkawire.metadata.image import MetadataImage
from kafkawire.net.config import parse_server_config
from kafkawire.protocol.error_codes import Errors
from kafkawire.protocol.handler import RequestContext

SECRET = "s3cret"
SETTINGS = DelegationTokenSettings(secret_key=SECRET, max_lifetime_ms=10_000, expiry_time_ms=4_000,
                                   expiry_check_interval_ms=1000)
NOW = 1_700_000_000_000
RNG = random.Random(1)              # token ids: distinct across the calls of a test


def image(metadata_version: int = 29) -> MetadataImage:
    result = MetadataImage()
    result.apply(messages.by_name("FeatureLevelRecord")(name="metadata.version", feature_level=metadata_version))
    return result


def applied(target: MetadataImage, records) -> list:
    decoded = [decode_metadata_record(r).message for r in records]
    for message in decoded:
        target.apply(message)
    return decoded


def create(target, principal="User:alice", *, settings=SETTINGS, now=NOW, renewers=(), max_lifetime_ms=0, owner=None):
    request = CreateDelegationTokenRequest(
        renewers=[CreatableRenewers(principal_type=t, principal_name=n) for t, n in renewers],
        max_lifetime_ms=max_lifetime_ms, owner_principal_type=owner and owner[0], owner_principal_name=owner and owner[1])
    records, response = create_token(target, principal, request, settings, TokenHmacs(settings.secret_key), now, RNG)
    return applied(target, records), response


def test_create_writes_a_token_record_with_kafkas_timestamps_and_hmac():
    target = image()
    records, response = create(target, renewers=[("User", "bob")])
    assert response.error_code == 0
    assert (response.issue_timestamp_ms, response.expiry_timestamp_ms, response.max_timestamp_ms) == \
        (NOW, NOW + 4_000, NOW + 10_000)
    assert response.hmac == hmac.new(SECRET.encode(), response.token_id.encode(), hashlib.sha512).digest()
    assert len(response.token_id) == 22 and not response.token_id.startswith("-")     # a Kafka Uuid string
    (record,) = records
    assert (record.owner, record.requester, list(record.renewers), record.token_id) == \
        ("User:alice", "User:alice", ["User:bob"], response.token_id)
    assert target.delegation_tokens[response.token_id].expiration_timestamp == NOW + 4_000


def test_create_for_another_owner_names_both_and_caps_lifetimes():
    target = image()
    records, response = create(target, "User:admin", owner=("User", "alice"), max_lifetime_ms=3_000)
    assert (response.principal_name, response.token_requester_principal_name) == ("alice", "admin")
    assert (response.expiry_timestamp_ms, response.max_timestamp_ms) == (NOW + 3_000, NOW + 3_000)
    assert (records[0].owner, records[0].requester) == ("User:alice", "User:admin")


@pytest.mark.parametrize("settings, version, renewers, error", [
    (DelegationTokenSettings(), 29, (), Errors.DELEGATION_TOKEN_AUTH_DISABLED),
    (DelegationTokenSettings(secret_key=""), 29, (), Errors.DELEGATION_TOKEN_AUTH_DISABLED),
    (SETTINGS, 13, (), Errors.UNSUPPORTED_VERSION),
    (SETTINGS, 29, (("Group", "g"),), Errors.INVALID_PRINCIPAL_TYPE),
], ids=["no secret", "empty secret", "metadata.version before 3.6-IV2", "renewer not a user"])
def test_create_refusals_write_nothing(settings, version, renewers, error):
    target = image(version)
    records, response = create(target, settings=settings, renewers=renewers)
    assert (response.error_code, records, target.delegation_tokens) == (int(error), [], {})


def renew(target, token_hmac, principal="User:alice", *, now=NOW, period=0, settings=SETTINGS):
    records, response = renew_token(target, principal, RenewDelegationTokenRequest(hmac=token_hmac,
                                                                                   renew_period_ms=period),
                                    settings, TokenHmacs(settings.secret_key), now)
    return applied(target, records), response


def expire(target, token_hmac, principal="User:alice", *, now=NOW, period=0):
    records, response = expire_token(target, principal, ExpireDelegationTokenRequest(
        hmac=token_hmac, expiry_time_period_ms=period), SETTINGS, TokenHmacs(SECRET), now)
    return applied(target, records), response


def test_renew_by_owner_or_renewer_moves_the_expiry_up_to_the_max_timestamp():
    target = image()
    _, token = create(target, renewers=[("User", "bob")])
    _, response = renew(target, token.hmac, "User:bob", now=NOW + 1_000, period=2_000)
    assert (response.error_code, response.expiry_timestamp_ms) == (0, NOW + 3_000)
    assert target.delegation_tokens[token.token_id].expiration_timestamp == NOW + 3_000
    _, response = renew(target, token.hmac, now=NOW + 2_500)          # the default period: 4 s
    assert (response.error_code, response.expiry_timestamp_ms) == (0, NOW + 6_500)
    _, response = renew(target, token.hmac, now=NOW + 6_500)          # capped by the max timestamp
    assert (response.error_code, response.expiry_timestamp_ms) == (0, NOW + 10_000)


@pytest.mark.parametrize("principal, hmac_of, now, error", [
    ("User:alice", b"not a token's hmac", NOW, Errors.DELEGATION_TOKEN_NOT_FOUND),
    ("User:mallory", None, NOW, Errors.DELEGATION_TOKEN_OWNER_MISMATCH),
    ("User:mallory", None, NOW + 4_001, Errors.DELEGATION_TOKEN_EXPIRED),     # expired is checked first
], ids=["unknown hmac", "not owner or renewer", "expired"])
def test_renew_refusals(principal, hmac_of, now, error):
    target = image()
    _, token = create(target)
    records, response = renew(target, hmac_of or token.hmac, principal, now=now)
    assert (response.error_code, records) == (int(error), [])


def test_expire_now_removes_the_token_and_a_later_expiry_is_capped():
    target = image()
    _, token = create(target)
    _, response = expire(target, token.hmac, period=60_000)
    assert (response.error_code, response.expiry_timestamp_ms) == (0, NOW + 10_000)
    _, mismatch = expire(target, token.hmac, "User:bob", period=-1)
    assert mismatch.error_code == int(Errors.DELEGATION_TOKEN_OWNER_MISMATCH)
    records, response = expire(target, token.hmac, now=NOW + 5, period=-1)
    assert (response.error_code, response.expiry_timestamp_ms) == (0, NOW + 5)
    assert [type(r).__name__ for r in records] == ["RemoveDelegationTokenRecord"]
    assert target.delegation_tokens == {}
    assert expire(target, token.hmac)[1].error_code == int(Errors.DELEGATION_TOKEN_NOT_FOUND)


def test_expiring_an_expired_token_with_a_period_is_refused_but_a_negative_period_removes_it():
    target = image()
    _, token = create(target)
    assert expire(target, token.hmac, now=NOW + 4_001, period=10)[1].error_code == \
        int(Errors.DELEGATION_TOKEN_EXPIRED)
    assert expire(target, token.hmac, now=NOW + 4_001, period=-1)[1].error_code == 0


def test_the_sweep_removes_expired_tokens_only_a_thousand_at_a_time():
    target = image()
    _, kept = create(target, now=NOW + 10)
    for _ in range(MAX_RECORDS_PER_EXPIRATION + 1):
        create(target)
    records = expired_token_records(target, NOW + 4_005)
    assert len(records) == MAX_RECORDS_PER_EXPIRATION
    applied(target, records)
    assert len(target.delegation_tokens) == 2 and kept.token_id in target.delegation_tokens
    applied(target, expired_token_records(target, NOW + 4_005))
    assert list(target.delegation_tokens) == [kept.token_id]


def test_the_hmac_is_kafkas_hmacsha512_of_the_token_id_and_the_password_its_base64():
    hmacs = TokenHmacs("key")
    assert hmacs.of("abc") == hmac.new(b"key", b"abc", hashlib.sha512).digest()
    assert hmacs.password("abc") == base64.b64encode(hmacs.of("abc")).decode()
    assert not TokenHmacs("").enabled and not TokenHmacs(None).enabled


def test_settings_have_kafkas_names_and_defaults():
    base = "process.roles=controller\nnode.id=1\ncontroller.quorum.voters=1@localhost:9093\n" \
           "controller.listener.names=CONTROLLER\nlisteners=CONTROLLER://:9093\nlog.dirs=/tmp/x\n"
    default = DelegationTokenSettings.of(parse_server_config(base))
    assert default == DelegationTokenSettings(None, 7 * 24 * 3600 * 1000, 24 * 3600 * 1000, 3600 * 1000)
    custom = DelegationTokenSettings.of(parse_server_config(base + "delegation.token.secret.key=k\n"
                                                            "delegation.token.expiry.check.interval.ms=5\n"))
    assert (custom.secret_key, custom.expiry_check_interval_ms) == ("k", 5)


def _ctx(api_key, protocol, *, principal="User:alice", token_authenticated=False, forwarded=False):
    return RequestContext(api_key, 1, 0, "", ("127.0.0.1", 1), "L", "c", principal=principal,
                          security_protocol=protocol, token_authenticated=token_authenticated, forwarded=forwarded)


@pytest.mark.parametrize("ctx", [
    _ctx(38, "PLAINTEXT"), _ctx(38, "SSL", principal="User:ANONYMOUS"),
    _ctx(38, "SASL_SSL", token_authenticated=True), _ctx(38, "PLAINTEXT", token_authenticated=True, forwarded=True),
], ids=["plaintext", "anonymous ssl", "token-authenticated", "token-authenticated forwarded"])
def test_the_controller_refuses_token_requests_kafka_does_not_allow(ctx):
    from tests.controller.harness import FakeQuorum, add_controller, run
    controller = add_controller(FakeQuorum(), 1, delegation_tokens=SETTINGS)
    for key, request in ((38, CreateDelegationTokenRequest()), (39, RenewDelegationTokenRequest(hmac=b"x")),
                         (40, ExpireDelegationTokenRequest(hmac=b"x"))):
        response = run(controller.handlers()[key].handle(_ctx(key, ctx.security_protocol, principal=ctx.principal,
                                                              token_authenticated=ctx.token_authenticated,
                                                              forwarded=ctx.forwarded), request))
        assert response.error_code == int(Errors.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED)
        assert (response.expiry_timestamp_ms if key != 38 else response.max_timestamp_ms) == -1


def test_an_active_controller_commits_a_forwarded_token_and_sweeps_it_once_expired():
    """Create forwarded over the broker's PLAINTEXT channel (allowed: the broker checked the
    client's connection), then, the wall clock past its expiry and the controller's clock past
    delegation.token.expiry.check.interval.ms, the sweep's RemoveDelegationTokenRecord."""
    from tests.controller.harness import FakeQuorum, Running, add_controller, run, until
    wall = [NOW]
    quorum = FakeQuorum()
    controller = add_controller(quorum, 1, delegation_tokens=SETTINGS, wall_clock_ms=lambda: wall[0],
                                max_idle_interval_ms=0)

    async def go():
        async with Running(controller):
            quorum.elect(1)
            await until(controller.is_active, "activation")
            response = await controller.handlers()[38].handle(_ctx(38, "PLAINTEXT", forwarded=True),
                                                              CreateDelegationTokenRequest())
            assert response.error_code == 0 and response.token_id in controller.image.delegation_tokens
            wall[0] = NOW + 4_001
            controller.clock.now += SETTINGS.expiry_check_interval_ms
            controller.poke()
            await until(lambda: not controller.image.delegation_tokens, "the expired token swept")
    run(go())


def test_the_controller_answers_an_owner_without_a_type_unknown_server_error_and_writes_nothing():
    from tests.controller.harness import FakeQuorum, add_controller, run
    controller = add_controller(FakeQuorum(), 1, delegation_tokens=SETTINGS)
    response = run(controller.handlers()[38].handle(_ctx(38, "SASL_PLAINTEXT", forwarded=True),
                                                   CreateDelegationTokenRequest(owner_principal_type=None,
                                                                                owner_principal_name="bob")))
    assert response.error_code == int(Errors.UNKNOWN_SERVER_ERROR)
