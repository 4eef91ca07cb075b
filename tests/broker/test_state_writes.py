"""A leader's state files written off the event loop (kafkawire.broker.state_writes), with the
orders Kafka's synchronous writes give: a new epoch's leader-epoch-checkpoint is on disk before
Produce appends in that epoch; a roll's producer snapshot is on disk before retention deletes
the segments it stands in for; closing a partition waits for its writes. In process: a write
held on the disk thread by an Event shows what waits for it."""
from __future__ import annotations

import asyncio
import os
import threading

from kafkawire.broker import partition as partition_module
from kafkawire.storage import leader_epoch_cache
from kafkawire.storage.state_files import read_leader_epoch_checkpoint

from .test_log_retention import NOW, FakeBroker
from .test_producer_snapshot_retention import SEGMENT_BYTES, produce

WAIT_S = 10


def held(monkeypatch, module, name):
    """Replace ``module.name`` with a version that waits for the returned Event first; the threads it ran on."""
    release, threads, real = threading.Event(), [], getattr(module, name)

    def slow(*args, **kwargs):
        threads.append(threading.get_ident())
        assert release.wait(WAIT_S)
        return real(*args, **kwargs)
    monkeypatch.setattr(module, name, slow)
    return release, threads


def test_a_new_epochs_checkpoint_is_written_off_the_loop_and_produce_waits_for_it(tmp_path, monkeypatch):
    broker = FakeBroker(tmp_path)
    partition = broker.open("t", leader_epoch=1, background_writes=True)
    release, threads = held(monkeypatch, leader_epoch_cache, "write_leader_epoch_checkpoint")
    path = os.path.join(partition.log.directory, leader_epoch_cache.LEADER_EPOCH_CHECKPOINT)

    async def scenario():
        partition.leader_epoch = 2                  # returns at once: the write is on the disk thread
        waiting = asyncio.ensure_future(broker.state_writes.appends_allowed())
        await asyncio.sleep(0)
        assert not waiting.done()                   # Produce would wait here
        release.set()
        await asyncio.wait_for(waiting, WAIT_S)
    asyncio.run(scenario())
    assert threads and threading.get_ident() not in threads
    assert [e.epoch for e in read_leader_epoch_checkpoint(path)] == [2]     # epoch 1 held no batch
    broker.close()
    broker.state_writes.close()


def test_a_rolls_snapshot_is_written_off_the_loop_and_retention_waits_for_it(tmp_path, monkeypatch):
    broker = FakeBroker(tmp_path, log_segment_bytes=SEGMENT_BYTES, log_segment_delete_delay_ms=60_000,
                        log_retention_ms=1)
    partition = broker.open("t", background_writes=True)
    produce(partition, 0, NOW - 10_000)
    release, threads = held(monkeypatch, partition_module, "atomic_write")
    produce(partition, 1, NOW - 10_000)           # rolls: the snapshot at offset 1 goes to the disk thread
    assert broker.state_writes.pending(partition.log.directory)
    assert broker.log_manager.cleanup_logs() == 0  # segment 0 waits for the snapshot that stands in for it
    release.set()
    broker.state_writes.wait(partition.log.directory)
    assert threads and threading.get_ident() not in threads
    assert os.path.exists(os.path.join(partition.log.directory, "00000000000000000001.snapshot"))
    assert broker.log_manager.cleanup_logs() == 2    # both expired: the active one after a roll
    broker.close()
    broker.state_writes.close()


def test_closing_a_partition_waits_for_its_writes(tmp_path, monkeypatch):
    broker = FakeBroker(tmp_path)
    partition = broker.open("t", background_writes=True)
    release, _ = held(monkeypatch, leader_epoch_cache, "write_leader_epoch_checkpoint")
    partition.leader_epoch = 3
    timer = threading.Timer(0.05, release.set)
    timer.start()
    partition.close()                               # returns once the checkpoint is written
    broker.partitions.clear()
    path = os.path.join(partition.log.directory, leader_epoch_cache.LEADER_EPOCH_CHECKPOINT)
    assert [e.epoch for e in read_leader_epoch_checkpoint(path)][-1] == 3
    timer.join()
    broker.state_writes.close()
