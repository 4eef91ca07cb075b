"""A metadata controller for a controller-only KRaft quorum: it replays the committed
__cluster_metadata records into a MetadataImage and, while active, appends the records Kafka's
QuorumController appends for the same actions (activation, controller and broker registration,
heartbeats and fencing, CreateTopics, NoOpRecords)."""
