"""The streams sticky assignor (kafkawire/broker/streams_assignor.py): Kafka 4.3.1's
StickyTaskAssignor answers, recorded in tests/broker/data/streams_sticky_assignor_cases.txt by
tests/interop/test_streams_assignor_vs_kafka.py (which runs Kafka's class itself), must be ours
without Java; and the rules a reader checks by hand, on small groups."""
from __future__ import annotations

from kafkawire.broker.java_collections import java_hash_map_order
from kafkawire.broker.streams_assignor import sticky_assign
from tests.broker.streams_assignor_cases import case_text, generate_cases, ours, read_table


def test_we_assign_as_kafkas_recorded_answers():
    table = read_table()
    cases = generate_cases()
    assert [text for text, _ in table] == [case_text(c) for c in cases], "the table is not generate_cases()'s"
    wrong = [(text, answer, ours(case)) for (text, answer), case in zip(table, cases) if ours(case) != answer]
    assert not wrong, f"{len(wrong)} of {len(table)} differ from Kafka's, e.g. {wrong[0]}"
    # the table holds the situations the rules are about
    assert sum(1 for _, _, members in cases if len({m[1] for m in members}) < len(members)) > 50  # shared processes
    assert sum(1 for r, _, _ in cases if r) > 100 and sum(1 for _, _, ms in cases if any(m[2] for m in ms)) > 100


def test_the_members_of_a_process_share_its_load():
    """Balance is by process: a process of two members takes twice the tasks of a process of one."""
    active, _ = sticky_assign([("a1", "A", {}, {}), ("a2", "A", {}, {}), ("b1", "B", {}, {})], {"0": 6}, set(), 0)
    assert sorted(len(t["0"]) for t in active.values()) == [2, 2, 2]
    assert set().union(*(t["0"] for t in active.values())) == set(range(6))


def test_previous_owners_keep_their_tasks_and_a_standby_holder_becomes_active():
    previous = [("a", "A", {"0": {0, 1}}, {"0": {2}}), ("b", "B", {"0": {2, 3}}, {}), ("c", "C", {}, {"0": {3}})]
    # b left: its task 2 goes to a, which held its standby, and 3 to c, which held its standby, not by load
    active, standby = sticky_assign([previous[0], previous[2]], {"0": 4}, {"0"}, 1)
    assert active == {"a": {"0": frozenset({0, 1})}, "c": {"0": frozenset({2, 3})}}
    assert standby == {"a": {"0": frozenset({2, 3})}, "c": {"0": frozenset({0, 1})}}


def test_stateless_subtopologies_get_no_standby_and_a_standby_never_shares_a_process_with_its_task():
    specs = [("a", "A", {}, {}), ("b", "B", {}, {}), ("a2", "A", {}, {})]
    active, standby = sticky_assign(specs, {"0": 3, "1": 3}, {"1"}, 2)
    assert all("0" not in tasks for tasks in standby.values())
    process = {"a": "A", "a2": "A", "b": "B"}
    for task in range(3):
        owner = next(m for m, t in active.items() if task in t.get("1", ()))
        holders = [m for m, t in standby.items() if task in t.get("1", ())]
        assert len(holders) == 1 and process[holders[0]] != process[owner]     # two processes: one standby


def test_java_hash_map_order():
    # "Aa" and "BB" share String.hashCode (2112): one bucket, kept in insertion order
    assert java_hash_map_order(["BB", "Aa"]) == ["BB", "Aa"] and java_hash_map_order(["Aa", "BB"]) == ["Aa", "BB"]
    # "a" (97) and "b" (98) go to buckets 1 and 2 of 16, whatever the insertion order
    assert java_hash_map_order(["b", "a"]) == ["a", "b"]
    # "q" (113) and "a" share bucket 1 of 16, not of 64 (49 and 33); a HashMap(1) grows to 4 for 3 keys
    assert java_hash_map_order(["q", "a"]) == ["q", "a"] and java_hash_map_order(["q", "a"], 64) == ["a", "q"]
    assert java_hash_map_order(["c", "b", "a"], initial_capacity=1) == ["a", "b", "c"]
    assert sticky_assign([], {"0": 3}, set(), 1) == ({}, {})


def test_the_group_keeps_the_table_size_and_order_of_kafkas_members_map():
    """Kafka's coordinator hands the assignor its group's members in its TimelineHashMap's order
    (tests/interop checks timeline_hash_map_order against Kafka's class), then a joining member."""
    from kafkawire.broker import streams_group as sg
    from kafkawire.broker.streams_coordinator import _assignor_order
    group = sg.StreamsGroup("g")
    group.put_member(sg.StreamsMember("a"))
    group.put_member(sg.StreamsMember("b"))
    assert group.members_capacity == 2
    group.put_member(sg.StreamsMember("a"))     # a new value at two members: the table doubles first
    assert group.members_capacity == 4
    group.drop_member("a")
    assert group.members_capacity == 4          # it never shrinks
    before = (list(group.members), group.members_capacity)
    group.put_member(sg.StreamsMember("c"))     # joins with this heartbeat: last
    assert _assignor_order(group, before) == ["b", "c"]
    group.put_member(sg.StreamsMember("a"))
    # what Kafka's TimelineHashMap iterates after +a +b +a -a +c +a (tests/interop's TimelineOrder.java)
    assert _assignor_order(group, None) == ["c", "b", "a"]
