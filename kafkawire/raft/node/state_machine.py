"""Which state machine a `server-start` node runs on top of raft."""
from __future__ import annotations


def default_state_machine_factory():
    """``factory(driver, server_config, meta_properties) -> state machine``: the metadata
    controller (kafkawire.controller)."""
    from kafkawire.controller.factory import controller_factory
    return controller_factory
