"""Kafka's binary protocol on the network: a server for handlers, an outbound client, the
server.properties keys of a KRaft node, and a read-only __cluster_metadata topic for clients.

Modules: ``config`` (server.properties), ``server`` (KafkaServer), ``acceptor`` (its accept loop
and connection limits), ``client`` (NetworkClient),
``metadata_topic`` (handlers serving a log directory), ``serve_log`` (a runnable entry point),
``loop`` (asyncio with uvloop when available). The names below are imported on first use.
"""
from kafkawire._lazy import lazy_exports

__all__ = ["KafkaServer", "NetworkClient", "ServerConfig", "parse_server_config", "ConfigError"]

__getattr__, __dir__ = lazy_exports(__name__, {
    "KafkaServer": ".server:KafkaServer",
    "NetworkClient": ".client:NetworkClient",
    "ServerConfig": ".config:ServerConfig",
    "parse_server_config": ".config:parse_server_config",
    "ConfigError": ".config:ConfigError",
})
