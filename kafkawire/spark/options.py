"""The reader's options, checked once, with errors that name the option and the bad value.

Names follow Spark's own Kafka source where it has the same idea, so an existing job's
options keep their meaning:

=====================================  ===================================================
startingOffsets / endingOffsets        "earliest" | "latest" | JSON ``{"topic": {"0": 42}}``
                                       (-2 = earliest, -1 = latest); ending is exclusive
startingTimestamp / endingTimestamp    ms since the epoch, for every partition
startingOffsetsByTimestamp /           JSON ``{"topic": {"0": ms}}``
endingOffsetsByTimestamp
startingOffsetsByTimestampStrategy     "error" (default) | "latest": no record at or after
                                       the timestamp
subscribe / subscribePattern / assign  which topic-partitions of a log directory to read
includeHeaders                         the headers column (default true)
kafka.isolation.level                  read_uncommitted (default) | read_committed
=====================================  ===================================================

and our own: ``includeControl`` (control records as rows, default false), ``includeAborted``
(default true; false is read_committed), ``decode`` (none | metadata),
``failOnCorruption`` (default true), ``failOnDataLoss`` (default true),
``maxPartitionBytes`` (split size, default 128 MiB), ``minPartitions`` (Spark's Kafka option:
the desired number of input partitions, default none: see plan.spread_split_bytes),
``maxOffsetsPerTrigger`` (streaming),
``liveLog`` (default false; true: the directory belongs to a running broker: reads start
at its checkpointed log start offset, and segments that retention deletes during the read
are skipped as the log start moving, see plan.py) and
``highWatermark`` (checkpoint | required | logEnd: how far each partition is read, see
watermarks.py; default checkpoint with liveLog=true, else logEnd).

Other ``kafka.*`` options configure a Kafka client, which a file reader does not have; they
are accepted and ignored so an existing job's options load unchanged. ``fs.*`` options (also
as ``spark.hadoop.fs.*``) say how to reach a remote filesystem (``fs.s3a.access.key``, ...:
remote_options.py); those it does not use are accepted and ignored alike. Any other unknown
option is an error (a typo must not silently change what is read).
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

from .files import LOCAL, Files
from .remote_options import FS_OPTION_PREFIXES, RemoteOptionError, remote_settings
from .watermarks import HW_MODES

__all__ = ["OptionError", "ReadOptions", "EARLIEST", "LATEST", "parse_options", "column_options"]

EARLIEST = -2
LATEST = -1

_KNOWN = {
    "path", "paths", "startingoffsets", "endingoffsets", "startingtimestamp", "endingtimestamp",
    "startingoffsetsbytimestamp", "endingoffsetsbytimestamp",
    "startingoffsetsbytimestampstrategy", "subscribe", "subscribepattern", "assign",
    "includeheaders", "includecontrol", "includeaborted", "decode", "failoncorruption",
    "failondataloss", "maxpartitionbytes", "maxoffsetspertrigger", "livelog", "highwatermark",
    "minpartitions",
}
_DEFAULT_SPLIT_BYTES = 128 * 1024 * 1024


class OptionError(ValueError):
    """An option the reader cannot use, naming it and saying what it accepts."""


@dataclass(frozen=True)
class OffsetSpec:
    """A starting or ending position: ``default`` (EARLIEST/LATEST) for every partition not
    in ``offsets``, which maps (topic, partition) to an offset or EARLIEST/LATEST."""

    default: int
    offsets: dict = field(default_factory=dict)

    def for_partition(self, key) -> int:
        return self.offsets.get(key, self.default)


@dataclass(frozen=True)
class TimestampSpec:
    """Positions by timestamp: ``default`` ms for every partition (or None), ``per_partition``
    ms by (topic, partition)."""

    default: int | None
    per_partition: dict = field(default_factory=dict)

    def for_partition(self, key) -> int | None:
        return self.per_partition.get(key, self.default)


@dataclass(frozen=True)
class ReadOptions:
    paths: tuple
    starting: OffsetSpec
    ending: OffsetSpec
    starting_timestamps: TimestampSpec | None
    ending_timestamps: TimestampSpec | None
    timestamp_miss_is_error: bool
    topics: frozenset | None          # subscribe
    topic_pattern: re.Pattern | None  # subscribePattern
    assigned: frozenset | None        # assign: (topic, partition) pairs
    include_headers: bool
    include_control: bool
    include_aborted: bool
    decode_metadata: bool
    fail_on_corruption: bool
    fail_on_data_loss: bool
    split_bytes: int
    max_offsets_per_trigger: int | None
    live_log: bool = False            # a running broker's directory (liveLog)
    high_watermark: str = "logend"    # checkpoint | required | logend (highWatermark)
    min_partitions: int | None = None  # minPartitions: replaces PACK_SPREAD (plan.py)
    files: Files = field(default=LOCAL, repr=False)   # how remote paths are reached (fs.* options)

    def selects(self, topic: str, partition: int) -> bool:
        """Whether subscribe / subscribePattern / assign keep this topic-partition."""
        if self.topics is not None and topic not in self.topics:
            return False
        if self.topic_pattern is not None and not self.topic_pattern.fullmatch(topic):
            return False
        return self.assigned is None or (topic, partition) in self.assigned


def _lower(options) -> dict:
    return {str(k).lower(): v for k, v in dict(options).items()}


def _bool(opts, name: str, default: bool) -> bool:
    raw = opts.get(name.lower())
    if raw is None:
        return default
    text = str(raw).strip().lower()
    if text in ("true", "false"):
        return text == "true"
    raise OptionError(f"option {name}={raw!r}: expected true or false")


def _int(opts, name: str, default, *, minimum: int | None = None):
    raw = opts.get(name.lower())
    if raw is None:
        return default
    try:
        value = int(str(raw).strip())
    except ValueError:
        raise OptionError(f"option {name}={raw!r}: expected a whole number") from None
    if minimum is not None and value < minimum:
        raise OptionError(f"option {name}={raw!r}: must be at least {minimum}")
    return value


def _partition_json(name: str, raw) -> dict:
    """``{"topic": {"0": n}}`` -> {(topic, 0): n}, as Spark's JsonUtils.partitionOffsets."""
    try:
        doc = json.loads(raw)
    except json.JSONDecodeError as e:
        raise OptionError(f"option {name}: not JSON ({e.msg} at character {e.pos}); expected "
                          f'e.g. {{"topicA": {{"0": 23, "1": -2}}}}') from None
    if not isinstance(doc, dict):
        raise OptionError(f"option {name}: expected a JSON object of topics, got {type(doc).__name__}")
    out = {}
    for topic, parts in doc.items():
        if not isinstance(parts, dict):
            raise OptionError(f"option {name}: topic {topic!r} must map partitions to numbers")
        for part, value in parts.items():
            if not re.fullmatch(r"\d+", str(part)):
                raise OptionError(f"option {name}: partition {part!r} of topic {topic!r} is not a number")
            if isinstance(value, bool) or not isinstance(value, int):
                raise OptionError(f"option {name}: {topic}-{part} = {value!r} is not a whole number")
            out[(topic, int(part))] = value
    return out


def _offsets(opts, name: str, default: int, *, allow_latest: bool, allow_earliest: bool) -> OffsetSpec:
    raw = opts.get(name.lower())
    if raw is None:
        return OffsetSpec(default)
    text = str(raw).strip()
    if text.lower() in ("earliest", "latest"):
        value = EARLIEST if text.lower() == "earliest" else LATEST
        if (value == LATEST and not allow_latest) or (value == EARLIEST and not allow_earliest):
            raise OptionError(f"option {name}={text!r} is not allowed here (Spark's Kafka "
                              f"source refuses it too: a batch read cannot start at latest or "
                              f"end at earliest)")
        return OffsetSpec(value)
    offsets = _partition_json(name, text)
    for key, value in offsets.items():
        if value < EARLIEST or (value == LATEST and not allow_latest) or \
                (value == EARLIEST and not allow_earliest):
            raise OptionError(f"option {name}: {key[0]}-{key[1]} = {value} is not an offset "
                              f"here (offsets are >= 0; -2 = earliest, -1 = latest)")
    return OffsetSpec(LATEST if name == "endingOffsets" else EARLIEST, offsets)


def _timestamps(opts, single: str, by_partition: str) -> TimestampSpec | None:
    # Spark: the single timestamp wins over the per-partition JSON, which wins over offsets.
    if opts.get(single.lower()) is not None:
        return TimestampSpec(_int(opts, single, None, minimum=0))
    raw = opts.get(by_partition.lower())
    if raw is None:
        return None
    per = _partition_json(by_partition, str(raw))
    for key, value in per.items():
        if value < 0:
            raise OptionError(f"option {by_partition}: {key[0]}-{key[1]} = {value} is not a timestamp")
    return TimestampSpec(None, per)


def column_options(options) -> dict:
    """Just the options that decide the columns (a source's schema is asked for before
    Spark says whether the read is a batch or a stream)."""
    opts = _lower(options)
    decode = str(opts.get("decode", "none")).strip().lower()
    if decode not in ("none", "metadata"):
        raise OptionError(f"option decode={decode!r}: expected none or metadata")
    return {"include_headers": _bool(opts, "includeHeaders", True),
            "decode_metadata": decode == "metadata",
            "fail_on_corruption": _bool(opts, "failOnCorruption", True)}


def parse_options(options, *, streaming: bool) -> ReadOptions:
    opts = _lower(options)
    for name in opts:
        if name not in _KNOWN and not name.startswith(("kafka.", *FS_OPTION_PREFIXES)):
            raise OptionError(f"unknown option {name!r} for format kafkawire (known: "
                              f"{', '.join(sorted(_KNOWN - {'path', 'paths'}))})")
    paths = _paths(opts)
    try:
        files = Files(remote_settings(opts))
    except RemoteOptionError as e:
        raise OptionError(str(e)) from None

    if streaming and opts.get("endingoffsets") is not None:
        raise OptionError("option endingOffsets is for batch reads; a stream has no end")
    starting = _offsets(opts, "startingOffsets", LATEST if streaming else EARLIEST,
                        allow_latest=streaming, allow_earliest=True)
    ending = _offsets(opts, "endingOffsets", LATEST, allow_latest=True, allow_earliest=False)
    strategy = str(opts.get("startingoffsetsbytimestampstrategy", "error")).strip().lower()
    if strategy not in ("error", "latest"):
        raise OptionError(f"option startingOffsetsByTimestampStrategy={strategy!r}: expected error or latest")

    isolation = str(opts.get("kafka.isolation.level", "read_uncommitted")).strip().lower()
    if isolation not in ("read_committed", "read_uncommitted"):
        raise OptionError(f"option kafka.isolation.level={isolation!r}: expected read_committed "
                          f"or read_uncommitted")
    include_aborted = _bool(opts, "includeAborted", isolation == "read_uncommitted")
    if include_aborted and isolation == "read_committed":
        raise OptionError("includeAborted=true contradicts kafka.isolation.level=read_committed")

    shape = column_options(opts)
    live_log = _bool(opts, "liveLog", False)

    topics = pattern = assigned = None
    chosen = [n for n in ("subscribe", "subscribepattern", "assign") if opts.get(n) is not None]
    if len(chosen) > 1:
        raise OptionError(f"options {' and '.join(chosen)}: give only one way to choose topics")
    if opts.get("subscribe") is not None:
        topics = frozenset(t.strip() for t in str(opts["subscribe"]).split(",") if t.strip())
        if not topics:
            raise OptionError("option subscribe: no topic names given")
    if opts.get("subscribepattern") is not None:
        try:
            pattern = re.compile(str(opts["subscribepattern"]))
        except re.error as e:
            raise OptionError(f"option subscribePattern: not a regular expression ({e})") from None
    if opts.get("assign") is not None:
        assigned = frozenset(_partition_json_lists("assign", str(opts["assign"])))

    return ReadOptions(
        paths=paths,
        starting=starting,
        ending=ending,
        starting_timestamps=_timestamps(opts, "startingTimestamp", "startingOffsetsByTimestamp"),
        ending_timestamps=None if streaming else _timestamps(opts, "endingTimestamp",
                                                             "endingOffsetsByTimestamp"),
        timestamp_miss_is_error=strategy == "error",
        topics=topics,
        topic_pattern=pattern,
        assigned=assigned,
        include_headers=shape["include_headers"],
        include_control=_bool(opts, "includeControl", False),
        include_aborted=include_aborted,
        decode_metadata=shape["decode_metadata"],
        fail_on_corruption=shape["fail_on_corruption"],
        fail_on_data_loss=_bool(opts, "failOnDataLoss", True),
        split_bytes=_int(opts, "maxPartitionBytes", _DEFAULT_SPLIT_BYTES, minimum=1),
        max_offsets_per_trigger=_int(opts, "maxOffsetsPerTrigger", None, minimum=1),
        live_log=live_log,
        high_watermark=_high_watermark(opts, live_log),
        min_partitions=_int(opts, "minPartitions", None, minimum=1),
        files=files,
    )


def _high_watermark(opts, live_log: bool) -> str:
    raw = opts.get("highwatermark")
    if raw is None:
        return "checkpoint" if live_log else "logend"
    mode = str(raw).strip().lower()
    if mode not in HW_MODES:
        raise OptionError(f"option highWatermark={raw!r}: expected checkpoint, required or logEnd")
    return mode


def _paths(opts) -> tuple:
    """load(path) gives ``path``; load([p1, p2]) gives ``paths`` as a JSON array."""
    paths = []
    if opts.get("path"):
        paths.append(str(opts["path"]))
    raw = opts.get("paths")
    if raw not in (None, ""):
        try:
            more = json.loads(raw)
        except json.JSONDecodeError:
            more = None
        if not isinstance(more, list) or not all(isinstance(p, str) for p in more):
            raise OptionError(f"option paths={raw!r}: expected a JSON array of paths")
        paths += more
    if not paths:
        raise OptionError('no path: use .load("<log dir | partition dir | segment | snapshot>")')
    return tuple(paths)


def _partition_json_lists(name: str, raw: str):
    """assign: ``{"topicA": [0, 1]}`` -> (topic, partition) pairs."""
    try:
        doc = json.loads(raw)
    except json.JSONDecodeError as e:
        raise OptionError(f"option {name}: not JSON ({e.msg}); expected e.g. {{\"topicA\": [0, 1]}}") from None
    if not isinstance(doc, dict) or not all(isinstance(v, list) for v in doc.values()):
        raise OptionError(f"option {name}: expected a JSON object of topic -> list of partitions")
    for topic, parts in doc.items():
        for p in parts:
            if isinstance(p, bool) or not isinstance(p, int) or p < 0:
                raise OptionError(f"option {name}: partition {p!r} of topic {topic!r} is not a partition number")
            yield topic, p
