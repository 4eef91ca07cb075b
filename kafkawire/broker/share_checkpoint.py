"""The start offsets of share-partitions that kafkawire brokers before the share coordinator
checkpointed in their first log directory (``kafkawire-share-partition-starts.json``). The
share coordinator (``__share_group_state``) now keeps them; an old file is read once, each entry
taken (``take``) when the coordinator has no start offset for its share-partition yet, and the
rest written back (the file removed when none is left), atomically.

    starts = ShareStarts(path)
    starts.take(("group", topic_id, 0))          # None: never checkpointed here; else taken
    starts.save()
"""
from __future__ import annotations

import json
import logging
import os
import uuid

from kafkawire.storage.state_files import atomic_write

__all__ = ["ShareStarts", "FILE_NAME"]

log = logging.getLogger(__name__)
FILE_NAME = "kafkawire-share-partition-starts.json"


class ShareStarts:
    def __init__(self, path: str):
        self.path = path
        self.starts: dict[tuple, int] = {}      # (group id, topic id, partition) -> start offset
        self.dirty = False
        self._load()

    def _load(self) -> None:
        try:
            with open(self.path, encoding="utf-8") as f:
                entries = json.load(f)
            self.starts = {(group, uuid.UUID(topic), int(partition)): int(start)
                           for group, topic, partition, start in entries}
        except FileNotFoundError:
            return
        except (OSError, ValueError, TypeError) as exc:       # unreadable: the reset policy applies
            log.warning("%s cannot be read, share-partitions start at share.auto.offset.reset: %s", self.path, exc)
            self.starts = {}

    def get(self, key: tuple) -> int | None:
        return self.starts.get(key)

    def take(self, key: tuple) -> int | None:
        """The entry of ``key``, gone from the checkpoint (saved at the next ``save``)."""
        start = self.starts.pop(key, None)
        if start is not None:
            self.dirty = True
        return start

    def update(self, starts: dict) -> None:
        for key, start in starts.items():
            if self.starts.get(key) != start:
                self.starts[key] = start
                self.dirty = True

    def forget(self, group_id: str) -> None:
        for key in [k for k in self.starts if k[0] == group_id]:
            del self.starts[key]
            self.dirty = True

    def save(self) -> None:
        if not self.dirty:
            return
        entries = [[group, str(topic), partition, start] for (group, topic, partition), start in self.starts.items()]
        try:
            if not entries:                     # every entry taken: the old checkpoint is retired
                if os.path.exists(self.path):
                    os.remove(self.path)
            else:
                os.makedirs(os.path.dirname(self.path) or ".", exist_ok=True)
                atomic_write(self.path, json.dumps(entries))
            self.dirty = False
        except OSError as exc:                  # tried again at the next change
            log.error("writing %s failed: %s", self.path, exc)
