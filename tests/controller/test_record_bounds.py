"""The bound on the records one admin write may generate, as Kafka 4.3.1's controller keeps it:
QuorumController.MAX_RECORDS_PER_USER_OP (10,000) enforced by BoundedList, and what each API
answers past it (kafkawire/controller/bounded.py). Refused requests write nothing; CreateTopics
and CreatePartitions refuse before placing any partition.

The APIs whose bound is cheap to reach are driven at the real bound; the others with the bound
lowered after their setup (the same BoundedList serves them all)."""
import pytest

from kafkawire.controller import bounded
from kafkawire.controller.bounded import MAX_RECORDS_PER_USER_OP, BoundedList, BoundedListTooLong
from kafkawire.messages.create_acls_request import AclCreation, CreateAclsRequest
from kafkawire.messages.create_partitions_request import CreatePartitionsRequest, CreatePartitionsTopic
from kafkawire.messages.create_topics_request import CreatableTopic, CreateTopicsRequest
from kafkawire.messages.delete_acls_request import DeleteAclsFilter, DeleteAclsRequest
from kafkawire.messages.delete_topics_request import DeleteTopicsRequest
from kafkawire.messages.elect_leaders_request import ElectLeadersRequest, TopicPartitions
from kafkawire.protocol.error_codes import Errors

from .harness import Ctx, run
from .test_admin_apis import BROKER, SET, config_results, create, incremental, legacy, scenario
from .test_brokers import new_records
from .test_leader_election import results as election_results
from .test_reassignment import outcome, reassign, setup

EXCESSIVE_BATCH = ("POLICY_VIOLATION", "Unable to perform excessively large batch operation.")
TOPIC, LITERAL, ALLOW, READ, ANY = 2, 3, 3, 3, 1


def grow(*topics):
    """A CreatePartitionsRequest: topics as (name, new count)."""
    return CreatePartitionsRequest(topics=[CreatePartitionsTopic(name=n, count=c, assignments=None) for n, c in topics],
                                   timeout_ms=5000, validate_only=False)


def answers(response):
    return [(r.name, Errors.for_code(r.error_code).name, r.error_message) for r in response.results]


def lowered(monkeypatch, bound, request):
    """``request`` sent with the bound lowered to ``bound`` (after the scenario's setup wrote its records)."""
    def make(controller):
        monkeypatch.setattr(bounded, "MAX_RECORDS_PER_USER_OP", bound)
        return request
    return make


def no_placement(monkeypatch, module):
    """Replace ``module``'s place with one that records its calls; returns the list of calls."""
    calls = []

    def place(*args, **kwargs):
        calls.append(args)
        return []
    monkeypatch.setattr(module, "place", place)
    return calls


def test_the_bound_is_kafkas_and_the_list_refuses_any_element_past_it():
    assert MAX_RECORDS_PER_USER_OP == 10_000 and BoundedList().max_length == 10_000
    records = BoundedList(3)
    records += [1, 2]
    records.append(3)
    for grow_it in (lambda: records.append(4), lambda: records.extend([4]), lambda: records.insert(0, 4),
                    lambda: records.check_room(1)):
        with pytest.raises(BoundedListTooLong):
            grow_it()
    assert records == [1, 2, 3]
    several = BoundedList(3)
    with pytest.raises(BoundedListTooLong, match="Cannot add another 4 element"):
        several += [1, 2, 3, 4]
    assert several == []                          # all or nothing, as BoundedList.addAll


# --- CreatePartitions: Kafka refuses per topic, UNKNOWN_SERVER_ERROR without a message ----------

def test_create_partitions_refuses_the_topic_whose_new_partitions_pass_the_bound_and_writes_nothing_for_it():
    over = grow(("a", 1 + MAX_RECORDS_PER_USER_OP + 1))
    shared = grow(("a", 1 + 5_000), ("b", 1 + 5_001))         # 10,001 together: b's do not fit beside a's
    (alone, together), records, leader = scenario([create("a", 1, 1), create("b", 1, 1)],
                                                  [(37, 3, over), (37, 3, shared)])
    assert answers(alone) == [("a", "UNKNOWN_SERVER_ERROR", None)]
    assert answers(together) == [("a", "NONE", None), ("b", "UNKNOWN_SERVER_ERROR", None)]
    assert {r.message.topic_id for r in records} == {leader.image.topics_by_name["a"].id}
    assert len(records) == 5_000 and len(leader.image.topics_by_name["b"].partitions) == 1


def test_create_partitions_at_the_bound_is_accepted():
    (response,), records, _ = scenario([create("a", 1, 1)], [(37, 3, grow(("a", 1 + MAX_RECORDS_PER_USER_OP)))])
    assert answers(response) == [("a", "NONE", None)]
    assert len(records) == MAX_RECORDS_PER_USER_OP and {r.type_name for r in records} == {"PartitionRecord"}


def test_create_partitions_to_2_pow_31_minus_1_is_refused_before_any_placement(monkeypatch):
    from kafkawire.controller import partition_creation
    calls = no_placement(monkeypatch, partition_creation)
    (response,), records, _ = scenario([create("a", 1, 1)], [(37, 3, grow(("a", 2**31 - 1)))])
    assert answers(response) == [("a", "UNKNOWN_SERVER_ERROR", None)]
    assert calls == [] and records == []


# --- CreateTopics: partitions asked for, then records generated; the whole request ---------------

def test_create_topics_asking_for_more_than_10000_partitions_is_refused_whole_before_any_placement(monkeypatch):
    from kafkawire.controller import topics
    calls = no_placement(monkeypatch, topics)
    request = CreateTopicsRequest(timeout_ms=5000, topics=[
        CreatableTopic(name="a", num_partitions=5_000, replication_factor=1),
        CreatableTopic(name="b", num_partitions=5_000, replication_factor=1),
        CreatableTopic(name="c", num_partitions=-1, replication_factor=1)])      # the default: one more
    (response,), records, _ = scenario([], [(19, 7, request)])
    assert [(t.name, Errors.for_code(t.error_code).name, t.error_message) for t in response.topics] == [
        (name, "POLICY_VIOLATION", "Excessively large number of partitions per request.") for name in "abc"]
    assert calls == [] and records == []


def test_create_topics_writing_more_than_10000_records_is_refused_whole():
    """10,000 partitions pass the partition count, but with the TopicRecord make 10,001 records."""
    request = CreateTopicsRequest(timeout_ms=5000, topics=[
        CreatableTopic(name="small", num_partitions=1, replication_factor=1),
        CreatableTopic(name="big", num_partitions=MAX_RECORDS_PER_USER_OP - 1, replication_factor=1)])
    (response,), records, leader = scenario([], [(19, 7, request)])
    assert [(t.name, Errors.for_code(t.error_code).name, t.error_message) for t in response.topics] == [
        ("small", *EXCESSIVE_BATCH), ("big", *EXCESSIVE_BATCH)]
    assert records == [] and not leader.image.topics_by_name


def test_create_topics_at_the_bound_is_accepted():
    request = CreateTopicsRequest(timeout_ms=5000, topics=[
        CreatableTopic(name="big", num_partitions=MAX_RECORDS_PER_USER_OP - 1, replication_factor=1)])
    (response,), records, _ = scenario([], [(19, 7, request)])
    assert response.topics[0].error_code == 0 and len(records) == MAX_RECORDS_PER_USER_OP


# --- CreateAcls and DeleteAcls, at the real bound --------------------------------------------------

def acl(principal, name="t"):
    return AclCreation(resource_type=TOPIC, resource_name=name, resource_pattern_type=LITERAL, principal=principal,
                       host="*", operation=READ, permission_type=ALLOW)


def acl_filter(name):
    return DeleteAclsFilter(resource_type_filter=TOPIC, resource_name_filter=name, pattern_type_filter=LITERAL,
                            principal_filter=None, host_filter=None, operation=ANY, permission_type=ANY)


def test_create_acls_past_the_bound_is_refused_whole_and_a_duplicate_costs_nothing():
    """Records generated count, not creations: 10,000 new ACLs plus a repeat of one are accepted;
    10,001 new ones are refused, each creation answered POLICY_VIOLATION except those AclApis refuses
    itself (an empty name), which keep their own answer."""
    users = [f"User:u{i}" for i in range(MAX_RECORDS_PER_USER_OP + 1)]
    over = CreateAclsRequest(creations=[acl(u) for u in users] + [acl("User:x", name="")])
    at_bound = CreateAclsRequest(creations=[acl(u) for u in users[:-1]] + [acl(users[0])])
    (refused, accepted), records, _ = scenario([], [(30, 3, over), (30, 3, at_bound)], acls_enabled=True)
    assert [(Errors.for_code(r.error_code).name, r.error_message) for r in refused.results] == (
        [EXCESSIVE_BATCH] * len(users) + [("INVALID_REQUEST", "Invalid empty resource name")])
    assert {r.error_code for r in accepted.results} == {0}
    assert len(records) == MAX_RECORDS_PER_USER_OP and {r.type_name for r in records} == {"AccessControlEntryRecord"}


def test_delete_acls_matching_more_than_the_bound_is_refused_whole():
    """AclControlManager.deleteAcls: INVALID_REQUEST with the BoundedList's text for every filter."""
    many = CreateAclsRequest(creations=[acl(f"User:u{i}") for i in range(MAX_RECORDS_PER_USER_OP)])
    one_more = CreateAclsRequest(creations=[acl("User:x", name="other")])
    over = DeleteAclsRequest(filters=[acl_filter("t"), acl_filter("other")])
    at_bound = DeleteAclsRequest(filters=[acl_filter("t")])
    (*created, refused, accepted), records, leader = scenario(
        [], [(30, 3, many), (30, 3, one_more), (31, 3, over), (31, 3, at_bound)], acls_enabled=True)
    assert {r.error_code for c in created for r in c.results} == {0}
    assert [(Errors.for_code(r.error_code).name, r.error_message) for r in refused.filter_results] == [
        ("INVALID_REQUEST", "Cannot remove more than 10000 acls in a single delete operation.")] * 2
    assert accepted.filter_results[0].error_code == 0
    assert len(accepted.filter_results[0].matching_acls) == MAX_RECORDS_PER_USER_OP
    removed = [r for r in records if r.type_name == "RemoveAccessControlEntryRecord"]
    assert len(removed) == MAX_RECORDS_PER_USER_OP and len(leader.image.acls) == 1


# --- the others, with the bound lowered ------------------------------------------------------------

def test_delete_topics_past_the_bound_refuses_the_topics_that_do_not_fit(monkeypatch):
    """ReplicationControlManager.deleteTopics' catch-all: UNKNOWN_SERVER_ERROR without a message
    for the topics past the bound; the others are deleted."""
    request = DeleteTopicsRequest(topic_names=["a", "b", "c"], timeout_ms=5000)
    (response,), records, leader = scenario([create("a"), create("b"), create("c")],
                                            [(20, 5, lowered(monkeypatch, 2, request))])
    assert [(r.name, Errors.for_code(r.error_code).name, r.error_message) for r in response.responses] == [
        ("a", "NONE", None), ("b", "NONE", None), ("c", "UNKNOWN_SERVER_ERROR", None)]
    assert [r.type_name for r in records] == ["RemoveTopicRecord"] * 2 and list(leader.image.topics_by_name) == ["c"]


def test_configs_past_the_bound_are_refused_whole(monkeypatch):
    three = [("log.cleaner.threads", SET, "2"), ("log.retention.ms", SET, "5"), ("log.retention.bytes", SET, "7")]
    requests = [(44, 1, lowered(monkeypatch, 2, incremental((BROKER, "1", three)))),
                (33, 2, legacy((BROKER, "1", [(k, v) for k, _, v in three])))]
    (incremental_answer, legacy_answer), records, _ = scenario([], requests)
    assert config_results(incremental_answer) == config_results(legacy_answer) == [(BROKER, "1", *EXCESSIVE_BATCH)]
    assert records == []


def test_reassignments_past_the_bound_refuse_the_partitions_that_do_not_fit(monkeypatch):
    """alterPartitionReassignments' catch-all: UNKNOWN_SERVER_ERROR without a message for the
    partitions past the bound; the others are reassigned."""
    async def go():
        quorum, leader, running, _ = await setup()              # t-0 on [1, 2], t-1 on [2, 3]
        async with running:
            monkeypatch.setattr(bounded, "MAX_RECORDS_PER_USER_OP", 1)
            mark = quorum.end_offset
            response = await leader.handlers()[45].handle(Ctx(1), reassign(("t", 0, [2, 1]), ("t", 1, [3, 2])))
            assert outcome(response) == [("t", 0, "NONE", None), ("t", 1, "UNKNOWN_SERVER_ERROR", None)]
            assert [r.type_name for _, r in new_records(quorum, mark)] == ["PartitionChangeRecord"]
    run(go())


def test_elect_leaders_past_the_bound_is_refused_whole(monkeypatch):
    async def go():
        quorum, leader, running, _ = await setup()
        async with running:
            await leader.handlers()[45].handle(Ctx(1), reassign(("t", 0, [2, 1]), ("t", 1, [3, 2])))   # reorders
            monkeypatch.setattr(bounded, "MAX_RECORDS_PER_USER_OP", 1)
            mark = quorum.end_offset
            response = await leader.handlers()[43].handle(Ctx(2), ElectLeadersRequest(
                election_type=0, timeout_ms=5000, topic_partitions=[TopicPartitions(topic="t", partitions=[0, 1])]))
            assert response.error_code == Errors.POLICY_VIOLATION
            assert election_results(response) == [("t", 0, *EXCESSIVE_BATCH), ("t", 1, *EXCESSIVE_BATCH)]
            assert new_records(quorum, mark) == []
    run(go())
