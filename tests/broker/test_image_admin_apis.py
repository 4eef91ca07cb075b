"""ListConfigResources and DescribeClientQuotas answered from a metadata image as Kafka 4.3.1's
broker answers them (KafkaApis.handleListConfigResources, ClientQuotasImage.describe; issue 29),
without a node: the image is built from records, the handlers are called directly."""
from __future__ import annotations

import asyncio
from types import SimpleNamespace

import pytest

from kafkawire.broker.image_admin_apis import ImageAdminApis
from kafkawire.messages.client_quota_record import ClientQuotaRecord
from kafkawire.messages.client_quota_record import EntityData as RecordEntity
from kafkawire.messages.config_record import ConfigRecord
from kafkawire.messages.describe_client_quotas_request import ComponentData, DescribeClientQuotasRequest
from kafkawire.messages.list_config_resources_request import ListConfigResourcesRequest
from kafkawire.metadata.image import MetadataImage
from kafkawire.protocol.error_codes import Errors

CLIENT_METRICS, GROUP = 16, 32
EXACT, DEFAULT, SPECIFIED = 0, 1, 2


def image_with(*records) -> MetadataImage:
    image = MetadataImage()
    for record in records:
        image.apply(record)
    return image


def call(handler, request, version=1):
    ctx = SimpleNamespace(api_version=version, listener_name="PLAINTEXT")
    return asyncio.run(handler(ctx, request))


def quota(key, value, **entity):
    return ClientQuotaRecord(entity=[RecordEntity(entity_type=t.replace("_", "-"), entity_name=n)
                                     for t, n in entity.items()], key=key, value=value, remove=False)


QUOTAS = image_with(
    quota("producer_byte_rate", 1024.0, user="alice"),
    quota("consumer_byte_rate", 2048.0, user="alice", client_id="app"),
    quota("producer_byte_rate", 512.0, user=None),                    # the default user
    quota("connection_creation_rate", 5.0, ip="10.0.0.1"),
)


def entities(response) -> list[dict]:
    assert response.error_code == 0, response
    return [{e.entity_type: e.entity_name for e in entry.entity} for entry in response.entries]


@pytest.mark.parametrize("components, strict, expected", [
    ([], False, [{"ip": "10.0.0.1"}, {"user": None}, {"user": "alice"}, {"user": "alice", "client-id": "app"}]),
    ([ComponentData(entity_type="user", match_type=EXACT, match="alice")], False,
     [{"user": "alice"}, {"user": "alice", "client-id": "app"}]),
    ([ComponentData(entity_type="user", match_type=EXACT, match="alice")], True, [{"user": "alice"}]),
    ([ComponentData(entity_type="user", match_type=DEFAULT, match=None)], False, [{"user": None}]),
    ([ComponentData(entity_type="client-id", match_type=SPECIFIED, match=None)], False,
     [{"user": "alice", "client-id": "app"}]),
    ([ComponentData(entity_type="ip", match_type=SPECIFIED, match=None)], True, [{"ip": "10.0.0.1"}]),
], ids=["everything", "exact user", "exact user strict", "default user", "any client id", "any ip strict"])
def test_describe_client_quotas_matches_entities_as_kafkas_image_does(components, strict, expected):
    apis = ImageAdminApis(SimpleNamespace(image=lambda: QUOTAS))
    response = call(apis.describe_client_quotas, DescribeClientQuotasRequest(components=components, strict=strict))
    assert sorted(map(sorted_items, entities(response))) == sorted(map(sorted_items, expected))


def sorted_items(entity: dict) -> list:
    return sorted((k, v or "") for k, v in entity.items())


def test_describe_client_quotas_answers_the_values_and_kafkas_filter_errors():
    apis = ImageAdminApis(SimpleNamespace(image=lambda: QUOTAS))
    alice = call(apis.describe_client_quotas, DescribeClientQuotasRequest(components=[
        ComponentData(entity_type="user", match_type=EXACT, match="alice")], strict=True))
    assert [(v.key, v.value) for v in alice.entries[0].values] == [("producer_byte_rate", 1024.0)]
    for component, message in [
            (ComponentData(entity_type="user", match_type=EXACT, match=None),
             "Request specified MATCH_TYPE_EXACT, but set match string to null."),
            (ComponentData(entity_type="user", match_type=DEFAULT, match="x"),
             "Request specified MATCH_TYPE_DEFAULT, but also specified a match string."),
            (ComponentData(entity_type="user", match_type=7), "Unknown match type 7"),
            (ComponentData(entity_type="", match_type=SPECIFIED, match=None), "Invalid empty entity type.")]:
        refused = call(apis.describe_client_quotas, DescribeClientQuotasRequest(components=[component]))
        assert (refused.error_code, refused.error_message, refused.entries) == \
            (Errors.INVALID_REQUEST, message, None)


def test_list_config_resources_lists_groups_and_client_metrics_with_configs_and_refuses_other_types():
    image = image_with(ConfigRecord(resource_type=CLIENT_METRICS, resource_name="cm-1", name="interval.ms",
                                    value="60000"),
                       ConfigRecord(resource_type=GROUP, resource_name="g-1", name="consumer.session.timeout.ms",
                                    value="45000"))
    apis = ImageAdminApis(SimpleNamespace(image=lambda: image))
    every = call(apis.list_config_resources, ListConfigResourcesRequest(resource_types=[]))
    assert [(r.resource_type, r.resource_name) for r in every.config_resources] == \
        [(GROUP, "g-1"), (CLIENT_METRICS, "cm-1")]                          # Kafka's order of the types
    v0 = call(apis.list_config_resources, ListConfigResourcesRequest(resource_types=[]), version=0)
    assert [(r.resource_type, r.resource_name) for r in v0.config_resources] == [(CLIENT_METRICS, "cm-1")]
    assert call(apis.list_config_resources, ListConfigResourcesRequest(resource_types=[99])).error_code == \
        Errors.UNSUPPORTED_VERSION
