"""Share-group membership without I/O (kafkawire.broker.share_groups): ShareGroupHeartbeat's rules
as Kafka 4.3.1's GroupMetadataManager applies them, the simple assignor's balance, the session
timeout, and the __consumer_offsets records: written as Kafka's formats and replayed (through the
loader's entry point, consumer_admin.replay) into the same state."""
from __future__ import annotations

import re
import uuid

from kafkawire.broker import consumer_admin
from kafkawire.broker import share_records as records
from kafkawire.broker.consumer_coordinator import TopicsView
from kafkawire.broker.share_errors import message_of
from kafkawire.broker.share_groups import ShareGroups, simple_assignment
from kafkawire.messages.share_group_heartbeat_request import ShareGroupHeartbeatRequest
from kafkawire.protocol.error_codes import Errors
from kafkawire.protocol.message import uuid_to_kafka_string

T1, T2 = uuid.UUID(int=1), uuid.UUID(int=2)
VIEW = TopicsView.of([("orders", T1, 2), ("audit", T2, 5)])


class FakeTimer:
    def __init__(self):
        self.scheduled = {}

    def schedule(self, key, delay_ms, callback):
        self.scheduled[key] = (delay_ms, callback)

    def cancel(self, key):
        self.scheduled.pop(key, None)


class FakeClassic:
    """The classic coordinator's parts ShareGroups uses: persist, timer, clock, the name space."""

    def __init__(self):
        self.timer = FakeTimer()
        self.written: list = []
        self.groups, self.consumer_groups = {}, {}
        self.share_groups, self.share = {}, None
        self.streams_groups = {}
        self.error = Errors.NONE
        self.now = 1_000

    def persist(self, group_id, records):
        if self.error == Errors.NONE:
            self.written.extend(records)
        return self.error

    def now_ms(self):
        return self.now


def coordinator(gone=None, initialized=True, **settings):
    """``initialized``: group g's partitions of VIEW are initialized at the share coordinator
    already (its ShareGroupStatePartitionMetadata written), so heartbeats assign them at once."""
    classic = FakeClassic()
    groups = ShareGroups(classic, topics=lambda: VIEW, timeouts=lambda g: (45_000, 5_000),
                         on_member_gone=lambda g, m: gone.append((g, m)) if gone is not None else None, **settings)
    if initialized:
        groups.write("g", [records.state_partitions_record("g", {}, {
            topic_id: (name, frozenset(range(count))) for name, (topic_id, count) in VIEW.by_name.items()}, {})])
        classic.written.clear()
    return classic, groups


def beat(groups, member, epoch, topics=None, group="g"):
    return groups.heartbeat(ShareGroupHeartbeatRequest(group_id=group, member_id=member, member_epoch=epoch,
                                                       subscribed_topic_names=topics),
                            client_id="c", client_host="/127.0.0.1")


def assigned(response) -> dict:
    return {t.topic_id: sorted(t.partitions) for t in response.assignment.topic_partitions}


def test_members_join_get_a_balanced_assignment_and_epochs_are_checked():
    classic, groups = coordinator()
    first = beat(groups, "m1", 0, ["orders"])
    assert (first.error_code, first.member_epoch, assigned(first)) == (Errors.NONE, 1, {T1: [0, 1]})
    second = beat(groups, "m2", 0, ["orders"])          # sticky: m1 gives back its first partition only
    assert (second.member_epoch, assigned(second)) == (2, {T1: [0]})
    moved = beat(groups, "m1", 1)                        # m1 moves to epoch 2 and keeps partition 1 only
    assert (moved.member_epoch, assigned(moved)) == (2, {T1: [1]})
    assert beat(groups, "m1", 1).error_code == Errors.NONE      # the previous epoch is accepted
    assert beat(groups, "m1", 3).error_code == Errors.FENCED_MEMBER_EPOCH
    assert beat(groups, "m3", 4).error_code == Errors.UNKNOWN_MEMBER_ID
    assert beat(groups, "m1", 2, group="other").error_code == Errors.GROUP_ID_NOT_FOUND
    assert beat(groups, "m1", 0).error_code == Errors.INVALID_REQUEST          # no subscription at epoch 0
    assert beat(groups, "", 0, ["orders"]).error_code == Errors.INVALID_REQUEST
    classic.consumer_groups["consumers"] = object()
    assert beat(groups, "m1", 0, ["orders"], group="consumers").error_code == Errors.GROUP_ID_NOT_FOUND
    described = groups.describe("g")
    assert (described.group_state, described.group_epoch, described.assignment_epoch) == ("Stable", 2, 2)
    assert {m.member_id: m.assignment.topic_partitions[0].topic_name for m in described.members} == \
        {"m1": "orders", "m2": "orders"}


def test_the_assignment_interval_defers_a_new_target_until_it_passed():
    """canComputeNextTargetAssignment: the first target at once, the next not before the group's
    assignment interval (1 s here) since the last; meanwhile a joining member is at the last
    assignment epoch with no partitions. The time of the last one is in the records (replayed)."""
    classic, groups = coordinator(assignment_interval=lambda group_id: 1_000)
    first = beat(groups, "m1", 0, ["orders"])
    assert (first.member_epoch, assigned(first)) == (1, {T1: [0, 1]})
    classic.now = 1_999
    second = beat(groups, "m2", 0, ["orders"])
    assert (second.member_epoch, assigned(second)) == (1, {})
    assert (groups.groups["g"].group_epoch, groups.groups["g"].assignment_epoch) == (2, 1)
    classic.now = 2_000
    again = beat(groups, "m2", 1)
    assert (again.member_epoch, assigned(again)) == (2, {T1: [0]})
    replica_classic, replica = coordinator()
    for key, value in classic.written:
        consumer_admin.replay(replica_classic, key, value)
    assert replica.groups["g"].assignment_timestamp_ms == groups.groups["g"].assignment_timestamp_ms == 2_000


def test_the_records_replay_into_the_same_state():
    classic, groups = coordinator()
    beat(groups, "m1", 0, ["orders", "audit"])
    beat(groups, "m2", 0, ["orders"])
    beat(groups, "m1", 1)
    beat(groups, "m2", -1)                                 # leaves: tombstones and an epoch bump
    replica_classic, replica = coordinator()
    for key, value in classic.written:
        consumer_admin.replay(replica_classic, key, value)
    assert replica.groups.keys() == groups.groups.keys() == {"g"}
    a, b = groups.groups["g"], replica.groups["g"]
    assert (a.group_epoch, a.metadata_hash, a.assignment_epoch, a.members, a.targets) == \
        (b.group_epoch, b.metadata_hash, b.assignment_epoch, b.members, b.targets)
    assert list(b.members) == ["m1"] and b.group_epoch == 3
    first_key = classic.written[0][0]
    assert int.from_bytes(first_key[:2], "big") == 10        # ShareGroupMemberMetadata, as Kafka writes it


def test_a_silent_member_is_fenced_and_its_records_released():
    gone: list = []
    classic, groups = coordinator(gone)
    beat(groups, "m1", 0, ["orders"])
    delay, expire = classic.timer.scheduled["share-session-g-m1"]
    assert delay == 45_000
    expire()
    assert gone == [("g", "m1")] and groups.groups["g"].members == {}
    assert groups.describe("g").group_state == "Empty"


def test_only_an_empty_share_group_is_deleted_and_its_records_are_tombstoned():
    deleted: list = []
    classic, groups = coordinator()
    groups.on_group_deleted = deleted.append
    beat(groups, "m1", 0, ["orders"])
    assert groups.start_delete("g") == (Errors.NON_EMPTY_GROUP, [])
    assert groups.delete("g") == Errors.NON_EMPTY_GROUP
    beat(groups, "m1", -1)
    # the share-partitions whose state goes first (DeleteShareGroupState): every initialized one,
    # recorded as deleting before
    code, keys = groups.start_delete("g")
    assert code == Errors.NONE and sorted(keys) == [(T1, 0), (T1, 1)] + [(T2, p) for p in range(5)]
    group = groups.groups["g"]
    assert (group.initialized, group.initializing, group.deleting) == ({}, {}, {T1: "orders", T2: "audit"})
    assert groups.delete("g") == Errors.NONE and groups.groups == {} and deleted == ["g"]
    replica_classic, replica = coordinator()
    for key, value in classic.written:
        consumer_admin.replay(replica_classic, key, value)
    assert replica.groups == {}
    assert [int.from_bytes(k[:2], "big") for k, v in classic.written[-4:]] == [15, 12, 15, 11]
    assert all(v is None for k, v in classic.written[-3:])


def test_a_failed_write_changes_nothing():
    classic, groups = coordinator(initialized=False)
    classic.error = Errors.NOT_COORDINATOR
    assert beat(groups, "m1", 0, ["orders"]).error_code == Errors.NOT_COORDINATOR
    assert groups.groups == {} and classic.timer.scheduled == {}


def test_the_simple_assignor_shares_partitions_when_members_outnumber_them():
    three_on_two = simple_assignment({"a": ("orders",), "b": ("orders",), "c": ("orders",)}, VIEW)
    per_partition = {p: sum(p in t.get(T1, ()) for t in three_on_two.values()) for p in (0, 1)}
    assert per_partition == {0: 2, 1: 2} and all(len(t[T1]) in (1, 2) for t in three_on_two.values())
    two_on_five = simple_assignment({"a": ("audit",), "b": ("audit",)}, VIEW)
    assert sorted(len(t[T2]) for t in two_on_five.values()) == [2, 3]
    assert two_on_five["a"][T2] | two_on_five["b"][T2] == frozenset(range(5))
    assert simple_assignment({"a": ("missing",)}, VIEW) == {"a": {}}


def share_apis(properties: str = "", group_configs=None, log_dir=None):
    """ShareApis over a stand-in broker: its server.properties ``properties``, the image's GROUP
    configs ``group_configs`` ({group: {name: value}})."""
    from types import SimpleNamespace
    from kafkawire.broker.share_apis import ShareApis
    from kafkawire.metadata.image import GROUP_RESOURCE
    from kafkawire.net.config import parse_server_config
    config = parse_server_config(
        "process.roles=broker,controller\nnode.id=1\ncontroller.listener.names=CONTROLLER\n"
        "listeners=PLAINTEXT://127.0.0.1:9092,CONTROLLER://127.0.0.1:9093\ncontroller.quorum.voters=1@127.0.0.1:9093\n"
        + (f"log.dirs={log_dir}\n" if log_dir else "") + properties)
    image = SimpleNamespace(configs={(GROUP_RESOURCE, g): c for g, c in (group_configs or {}).items()})
    broker = SimpleNamespace(config=config, image=lambda: image, node_id=1)
    return ShareApis(SimpleNamespace(broker=broker, coordinator=FakeClassic(),
                                     consumer_apis=SimpleNamespace(topics=lambda: VIEW)))


def test_share_auto_offset_reset_by_duration_starts_at_the_first_record_that_recent(tmp_path):
    """by_duration:<duration>: the first offset whose timestamp is at least now minus the duration
    (ListOffsets by timestamp, as Kafka's SharePartition asks); none that recent:
    OFFSET_NOT_AVAILABLE (Kafka's OffsetNotAvailableException), asked again at the next fetch."""
    import time
    from types import SimpleNamespace
    from kafkawire.records import build_batch
    from kafkawire.storage.log import Log
    now = int(time.time() * 1000)
    log = Log(tmp_path / "t-0")
    hours_ago = [now - h * 3_600_000 for h in (5, 4, 3, 2, 1)]          # offsets 0-4, one an hour
    log.append(build_batch([(None, b"v", (), ts) for ts in hours_ago], base_timestamp=hours_ago[0]),
               assign_offsets=True)
    partition = SimpleNamespace(topic="t", log=log, high_watermark=lambda: log.log_end_offset)
    share = share_apis(group_configs={"recent": {"share.auto.offset.reset": "by_duration:PT2H30M"},
                                      "days": {"share.auto.offset.reset": "by_duration:P1D"},
                                      "now": {"share.auto.offset.reset": "by_duration:PT1M"},
                                      "earliest": {"share.auto.offset.reset": "earliest"}}, log_dir=tmp_path)
    assert share.initial_start(("recent", T1, 0), partition) == (Errors.NONE, 3)     # 2 h and 1 h ago
    assert share.initial_start(("days", T1, 0), partition) == (Errors.NONE, 0)
    code, offset = share.initial_start(("now", T1, 0), partition)
    assert (code, offset) == (Errors.OFFSET_NOT_AVAILABLE, -1)
    assert re.fullmatch(rf"Offset for timestamp \d+ not found for topic partition: {uuid_to_kafka_string(T1)}:t-0",
                        message_of(code))                    # Kafka's, sent as the partition's ErrorMessage
    assert share.initial_start(("earliest", T1, 0), partition) == (Errors.NONE, 0)
    assert share.initial_start(("latest", T1, 0), partition) == (Errors.NONE, 5)
    log.close()


def test_the_brokers_group_share_settings_apply():
    """group.share.max.size bounds a group's members; ShareApis takes it, the share sessions'
    bound and each group's share configs (clamped to group.share.* bounds) from server.properties."""
    classic, groups = coordinator(max_size=2)
    beat(groups, "m1", 0, ["orders"])
    beat(groups, "m2", 0, ["orders"])
    full = beat(groups, "m3", 0, ["orders"])
    assert (full.error_code, full.error_message) == (
        Errors.GROUP_MAX_SIZE_REACHED, "The share group has reached its maximum capacity of 2 members.")
    share = share_apis("group.share.max.size=3\ngroup.share.max.share.sessions=7\n"
                       "group.share.session.timeout.ms=50000\ngroup.share.record.lock.duration.ms=20000\n"
                       "group.share.max.delivery.count.limit=6\ngroup.share.initialize.retry.interval.ms=1000\n",
                       {"tuned": {"share.delivery.count.limit": "9", "share.heartbeat.interval.ms": "6000"}})
    assert (share.groups.max_size, share.sessions.max_sessions) == (3, 7)
    assert share.groups.initialize_retry_ms == 5_000            # at least offsets.commit.timeout.ms, as Kafka's
    assert share.timeouts("plain") == (50_000, 5_000) and share.timeouts("tuned") == (50_000, 6_000)
    assert (share.settings("plain").record_lock_duration_ms, share.settings("plain").delivery_count_limit) == (
        20_000, 5)
    assert share.settings("tuned").delivery_count_limit == 6     # 9 clamped to group.share.max.delivery.count.limit


def test_a_groups_share_assignment_interval_over_the_brokers(caplog):
    """shareGroupAssignmentIntervalMs: the group's share.assignment.interval.ms clamped to
    group.share.{min,max}.assignment.interval.ms with a WARN, else group.share.assignment.interval.ms."""
    share = share_apis("group.share.assignment.interval.ms=2000\ngroup.share.max.assignment.interval.ms=5000\n",
                       {"own": {"share.assignment.interval.ms": "3000"}, "big": {"share.assignment.interval.ms": "9000"},
                        "other": {"share.delivery.count.limit": "4"}})
    assert [share.assignment_interval(g) for g in ("plain", "other", "own", "big")] == [2_000, 2_000, 3_000, 5_000]
    assert "share.assignment.interval.ms=9000 is outside this broker's bounds [0, 5000]; using 5000" in caplog.text
    assert share.groups.assignment_interval("own") == 3_000           # what the coordinator asks
    # the dynamic broker config (this node's, else the cluster default's), clamped to the static bounds
    from kafkawire.metadata.image import BROKER_RESOURCE
    dynamic = share.broker.image().configs
    dynamic[(BROKER_RESOURCE, "")] = {"group.share.assignment.interval.ms": "4000"}
    assert [share.assignment_interval(g) for g in ("plain", "own")] == [4_000, 3_000]
    dynamic[(BROKER_RESOURCE, "1")] = {"group.share.assignment.interval.ms": "7000"}
    assert share.assignment_interval("plain") == 5_000
    assert "group.share.assignment.interval.ms=7000 is outside this broker's bounds [0, 5000]; using 5000" in \
        caplog.text


def test_share_renew_acknowledge_enable_is_read_per_group():
    """ShareGroupConfigProvider.isRenewAcknowledgeEnabled: the group's own value, else true."""
    share = share_apis(group_configs={"off": {"share.renew.acknowledge.enable": "false"},
                                      "on": {"share.renew.acknowledge.enable": "TRUE"}})
    assert [share.settings(g).renew_acknowledge_enabled for g in ("off", "on", "plain")] == [False, True, True]
