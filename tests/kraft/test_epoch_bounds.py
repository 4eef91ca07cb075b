"""The epoch bounds (raft/bounds.py): the jump rule, refusals said as warnings, and no epoch,
offset or id beyond its width reaching the disk or a batch (hostile_epochs.txt has the
protocol side)."""
import pytest

from kafkawire.messages.quorum_state_data import QuorumStateData
from kafkawire.records import RecordBatchBuilder
from kafkawire.storage.state_files import StateFileError, format_quorum_state, parse_quorum_state
from kafkawire.raft.bounds import INT32_MAX, MAX_JUMP_EPOCH, can_start_election, check_epoch, epoch_jump_refusal
from kafkawire.raft.io import RequestReceived, Tick

from .datadriven import Case
from .interaction import InteractionEnv, _injected_body


def test_the_jump_rule():
    assert epoch_jump_refusal(5, 7) is None                      # lower: fenced elsewhere
    assert epoch_jump_refusal(MAX_JUMP_EPOCH, 1) is None         # any jump up to the bound
    assert "jump" in epoch_jump_refusal(MAX_JUMP_EPOCH + 1, 1)
    assert epoch_jump_refusal(MAX_JUMP_EPOCH + 1, MAX_JUMP_EPOCH) is None   # one election
    assert epoch_jump_refusal(INT32_MAX, INT32_MAX - 1) is None
    assert epoch_jump_refusal(INT32_MAX, INT32_MAX - 2) is not None
    assert can_start_election(INT32_MAX - 1) and not can_start_election(INT32_MAX)
    with pytest.raises(ValueError, match="outside"):
        check_epoch(INT32_MAX + 1)


def _three_voters_with_leader() -> InteractionEnv:
    env = InteractionEnv()
    env.handle(Case(1, "cluster", [], {"voters": "(1,2,3)"}))
    env.handle(Case(2, "elect", ["1"], {}))
    env.handle(Case(3, "stabilize", [], {}))
    return env


@pytest.mark.parametrize("kind, src, kw, said", [
    ("vote", 9, {"epoch": "50", "last": "(1,3)"}, "not a voter"),
    ("vote", 2, {"epoch": "50", "last": "(1,3)"}, "our own id"),
    ("vote", 3, {"epoch": str(INT32_MAX - 1), "last": "(1,3)"}, "would jump"),
    ("begin-epoch", 9, {"epoch": "50"}, "leader 9 is not a voter"),
    ("begin-epoch", 3, {"epoch": "1"}, "already has leader 1"),
    ("end-epoch", 9, {"epoch": "50"}, "leader 9 is not a voter"),
])
def test_every_refusal_is_said_and_changes_nothing(kind, src, kw, said):
    env = _three_voters_with_leader()
    node = env.nodes[2]
    before = node.core.quorum.state
    ready = node.core.step(RequestReceived(env.now, "h", 2 if kind == "vote" else 1,
                                           _injected_body(kind, 2, src, kw)))
    assert ready.election is None and node.core.quorum.state is before
    assert len(ready.warnings) == 1 and said in ready.warnings[0], ready.warnings


def test_a_voter_at_the_last_epoch_says_why_it_does_not_campaign():
    env = InteractionEnv()
    env.handle(Case(1, "cluster", [], {"voters": "(1,2,3)"}))
    env.handle(Case(2, "set-epoch", ["1"], {"epoch": str(INT32_MAX)}))
    node = env.nodes[1]
    ready = node.core.step(Tick(env.now + 60_000))
    assert "last int32 epoch" in " ".join(ready.warnings)
    assert node.core.epoch == INT32_MAX and ready.election is None


def test_a_quorum_state_beyond_int32_is_neither_written_nor_read():
    with pytest.raises(ValueError, match="LeaderEpoch"):
        format_quorum_state(QuorumStateData(leader_epoch=INT32_MAX + 28, leader_id=1, voted_id=-1), 1)
    text = '{"leaderId":1,"leaderEpoch":2147483675,"votedId":-1,"votedDirectoryId":"AAAAAAAAAAAAAAAAAAAAAA","data_version":1}'
    with pytest.raises(StateFileError, match="LeaderEpoch"):
        parse_quorum_state(text)


def test_batch_header_fields_out_of_width_are_named():
    with pytest.raises(ValueError, match="partition_leader_epoch = 2147483648 does not fit an int32"):
        RecordBatchBuilder(partition_leader_epoch=INT32_MAX + 1)
    with pytest.raises(ValueError, match="producer_epoch"):
        RecordBatchBuilder(producer_epoch=1 << 15)
    builder = RecordBatchBuilder(base_offset=(1 << 63) - 1)
    builder.append(b"k", b"v")
    builder.build()   # one record at the last offset fits
    builder.append(b"k", b"v")
    with pytest.raises(ValueError, match="last offset would pass"):
        builder.build()
