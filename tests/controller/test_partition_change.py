"""Properties of the leader and ISR changes (Kafka's PartitionChangeBuilder rules) when a
broker is taken out of the ISR or let back in."""
from dataclasses import replace

from hypothesis import given, settings, strategies as st

from kafkawire.controller.partition_change import build_change
from kafkawire.metadata.registrations import NO_LEADER, NO_LEADER_CHANGE, PartitionRegistration


@st.composite
def partitions(draw):
    replicas = draw(st.lists(st.integers(0, 5), min_size=1, max_size=4, unique=True))
    isr = [r for r in replicas if draw(st.booleans())]
    leader = draw(st.sampled_from(isr)) if isr and draw(st.booleans()) else NO_LEADER
    elr = [r for r in replicas if r not in isr and draw(st.booleans())] if not isr else []
    return PartitionRegistration(replicas=tuple(replicas), directory_ids=(), isr=tuple(isr), removing_replicas=(),
                                 adding_replicas=(), leader=leader, leader_recovery_state=0, leader_epoch=3,
                                 partition_epoch=5, elr=tuple(elr), last_known_elr=())


@settings(max_examples=300, deadline=None)
@given(partitions(), st.integers(0, 5), st.sets(st.integers(0, 5)), st.booleans(), st.integers(1, 3),
       st.sampled_from([11, 25, 29]))
def test_removing_a_broker(partition, removed, active, elr, min_isr, mv):
    if not elr:
        partition = replace(partition, elr=())      # a partition has an ELR only while ELR is on
    acceptable = lambda r: r != removed and r in active
    change = build_change(partition, target_isr=[r for r in partition.isr if r != removed], acceptable_leader=acceptable,
                          min_isr=min_isr, elr_enabled=elr, unclean=False, metadata_version=mv)
    if change is None:
        # Nothing to do: the broker was not in the ISR and the leader (if any) is fine.
        assert removed not in partition.isr or (not elr and partition.isr == (removed,) and partition.leader == NO_LEADER)
        return
    new = partition.merge(type("R", (), dict(
        partition_id=0, replicas=None, isr=change.isr, removing_replicas=None, adding_replicas=None,
        leader=change.leader, leader_recovery_state=change.leader_recovery_state, directories=None,
        eligible_leader_replicas=change.eligible_leader_replicas, last_known_elr=change.last_known_elr))())
    assert new.leader != removed
    if new.leader != NO_LEADER:
        assert new.leader in new.isr and acceptable(new.leader)
    if elr:
        assert removed not in new.isr
    else:
        assert change.eligible_leader_replicas is None and change.last_known_elr is None
        # KIP-841: the last ISR member stays in the ISR of a partition left without a leader.
        assert new.isr == tuple(r for r in partition.isr if r != removed) or new.isr == (removed,)
    if mv < 12 and change.isr is not None and not set(partition.isr) <= set(change.isr):
        assert change.leader != NO_LEADER_CHANGE       # 3.5 and older bump the leader epoch on a shrink


def test_an_unchanged_partition_needs_no_record():
    p = PartitionRegistration(replicas=(1, 2), directory_ids=(), isr=(1, 2), removing_replicas=(), adding_replicas=(),
                              leader=1, leader_recovery_state=0, leader_epoch=0, partition_epoch=0)
    assert build_change(p, target_isr=[1, 2], acceptable_leader=lambda r: True, min_isr=1, elr_enabled=True,
                        unclean=False, metadata_version=29) is None


def test_unclean_election_takes_any_live_replica_and_marks_recovery():
    p = PartitionRegistration(replicas=(1, 2), directory_ids=(), isr=(1,), removing_replicas=(), adding_replicas=(),
                              leader=NO_LEADER, leader_recovery_state=0, leader_epoch=4, partition_epoch=9)
    change = build_change(p, target_isr=[1], acceptable_leader=lambda r: r == 2, min_isr=1, elr_enabled=False,
                          unclean=True, metadata_version=25)
    assert (change.leader, change.isr, change.leader_recovery_state) == (2, [2], 1)
