"""The state a snapshot's load replaces is released in steps on the loop (state_release.py):
only what nothing else holds is emptied, so a reader still holding the old image reads it whole."""
import asyncio
import uuid

from kafkawire.controller import state_release
from kafkawire.controller.frames import frame
from kafkawire.controller.partition_index import SHARDS
from kafkawire.controller.state import ControllerState

from .harness import bootstrap

TOPICS = 400        # more than state_release._SMALL: the topic maps are emptied in steps


def _state(prefix: str, first_id: int) -> ControllerState:
    values = list(bootstrap())
    for i in range(TOPICS):
        topic_id = uuid.UUID(int=first_id + i)
        values += [frame("TopicRecord", name=f"{prefix}{i}", topic_id=topic_id)]
        values += [frame("PartitionRecord", partition_id=p, topic_id=topic_id, replicas=[1, 2], isr=[1, 2],
                         leader=1, leader_epoch=0, partition_epoch=0) for p in range(3)]
    state = ControllerState()
    state.load_snapshot(len(values), 1, values)
    return state


def _turns_of_release(state: ControllerState, loaded: ControllerState) -> int:
    """``state`` adopts ``loaded`` and releases what it was; the loop turns the release took."""
    async def run():
        state_release.release_in_steps(state.adopt(loaded))
        turns = 0
        while state_release._running:
            turns += 1
            await asyncio.sleep(0)
        return turns
    return asyncio.run(run())


def test_the_replaced_state_goes_in_steps_and_the_new_one_is_whole(monkeypatch):
    monkeypatch.setattr(state_release, "RELEASE_STEP_MS", 0.0)      # a step per chunk
    state = _state("old", 1)
    assert _turns_of_release(state, _state("new", 10_000)) > 2 * TOPICS // 64
    assert state.image.topics_by_name.keys() == {f"new{i}" for i in range(TOPICS)}
    assert state.partition_index.isr_count(2) == 3 * TOPICS


def test_what_a_reader_still_holds_is_not_emptied(monkeypatch):
    monkeypatch.setattr(state_release, "RELEASE_STEP_MS", 0.0)
    state = _state("old", 1)
    reader = state.image                          # a request still reading the old image
    assert _turns_of_release(state, _state("new", 10_000)) <= 3 * SHARDS + 4     # the old index's sets, a turn each
    assert len(reader.topics_by_id) == TOPICS and len(reader.topics_by_name) == TOPICS
    assert sum(len(t.partitions) for t in reader.topics_by_id.values()) == 3 * TOPICS


def test_the_old_image_and_index_are_emptied_a_chunk_at_a_time(monkeypatch):
    state = _state("old", 1)
    pieces = state_release._owned_pieces(state.adopt(_state("new", 10_000)))
    maps = [p for p in pieces if isinstance(p, dict)]
    assert sum(len(m) == TOPICS for m in maps) == 2                 # the topics by id and by name
    assert sum(isinstance(p, set) for p in pieces) == 3 * SHARDS     # brokers 1 and 2's ISR, 1's leaderships
    monkeypatch.setattr(state_release, "RELEASE_STEP_MS", 0.0)
    seen = []

    async def run():
        task = asyncio.ensure_future(state_release._release(pieces))
        while not task.done():
            seen.append(sum(len(m) for m in maps))
            await asyncio.sleep(0)
    asyncio.run(run())
    assert seen[0] == 2 * TOPICS
    assert len(seen) > 2 * TOPICS // 64 and seen == sorted(seen, reverse=True) and not any(maps)
