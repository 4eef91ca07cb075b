"""The MetadataLoader of a node that does not run the controller (a broker-only node): its image
is what the committed batches and snapshots it is handed say, replayed as the controller
replays them, and it tells its publishers after each; what it snapshots loads back to the same
image. In process, no raft."""
import uuid

from kafkawire.controller.frames import frame
from kafkawire.controller.loader import MetadataLoader
from kafkawire.raft.types import OffsetAndEpoch

from .harness import bootstrap

TOPIC_ID = uuid.UUID(int=7)


def _topic_batch():
    return [frame("TopicRecord", name="orders", topic_id=TOPIC_ID),
            frame("PartitionRecord", partition_id=0, topic_id=TOPIC_ID, replicas=[2], isr=[2], leader=2,
                  leader_epoch=0, partition_epoch=0)]


def test_the_image_holds_the_committed_batches_and_the_offset_of_the_last_record():
    loader = MetadataLoader()
    published = []
    loader.published.append(lambda: published.append(loader.applied_offset))
    assert loader.applied_offset == -1 and loader.image.topics_by_name == {}
    records = bootstrap()
    loader.on_committed(0, 1, 0, records)
    loader.on_committed(len(records), 1, 0, _topic_batch())
    assert loader.image.metadata_version == 29
    assert loader.image.topics_by_name["orders"].partitions[0].leader == 2
    assert loader.applied_offset == len(records) + 1
    assert published == [len(records) - 1, len(records) + 1]


def test_an_open_metadata_transaction_is_not_in_the_image_until_it_ends():
    """KIP-868: records between BeginTransaction and EndTransaction apply at the End."""
    loader = MetadataLoader()
    loader.on_committed(0, 1, 0, bootstrap())
    base = loader.applied_offset + 1
    loader.on_committed(base, 1, 0, [frame("BeginTransactionRecord", name="create")] + _topic_batch())
    assert loader.in_transaction and "orders" not in loader.image.topics_by_name
    loader.on_committed(base + 3, 1, 0, [frame("EndTransactionRecord")])
    assert not loader.in_transaction and "orders" in loader.image.topics_by_name


def test_its_snapshot_loads_back_into_the_same_image_and_replaces_what_was_there():
    loader = MetadataLoader()
    records = bootstrap() + _topic_batch()
    loader.on_committed(0, 1, 0, records)
    snapshot = loader.frozen_snapshot()()
    assert list(snapshot) == loader.snapshot_records()
    other = MetadataLoader()
    other.on_committed(0, 1, 0, bootstrap() + [frame("TopicRecord", name="gone", topic_id=uuid.UUID(int=9))])
    other.on_snapshot_loaded(OffsetAndEpoch(epoch=1, offset=len(records)), loader.snapshot_records())
    assert sorted(other.image.topics_by_name) == ["orders"]
    assert other.applied_offset == len(records) - 1
    assert other.handlers() == {}
