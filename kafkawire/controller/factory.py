"""Building a MetadataController for a node: the bootstrap records from metadata.log.dir, the
controller listeners and the authorizer setting from the ServerConfig, over the node's raft.

    from kafkawire.controller.factory import controller_factory
    ControllerNode(config, state_machine_factory=controller_factory)

``controller_factory(raft, server_config, meta_properties)`` is a StateMachineFactory of
kafkawire.raft.contract; `kafkawire server-start` hands it to ControllerNode.
"""
from __future__ import annotations

import os
import socket

from kafkawire.metadata.frame import MetadataRecordError, decode_metadata_record
from kafkawire.metadata.group_configs import GroupBounds
from kafkawire.net.config import ServerConfig
from kafkawire.raft.contract import NodeRaft
from kafkawire.records import CorruptRecordError
from kafkawire.storage.snapshot import BOOTSTRAP_FILE_NAME, SnapshotFormatError, SnapshotReader
from kafkawire.storage.state_files import MetaProperties

from .activation import BootstrapError
from .controller import MetadataController
from .delegation_tokens import DelegationTokenSettings


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


def controller_listeners(server_config: ServerConfig) -> list[tuple[str, str, int, str]]:
    """(name, host, port, security protocol) of the controller listeners as advertised; a
    wildcard host is this machine's name, as Kafka resolves it for registrations."""
    return [(e.listener_name, e.host if e.host not in (None, "", "0.0.0.0", "::") else socket.getfqdn(),
             e.port, e.security_protocol) for e in server_config.controller_endpoints]


def controller_factory(raft: NodeRaft, server_config: ServerConfig,
                       meta_properties: MetaProperties) -> MetadataController:
    """The MetadataController for a node: its bootstrap records from ``bootstrap.checkpoint`` in the
    metadata log dir, its listeners, timeouts and authorizer setting from ``server_config``, its
    cluster id from ``meta.properties``; what ``kafkawire server-start`` hands the raft node.
    """
    records, source = load_bootstrap_records(server_config.metadata_log_dir)
    assert meta_properties.cluster_id is not None, "ControllerNode reads only version 1 meta.properties"
    controller = MetadataController(raft, cluster_id=meta_properties.cluster_id,
                                    bootstrap_records=records, bootstrap_source=source,
                                    listeners=controller_listeners(server_config),
                                    max_idle_interval_ms=server_config.metadata_max_idle_interval_ms,
                                    session_timeout_ms=server_config.broker_session_timeout_ms,
                                    heartbeat_interval_ms=server_config.broker_heartbeat_interval_ms,
                                    unclean_election_interval_ms=server_config.unclean_leader_election_interval_ms,
                                    static_unclean_election=server_config.unclean_leader_election_enable,
                                    auto_leader_rebalance=server_config.auto_leader_rebalance_enable,
                                    leader_imbalance_check_interval_ms=1000 * server_config.leader_imbalance_check_interval_seconds,
                                    static_min_insync_replicas=server_config.min_insync_replicas,
                                    acls_enabled=server_config.authorizer_settings() is not None,
                                    group_bounds=GroupBounds.of(server_config),
                                    delegation_tokens=DelegationTokenSettings.of(server_config),
                                    mutation_quota_window=(server_config.controller_quota_window_num,
                                                           server_config.controller_quota_window_size_seconds))
    # A commit of control records (a new leader's LeaderChange) moves the high watermark
    # without a data batch: the controller must look again at whether it can activate.
    raft.hw_listeners.append(controller.poke)
    return controller
