"""A dynamic change of a listener's key store or trust store checked as Kafka 4.3.1's SSL channel
builder checks it (kafkawire.metadata.dynamic_ssl_reconfiguration, through
dynamic_reconfiguration.check): Kafka's recorded answers (``python -m
tests.interop.dynamic_broker_configs --record-ssl-cases``, judged again by
tests/interop/test_dynamic_broker_configs_vs_kafka.py) on stores made here, in a temporary
directory, by tests/broker/dynamic_ssl_stores.py; on the inter-broker listener, the TLS handshake
between the current and new stores (kafkawire.net.ssl_rotation) refuses what Kafka's refuses."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.broker.dynamic_ssl_stores import with_directory, write_stores
from tests.broker.test_dynamic_broker_configs import our_answer

pytest.importorskip("cryptography")

CASES = json.loads((Path(__file__).parent / "data" / "dynamic_ssl_config_cases.json").read_text())


@pytest.fixture(scope="module")
def stores(tmp_path_factory) -> Path:
    return write_stores(tmp_path_factory.mktemp("stores"))


def _case_id(case: dict) -> str:
    return ",".join(f"{k.rpartition('.ssl.')[2] or k}={v.rpartition('/')[2]}"[:40] for k, v in case["props"].items())


_HANDSHAKE = "Validation of dynamic config update of SSLFactory failed: javax.net.ssl.SSLHandshakeException: "


@pytest.mark.parametrize("case", CASES, ids=_case_id)
def test_kafkas_recorded_answer_is_ours(case, stores):
    case = with_directory(case, stores)
    ours = our_answer(case)
    if case.get("handshake") and case["kafka"] is not None and _HANDSHAKE in case["kafka"]:
        # the inter-broker listener's handshake: refused as Kafka refuses it, the reason in
        # OpenSSL's words rather than the JDK's (docs/differences.md)
        assert ours is not None and _HANDSHAKE in ours, ours
    else:
        assert ours == case["kafka"]


def test_the_cases_cover_every_refusal():
    messages = [c["kafka"] or "" for c in CASES]
    for part in ("DistinguishedName does not match", "SubjectAltNames do not match", "Failed to load SSL keystore",
                 "Failed to load PEM SSL keystore", "Cannot add SSL truststore", "but key store password is not",
                 "cannot be specified with PEM format", "UnrecoverableKeyException", _HANDSHAKE):
        assert any(part in m for m in messages), part
    assert sum(c["kafka"] is None for c in CASES) >= 10


def test_the_broker_refuses_a_key_store_of_another_subject_from_its_server_properties(stores):
    """Through ConfigApis, with the node's server.properties as kafkawire reads them: a key store
    of another subject is the broker's refusal (INVALID_REQUEST, not forwarded); one of the same
    subject goes on to the controller."""
    import asyncio

    from kafkawire.broker.config_apis import ConfigApis
    from kafkawire.messages.incremental_alter_configs_request import IncrementalAlterConfigsRequest
    from kafkawire.messages.incremental_alter_configs_response import (AlterConfigsResourceResponse,
                                                                        IncrementalAlterConfigsResponse)
    from kafkawire.metadata.dynamic_broker_configs import SET
    from kafkawire.net.config import parse_server_config
    from kafkawire.protocol.error_codes import Errors
    from tests.broker.test_forwarding import client_ctx, resource
    forwarded = []

    class StandInForwarder:
        async def forward(self, ctx, request):
            forwarded.append([r.resource_name for r in request.resources])
            return IncrementalAlterConfigsResponse(responses=[AlterConfigsResourceResponse(
                resource_type=4, resource_name=r.resource_name, error_message=None) for r in request.resources])

    case = with_directory(CASES[1], stores)           # the SSL listener's key store of another subject
    static = dict(parse_server_config("\n".join(f"{k}={v}" for k, v in case["broker"]["static"].items())).properties)
    apis = ConfigApis(1, StandInForwarder(), stored_configs=lambda name: {}, static_settings=static)
    (name, value), = case["props"].items()
    answers = asyncio.run(apis.incremental_alter_configs(client_ctx(), IncrementalAlterConfigsRequest(
        validate_only=False, resources=[resource(4, "1", (name, SET, value))])))
    assert [(r.error_code, r.error_message) for r in answers.responses] == [(Errors.INVALID_REQUEST, case["kafka"])]
    assert forwarded == []
    same = value.replace("ks-other-dn", "ks-same")
    answers = asyncio.run(apis.incremental_alter_configs(client_ctx(), IncrementalAlterConfigsRequest(
        validate_only=False, resources=[resource(4, "1", (name, SET, same))])))
    assert [r.error_code for r in answers.responses] == [Errors.NONE] and forwarded == [["1"]]
