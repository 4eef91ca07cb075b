"""The metadata image as COMMITTED records alone make it, for everything that reads the
controller's metadata without writing it: a combined node's broker, the node's authorizer and
SASL/SCRAM, ApiVersions' finalized features, DescribeCluster, the metrics (Kafka's
MetadataLoader image, which its BrokerMetadataPublisher and the controller's publishers read).

The active controller applies its writes to its state before they commit (pipeline.py), so its
state may hold records that a lost leadership rolls back; nothing outside the controller may
act on them. Kafka builds a second image from the committed batches. Here nothing is replayed
twice:

* while nothing has been applied ahead since the state last changed (every follower, a leader
  before its first write), the state is the committed image: its frozen view
  (MetadataImage.frozen(lookups=True): copies of its top-level maps, the rest shared and copied
  on write) is taken when first read after a change, none while nobody reads;
* from the first write applied ahead on, the committed image is kept beside the state, as an
  image of its own top-level maps sharing everything below them with the state. Each write
  applied ahead records, as the state applies it, which key of which top-level map it set or
  removed, in order (MetadataImage.record_changes; the state copies an inner object, a topic
  or a config resource's map, before changing it, so what was recorded stays as it was); at
  the write's end the values are taken (take_changes: the keys the write touched, not the
  image). At its commit the committed image replays those changes: the same dict operations in
  the same order, so its maps hold what the state's held then, in the same order (CPython dict
  order: a key set in place keeps its place, a key removed and set again goes last);
* a reader gets a view of the committed image: a shallow copy of its attributes, the same
  object until the committed image next moves. A commit copies a map first only if a view
  still alive (weakly tracked) holds it, so a reader that keeps an image across commits (a
  combined node's broker) costs a copy of each map a commit changes, and one that reads and
  lets go (the authorizer, the quotas, ApiVersions) costs nothing;
* a rollback keeps the committed image (it never held the writes dropped) and drops their
  changes; a snapshot load or a batch applied with nothing ahead starts over from the state.

So a write costs what it touches: the keys it changed, recorded once each, and their replay at
the commit; nothing per topic or partition of the cluster (before, a view frozen before each
write copied the top-level maps: ~1.3 ms a write at 1M partitions in 10,000 topics,
benchmarks/README.md "The committed image kept beside the state"). The memory beside the
state is the committed image's top-level maps and the changes of the writes in flight (bounded
by the pipeline's records in flight). tests/controller/test_committed_differential.py checks
it against replaying only the committed records, step by step.

``listeners`` are called whenever the committed image moves (a commit, a snapshot loaded);
they must be cheap (a publisher schedules its work, kafkawire.broker.metadata_publisher).
"""
from __future__ import annotations

import collections
import logging
import weakref

from kafkawire.metadata.image import ImageChanges, MetadataImage

from .partition_index import topic_partition_counts
from .state import ControllerState

log = logging.getLogger(__name__)

# The committed image's top-level maps (and the ACL index) that commits change in place.
_MAPS = ("topics_by_id", "topics_by_name", "configs", "client_quotas", "scram", "finalized_features", "brokers",
         "controllers", "acls", "delegation_tokens", "acl_index")


class CommittedImage:
    def __init__(self, state: ControllerState):
        self.state = state
        self.listeners: list = []
        # None: the state itself is the committed image (nothing was applied ahead since it last
        # changed); ``_view`` is then its frozen view, made when first read.
        self._base: MetadataImage | None = None
        self._view: MetadataImage | None = None
        self._offset = -1
        # The writes applied ahead, oldest first: (last offset, their changes to the image).
        self._versions: collections.deque[tuple[int, ImageChanges]] = collections.deque()
        self._views: list[weakref.ref] = []          # the views of _base handed out (they share its maps)
        self._shared: set[str] = set()               # _base's maps some view or the state may share
        self._forced: set[str] = set()               # ... and those to copy whoever shares them

    # --- what readers see -----------------------------------------------------------------------
    @property
    def image(self) -> MetadataImage:
        """The committed image, as an object that does not change afterwards (hold it, not its
        maps, across an await: a map no view holds any more may change in place)."""
        view = self._view
        if view is not None:
            return view
        if self._base is None:
            view = self.state.image.frozen(lookups=True)
            self._offset = self.state.next_offset - 1
        else:
            view = MetadataImage.__new__(MetadataImage)
            view.__dict__.update(self._base.__dict__)
            self._views = [ref for ref in self._views if ref() is not None]
            self._views.append(weakref.ref(view))
            self._shared.update(_MAPS)
        self._view = view
        return view

    def resource_configs(self, resource) -> dict | None:
        """One resource's committed configs (a key of MetadataImage.configs), read without making
        a view: the map itself, to copy before a record changes it in place (the loop's next turn)."""
        image = self.state.image if self._base is None else self._base
        return image.configs.get(resource)

    @property
    def offset(self) -> int:
        """The offset of the last data record the committed image holds (-1 before any)."""
        if self._base is None and self._view is None:
            return self.state.next_offset - 1
        return self._offset

    @property
    def view_while_ahead(self) -> MetadataImage | None:
        """The committed image while writes are ahead (kept beside the state since before_ahead),
        for a rollback to go back to (rollback.py); None when nothing is ahead."""
        return self.image if self._versions else None

    @property
    def ahead(self) -> int:
        """Writes applied to the state and not committed yet."""
        return len(self._versions)

    def partition_counts(self, max_partitions_visited: int) -> tuple[int, int, int] | None:
        """(partitions, without a leader, not led by their first replica) of the committed image
        (Kafka's GlobalPartitionCount, OfflinePartitionsCount, PreferredReplicaImbalanceCount,
        which its ControllerMetricsChanges keeps over the published, committed image), without
        walking it: the state's partition index counts, less what the writes applied ahead made
        of the topics they changed (counted in both images). None when those topics hold more
        than ``max_partitions_visited`` partitions (a caller then walks the committed image)."""
        index = self.state.partition_index
        counts = [index.partition_count(), index.leaderless_count(), index.imbalanced_count()]
        if not self._versions:
            return counts[0], counts[1], counts[2]          # the state is what is committed
        changed = {key for _, changes in self._versions for collection, key, _ in changes.entries
                   if collection == "topics_by_id"}
        ahead, committed = self.state.image.topics_by_id, self._base.topics_by_id
        pairs = [(ahead.get(topic_id), committed.get(topic_id)) for topic_id in changed]
        if sum(len(t.partitions) for pair in pairs for t in pair if t is not None) > max_partitions_visited:
            return None
        for in_state, in_committed in pairs:
            for sign, topic in ((-1, in_state), (1, in_committed)):
                if topic is not None:
                    for i, n in enumerate(topic_partition_counts(topic)):
                        counts[i] += sign * n
        return counts[0], counts[1], counts[2]

    # --- what the controller tells ------------------------------------------------------------
    def state_committed(self) -> None:
        """The state holds exactly what is committed, changed (a committed batch applied with
        nothing ahead, a snapshot loaded, the state rebuilt after a rollback)."""
        self._versions.clear()
        self._base = self._view = None
        self._views.clear()
        self._moved()

    def before_ahead(self) -> None:
        """A write is about to be applied ahead of its commit: record what it changes."""
        if self._base is None:
            self._follow_state()
        self.state.image.record_changes()

    def applied_ahead(self, last_offset: int) -> None:
        self._versions.append((last_offset, self.state.image.take_changes()))

    def committed_through(self, last_offset: int) -> None:
        """The batch ending at ``last_offset``, applied ahead, committed."""
        versions = self._versions
        if not versions or versions[0][0] > last_offset:
            return
        self._view = None
        while versions and versions[0][0] <= last_offset:
            self._offset, changes = versions.popleft()
            changes.replay(self._base, self._writable)
        self._moved()

    def rolled_back(self) -> None:
        """The writes ahead are dropped and the state rebuilt as committed: the committed image
        does not move (it never held them)."""
        self._versions.clear()

    # --- the committed image kept beside the state ----------------------------------------------
    def _follow_state(self) -> None:
        """Start keeping the committed image apart from the state, which is committed now."""
        view = self._view
        if view is None:
            self._base = self.state.image.frozen(lookups=True)
            self._offset = self.state.next_offset - 1
            self._shared, self._forced = {"acl_index"}, {"acl_index"}   # the state's until its next ACL record
        else:                   # handed out already: the base starts as a view of it
            self._base = MetadataImage.__new__(MetadataImage)
            self._base.__dict__.update(view.__dict__)
            self._views = [weakref.ref(view)]
            self._shared, self._forced = set(_MAPS), {"acl_index"}

    def _writable(self, name: str):
        """``_base``'s map ``name``, copied first if a view handed out still holds it."""
        value = getattr(self._base, name)
        if name in self._shared:
            self._shared.discard(name)
            if name in self._forced or any(getattr(ref(), name, None) is value for ref in self._views):
                self._forced.discard(name)
                value = value.copy()
                setattr(self._base, name, value)
        return value

    def _moved(self) -> None:
        for listener in self.listeners:
            listener()
