"""The broker role of a combined node (process.roles=broker,controller): registration with the
quorum, the partitions it leads as kafkawire.storage logs, and the data APIs (Produce, Fetch,
ListOffsets, Metadata, CreateTopics, DescribeCluster). See docs/broker.md."""
from .broker import Broker, BrokerStartError

__all__ = ["Broker", "BrokerStartError"]
