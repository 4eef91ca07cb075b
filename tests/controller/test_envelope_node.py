"""What a Kafka broker sends our controller for kafka-topics and kafka-configs, without Java: a
real single-voter node (in process) advertises Envelope and the admin APIs in ApiVersions (a
broker forwards only what the controller advertises), and serves CreateTopics,
IncrementalAlterConfigs, CreatePartitions and DeleteTopics wrapped in Envelopes as a broker
wraps them, with the client's principal."""
import io
import uuid

from kafkawire.messages.alter_client_quotas_request import AlterClientQuotasRequest, EntityData, EntryData, OpData
from kafkawire.messages.create_partitions_request import CreatePartitionsRequest, CreatePartitionsTopic
from kafkawire.messages.create_topics_request import CreatableTopic, CreatableTopicConfig, CreateTopicsRequest
from kafkawire.messages.delete_topics_request import DeleteTopicsRequest, DeleteTopicState
from kafkawire.messages.envelope_request import EnvelopeRequest
from kafkawire.messages.incremental_alter_configs_request import (AlterableConfig, AlterConfigsResource,
                                                                  IncrementalAlterConfigsRequest)
from kafkawire.messages.metadata_request import MetadataRequest
from kafkawire.messages.unregister_broker_request import UnregisterBrokerRequest
from kafkawire.net.client import NetworkClient
from kafkawire.net.envelope import serialize_principal
from kafkawire.protocol.error_codes import Errors
from kafkawire.protocol.framing import decode_response, encode_request
from kafkawire.tools.storage import format_storage

from .harness import CLUSTER_ID, broker_request, heartbeat
from .test_node_integration import config_for, free_port, with_an_active_node

ADMIN_APIS = {19: "CreateTopics", 20: "DeleteTopics", 33: "AlterConfigs", 37: "CreatePartitions",
              44: "IncrementalAlterConfigs", 49: "AlterClientQuotas", 58: "Envelope", 64: "UnregisterBroker"}


async def forward(client, address, request, version, correlation_id=11):
    """As a broker forwards a client's request: header and body in an Envelope; the inner answer."""
    envelope = EnvelopeRequest(request_data=encode_request(request, version, correlation_id, client_id="admin-1")[4:],
                               request_principal=serialize_principal("User:ANONYMOUS"),
                               client_host_address=bytes([127, 0, 0, 1]))
    outer = await client.send(address, envelope)
    if outer.error_code:
        return Errors.for_code(outer.error_code)
    got_id, inner = decode_response(outer.response_data, request.API_KEY, version)
    assert got_id == correlation_id
    return inner


def test_a_broker_forwards_admin_requests_to_the_node_in_envelopes(tmp_path):
    port = free_port()
    config = config_for(tmp_path, port)
    format_storage(config, CLUSTER_ID, mode=None, out=io.StringIO())
    address = ("127.0.0.1", port)

    async def go(node):
        controller = node.state_machine
        async with NetworkClient(request_timeout_ms=5000) as client:
            versions = await client.connect(address)
            assert set(ADMIN_APIS) <= set(versions), "advertised in ApiVersions"
            reply = await client.send(address, broker_request(7, log_dirs=[uuid.uuid4()]))
            await client.send(address, heartbeat(7, reply.broker_epoch, controller.applied_offset + 1))

            created = await forward(client, address, CreateTopicsRequest(timeout_ms=5000, topics=[CreatableTopic(
                name="events", num_partitions=2, replication_factor=1,
                configs=[CreatableTopicConfig(name="retention.ms", value="1000")])]), 7)
            (topic,) = created.topics
            assert (topic.error_code, topic.num_partitions, topic.replication_factor) == (0, 2, 1)
            assert ("retention.ms", "1000", 1) in [(c.name, c.value, c.config_source) for c in topic.configs]

            altered = await forward(client, address, IncrementalAlterConfigsRequest(resources=[AlterConfigsResource(
                resource_type=2, resource_name="events",
                configs=[AlterableConfig(name="retention.ms", config_operation=0, value="5000")])]), 1)
            assert [(r.resource_name, r.error_code) for r in altered.responses] == [("events", 0)]
            assert controller.image.configs[(2, "events")] == {"retention.ms": "5000"}

            grown = await forward(client, address, CreatePartitionsRequest(
                timeout_ms=5000, topics=[CreatePartitionsTopic(name="events", count=4, assignments=None)]), 3)
            assert [(r.name, r.error_code) for r in grown.results] == [("events", 0)]
            assert sorted(controller.image.topics_by_name["events"].partitions) == [0, 1, 2, 3]

            refused = await forward(client, address, MetadataRequest(topics=None), 12)
            assert refused == Errors.INVALID_REQUEST          # Metadata is not forwardable

            deleted = await forward(client, address, DeleteTopicsRequest(
                timeout_ms=5000, topics=[DeleteTopicState(name="events")]), 6)
            assert [(r.name, r.error_code) for r in deleted.responses] == [("events", 0)]
            assert "events" not in controller.image.topics_by_name

            # Every API Kafka's broker forwards is run, not only the topic ones.
            quota = await forward(client, address, AlterClientQuotasRequest(entries=[EntryData(
                entity=[EntityData(entity_type="user", entity_name="alice")],
                ops=[OpData(key="producer_byte_rate", value=1024.0, remove=False)])]), 1)
            assert [e.error_code for e in quota.entries] == [0]
            assert controller.image.client_quotas[frozenset({("user", "alice")})] == {"producer_byte_rate": 1024.0}
            unregistered = await forward(client, address, UnregisterBrokerRequest(broker_id=7), 0)
            assert unregistered.error_code == 0
    with_an_active_node(config, go)
