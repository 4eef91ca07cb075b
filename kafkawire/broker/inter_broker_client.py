"""A connection pool to the other brokers of the cluster for the requests a broker sends them
itself (WriteTxnMarkers to partition leaders, KIP-890's AddPartitionsToTxn to transaction
coordinators), made when first needed, over the inter-broker listener with the replica
fetchers' connection settings (TLS and SASL as ``sasl.mechanism.inter.broker.protocol`` and
the listener's JAAS entry say).

    peers = InterBrokerClient(broker, "txn-markers")     # broker: node_id, config, replica_roles
    response = await peers.client().send(endpoint, request)
    peers.close_soon()
"""
from __future__ import annotations

import asyncio

from kafkawire.net.client import NetworkClient

__all__ = ["InterBrokerClient"]


class InterBrokerClient:
    def __init__(self, broker, purpose: str, client: NetworkClient | None = None):
        self.broker = broker
        self.purpose = purpose             # in the client id: broker-<id>-<purpose>
        self._client = client

    def client(self) -> NetworkClient:
        if self._client is None:
            options, _ = self.broker.replica_roles.client_options()
            self._client = NetworkClient(client_id=f"broker-{self.broker.node_id}-{self.purpose}",
                                         request_timeout_ms=self.broker.config.request_timeout_ms, **options)
            self.broker.inter_broker_clients.add(self._client)      # its TLS context follows dynamic changes
        return self._client

    def close_soon(self) -> None:
        """Close the connections to the other brokers (on the running loop, if any)."""
        client, self._client = self._client, None
        if client is not None:
            try:
                asyncio.get_running_loop().create_task(client.close())
            except RuntimeError:         # no loop running: the connections go with the process
                pass
