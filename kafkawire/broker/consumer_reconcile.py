"""A member's reconciliation towards its target assignment, as Kafka 4.3.1's
CurrentAssignmentBuilder moves it (KIP-848):

- a member first gives up (revokes) the partitions that are no longer its own: it stays at its
  epoch in UNREVOKED_PARTITIONS until a heartbeat's owned partitions no longer include them;
- then it moves to the target epoch and takes the partitions of its target that nobody else
  holds; those another member still holds are left out (UNRELEASED_PARTITIONS) until released;
- a member whose subscription dropped topics gives them up at once (revoking them first).

    updated = reconcile(member, target_epoch, target, owners, subscribed_ids, owned_request)

``owners(topic id, partition)`` is the epoch of the partition's current owner or -1;
``subscribed_ids`` the ids of the topics the member subscribes to (that exist);
``owned_request`` the partitions the heartbeat says it owns (None when it did not say).
Raises FencedMemberEpoch for a member in an unknown state that claims partitions.
"""
from __future__ import annotations

from .consumer_group import MEMBER_STABLE, MEMBER_UNKNOWN, UNRELEASED_PARTITIONS, UNREVOKED_PARTITIONS, ConsumerMember

__all__ = ["reconcile", "FencedMemberEpoch", "UNKNOWN_STATE_MESSAGE"]

UNKNOWN_STATE_MESSAGE = ("The consumer group member is in a unknown state. The member must abandon all its "
                         "partitions and rejoin.")


class FencedMemberEpoch(Exception):
    """FENCED_MEMBER_EPOCH with Kafka's message."""


def _owns_any(owned_request, partitions: dict) -> bool:
    """Whether the heartbeat still reports one of ``partitions``; a heartbeat that does not say
    what it owns is taken to own them all (CurrentAssignmentBuilder.ownsRevokedPartitions)."""
    if owned_request is None:
        return True
    return any(p in partitions.get(topic_id, ()) for topic_id, owned in owned_request for p in owned)


def reconcile(member: ConsumerMember, target_epoch: int, target: dict, owners, subscribed_ids: set,
              owned_request, subscription_changed: bool = False) -> ConsumerMember:
    if member.state == MEMBER_STABLE:
        if member.member_epoch != target_epoch:
            return _next(member, member.member_epoch, target_epoch, target, owners, subscribed_ids, owned_request)
        if subscription_changed:
            return _drop_unsubscribed(member, subscribed_ids, owned_request)
        return member
    if member.state == UNREVOKED_PARTITIONS:
        if _owns_any(owned_request, member.revoking):
            return _drop_unsubscribed(member, subscribed_ids, owned_request) if subscription_changed else member
        return _next(member, member.member_epoch, target_epoch, target, owners, subscribed_ids, owned_request)
    if member.state == UNRELEASED_PARTITIONS:
        return _next(member, member.member_epoch, target_epoch, target, owners, subscribed_ids, owned_request)
    if member.state == MEMBER_UNKNOWN:
        if owned_request is None or owned_request:
            raise FencedMemberEpoch(UNKNOWN_STATE_MESSAGE)
        return _next(member, target_epoch, target_epoch, target, owners, subscribed_ids, owned_request)
    return member


def _bumped(member: ConsumerMember, epoch: int, **changes) -> ConsumerMember:
    """The member at ``epoch``, its previous epoch the one it had (Builder.updateMemberEpoch)."""
    return member.copy(member_epoch=epoch, previous_member_epoch=member.member_epoch, **changes)


def _drop_unsubscribed(member: ConsumerMember, subscribed_ids: set, owned_request) -> ConsumerMember:
    """CurrentAssignmentBuilder.updateCurrentAssignment: the topics the member no longer
    subscribes to go to pending revocation at the same epoch."""
    if not subscribed_ids and not member.revoking:
        assigned, revoking = {}, member.assigned
    else:
        dropped = [t for t in member.assigned if t not in subscribed_ids]
        if not dropped:
            return member
        assigned = {t: ps for t, ps in member.assigned.items() if t in subscribed_ids}
        revoking = {t: dict(ps) for t, ps in member.revoking.items()}
        for topic_id in dropped:
            revoking.setdefault(topic_id, {}).update(member.assigned[topic_id])
    if assigned == member.assigned:
        return member
    if revoking and _owns_any(owned_request, revoking):
        return _bumped(member, member.member_epoch, state=UNREVOKED_PARTITIONS, assigned=assigned, revoking=revoking)
    return _bumped(member, member.member_epoch, assigned=assigned)


def _next(member: ConsumerMember, epoch: int, target_epoch: int, target: dict, owners, subscribed_ids: set,
          owned_request) -> ConsumerMember:
    """CurrentAssignmentBuilder.computeNextAssignment."""
    assigned, revoking, pending = {}, {}, {}
    unreleased = False
    for topic_id in set(target) | set(member.assigned):
        wanted = target.get(topic_id, set()) if topic_id in subscribed_ids else set()
        current = member.assigned.get(topic_id, {})
        kept = {p: e for p, e in current.items() if p in wanted}
        gone = {p: e for p, e in current.items() if p not in wanted}
        still_revoking = member.revoking.get(topic_id, {})
        to_take = set()
        for partition in wanted:
            if partition in kept:
                continue
            if owners(topic_id, partition) != -1 and partition not in still_revoking:
                unreleased = True
            else:
                to_take.add(partition)
        if kept:
            assigned[topic_id] = kept
        if gone:
            revoking[topic_id] = gone
        if to_take:
            pending[topic_id] = to_take
    if revoking and _owns_any(owned_request, revoking):
        return _bumped(member, epoch, state=UNREVOKED_PARTITIONS, assigned=assigned, revoking=revoking)
    for topic_id, partitions in pending.items():
        assigned.setdefault(topic_id, {}).update(dict.fromkeys(partitions, target_epoch))
    state = UNRELEASED_PARTITIONS if unreleased else MEMBER_STABLE
    return _bumped(member, target_epoch, state=state, assigned=assigned, revoking={})
