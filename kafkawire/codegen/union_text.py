"""The first header line of a schema file codegen/union.py writes: what the message is for."""
from __future__ import annotations

# API name -> who sends it and why, in our words.
API_PURPOSE = {
    "OffsetCommit": "a consumer commits its group's offsets to the group coordinator",
    "OffsetFetch": "a consumer or admin reads a group's committed offsets",
    "LeaderAndIsr": "the ZooKeeper-era controller tells a broker which partitions it leads or follows",
    "StopReplica": "the ZooKeeper-era controller tells a broker to stop (and maybe delete) replicas",
    "UpdateMetadata": "the ZooKeeper-era controller pushes cluster metadata to a broker",
    "ControlledShutdown": "a ZooKeeper-era broker asks the controller to move leadership away before it stops",
    "JoinGroup": "a member joins a classic consumer group (or rejoins after a rebalance)",
    "Heartbeat": "a member of a classic group says it is alive",
    "LeaveGroup": "members leave a classic group",
    "SyncGroup": "the leader hands out a classic group's assignment; members fetch theirs",
    "DescribeGroups": "an admin describes classic groups",
    "ListGroups": "an admin lists the groups a broker coordinates",
    "DeleteTopics": "an admin deletes topics",
    "DeleteRecords": "an admin deletes records below an offset",
    "OffsetForLeaderEpoch": "a follower or consumer asks where a leader epoch ends (log truncation)",
    "AddPartitionsToTxn": "a transactional producer (or a broker, v4+) adds partitions to a transaction",
    "AddOffsetsToTxn": "a transactional producer adds a group's offsets to a transaction",
    "EndTxn": "a transactional producer commits or aborts its transaction",
    "WriteTxnMarkers": "the transaction coordinator writes commit/abort markers to partitions",
    "TxnOffsetCommit": "a transactional producer commits consumer offsets inside its transaction",
    "DescribeAcls": "an admin lists ACLs matching a filter",
    "CreateAcls": "an admin creates ACLs",
    "DeleteAcls": "an admin deletes ACLs matching filters",
    "DescribeConfigs": "an admin reads topic, broker or other resource configs",
    "AlterConfigs": "an admin replaces resource configs (the non-incremental form)",
    "AlterReplicaLogDirs": "an admin moves replicas between a broker's log directories",
    "DescribeLogDirs": "an admin describes a broker's log directories and their replicas",
    "CreatePartitions": "an admin adds partitions to topics",
    "CreateDelegationToken": "a client creates a delegation token",
    "RenewDelegationToken": "a client renews a delegation token",
    "ExpireDelegationToken": "a client expires a delegation token",
    "DescribeDelegationToken": "a client describes delegation tokens",
    "DeleteGroups": "an admin deletes groups",
    "ElectLeaders": "an admin triggers preferred or unclean leader election",
    "IncrementalAlterConfigs": "an admin sets, deletes, appends to or subtracts from configs",
    "AlterPartitionReassignments": "an admin starts or cancels partition reassignments",
    "ListPartitionReassignments": "an admin lists ongoing partition reassignments",
    "OffsetDelete": "an admin deletes a group's committed offsets for partitions",
    "DescribeClientQuotas": "an admin reads client quotas matching a filter",
    "AlterClientQuotas": "an admin sets or removes client quotas",
    "DescribeUserScramCredentials": "an admin describes users' SCRAM credentials",
    "AlterUserScramCredentials": "an admin upserts or deletes SCRAM credentials",
    "AlterPartition": "a partition leader asks the controller to change the ISR (KRaft and ZooKeeper)",
    "Envelope": "a broker forwards a client's request to the controller, wrapped with its principal",
    "DescribeProducers": "an admin describes the active producers of partitions",
    "UnregisterBroker": "an admin removes a broker's registration from the controller",
    "DescribeTransactions": "an admin describes transactions by transactional id",
    "ListTransactions": "an admin lists transactions, optionally filtered",
    "AllocateProducerIds": "a broker asks the controller for a block of producer ids",
    "ConsumerGroupHeartbeat": "a member of a KIP-848 consumer group heartbeats and receives its assignment",
    "ConsumerGroupDescribe": "an admin describes KIP-848 consumer groups",
    "GetTelemetrySubscriptions": "a client asks which metrics to push (KIP-714)",
    "PushTelemetry": "a client pushes its metrics (KIP-714)",
    "AssignReplicasToDirs": "a broker tells the controller which log directory holds its replicas (JBOD)",
    "ListConfigResources": "an admin lists config resources (client metrics subscriptions first)",
    "ShareGroupHeartbeat": "a member of a share group heartbeats and receives its assignment (KIP-932)",
    "ShareGroupDescribe": "an admin describes share groups (KIP-932)",
    "ShareFetch": "a share-group consumer fetches records and acknowledges delivered ones (KIP-932)",
    "ShareAcknowledge": "a share-group consumer acknowledges delivered records (KIP-932)",
    "InitializeShareGroupState": "the group coordinator initialises share-partition state (KIP-932)",
    "ReadShareGroupState": "a broker reads share-partition state from the share coordinator (KIP-932)",
    "WriteShareGroupState": "a broker writes share-partition state to the share coordinator (KIP-932)",
    "DeleteShareGroupState": "the group coordinator deletes share-partition state (KIP-932)",
    "ReadShareGroupStateSummary": "the group coordinator reads a summary of share-partition state (KIP-932)",
    "StreamsGroupHeartbeat": "a member of a Streams group heartbeats and receives its tasks (KIP-1071)",
    "StreamsGroupDescribe": "an admin describes Streams groups (KIP-1071)",
    "DescribeShareGroupOffsets": "an admin reads a share group's start offsets (KIP-932)",
    "AlterShareGroupOffsets": "an admin resets a share group's start offsets (KIP-932)",
    "DeleteShareGroupOffsets": "an admin deletes a share group's offsets for topics (KIP-932)",
    "StreamsGroupTopologyDescriptionUpdate": "a Streams member sends its topology description (KIP-1071)",
    "UnregisterController": "an admin removes a controller's registration",
}

COORDINATOR_TOPIC = {
    "group-coordinator": "__consumer_offsets",
    "share-coordinator": "__share_group_state",
    "transaction-coordinator": "__transaction_state",
}


def describe(schema: dict, folder: str | None = None) -> str:
    """One line: "JoinGroup request (api key 11): a member joins ..." or a coordinator record's role."""
    name, kind, key = schema["name"], schema["type"], schema.get("apiKey")
    if kind in ("request", "response"):
        api = name[: -len(kind)]
        purpose = API_PURPOSE.get(api, "")
        return f"{api} {kind} (api key {key}){': ' + purpose if purpose else ''}."
    part = "key" if kind == "coordinator-key" else "value"
    return (f"{name}: the {part} of record type {key} in {COORDINATOR_TOPIC.get(folder, folder)} "
            f"(the key's int16 prefix is the record type; the value's is its version).")
