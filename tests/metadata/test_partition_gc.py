"""A partition of the image holds nothing CPython's garbage collector tracks but its registration
(kafkawire.metadata.registrations: directory ids kept as ints), so that a full collection at a
million partitions walks a million objects, not five million (issue 28); and the UUIDs
``directories`` gives back are shared, from a table whose size is bounded."""
from __future__ import annotations

import dataclasses
import gc
import uuid
import weakref

import pytest

from kafkawire.metadata import registrations

from .image_testlib import DIR_1, DIR_2, DIR_3, TOPIC_A, record
from .test_image import image_with, topic_with_partition


def _tracked_fields(partition) -> list[str]:
    gc.collect()        # CPython untracks a tuple of untracked values when a collection sees it
    return [f.name for f in dataclasses.fields(partition) if gc.is_tracked(getattr(partition, f.name))]


def test_a_partition_record_and_a_change_leave_no_tracked_field():
    image = image_with(*topic_with_partition(directories=[DIR_1, DIR_2, DIR_3]))
    partition = image.topics_by_id[TOPIC_A].partitions[0]
    assert _tracked_fields(partition) == [] and partition.directories == (DIR_1, DIR_2, DIR_3)
    image.apply(record("PartitionChangeRecord", partition_id=0, topic_id=TOPIC_A, replicas=[3, 4, 1],
                       isr=[3, 1], directories=[DIR_3, DIR_2, DIR_1], eligible_leader_replicas=[4]))
    changed = image.topics_by_id[TOPIC_A].partitions[0]
    assert _tracked_fields(changed) == [] and changed.directories == (DIR_3, DIR_2, DIR_1)


def test_partitions_on_the_same_directory_share_its_uuid():
    image = image_with(*topic_with_partition(directories=[DIR_1, DIR_2, DIR_3]))
    image.apply(record("PartitionRecord", partition_id=1, topic_id=TOPIC_A, replicas=[2, 1], isr=[2, 1], leader=2,
                       directories=[uuid.UUID(int=DIR_2.int), uuid.UUID(int=DIR_1.int)]))
    first, second = image.topics_by_id[TOPIC_A].partitions[0], image.topics_by_id[TOPIC_A].partitions[1]
    assert first.directories[0] is second.directories[1] and first.directory_ids[1] is second.directory_ids[0]


def test_the_shared_uuid_table_is_emptied_when_full_and_gives_equal_uuids(monkeypatch):
    monkeypatch.setattr(registrations, "_SHARED_UUIDS_LIMIT", 2)
    monkeypatch.setattr(registrations, "_uuid_by_int", {})
    ids = registrations.directory_ints([uuid.UUID(int=n) for n in range(10, 15)])
    assert len(registrations._uuid_by_int) <= 2
    assert [registrations._shared_uuid(i) for i in ids] == [uuid.UUID(int=n) for n in range(10, 15)]


native_only = pytest.mark.skipif(registrations._untrack is None, reason="the C extension is not built (pure path)")


@native_only
def test_the_registrations_a_record_a_change_and_a_replace_make_are_not_tracked():
    """So that no collection walks the image's partitions (kafkawire/_native_src/module.c,
    untrack_acyclic): a full collection at 1M partitions walked little else (issue 28)."""
    image = image_with(*topic_with_partition(directories=[DIR_1, DIR_2, DIR_3]))
    partition = image.topics_by_id[TOPIC_A].partitions[0]
    image.apply(record("PartitionChangeRecord", partition_id=0, topic_id=TOPIC_A, isr=[3, 1]))
    changed = image.topics_by_id[TOPIC_A].partitions[0]
    assert changed is not partition
    assert [gc.is_tracked(p) for p in (partition, changed, dataclasses.replace(changed, leader=3))] == [False] * 3


@native_only
def test_only_a_slotted_class_on_object_holding_atomic_values_is_untracked():
    untrack = registrations._untrack

    @dataclasses.dataclass(frozen=True, slots=True)
    class Holder:
        value: object

    class WithDict:
        pass

    class Finalized:
        __slots__ = ("value",)

        def __del__(self):
            pass

    class EmptyList(list):
        __slots__ = ()

    finalized = Finalized()
    finalized.value = 1
    refused = [Holder([]), Holder(((1, []),)), Holder(WithDict()), WithDict(), finalized, [], EmptyList()]
    assert [untrack(o) for o in refused] == [False] * len(refused)
    assert all(gc.is_tracked(o) for o in refused)
    atomic = [Holder(v) for v in (1, "s", b"b", 1.5, None, True, (1, "s", None))]
    assert [untrack(o) for o in atomic] == [True] * len(atomic)
    assert not any(gc.is_tracked(o) for o in atomic)
    assert untrack(atomic[0]) is False                             # already untracked


@native_only
def test_an_int_subclass_is_not_atomic_and_its_cycle_through_the_holder_is_collected():
    """An int subclass's instance may carry a __dict__, and so a reference cycle through the
    object holding it: untracked, that object would hide the cycle from the collector (a leak).
    Only exact ints (and bool, which cannot be subclassed) count as atomic."""
    untrack = registrations._untrack

    @dataclasses.dataclass(frozen=True, slots=True)
    class Holder:
        value: object

    class Leader(int):
        pass

    class Epochs(tuple):
        pass

    class Marker:       # an int subclass takes no weak reference: this, in the cycle, does
        pass

    leader = Leader(3)
    holder = Holder(leader)
    leader.holder = holder                      # holder -> leader -> leader.__dict__ -> holder
    leader.marker = Marker()
    refused = [holder, Holder((1, Leader(2))), Holder(Epochs((1, 2)))]
    assert [untrack(o) for o in refused] == [False] * len(refused)
    assert all(gc.is_tracked(o) for o in refused)
    assert [untrack(Holder(v)) for v in (3, True, (1, False))] == [True] * 3

    alive = weakref.ref(leader.marker)
    del leader, holder, refused
    gc.collect()
    assert alive() is None                      # the cycle was collected (untracked, it leaked)


def test_a_registration_holding_an_int_subclass_stays_tracked_and_its_cycle_is_collected():
    """Either path (the C extension's untrack_acyclic, or the pure one that untracks nothing): a
    registration given an int subclass's instance that refers back to it is left to the
    collector, which frees the cycle."""
    class Leader(int):
        pass

    class Marker:
        pass

    leader = Leader(1)
    partition = registrations.PartitionRegistration(
        replicas=(1, 2), directory_ids=(0, 0), isr=(1, 2), removing_replicas=(), adding_replicas=(), leader=leader,
        leader_recovery_state=0, leader_epoch=0, partition_epoch=0)
    leader.partition, leader.marker = partition, Marker()
    assert gc.is_tracked(partition)
    alive = weakref.ref(leader.marker)
    del leader, partition
    gc.collect()
    assert alive() is None
