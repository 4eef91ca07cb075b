"""The online conversion of a group between the classic and the consumer (KIP-848) protocols, as
Kafka 4.3.1's GroupMetadataManager does it under ``group.consumer.migration.policy``:

- upgrade (convertToConsumerGroup, ConsumerGroup.fromClassicGroup): a ConsumerGroupHeartbeat
  joining a classic group of the consumer embedded protocol with members converts it; each classic
  member becomes a member of the consumer group at the classic generation, Stable, keeping its
  last assignment as its target; the classic group's parked JoinGroup and SyncGroup answers are
  REBALANCE_IN_PROGRESS, so its members rejoin the consumer group;
- downgrade (convertToClassicGroup, ClassicGroup.fromConsumerGroup): when the consumer-protocol
  members leave a group whose remaining members all use the classic protocol, the group becomes
  a classic group (Stable at the group epoch, each member's target assignment its assignment) that
  rebalances at once.

Both write the records Kafka writes: the old group's tombstones, then the new group's records.
"""
from __future__ import annotations

import logging

from kafkawire.messages.join_group_response import JoinGroupResponse
from kafkawire.messages.sync_group_response import SyncGroupResponse
from kafkawire.protocol.error_codes import Errors

from . import consumer_records as rec
from .consumer_admin import tombstones
from .consumer_group import MEMBER_STABLE, ClassicMeta, ConsumerMember, apply
from .consumer_protocol import decode_assignment, decode_subscription, encode_assignment, subscription_version
from .group_coordinator import join_key, sync_key
from .group_records import group_record, group_tombstone
from .group_state import CONSUMER_PROTOCOL_TYPE, STABLE, ClassicGroup, InvalidTransition, Member

__all__ = ["upgrade_records", "replayed", "retire_classic", "downgrade_allowed", "downgraded", "downgrade", "UPGRADE_POLICIES", "DOWNGRADE_POLICIES",
           "ConversionRefused"]

log = logging.getLogger(__name__)
UPGRADE_POLICIES = frozenset(("bidirectional", "upgrade"))
DOWNGRADE_POLICIES = frozenset(("bidirectional", "downgrade"))


class ConversionRefused(Exception):
    """GROUP_ID_NOT_FOUND with Kafka's message."""


def upgrade_records(classic: ClassicGroup, policy: str, max_size: int, view, metadata_hash) -> list:
    """validateOnlineUpgrade and convertToConsumerGroup: the records that turn ``classic`` into a
    consumer group (the classic tombstone first, as a ("classic", key, value) record). Raises
    ConversionRefused."""
    group_id = classic.group_id
    prefix = f"Cannot upgrade classic group {group_id} to consumer group because"
    if policy not in UPGRADE_POLICIES:
        raise ConversionRefused(f"{prefix} online upgrade is disabled.")
    if not classic.uses_consumer_protocol():
        raise ConversionRefused(f"{prefix} the group does not use the consumer embedded protocol.")
    if len(classic.members) > max_size:
        raise ConversionRefused(f"{prefix} the group size exceeds the consumer group maximum size.")
    generation = classic.generation_id
    members, targets = [], {}
    for m in classic.members.values():
        try:
            subscription = decode_subscription(m.metadata(classic.protocol_name))
            partitions, user_data = decode_assignment(m.assignment) if m.assignment else ({}, None)
        except ValueError as exc:
            log.warning("Cannot upgrade classic group %s to consumer group because the embedded consumer protocol "
                        "is malformed: %s.", group_id, exc)
            raise ConversionRefused(f"{prefix} the embedded consumer protocol is malformed.") from None
        if user_data:
            raise ConversionRefused(f"Cannot upgrade classic group {group_id} to consumer group because an "
                                    "unsupported custom assignor is in use. Please refer to the documentation or "
                                    "switch to a default assignor before re-attempting the upgrade.")
        target = {view.by_name[t][0]: set(ps) for t, ps in partitions.items() if t in view.by_name}
        targets[m.member_id] = target
        members.append(ConsumerMember(
            m.member_id, instance_id=m.group_instance_id, rack_id=subscription.rack_id, client_id=m.client_id,
            client_host=m.client_host, subscribed_topic_names=frozenset(subscription.topics),
            rebalance_timeout_ms=m.rebalance_timeout_ms, member_epoch=generation, previous_member_epoch=generation,
            state=MEMBER_STABLE, assigned={t: dict.fromkeys(ps, generation) for t, ps in target.items()},
            classic=ClassicMeta(m.session_timeout_ms, tuple(m.protocols))))
    topics = set().union(*(m.subscribed_topic_names for m in members))
    records = [("classic",) + group_tombstone(group_id)]
    records += [rec.member_record(group_id, m) for m in members]          # createConsumerGroupRecords
    records.append(rec.group_epoch_record(group_id, generation, metadata_hash(topics, view)))
    records += [rec.target_member_record(group_id, m.member_id, targets[m.member_id]) for m in members]
    records.append(rec.target_metadata_record(group_id, generation, 0))
    records += [rec.current_assignment_record(group_id, m) for m in members]
    return records


def replayed(records: list) -> dict:
    """The consumer groups ``records`` make from nothing (the classic ones skipped)."""
    groups: dict = {}
    for record in records:
        if record[0] != "classic":
            apply(groups, record)
    return groups


def downgrade_allowed(group, leaving, policy: str, classic_max_size: int, replaced=None) -> bool:
    """validateOnlineDowngradeWithFencedMembers: every remaining member uses the classic protocol,
    one remains at least, the policy allows it and the classic group's max size does. With
    ``replaced`` (validateOnlineDowngradeWithReplacedMember): a consumer-protocol static member
    is being replaced by a classic one and every other member uses the classic protocol."""
    if replaced is not None:
        if replaced.uses_classic or not group.all_classic_except((replaced.member_id,)):
            return False
        remaining = len(group.members)
    else:
        remaining = len(group.members) - len([m for m in leaving if m in group.members])
        if not group.all_classic_except(leaving) or remaining <= 0:
            return False
    if policy not in DOWNGRADE_POLICIES:
        log.info("Cannot downgrade consumer group %s to classic group because the online downgrade is disabled.",
                 group.group_id)
        return False
    if remaining > classic_max_size:
        log.info("Cannot downgrade consumer group %s to classic group because its group size is greater than "
                 "classic group max size.", group.group_id)
        return False
    return True


def _classic_member(m) -> Member:
    return Member(m.member_id, client_id=m.client_id, client_host=m.client_host,
                  rebalance_timeout_ms=m.rebalance_timeout_ms, session_timeout_ms=m.classic.session_timeout_ms,
                  protocol_type=CONSUMER_PROTOCOL_TYPE, protocols=list(m.classic.protocols),
                  group_instance_id=m.instance_id)


def downgraded(group, leaving, view, now_ms: int, joining=None, replaced=None) -> tuple[ClassicGroup, tuple]:
    """ClassicGroup.fromConsumerGroup: (the classic group, its GroupMetadata record (key, value)),
    without the ``leaving`` members, with ``joining`` in place of ``replaced`` (a static member's
    new member, which takes its target). Raises ConversionRefused when a member's subscription
    does not decode."""
    classic = ClassicGroup(group.group_id, now_ms=now_ms, state=STABLE, previous_state=STABLE,
                           generation_id=group.group_epoch, protocol_type=CONSUMER_PROTOCOL_TYPE)
    for m in group.members.values():
        if m.member_id not in leaving and (replaced is None or m.member_id != replaced.member_id):
            classic.add(_classic_member(m), None)
    if joining is not None:
        classic.add(_classic_member(joining), None)
    try:
        classic.protocol_name = classic.select_protocol()
    except InvalidTransition as exc:         # the members' protocols have nothing in common
        raise ConversionRefused(f"Cannot downgrade the classic group {group.group_id}: {exc}.") from None
    names = view.by_id
    assignments = {}
    for member_id, member in classic.members.items():
        target = group.target.get(replaced.member_id if joining is not None and member_id == joining.member_id
                                  else member_id, {})
        try:
            version = subscription_version(member.metadata(classic.protocol_name))
        except ValueError as exc:
            raise ConversionRefused(f"Cannot downgrade the classic group {group.group_id}: {exc}.") from None
        member.assignment = encode_assignment({names[t]: ps for t, ps in target.items() if t in names}, version)
        assignments[member_id] = member.assignment
    return classic, group_record(classic, assignments)


def retire_classic(coordinator, group_id: str) -> None:
    """The classic group of ``group_id`` gives way to the consumer group just written (an empty
    one, or one upgraded): its parked JoinGroup and SyncGroup answers are REBALANCE_IN_PROGRESS,
    its members (now the consumer group's) must heartbeat within their session timeouts."""
    classic = coordinator.classic
    group = classic.groups.pop(group_id, None)
    if group is None:
        return
    classic.timer.cancel(join_key(group_id))
    classic.timer.cancel(sync_key(group_id))
    for member in list(group.members.values()):
        group.complete_join(member, JoinGroupResponse(error_code=Errors.REBALANCE_IN_PROGRESS,
                                                      member_id=member.member_id))
        group.complete_sync(member, SyncGroupResponse(error_code=Errors.REBALANCE_IN_PROGRESS))
        classic.cancel_heartbeat(group_id, member.member_id)
        coordinator.schedule_session(group_id, member.member_id, member.session_timeout_ms)


def downgrade(coordinator, group, leaving: frozenset, *, joining=None, replaced=None, rebalance: bool = True,
              records: list = ()) -> int | None:
    """convertToClassicGroup: ``records`` (the joining static member's, not applied), the consumer
    group's tombstones and the classic group's record are written, then the classic group
    rebalances (``rebalance``: its members rejoin as classic members do). An error code, or None
    when the members' protocols cannot make a classic group (the group stays a consumer group:
    Kafka fails the operation instead, which would keep a leaving member forever)."""
    classic = coordinator.classic
    try:
        converted, record = downgraded(group, leaving, coordinator.topics(), classic.now_ms(), joining, replaced)
    except ConversionRefused as exc:
        log.warning("[GroupId %s] %s", group.group_id, exc)
        return None
    renamed = None if replaced is None else {replaced.member_id: joining.member_id}
    error = classic.persist(group.group_id, [rec.encode(r) for r in records] + tombstones(group, renamed) + [record])
    if error != Errors.NONE:
        return error
    for member_id in list(group.members) + ([] if joining is None else [joining.member_id]):
        coordinator.cancel_timers(group.group_id, member_id)
    del coordinator.groups[group.group_id]
    classic.groups[group.group_id] = converted
    for member in converted.members.values():
        classic.reschedule_heartbeat(converted, member)
    if rebalance:
        why = "with stale assignment" if joining is not None else "for member leaving"
        classic.prepare_rebalance(converted, f"Downgrade group {group.group_id} from consumer to classic {why}.")
    log.info("[GroupId %s] Converted the consumer group to a classic group.", group.group_id)
    return Errors.NONE
