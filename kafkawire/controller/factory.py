"""Building a MetadataController for a node: the bootstrap records from metadata.log.dir, the
controller listeners from the ServerConfig, and a RaftHandle over the node's RaftDriver.

    from kafkawire.controller.factory import controller_factory
    ControllerNode(config, state_machine_factory=controller_factory)

``controller_factory(driver, server_config, meta_properties)`` is the state machine factory
ControllerNode calls (raft/node/state_machine.py).
"""
from __future__ import annotations

import os
import socket

from kafkawire.metadata.frame import MetadataRecordError, decode_metadata_record
from kafkawire.records import CorruptRecordError
from kafkawire.storage.snapshot import BOOTSTRAP_FILE_NAME, SnapshotFormatError, SnapshotReader

from .activation import BootstrapError
from .controller import MetadataController


def load_bootstrap_records(metadata_log_dir) -> tuple[list[bytes], str]:
    """The metadata records of ``bootstrap.checkpoint`` (what `kafkawire storage format` wrote),
    and the bootstrap source as Kafka names it. A missing or unreadable file is a BootstrapError
    naming it; Kafka would fall back to the latest metadata.version, but a node formatted by
    `storage format` always has the file, so its absence means a directory that was not."""
    path = os.path.join(os.fspath(metadata_log_dir), BOOTSTRAP_FILE_NAME)
    if not os.path.exists(path):
        raise BootstrapError(f"{path} does not exist: format the directory with `kafkawire storage format`")
    try:
        values = [bytes(record.value) for record in SnapshotReader(path).records()]
    except (SnapshotFormatError, CorruptRecordError, OSError, ValueError) as exc:
        raise BootstrapError(f"{path}: {exc}") from None
    for i, value in enumerate(values):
        try:
            decode_metadata_record(value)
        except MetadataRecordError as exc:
            raise BootstrapError(f"{path}: record {i}: {exc}") from None
    return values, f"the binary bootstrap metadata file: {path}"


class DriverHandle:
    """The RaftHandle of NODE-CONTRACT.md over raft/node's RaftDriver, plus the two optional
    methods the controller uses to be exact (see controller.py)."""

    def __init__(self, driver):
        self.driver = driver
        self.node_id = driver.node_id

    def leader(self):
        return self.driver.leader()

    def is_leader(self) -> bool:
        return self.driver.is_leader()

    async def append(self, records: list[bytes]) -> int:
        return await self.driver.append(records)

    async def send_to_leader(self, request, timeout_ms: int = 5000):
        return await self.driver.send_to_leader(request, timeout_ms)

    def next_offset(self) -> int:
        return self.driver.next_offset()

    def leader_caught_up(self) -> bool:
        """Kafka fires handleLeaderChange for a new leader only once its listener has read up
        to the epoch start offset; before that the committed state may still miss records."""
        return self.driver.leader_caught_up()


def controller_listeners(server_config) -> list[tuple[str, str, int, str]]:
    """(name, host, port, security protocol) of the controller listeners as advertised; a
    wildcard host is this machine's name, as Kafka resolves it for registrations."""
    return [(e.listener_name, e.host if e.host not in (None, "", "0.0.0.0", "::") else socket.getfqdn(),
             e.port, e.security_protocol) for e in server_config.controller_endpoints]


def controller_factory(driver, server_config, meta_properties) -> MetadataController:
    records, source = load_bootstrap_records(server_config.metadata_log_dir)
    controller = MetadataController(DriverHandle(driver), cluster_id=meta_properties.cluster_id,
                                    bootstrap_records=records, bootstrap_source=source,
                                    listeners=controller_listeners(server_config),
                                    max_idle_interval_ms=server_config.metadata_max_idle_interval_ms,
                                    session_timeout_ms=server_config.broker_session_timeout_ms)
    # A commit of control records (a new leader's LeaderChange) moves the high watermark
    # without a data batch: the controller must look again at whether it can activate.
    driver.hw_listeners.append(controller.poke)
    return controller
