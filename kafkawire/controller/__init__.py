"""A metadata controller for a controller-only KRaft quorum: it replays the committed
__cluster_metadata records into a MetadataImage and, while active, appends the records Kafka's
QuorumController appends for the same actions (activation, controller and broker registration,
heartbeats and fencing, CreateTopics, NoOpRecords).

``controller_factory`` (factory.py) is what ``kafkawire server-start`` hands the raft node;
``MetadataController`` (controller.py) is the controller itself. Imported on first use.
"""
from kafkawire._lazy import lazy_exports

__all__ = ["MetadataController", "controller_factory"]

__getattr__, __dir__ = lazy_exports(__name__, {
    "MetadataController": ".controller:MetadataController",
    "controller_factory": ".factory:controller_factory",
})
