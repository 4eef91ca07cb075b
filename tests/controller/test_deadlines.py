"""Every API the metadata controller answers gets the deadline Kafka 4.3.1's ControllerApis gives
it: the request's timeoutMs (CreateTopics, DeleteTopics, CreatePartitions, ElectLeaders,
AlterPartitionReassignments), half of broker.heartbeat.interval.ms (BrokerHeartbeat), or none
at all (OptionalLong.empty(): every other write, and ListPartitionReassignments although its
request carries a TimeoutMs). DescribeConfigs and DescribeAcls are answered from the node's own
image, with no controller event. Before issue 24's last follow-up the config APIs and the ACL
writes timed out after 30 s, ListPartitionReassignments after its timeoutMs, and the broker and
registration APIs after 5 s, BrokerHeartbeat included.

KAFKA_DEADLINES is Kafka's table, written from ControllerApis (and ClusterMetadataAuthorizer for
the ACL writes), not from kafkawire's: an API the controller serves that is not in it fails the
test, so a new handler cannot forget its deadline. Each API is then sent while an earlier write
holds the controller, the controller's clock moves, and the answer must be REQUEST_TIMED_OUT
exactly when the clock passed the deadline of Kafka's rule."""
import asyncio
import uuid

import pytest

from kafkawire.messages.allocate_producer_ids_request import AllocateProducerIdsRequest
from kafkawire.messages.alter_client_quotas_request import AlterClientQuotasRequest, EntityData, EntryData, OpData
from kafkawire.messages.alter_configs_request import AlterableConfig, AlterConfigsRequest, AlterConfigsResource
from kafkawire.messages.alter_partition_reassignments_request import AlterPartitionReassignmentsRequest
from kafkawire.messages.alter_partition_request import AlterPartitionRequest
from kafkawire.messages.alter_user_scram_credentials_request import (AlterUserScramCredentialsRequest,
                                                                     ScramCredentialDeletion)
from kafkawire.messages.assign_replicas_to_dirs_request import AssignReplicasToDirsRequest
from kafkawire.messages.controller_registration_request import ControllerRegistrationRequest
from kafkawire.messages.create_acls_request import AclCreation, CreateAclsRequest
from kafkawire.messages.create_partitions_request import CreatePartitionsRequest, CreatePartitionsTopic
from kafkawire.messages.delete_acls_request import DeleteAclsFilter, DeleteAclsRequest
from kafkawire.messages.describe_acls_request import DescribeAclsRequest
from kafkawire.messages.describe_configs_request import DescribeConfigsRequest, DescribeConfigsResource
from kafkawire.messages.elect_leaders_request import ElectLeadersRequest
from kafkawire.messages.incremental_alter_configs_request import AlterableConfig as IncrementalConfig
from kafkawire.messages.incremental_alter_configs_request import AlterConfigsResource as IncrementalResource
from kafkawire.messages.incremental_alter_configs_request import IncrementalAlterConfigsRequest
from kafkawire.messages.list_partition_reassignments_request import ListPartitionReassignmentsRequest
from kafkawire.messages.unregister_broker_request import UnregisterBrokerRequest
from kafkawire.net.config import parse_server_config
from kafkawire.messages.create_delegation_token_request import CreateDelegationTokenRequest
from kafkawire.messages.expire_delegation_token_request import ExpireDelegationTokenRequest
from kafkawire.messages.renew_delegation_token_request import RenewDelegationTokenRequest
from kafkawire.protocol.error_codes import Errors
from kafkawire.protocol.handler import RequestContext
from tests.responses import error_codes

from .harness import Ctx, Running, add_controller, broker_request, heartbeat, run, until
from .test_torn_writes import HeldHandle, HeldQuorum, create, delete, lead_with_a_broker

REQUEST = "the request's timeoutMs"
HEARTBEAT = "broker.heartbeat.interval.ms / 2"
NONE = "none (OptionalLong.empty())"
LOCAL = "none: answered from the node's image, no controller event"

# Kafka 4.3.1's ControllerApis: the deadline each API's controller operation gets.
KAFKA_DEADLINES = {
    19: REQUEST,        # CreateTopics
    20: REQUEST,        # DeleteTopics
    29: LOCAL,          # DescribeAcls (AclApis: the authorizer's own ACLs)
    30: NONE,           # CreateAcls (ClusterMetadataAuthorizer.createAcls)
    31: NONE,           # DeleteAcls (ClusterMetadataAuthorizer.deleteAcls)
    32: LOCAL,          # DescribeConfigs (ConfigHelper on the metadata cache)
    33: NONE,           # AlterConfigs (handleLegacyAlterConfigs)
    37: REQUEST,        # CreatePartitions
    38: NONE,           # CreateDelegationToken
    39: NONE,           # RenewDelegationToken
    40: NONE,           # ExpireDelegationToken
    43: REQUEST,        # ElectLeaders
    44: NONE,           # IncrementalAlterConfigs
    45: REQUEST,        # AlterPartitionReassignments
    46: NONE,           # ListPartitionReassignments: its TimeoutMs is not used
    49: NONE,           # AlterClientQuotas
    51: NONE,           # AlterUserScramCredentials
    56: NONE,           # AlterPartition
    62: NONE,           # BrokerRegistration
    63: HEARTBEAT,      # BrokerHeartbeat
    64: NONE,           # UnregisterBroker
    67: NONE,           # AllocateProducerIds
    70: NONE,           # ControllerRegistration
    73: NONE,           # AssignReplicasToDirs
}
HOUR = 3_600_000
TIMEOUT_MS = HOUR                       # the timeoutMs of every request that has one
HEARTBEAT_INTERVAL_MS = 2 * HOUR + 1    # so a heartbeat's deadline is an hour too (Java's int division)
TOPIC, ALTER_CONFIG_SET = 2, 0


def sample(api_key: int, broker_epoch: int):
    """(api version, a request of ``api_key`` about topic "t" or broker 1)."""
    topic_configs = [AlterConfigsResource(resource_type=TOPIC, resource_name="t",
                                          configs=[AlterableConfig(name="retention.ms", value="1000")])]
    return {
        19: lambda: (7, create("u", timeout_ms=TIMEOUT_MS)),
        20: lambda: (6, delete("t", timeout_ms=TIMEOUT_MS)),
        29: lambda: (3, DescribeAclsRequest(resource_type_filter=1, pattern_type_filter=1, operation=1,
                                            permission_type=1)),
        30: lambda: (3, CreateAclsRequest(creations=[AclCreation(
            resource_type=4, resource_name="kafka-cluster", resource_pattern_type=3, principal="User:alice",
            host="*", operation=3, permission_type=3)])),
        31: lambda: (3, DeleteAclsRequest(filters=[DeleteAclsFilter(resource_type_filter=1, pattern_type_filter=1,
                                                                    operation=1, permission_type=1)])),
        32: lambda: (4, DescribeConfigsRequest(resources=[DescribeConfigsResource(resource_type=TOPIC,
                                                                                  resource_name="t")])),
        33: lambda: (2, AlterConfigsRequest(resources=topic_configs)),
        37: lambda: (3, CreatePartitionsRequest(topics=[CreatePartitionsTopic(name="t", count=2, assignments=None)],
                                                timeout_ms=TIMEOUT_MS)),
        38: lambda: (3, CreateDelegationTokenRequest()),
        39: lambda: (2, RenewDelegationTokenRequest(hmac=b"h")),
        40: lambda: (2, ExpireDelegationTokenRequest(hmac=b"h")),
        43: lambda: (2, ElectLeadersRequest(election_type=0, topic_partitions=None, timeout_ms=TIMEOUT_MS)),
        44: lambda: (1, IncrementalAlterConfigsRequest(resources=[IncrementalResource(
            resource_type=TOPIC, resource_name="t", configs=[IncrementalConfig(
                name="retention.ms", config_operation=ALTER_CONFIG_SET, value="1000")])])),
        45: lambda: (0, AlterPartitionReassignmentsRequest(topics=[], timeout_ms=TIMEOUT_MS)),
        46: lambda: (0, ListPartitionReassignmentsRequest(topics=None, timeout_ms=0)),   # ignored, as in Kafka
        49: lambda: (1, AlterClientQuotasRequest(entries=[EntryData(
            entity=[EntityData(entity_type="user", entity_name="alice")],
            ops=[OpData(key="producer_byte_rate", value=1024.0, remove=False)])])),
        51: lambda: (0, AlterUserScramCredentialsRequest(deletions=[ScramCredentialDeletion(name="alice",
                                                                                             mechanism=1)])),
        56: lambda: (3, AlterPartitionRequest(broker_id=1, broker_epoch=broker_epoch, topics=[])),
        62: lambda: (4, broker_request(2, log_dirs=[uuid.UUID(int=1002)])),
        63: lambda: (1, heartbeat(1, broker_epoch, 0)),
        64: lambda: (0, UnregisterBrokerRequest(broker_id=1)),
        67: lambda: (0, AllocateProducerIdsRequest(broker_id=1, broker_epoch=broker_epoch)),
        70: lambda: (0, ControllerRegistrationRequest(controller_id=5, incarnation_id=uuid.uuid4())),
        73: lambda: (0, AssignReplicasToDirsRequest(broker_id=1, broker_epoch=broker_epoch, directories=[])),
    }[api_key]()


def context(version: int, api_key: int):
    """The tests' context; the token APIs as a broker forwards them (else refused before any write)."""
    if api_key not in (38, 39, 40):
        return Ctx(version, api_key)
    return RequestContext(api_key, version, 0, "", ("127.0.0.1", 1), "CONTROLLER", "c", principal="User:alice",
                          forwarded=True)


def deadline_ms(api_key: int) -> int | None:
    """The deadline, from the request's arrival, that Kafka's rule gives ``api_key`` here."""
    return {REQUEST: TIMEOUT_MS, HEARTBEAT: int(HEARTBEAT_INTERVAL_MS / 2)}.get(KAFKA_DEADLINES[api_key])


def held_leader():
    """Node 1 leading a quorum that holds appended batches back; an authorizer (so the ACL APIs
    write), no NoOpRecords and sessions that outlive any clock move of these tests."""
    quorum = HeldQuorum()
    leader = add_controller(quorum, 1, acls_enabled=True, max_idle_interval_ms=0, session_timeout_ms=100 * HOUR,
                            heartbeat_interval_ms=HEARTBEAT_INTERVAL_MS)
    leader.raft = HeldHandle(quorum, 1)
    leader.pipeline.max_uncommitted_records = 1     # the held write fills the pipeline: the next waits its turn
    return quorum, leader


def behind_a_held_write(api_key: int, clock_move_ms: int):
    """Send ``api_key`` while a CreateTopics' batch is held, move the controller's clock by
    ``clock_move_ms``, then let the batch commit. Returns (answered while the write was held,
    the answer's error codes)."""
    quorum, leader = held_leader()

    async def go():
        async with Running(leader):
            await lead_with_a_broker(quorum, leader)
            assert (await leader.handlers()[19].handle(Ctx(7), create("t"))).topics[0].error_code == 0
            version, request = sample(api_key, leader.state.image.brokers[1].epoch)
            quorum.holding = True
            blocker = asyncio.ensure_future(leader.handlers()[19].handle(Ctx(7), create("held")))
            await until(lambda: quorum.held, "the earlier write's batch appended")
            caller = asyncio.ensure_future(leader.handlers()[api_key].handle(context(version, api_key), request))
            for _ in range(20):
                await asyncio.sleep(0)
            leader.clock.now += clock_move_ms
            for _ in range(20):
                await asyncio.sleep(0)
            answered_while_held = caller.done()
            quorum.release()
            await asyncio.wait_for(blocker, 5)
            return answered_while_held, error_codes(await asyncio.wait_for(caller, 5))

    return run(go())


def test_every_api_the_controller_answers_has_kafkas_deadline_rule():
    controller = add_controller(HeldQuorum(), 1)
    unclassified = sorted(set(controller.handlers()) - set(KAFKA_DEADLINES))
    assert not unclassified, f"controller APIs without a deadline rule from Kafka's ControllerApis: {unclassified}"
    assert sorted(set(KAFKA_DEADLINES) - set(controller.handlers())) == []


def _cases():
    for key, rule in sorted(KAFKA_DEADLINES.items()):
        if rule in (NONE, LOCAL):
            yield pytest.param(key, 10 * HOUR, False, id=f"{key}-{'local' if rule == LOCAL else 'no-deadline'}")
        else:
            yield pytest.param(key, deadline_ms(key) - 1, False, id=f"{key}-before-its-deadline")
            yield pytest.param(key, deadline_ms(key) + 1, True, id=f"{key}-after-its-deadline")


@pytest.mark.parametrize("api_key, clock_move_ms, timed_out", list(_cases()))
def test_a_request_waiting_its_turn_times_out_exactly_when_kafkas_deadline_passed(api_key, clock_move_ms, timed_out):
    """An API with a deadline is answered REQUEST_TIMED_OUT if its deadline passed before its
    turn and not otherwise; an API without one waits its turn however long (10 hours here) and
    is answered as usual; a local read does not wait for the write at all."""
    answered_while_held, codes = behind_a_held_write(api_key, clock_move_ms)
    assert (int(Errors.REQUEST_TIMED_OUT) in codes) is timed_out, (
        f"API {api_key} ({KAFKA_DEADLINES[api_key]}), clock moved {clock_move_ms} ms: answered {sorted(codes)}")
    assert answered_while_held is (KAFKA_DEADLINES[api_key] == LOCAL)


def test_a_broker_heartbeats_deadline_is_half_of_broker_heartbeat_interval_ms_default_2000():
    """Kafka's name and default (KRaftConfigs: INT 2000, no validator), and int division."""
    assert parse_server_config(_properties()).broker_heartbeat_interval_ms == 2000
    assert add_controller(HeldQuorum(), 1).heartbeat_deadline_ms == 1000
    config = parse_server_config(_properties("broker.heartbeat.interval.ms=3001"))
    assert add_controller(HeldQuorum(), 1, heartbeat_interval_ms=config.broker_heartbeat_interval_ms
                          ).heartbeat_deadline_ms == 1500


def _properties(*extra: str) -> str:
    return "\n".join(["process.roles=controller", "node.id=1", "controller.quorum.voters=1@localhost:9093",
                      "listeners=CONTROLLER://:9093", "controller.listener.names=CONTROLLER", *extra])


def test_a_heartbeat_that_times_out_behind_a_busy_controller_still_keeps_the_broker_unfenced():
    """As Kafka's QuorumController: a heartbeat's contact counts when it arrives (the lockless
    BrokerHeartbeatTracker), and one that times out still records the broker's metadata offset
    (processExpiredBrokerHeartbeat). So a broker whose heartbeats queue behind a slow write is
    not fenced when its session would have run out counting from its last generated heartbeat."""
    quorum = HeldQuorum()
    leader = add_controller(quorum, 1, max_idle_interval_ms=0, session_timeout_ms=9000, heartbeat_interval_ms=2000)
    leader.raft = HeldHandle(quorum, 1)
    leader.pipeline.max_uncommitted_records = 1     # the held write fills the pipeline: the next waits its turn

    async def go():
        async with Running(leader):
            await lead_with_a_broker(quorum, leader)
            epoch = leader.state.image.brokers[1].epoch
            quorum.holding = True
            blocker = asyncio.ensure_future(leader.handlers()[19].handle(Ctx(7), create("held")))
            await until(lambda: quorum.held, "the slow write's batch appended")
            leader.clock.now += 8000
            caller = asyncio.ensure_future(leader.handlers()[63].handle(Ctx(1), heartbeat(1, epoch, 4321)))
            for _ in range(20):
                await asyncio.sleep(0)
            leader.clock.now += 1001            # past its deadline, and 9001 ms after the last generated heartbeat
            stale = leader.sessions.stale_broker([1], leader.clock.now)
            quorum.release()                    # its turn comes, too late
            answer = await asyncio.wait_for(caller, 5)
            await asyncio.wait_for(blocker, 5)
            return answer, stale, leader.sessions.lowest_active_offset([1]), leader.stats.timed_out_heartbeats

    answer, stale, offset, timed_out = run(go())
    assert answer.error_code == Errors.REQUEST_TIMED_OUT and timed_out == 1     # TimedOutBrokerHeartbeatCount
    assert stale is None, "a broker whose heartbeat arrived in time was found stale"
    assert offset == 4321
