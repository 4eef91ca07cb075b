"""Pure pieces of the core against brute-force models (hypothesis)."""
from __future__ import annotations

import ast
import pathlib

import pytest
from hypothesis import given, settings, strategies as st

from kafkawire.raft.log import UNDEFINED_EPOCH, UNDEFINED_OFFSET, EpochCache
from kafkawire.raft.voters import majority_offset, majority_size

RAFT = pathlib.Path(__file__).resolve().parents[2] / "kafkawire" / "raft"


@st.composite
def epoch_caches(draw):
    epochs = sorted(draw(st.sets(st.integers(0, 40), min_size=0, max_size=8)))
    starts = sorted(draw(st.lists(st.integers(0, 200), min_size=len(epochs), max_size=len(epochs))))
    return list(zip(epochs, starts))


def brute_end_offset_for(entries, requested, log_end):
    """Kafka's LeaderEpochFileCache.endOffsetFor, written as a scan."""
    if requested == UNDEFINED_EPOCH or not entries:
        return UNDEFINED_EPOCH, UNDEFINED_OFFSET
    if requested == entries[-1][0]:
        return requested, log_end
    higher = [e for e in entries if e[0] > requested]
    if not higher:
        return UNDEFINED_EPOCH, UNDEFINED_OFFSET
    lower = [e for e in entries if e[0] <= requested]
    if not lower:
        return requested, higher[0][1]
    return lower[-1][0], higher[0][1]


@settings(max_examples=3000)
@given(epoch_caches(), st.integers(-1, 45), st.integers(0, 300))
def test_end_offset_for_matches_a_scan(entries, requested, extra):
    cache = EpochCache(entries)
    log_end = (entries[-1][1] if entries else 0) + extra
    assert cache.end_offset_for(requested, log_end) == brute_end_offset_for(entries, requested, log_end)


@settings(max_examples=2000)
@given(epoch_caches(), st.integers(0, 250))
def test_truncations_keep_the_entries_a_scan_keeps(entries, offset):
    cache = EpochCache(entries)
    cache.truncate_from_end(offset)
    assert cache.entries() == [e for e in entries if e[1] < offset]
    cache = EpochCache(entries)
    cache.truncate_from_start(offset)
    kept = [e for e in entries if e[1] > offset]
    before = [e for e in entries if e[1] <= offset]
    expected = ([(before[-1][0], offset)] if before else []) + kept
    assert cache.entries() == expected


@settings(max_examples=5000)
@given(st.lists(st.integers(-1, 1000), min_size=1, max_size=9))
def test_majority_offset_is_the_largest_offset_a_majority_reached(offsets):
    best = max(o for o in set(offsets) if sum(1 for x in offsets if x >= o) >= majority_size(len(offsets)))
    assert majority_offset(offsets) == best


def test_epoch_cache_refuses_going_back():
    cache = EpochCache([(3, 10)])
    with pytest.raises(ValueError, match="older than the latest"):
        cache.assign(2, 20)
    with pytest.raises(ValueError, match="before epoch"):
        cache.assign(4, 5)


@pytest.mark.parametrize("position, count, expected", [
    (0, 3, 0),          # the most up-to-date successor runs at once
    (1, 3, 250),        # (1000 >> 2) << 0
    (2, 3, 500),        # (1000 >> 2) << 1
    (3, 3, 1000),       # not listed: the maximum
    (1, 2, 500),
])
def test_end_quorum_epoch_backoff(position, count, expected):
    from types import SimpleNamespace

    from kafkawire.raft.core import RaftCore
    from kafkawire.raft.types import ReplicaKey
    fake = SimpleNamespace(quorum=SimpleNamespace(local_id=9, local_key=ReplicaKey(9)),
                           config=SimpleNamespace(election_backoff_max_ms=1000))
    successors = [ReplicaKey(100 + i) for i in range(count)]
    if position < count:
        successors[position] = ReplicaKey(9)
    assert RaftCore._end_epoch_election_backoff_ms(fake, successors) == expected


FORBIDDEN = {"socket", "asyncio", "time", "os", "threading", "select", "selectors", "subprocess", "uvloop"}


@pytest.mark.parametrize("module", sorted(p.name for p in RAFT.glob("*.py")))
def test_the_core_does_no_io(module):
    """The core's modules import no clock, socket, disk or event loop: I/O is the driver's."""
    tree = ast.parse((RAFT / module).read_text())
    imported = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            imported.add(node.module.split(".")[0])
    assert not imported & FORBIDDEN, f"raft/{module} imports {sorted(imported & FORBIDDEN)}"
    assert "open(" not in (RAFT / module).read_text(), f"raft/{module} opens files"


def test_the_simulators_kraft_version_upgrade_is_what_the_features_tool_sends():
    """raft/simulate builds its UpdateFeatures itself (it does not import the command line);
    it must stay what `kafkawire features upgrade --feature kraft.version=1` sends."""
    from kafkawire.raft.simulate.world import kraft_version_upgrade_request
    from kafkawire.tools.features import UPGRADE, planned_updates, update_features_request
    updates, _ = planned_updates(UPGRADE, features=["kraft.version=1"])
    assert kraft_version_upgrade_request() == update_features_request(updates, dry_run=False, timeout_ms=10_000)


def test_the_node_and_the_simulator_do_not_import_the_command_line():
    import ast
    from pathlib import Path
    root = Path(__file__).resolve().parents[2] / "kafkawire" / "raft"
    offenders = []
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            offenders += [f"{path.relative_to(root.parent)}: {n}" for n in names if n.startswith(("tools", "kafkawire.tools"))]
    assert offenders == []
