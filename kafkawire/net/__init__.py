"""Kafka's binary protocol on the network: a server for handlers, an outbound client, the
server.properties keys of a KRaft node, and a read-only __cluster_metadata topic for clients.

Modules: ``config`` (server.properties), ``server`` (KafkaServer), ``acceptor`` (its accept loop
and connection limits), ``client`` (NetworkClient),
``metadata_topic`` (handlers serving a log directory), ``serve_log`` (a runnable entry point),
``loop`` (asyncio with uvloop when available).
"""
