"""The node logs a garbage collection that held its event loop long (kafkawire/raft/node/
gc_pauses.py): one WARN line with the generation and the time, and the callback is installed
once however many nodes start in the process."""
import gc
import logging

import pytest

from kafkawire.raft.node import gc_pauses


@pytest.fixture(autouse=True)
def _callbacks_restored():
    """gc keeps its own reference to gc.callbacks: the list is restored in place."""
    before = list(gc.callbacks)
    yield
    gc.callbacks[:] = before


def test_a_long_collection_is_logged_once_with_its_generation(monkeypatch, caplog):
    monkeypatch.setattr(gc_pauses, "LONG_PAUSE_MS", 0)       # every collection counts as long
    gc_pauses.log_long_pauses()
    gc_pauses.log_long_pauses()
    assert gc.callbacks.count(gc_pauses._on_collection) == 1
    with caplog.at_level(logging.WARNING, logger="kafkawire.raft.node.gc_pauses"):
        gc.collect()
    lines = [r.getMessage() for r in caplog.records if r.name == "kafkawire.raft.node.gc_pauses"]
    assert len(lines) == 1 and lines[0].startswith("garbage collection of generation 2 took "), lines


def test_a_short_collection_is_not_logged(monkeypatch, caplog):
    monkeypatch.setattr(gc_pauses, "LONG_PAUSE_MS", 10**9)
    gc_pauses.log_long_pauses()
    with caplog.at_level(logging.WARNING, logger="kafkawire.raft.node.gc_pauses"):
        gc.collect()
    assert not [r for r in caplog.records if r.name == "kafkawire.raft.node.gc_pauses"]
