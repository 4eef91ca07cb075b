"""Everything that reads the controller's metadata without writing it reads an image of
COMMITTED records only (issue 28; Kafka's MetadataLoader image, which its broker's
BrokerMetadataPublisher and the controller's publishers read), although the active controller
applies its writes to its state before they commit (pipelined, as Kafka's QuorumController):

* a write applied ahead is in the controller's state, not in ``image`` nor in what a combined
  node's broker reads, until its batch commits; the offset reported with the image is the last
  committed record's;
* with several writes in flight, each commit moves the committed image to the end of the
  write it ends, and no further;
* a leader change that drops the writes in flight leaves nothing of them in any committed
  image that was ever published;
* the broker of a combined node takes the committed image and acts on it (on_metadata) in
  one step, once per loop turn however many batches commit in it.

Before, the broker and the node read the controller's state (``controller.image``), which
held the records applied ahead."""
import asyncio
import uuid

from kafkawire.broker.metadata_publisher import MetadataPublisher
from kafkawire.metadata import MetadataImage
from kafkawire.metadata.frame import decode_metadata_record
from kafkawire.tools.server_start import broker_metadata

from .harness import Ctx, Running, add_controller, run, until
from .test_torn_writes import create, held_leader, lead_with_a_broker

CREATE_TOPICS = 19


def _names(image) -> list[str]:
    return sorted(image.topics_by_name)


async def _creating(quorum, leader, names) -> list[asyncio.Future]:
    """CreateTopics of each name sent with commits held, once all are applied ahead."""
    quorum.holding = True
    calls = [asyncio.ensure_future(leader.handlers()[CREATE_TOPICS].handle(Ctx(7), create(name))) for name in names]
    await until(lambda: len(quorum.held) == len(names), "every CreateTopics applied ahead and appended")
    return calls


async def _leading_and_publishing(quorum, leader, note):
    """``leader`` active with a broker, and the publisher a combined node's broker reads;
    after each publish ``note(published)`` goes into the list returned."""
    await lead_with_a_broker(quorum, leader)
    published = broker_metadata(leader)
    seen = []
    published.listeners.append(lambda: seen.append(note(published)))
    return published, seen


def test_a_write_applied_ahead_is_in_no_committed_image_until_its_batch_commits():
    quorum, leader = held_leader()

    async def go():
        async with Running(leader):
            published, seen = await _leading_and_publishing(
                quorum, leader, lambda published: (published.offset, _names(published.image)))
            before = leader.committed_offset
            calls = await _creating(quorum, leader, ["a"])
            await asyncio.sleep(0)
            ahead = (_names(leader.state.image), _names(leader.image), leader.committed_offset,
                     _names(published.image), published.offset)
            quorum.release()
            await asyncio.gather(*calls)
            await until(lambda: seen, "the commit published")
            return before, ahead, seen, leader.committed_offset, leader.applied_offset

    before, ahead, seen, committed, applied = run(go())
    assert ahead == (["a"], [], before, [], before)
    assert seen == [(committed, ["a"])] and committed == applied


def test_each_commit_moves_the_committed_image_to_the_end_of_the_write_it_ends():
    quorum, leader = held_leader()

    async def go():
        async with Running(leader):
            await lead_with_a_broker(quorum, leader)
            calls = await _creating(quorum, leader, ["a", "b", "c"])
            quorum.holding = False
            steps = []
            for records in list(quorum.held):
                quorum.held.pop(0)
                quorum.commit(records)
                steps.append((_names(leader.image), leader.committed_offset, quorum.end_offset - 1))
            await asyncio.gather(*calls)
            return steps

    steps = run(go())
    assert [names for names, _, _ in steps] == [["a"], ["a", "b"], ["a", "b", "c"]]
    assert all(offset == end for _, offset, end in steps)


def test_writes_a_leader_change_drops_were_never_in_a_published_committed_image():
    quorum, leader = held_leader()

    async def go():
        async with Running(leader):
            published, seen = await _leading_and_publishing(quorum, leader,
                                                            lambda published: _names(published.image))
            assert (await leader.handlers()[CREATE_TOPICS].handle(Ctx(7), create("kept"))).topics[0].error_code == 0
            calls = await _creating(quorum, leader, ["a", "b"])
            seen.append(_names(published.image))   # what the broker reads while they are in flight
            quorum.held.clear()                   # the new leader's log does not have them
            quorum.next_end = 0
            quorum.holding = False
            quorum.elect(2)
            replies = await asyncio.gather(*calls)
            assert all(r.topics[0].error_code != 0 for r in replies)
            quorum.elect(1)
            await until(leader.is_active, "activation in the next epoch")
            await until(lambda: seen and leader.committed_offset == published.offset, "the activation published")
            return seen, _names(leader.image), _names(leader.state.image)

    seen, committed, state = run(go())
    assert all(names == ["kept"] for names in seen), seen
    assert committed == state == ["kept"]


def test_the_publisher_acts_once_per_loop_turn_on_the_image_it_then_answers_from():
    quorum, leader = held_leader()

    async def go():
        async with Running(leader):
            published, acted = await _leading_and_publishing(
                quorum, leader, lambda published: (published.image, published.offset))
            calls = await _creating(quorum, leader, ["a", "b", "c"])
            quorum.release()                      # three batches commit in one step
            unpublished = (_names(published.image), _names(leader.image))
            await asyncio.gather(*calls)
            await until(lambda: acted, "the publish")
            for _ in range(5):
                await asyncio.sleep(0)
            return unpublished, acted, leader.image, leader.committed_offset

    unpublished, acted, image, offset = run(go())
    assert unpublished == ([], ["a", "b", "c"])
    assert acted == [(image, offset)]


def test_a_snapshot_loaded_by_a_follower_moves_its_committed_image():
    quorum, leader = held_leader()
    follower = add_controller(quorum, 2)

    async def go():
        async with Running(leader):
            await lead_with_a_broker(quorum, leader)
            assert (await leader.handlers()[CREATE_TOPICS].handle(Ctx(7), create("s"))).topics[0].error_code == 0
        records = leader.snapshot_records()
        fresh = add_controller(quorum, 3)
        moves = []
        fresh.committed.listeners.append(lambda: moves.append(fresh.committed_offset))
        fresh.on_snapshot_loaded(type("SnapshotId", (), {"offset": quorum.end_offset, "epoch": quorum.epoch})(),
                                 records)
        return _names(follower.image), _names(fresh.image), moves, quorum.end_offset - 1

    follower_names, fresh_names, moves, end = run(go())
    assert follower_names == fresh_names == ["s"]
    assert moves == [end]


def test_a_committed_view_keeps_its_acls_and_topics_while_the_image_changes():
    """MetadataImage.frozen(lookups=True): the view's ACL index and topics by name stay as
    they were (the ACL index is copied on the next ACL record, not shared)."""
    from kafkawire.controller.frames import frame
    image = MetadataImage()
    acl = dict(id=uuid.UUID(int=1), resource_type=2, resource_name="t", pattern_type=3, principal="User:a",
               host="*", operation=3, permission_type=3)
    topic = dict(name="t", topic_id=uuid.UUID(int=7))
    for value in (frame("AccessControlEntryRecord", **acl), frame("TopicRecord", **topic)):
        image.apply(decode_metadata_record(value).message)
    view = image.frozen(lookups=True)
    for value in (frame("RemoveAccessControlEntryRecord", id=uuid.UUID(int=1)), frame("RemoveTopicRecord",
                                                                                      topic_id=uuid.UUID(int=7))):
        image.apply(decode_metadata_record(value).message)
    assert len(view.acl_index) == 1 and len(list(view.acl_index.matching(2, "t"))) == 1
    assert list(view.topics_by_name) == ["t"] and len(image.acl_index) == 0 and not image.topics_by_name


def test_a_controller_registration_applied_ahead_does_not_count_until_it_commits():
    """ControllerRegistrationManager reads the committed image (Kafka's is a metadata publisher):
    a registration record applied ahead, which a lost leadership would roll back, is not yet
    this incarnation's registration."""
    quorum, leader = held_leader()
    CONTROLLER_REGISTRATION = 70

    async def go():
        async with Running(leader):
            await lead_with_a_broker(quorum, leader)
            manager = leader.registration
            manager.incarnation_id = uuid.uuid4()          # as a restarted process would be
            manager.acknowledged = True                    # this test sends the request itself
            quorum.holding = True
            call = asyncio.ensure_future(leader.handlers()[CONTROLLER_REGISTRATION].handle(Ctx(7), manager.request()))
            await until(lambda: quorum.held, "the registration applied ahead and appended")
            ahead = (leader.state.image.controllers[leader.node_id].incarnation_id == manager.incarnation_id,
                     manager.registered())
            quorum.release()
            await call
            await until(manager.registered, "the registration committed")
            return ahead

    assert run(go()) == (True, False)


def test_a_brokers_configs_are_read_without_a_view_once_committed_and_each_record_replaces_their_map():
    """CommittedImage.resource_configs (what a controller-only node's watch of its TLS stores reads
    on each commit, kafkawire.tools.server_start.CommittedConfigs): a broker config applied ahead
    is not there until its batch commits; a record setting the value it had replaces the map
    (KAFKA-14136: the record is what makes a node reread its key stores); no view is made."""
    from kafkawire.messages.incremental_alter_configs_request import (AlterableConfig, AlterConfigsResource,
                                                                      IncrementalAlterConfigsRequest)
    quorum, leader = held_leader()
    alter = IncrementalAlterConfigsRequest(resources=[AlterConfigsResource(resource_type=4, resource_name="1", configs=[
        AlterableConfig(name="log.retention.ms", config_operation=0, value="1000")])])

    async def committed_alter():
        quorum.holding = True
        call = asyncio.ensure_future(leader.handlers()[44].handle(Ctx(7), alter))
        await until(lambda: len(quorum.held) == 1, "the change applied ahead and appended")
        ahead = leader.committed.resource_configs((4, "1"))
        quorum.release()
        assert (await call).responses[0].error_code == 0
        return ahead, leader.committed.resource_configs((4, "1"))

    async def go():
        async with Running(leader):
            await lead_with_a_broker(quorum, leader)
            first_ahead, first = await committed_alter()
            second_ahead, second = await committed_alter()
            return first_ahead, first, second_ahead, second, leader.committed._view

    first_ahead, first, second_ahead, second, view = run(go())
    assert first_ahead is None and first == {"log.retention.ms": "1000"}
    assert second_ahead is first and second == first and second is not first
    assert view is None
