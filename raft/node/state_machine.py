"""Which state machine a `server-start` node runs on top of raft."""
from __future__ import annotations


def default_state_machine_factory():
    """``factory(driver, server_config, meta_properties) -> state machine``, or None for none."""
    return None
