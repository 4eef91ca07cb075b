"""The production KRaft node: the raft core driven by asyncio over TCP and Kafka's on-disk log."""
