"""The metadata image as COMMITTED records alone make it, for everything that reads the
controller's metadata without writing it: a combined node's broker, the node's authorizer and
SASL/SCRAM, ApiVersions' finalized features, DescribeCluster, the metrics (Kafka's
MetadataLoader image, which its BrokerMetadataPublisher and the controller's publishers read).

The active controller applies its writes to its state before they commit (pipeline.py), so its
state may hold records that a lost leadership rolls back; nothing outside the controller may
act on them. Kafka builds a second image from the committed batches. Here nothing is replayed
twice: the committed image is a frozen view of the controller's own image
(MetadataImage.frozen(lookups=True): copies of its top-level maps, the rest shared and copied
on write), taken at the points where the state is what has committed:

* when nothing is applied ahead (every follower, and the leader between writes), the state is
  the committed one: its view is taken when first read after a change (one per change read,
  none while nobody reads);
* before a write is applied ahead, the state as it is then is frozen: the committed image when
  nothing else is ahead, else the end of the last write in flight, kept as that write's
  version until it commits;
* at a commit the committed image becomes the version of the last write it ends (or, nothing
  being ahead any more, the state itself);
* a rollback keeps the committed image it had; a snapshot load or a rebuilt state starts over
  from the state.

So a committed view costs a copy of the image's top-level maps per write (C-level dict copies,
nothing per partition), against a second replay of every record on every node. At 1M partitions
in 10,000 topics that is ~1.3 ms a write, its copy and, at the commit, its release: a broker's
fencing in 1,200 steps pays ~1.6 s of CPU for it, some 40% of its events' (benchmarks/README.md,
"Fencing at 1M within 2 s"); a view made only when read while a write is in flight, from the state
and the write's registrations before, would cost what a step touches. Not done.

``listeners`` are called whenever the committed image moves (a commit, a snapshot loaded);
they must be cheap (a publisher schedules its work, kafkawire.broker.metadata_publisher).
"""
from __future__ import annotations

import collections
import logging

from kafkawire.metadata.image import MetadataImage

from .state import ControllerState

log = logging.getLogger(__name__)


class CommittedImage:
    def __init__(self, state: ControllerState):
        self.state = state
        self.listeners: list = []
        self._view: MetadataImage | None = None    # None: the state itself is committed and not frozen yet
        self._offset = -1
        # The writes applied ahead, oldest first: [last offset, the view at their end or None
        # while the state still ends there].
        self._versions: collections.deque[list] = collections.deque()

    # --- what readers see -----------------------------------------------------------------------
    @property
    def image(self) -> MetadataImage:
        if self._view is None:          # only while nothing is ahead (see before_ahead)
            self._view = self.state.image.frozen(lookups=True)
            self._offset = self.state.next_offset - 1
        return self._view

    @property
    def offset(self) -> int:
        """The offset of the last data record the committed image holds (-1 before any)."""
        if self._view is None:
            return self.state.next_offset - 1
        return self._offset

    @property
    def view_while_ahead(self) -> MetadataImage | None:
        """The committed image while writes are ahead (before_ahead made it); None otherwise."""
        return self._view if self._versions else None

    @property
    def ahead(self) -> int:
        """Writes applied to the state and not committed yet."""
        return len(self._versions)

    # --- what the controller tells ------------------------------------------------------------
    def state_committed(self) -> None:
        """The state holds exactly what is committed, changed (a committed batch applied with
        nothing ahead, a snapshot loaded, the state rebuilt after a rollback)."""
        self._versions.clear()
        self._view = None
        self._moved()

    def before_ahead(self) -> None:
        """A write is about to be applied ahead of its commit: freeze the state as it is now."""
        if not self._versions:
            self.image                  # noqa: B018 (the committed view, made now if not yet)
        elif self._versions[-1][1] is None:
            self._versions[-1][1] = self.state.image.frozen(lookups=True)

    def applied_ahead(self, last_offset: int) -> None:
        self._versions.append([last_offset, None])

    def committed_through(self, last_offset: int) -> None:
        """The batch ending at ``last_offset``, applied ahead, committed."""
        ended = None
        while self._versions and self._versions[0][0] <= last_offset:
            ended = self._versions.popleft()
        if ended is None:
            return
        if self._versions:
            self._view, self._offset = ended[1], ended[0]
        else:
            self._view = None           # the state is the committed one again
        self._moved()

    def rolled_back(self) -> None:
        """The writes ahead are dropped and the state rebuilt as committed: the committed image
        does not move (it never held them)."""
        self._versions.clear()
        self._view = None

    def _moved(self) -> None:
        for listener in self.listeners:
            listener()
