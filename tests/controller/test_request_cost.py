"""The controller's topic and config handlers do work linear in the request (issue 24): names,
ids, config records and list values are matched with dicts, sets and counters, never a list scan
per item. Counted with tests.counting.CountedName (its ``==`` calls), not timed."""
from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from kafkawire.controller.configs import _appended, _subtracted, alter_configs
from kafkawire.controller.describe_configs import describe_configs
from kafkawire.controller.frames import frame
from kafkawire.controller.state import ControllerState
from kafkawire.controller.topic_deletion import delete_topics
from kafkawire.messages.alter_configs_request import AlterableConfig, AlterConfigsRequest, AlterConfigsResource
from kafkawire.messages.delete_topics_request import DeleteTopicsRequest, DeleteTopicState
from kafkawire.messages.describe_configs_request import DescribeConfigsRequest, DescribeConfigsResource
from tests.counting import CountedName, counted_names

N = 2000           # a list scan per item would be ~N*N/2 = 2,000,000 comparisons


def state_with(*frames) -> ControllerState:
    state = ControllerState()
    state.apply_batch(0, 1, 0, list(frames))
    return state


def test_delete_topics_sorts_names_and_duplicates_with_dicts():
    """ControllerApis.deleteTopics' provided/duplicate names: one dict lookup per name, the
    answers (unknown names in request order, then a duplicate once) as before."""
    names = counted_names(N)
    request = DeleteTopicsRequest(topics=[DeleteTopicState(name=n) for n in names + names[:1]])
    _, response = delete_topics(ControllerState(), request, 6)
    assert CountedName.comparisons <= 2 * N
    assert [(r.name, r.error_message) for r in response.responses[:2]] == [
        ("t0", "Duplicate topic name."), ("t1", "This server does not host this topic-partition.")]
    assert len(response.responses) == N


def test_legacy_alter_configs_tells_deletions_apart_without_scanning_them():
    """AlterConfigs (the legacy API) deletes every config the request does not name: the check of
    each record does not look it up in the list of deletions."""
    existing = [frame("ConfigRecord", resource_type=4, resource_name="", name=f"old.{i}", value="1")
                for i in range(N)]
    state = state_with(*existing)
    names = counted_names(N, "new.")
    request = AlterConfigsRequest(resources=[AlterConfigsResource(
        resource_type=4, resource_name="", configs=[AlterableConfig(name=n, value="2") for n in names])])
    records, response = alter_configs(state, request)
    assert CountedName.comparisons <= 2 * N
    assert [r.error_code for r in response.responses] == [0] and len(records) == 2 * N


def test_describe_configs_reads_the_requested_keys_as_a_set():
    """DescribeConfigs with configuration keys: each config of the topic is looked up in a set of
    the keys, not in their list."""
    state = state_with(frame("TopicRecord", name="t", topic_id=__import__("uuid").UUID(int=9)))
    keys = counted_names(N, "no.such.key.") + [CountedName("retention.ms")]
    CountedName.comparisons = 0
    request = DescribeConfigsRequest(resources=[DescribeConfigsResource(resource_type=2, resource_name="t",
                                                                        configuration_keys=keys)])
    response = describe_configs(1, state.image, request)
    assert CountedName.comparisons <= 2 * N
    assert [c.name for c in response.results[0].configs] == ["retention.ms"]


def kafka_append(parts: list[str], values: list[str]) -> list[str]:
    """ConfigurationControlManager's APPEND, as Kafka writes it (a List.contains per value)."""
    out = list(parts)
    for value in values:
        if value not in out:
            out.append(value)
    return out


def kafka_subtract(parts: list[str], values: list[str]) -> list[str]:
    """ConfigurationControlManager's SUBTRACT (a List.remove per value: its first occurrence)."""
    out = list(parts)
    for value in values:
        if value in out:
            out.remove(value)
    return out


@given(st.lists(st.sampled_from("abcd")), st.lists(st.sampled_from("abcde")))
def test_append_and_subtract_give_kafkas_lists(parts, values):
    """APPEND and SUBTRACT of a list config, done with a set and a counter, give the list Kafka's
    list scans give, duplicates in the old value included."""
    assert _appended(parts, values) == kafka_append(parts, values)
    assert _subtracted(parts, values) == kafka_subtract(parts, values)


def test_append_and_subtract_are_linear_in_the_values():
    """APPEND / SUBTRACT of N values to a list of N: no scan of the list per value."""
    old, new = counted_names(N, "old."), counted_names(N, "new.")
    assert len(_appended(old, new)) == 2 * N
    assert _subtracted(old + new, new) == old
    assert CountedName.comparisons <= 2 * N
