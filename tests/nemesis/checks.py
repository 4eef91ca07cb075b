"""What must hold after the faults: the voters' logs agree byte for byte below the high
watermark, and the topics the writer was told were created are there exactly once, in the order
their acknowledgements came; no topic name appears twice; and the committed log replays into a
fresh controller state without a single problem (no second TopicRecord of a live name, no
RemoveTopicRecord of a topic already gone: what a torn write would leave)."""
from __future__ import annotations

import os
from collections import Counter
from dataclasses import dataclass

from kafkawire.controller.state import ControllerState
from kafkawire.controller.versions import SUPPORTED_FEATURES
from kafkawire.metadata import decode_metadata_record
from kafkawire.records import iter_batches


def batches_below(directory: str, end: int) -> list[bytes]:
    """Raw bytes of every batch of the node's segments whose offsets are all below ``end``
    (read from the files, so a torn tail the node has not recovered yet is not read)."""
    out = []
    for name in sorted(os.listdir(directory)):
        if name.endswith(".log"):
            with open(os.path.join(directory, name), "rb") as f:
                out.extend(bytes(b.raw) for b in iter_batches(f.read()) if b.last_offset < end)
    return out


def topic_names(batches: list[bytes]) -> list[str]:
    names = []
    for raw in batches:
        for batch in iter_batches(raw):
            if batch.is_control:
                continue
            for record in batch:
                message = decode_metadata_record(record.value).message
                if type(message).NAME == "TopicRecord":
                    names.append(message.name)
    return names


def replay_problems(batches: list[bytes]) -> list[str]:
    """Replay the data batches into a fresh ControllerState, as every node does; its problems."""
    state = ControllerState(dict(SUPPORTED_FEATURES))
    for raw in batches:
        for batch in iter_batches(raw):
            if not batch.is_control:
                state.apply_batch(batch.base_offset, batch.partition_leader_epoch, batch.max_timestamp,
                                  [bytes(record.value) for record in batch])
    return [str(p) for p in state.problems]


@dataclass
class Verdict:
    voters_agree: bool
    committed_batches: int
    topics_in_log: int
    lost: list[str]
    duplicated: list[str]
    reordered: list[tuple[str, str]]
    unknown_names: list[str]
    replay_problems: list[str]

    @property
    def ok(self) -> bool:
        return self.voters_agree and not (self.lost or self.duplicated or self.reordered or self.unknown_names
                                          or self.replay_problems)


def check(partition_dirs: dict[int, str], high_watermark: int, acked: list[str], sent: set[str]) -> Verdict:
    logs = {node: batches_below(d, high_watermark) for node, d in partition_dirs.items()}
    reference = next(iter(logs.values()))
    names = topic_names(reference)
    counts = Counter(names)
    position: dict[str, int] = {}
    for i, name in enumerate(names):
        position.setdefault(name, i)          # where it first appears
    present = [name for name in acked if name in position]
    reordered = [(a, b) for a, b in zip(present, present[1:]) if position[a] > position[b]]
    return Verdict(voters_agree=all(log == reference for log in logs.values()),
                   committed_batches=len(reference), topics_in_log=len(names),
                   lost=[name for name in acked if name not in counts],
                   duplicated=sorted(name for name, c in counts.items() if c > 1 and name.startswith("nemesis-")),
                   reordered=reordered,
                   unknown_names=sorted(n for n in counts if n.startswith("nemesis-") and n not in sent),
                   replay_problems=replay_problems(reference))
