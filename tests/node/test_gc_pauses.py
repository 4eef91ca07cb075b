"""The node logs a garbage collection that held its event loop long (kafkawire/raft/node/
gc_pauses.py): one WARN line with the generation and the time, and the callback is installed
once however many nodes start in the process."""
import gc
import logging

import pytest

from kafkawire.net.config import ConfigError, parse_server_config
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


@pytest.fixture
def _unfrozen():
    """The test starts unfrozen (an in-process node earlier in the run may have frozen the
    process, with its default setting), what it freezes goes back to the collected generations,
    and the process's setting is restored."""
    setting = gc_pauses._freeze_after_ms[0]
    gc.unfreeze()
    yield
    gc_pauses._freeze_after_ms[0] = setting
    gc.unfreeze()


def test_a_long_full_collection_freezes_what_survived_it(caplog, _unfrozen):
    gc_pauses.log_long_pauses(freeze_after_ms=1)
    gc_pauses._freeze_after_ms[0] = 1e-9                           # every full collection counts as long
    survivor = [object()]                                          # a list: tracked by gc
    freezes = gc_pauses.freezes[0]
    with caplog.at_level(logging.INFO, logger="kafkawire.raft.node.gc_pauses"):
        gc.collect(0)                                              # a young collection never freezes
        assert gc.get_freeze_count() == 0 and gc_pauses.freezes[0] == freezes
        gc.collect()
    assert gc_pauses.freezes[0] == freezes + 1
    assert gc.get_freeze_count() > 0
    assert not any(o is survivor for o in gc.get_objects())       # frozen: in no generation gc walks
    lines = [r.getMessage() for r in caplog.records if r.getMessage().startswith("froze ")]
    assert len(lines) == 1 and "after a full collection of" in lines[0], lines


def test_no_freezing_when_the_setting_is_0(_unfrozen):
    gc_pauses.log_long_pauses(freeze_after_ms=0)
    gc.collect()
    assert gc.get_freeze_count() == 0


def test_the_setting_defaults_to_500_ms_and_refuses_a_negative_value():
    base = ("process.roles=controller\nnode.id=1\ncontroller.listener.names=CONTROLLER\n"
            "listeners=CONTROLLER://127.0.0.1:9093\ncontroller.quorum.voters=1@127.0.0.1:9093\n")
    assert parse_server_config(base).kafkawire_gc_freeze_after_ms == 500
    assert parse_server_config(base + "kafkawire.gc.freeze.after.ms=0\n").kafkawire_gc_freeze_after_ms == 0
    with pytest.raises(ConfigError, match="kafkawire.gc.freeze.after.ms"):
        parse_server_config(base + "kafkawire.gc.freeze.after.ms=-1\n")
