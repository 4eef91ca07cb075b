"""Kafka's small state files, read and written in the exact byte form Kafka uses.

* ``atomic_write(path, data)``: write ``<path>.tmp``, fsync it, rename over ``path``,
  fsync the directory (Kafka's Utils.atomicMoveWithFallback after a sync; the ``.tmp``
  name is the one Kafka uses for checkpoints, quorum-state and meta.properties).
* ``leader-epoch-checkpoint`` and the other text checkpoints (``replication-offset-
  checkpoint``, ``recovery-point-offset-checkpoint``, ``log-start-offset-checkpoint``,
  ``cleaner-offset-checkpoint``): CheckpointFile format, lines ``version``, ``count``, then
  ``count`` entries with space-separated fields, each line ended by ``\\n``.
* ``quorum-state``: one line of compact JSON, QuorumStateData in Kafka's JsonConverter form
  followed by ``"data_version":N``, no trailing newline (FileQuorumStateStore).
* ``meta.properties``: Java ``Properties.store`` output (``#`` line, ``#<date>`` line, then
  ``key=value`` lines with Java escapes); MetaProperties keeps unknown keys and key order,
  so a file Kafka wrote re-serialises to identical bytes.
* ``partition.metadata``: ``version: 0\\ntopic_id: <base64url uuid>`` (no trailing newline).
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timezone

from kafkawire.protocol.errors import BadBytesError
from kafkawire import messages

__all__ = [
    "atomic_write", "StateFileError",
    "read_checkpoint", "write_checkpoint", "format_checkpoint", "parse_checkpoint", "CheckpointEntries",
    "read_leader_epoch_checkpoint", "write_leader_epoch_checkpoint", "EpochEntry",
    "read_offset_checkpoint", "write_offset_checkpoint",
    "read_quorum_state", "write_quorum_state", "parse_quorum_state", "format_quorum_state",
    "JavaProperties", "MetaProperties", "read_meta_properties", "write_meta_properties",
    "read_partition_metadata", "write_partition_metadata", "parse_partition_metadata",
    "format_partition_metadata", "uuid_to_kafka", "uuid_from_kafka",
]


class StateFileError(BadBytesError):
    def __init__(self, reason: str, file=None, line: int | None = None):
        self.reason, self.file, self.line = reason, file, line
        where = []
        if line is not None:
            where.append(f"line {line}")
        if file is not None:
            where.append(f"of {os.fspath(file)}")
        super().__init__(f"{reason} ({' '.join(where)})" if where else reason)


# --- atomic write ----------------------------------------------------------------------

def atomic_write(path, data: bytes | str, *, fsync: bool = True) -> None:
    """Write ``data`` to ``path`` so a crash leaves either the old or the new file."""
    path = os.fspath(path)
    if isinstance(data, str):
        data = data.encode("utf-8")
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(data)
        f.flush()
        if fsync:
            os.fsync(f.fileno())
    os.replace(tmp, path)
    if fsync:
        fd = os.open(os.path.dirname(os.path.abspath(path)), os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


# --- Kafka UUIDs -----------------------------------------------------------------------

def uuid_to_kafka(u: uuid.UUID) -> str:
    """Kafka's Uuid.toString: URL-safe base64 of the 16 bytes, no padding."""
    return base64.urlsafe_b64encode(u.bytes).decode("ascii").rstrip("=")


def uuid_from_kafka(s: str) -> uuid.UUID:
    if len(s) != 22:
        raise ValueError(f"a Kafka uuid is 22 base64url characters, not {s!r}")
    raw = base64.urlsafe_b64decode(s + "==")
    return uuid.UUID(bytes=raw)


# --- checkpoint files ------------------------------------------------------------------

class CheckpointEntries(list):
    """parse_checkpoint's entries in ``partial`` mode: ``cut_short`` when the file ended before
    its last promised line (a line without its newline, or fewer lines than its count)."""
    cut_short = False


def parse_checkpoint(text: str, *, expected_version: int = 0, fields: int | None = None,
                     file=None, partial: bool = False) -> list[list[str]]:
    """Entries of a CheckpointFile as lists of their space-separated fields (lines may end
    ``\r\n``, as Java's readLine takes them). ``partial``: a file cut short (a copy taken
    while it was written) keeps its complete lines instead of being an error: a last line
    without its newline and the entries the count promises but the file lacks are left out,
    and the CheckpointEntries returned say ``cut_short``."""
    if text == "" and not partial:
        return []   # Kafka's CheckpointReadBuffer: an empty file has no entries
    lines = text.split("\n")
    unfinished = lines.pop()          # "" after the last newline, else a line cut short
    if unfinished and not partial:
        lines.append(unfinished)
    lines = [line.rstrip("\r") for line in lines]
    if len(lines) < 2:
        if partial:
            return _cut(CheckpointEntries(), True)
        raise StateFileError("checkpoint file needs a version line and a size line", file,
                             len(lines) + 1)
    try:
        version = int(lines[0])
    except ValueError:
        raise StateFileError(f"malformed version line {lines[0]!r}", file, 1) from None
    if version != expected_version:
        raise StateFileError(f"unrecognised checkpoint version {version}", file, 1)
    try:
        count = int(lines[1])
    except ValueError:
        raise StateFileError(f"malformed size line {lines[1]!r}", file, 2) from None
    entries = CheckpointEntries() if partial else []
    for n, line in enumerate(lines[2:], start=3):
        parts = line.split(" ")
        if fields is not None and len(parts) != fields:
            raise StateFileError(f"malformed entry {line!r}: {fields} fields expected", file, n)
        entries.append(parts)
    if len(entries) > count or (len(entries) < count and not partial):
        raise StateFileError(f"expected {count} entries in checkpoint file but found "
                             f"{len(entries)}", file)
    return _cut(entries, bool(unfinished) or len(entries) < count) if partial else entries


def _cut(entries: CheckpointEntries, cut_short: bool) -> CheckpointEntries:
    entries.cut_short = cut_short
    return entries


def format_checkpoint(entries, version: int = 0) -> str:
    entries = list(entries)
    out = [str(version), str(len(entries))]
    out += [" ".join(str(f) for f in e) for e in entries]
    return "\n".join(out) + "\n"


def read_checkpoint(path, **kw) -> list[list[str]]:
    with open(path, "rb") as f:
        return parse_checkpoint(f.read().decode("utf-8"), file=path, **kw)


def write_checkpoint(path, entries, version: int = 0, *, fsync: bool = True) -> None:
    atomic_write(path, format_checkpoint(entries, version), fsync=fsync)


@dataclass(frozen=True)
class EpochEntry:
    epoch: int
    start_offset: int


def read_leader_epoch_checkpoint(path) -> list[EpochEntry]:
    out = []
    for n, (e, o) in enumerate(read_checkpoint(path, fields=2)):
        try:
            out.append(EpochEntry(int(e), int(o)))
        except ValueError:
            raise StateFileError(f"malformed epoch entry {e!r} {o!r}", path, n + 3) from None
    return out


def write_leader_epoch_checkpoint(path, entries, *, fsync: bool = True) -> None:
    write_checkpoint(path, [(e.epoch, e.start_offset) if isinstance(e, EpochEntry) else e
                            for e in entries], fsync=fsync)


def read_offset_checkpoint(path) -> dict[tuple[str, int], int]:
    """``replication-offset-checkpoint`` etc.: ``topic partition offset`` lines."""
    out = {}
    for topic, partition, offset in read_checkpoint(path, fields=3):
        out[(topic, int(partition))] = int(offset)
    return out


def write_offset_checkpoint(path, offsets: dict, *, fsync: bool = True) -> None:
    write_checkpoint(path, [(t, p, o) for (t, p), o in offsets.items()], fsync=fsync)


# --- .kafka_cleanshutdown --------------------------------------------------------------

CLEAN_SHUTDOWN_FILE = ".kafka_cleanshutdown"


def read_clean_shutdown_epoch(log_dir) -> int | None:
    """The broker epoch a clean stop left in ``log_dir`` (CleanShutdownFileHandler.read), or None
    when there is no marker or it does not read as one (Kafka treats both as an unclean stop)."""
    try:
        with open(os.path.join(log_dir, CLEAN_SHUTDOWN_FILE), encoding="utf-8") as f:
            epoch = json.loads(f.read()).get("brokerEpoch")
    except (OSError, ValueError, AttributeError, UnicodeDecodeError):
        return None
    return epoch if isinstance(epoch, int) and not isinstance(epoch, bool) else None


def write_clean_shutdown(log_dir, broker_epoch: int, *, fsync: bool = True) -> None:
    """The marker of a clean stop, as Kafka writes it: ``{"version":0,"brokerEpoch":N}``."""
    atomic_write(os.path.join(log_dir, CLEAN_SHUTDOWN_FILE),
                 json.dumps({"version": 0, "brokerEpoch": broker_epoch}, separators=(",", ":")), fsync=fsync)


def delete_clean_shutdown(log_dir) -> None:
    """Gone once read, so that a crash before the next clean stop reads as unclean (KAFKA-10471)."""
    with contextlib.suppress(FileNotFoundError):
        os.remove(os.path.join(log_dir, CLEAN_SHUTDOWN_FILE))


# --- quorum-state ----------------------------------------------------------------------

def _quorum_cls():
    return messages.by_name("QuorumStateData")


def parse_quorum_state(text: str, *, file=None):
    """(QuorumStateData, data_version) from the file's JSON."""
    try:
        obj = json.loads(text)
    except ValueError as e:
        raise StateFileError(f"quorum-state is not JSON: {e}", file) from None
    if not isinstance(obj, dict) or "data_version" not in obj:
        raise StateFileError("quorum-state has no data_version field", file)
    version = obj.pop("data_version")
    cls = _quorum_cls()
    if not isinstance(version, int) or not cls.VALID_VERSIONS[0] <= version <= cls.VALID_VERSIONS[-1]:
        raise StateFileError(f"unsupported quorum-state data_version {version!r}", file)
    try:
        state = cls.from_json(obj, version)
        # JSON numbers have no width: the binary encoder checks every field's int32/int64
        # range, as Kafka's JSON reader refuses an epoch or id that does not fit.
        state.encode(version)
    except Exception as e:
        raise StateFileError(f"bad quorum-state: {e}", file) from None
    return state, version


def format_quorum_state(state, version: int) -> str:
    try:
        state.encode(version)
    except Exception as e:
        raise ValueError(f"refusing to write a quorum-state Kafka could not read: {e}") from None
    obj = state.to_json(version)
    obj["data_version"] = version
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False)


def read_quorum_state(path):
    with open(path, "rb") as f:
        return parse_quorum_state(f.read().decode("utf-8"), file=path)


def write_quorum_state(path, state, version: int = 1, *, fsync: bool = True) -> None:
    atomic_write(path, format_quorum_state(state, version), fsync=fsync)


# --- Java properties -------------------------------------------------------------------

_WS = " \t\f"


def _logical_lines(text: str):
    """Java Properties.load's LineReader: logical lines with continuations joined."""
    natural = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    i = 0
    while i < len(natural):
        line = natural[i].lstrip(_WS)
        i += 1
        if not line:
            continue
        if line[0] in "#!":
            yield "comment", line
            continue
        while True:
            backslashes = len(line) - len(line.rstrip("\\"))
            if backslashes % 2 == 1 and i < len(natural):
                line = line[:-1] + natural[i].lstrip(_WS)
                i += 1
            else:
                if backslashes % 2 == 1:
                    line = line[:-1]
                break
        yield "entry", line


def _unescape(s: str) -> str:
    out = []
    i = 0
    while i < len(s):
        c = s[i]
        if c == "\\" and i + 1 < len(s):
            n = s[i + 1]
            if n == "u":
                hexd = s[i + 2:i + 6]
                if len(hexd) != 4 or any(h not in "0123456789abcdefABCDEF" for h in hexd):
                    raise ValueError(f"malformed \\uxxxx encoding: {s[i:i + 6]!r}")
                out.append(chr(int(hexd, 16)))
                i += 6
                continue
            out.append({"t": "\t", "n": "\n", "r": "\r", "f": "\f"}.get(n, n))
            i += 2
            continue
        out.append(c)
        i += 1
    return "".join(out)


def _split_entry(line: str) -> tuple[str, str]:
    i = 0
    n = len(line)
    while i < n:
        c = line[i]
        if c == "\\":
            i += 2
            continue
        if c in "=:" or c in _WS:
            break
        i += 1
    key = line[:i]
    j = i
    while j < n and line[j] in _WS:
        j += 1
    if j < n and line[j] in "=:" :
        j += 1
        while j < n and line[j] in _WS:
            j += 1
    return _unescape(key), _unescape(line[j:])


def _escape(s: str, escape_space: bool) -> str:
    out = []
    for i, c in enumerate(s):
        if c == " ":
            out.append("\\ " if i == 0 or escape_space else " ")
        elif c == "\\":
            out.append("\\\\")
        elif c in "\t\n\r\f":
            out.append({"\t": "\\t", "\n": "\\n", "\r": "\\r", "\f": "\\f"}[c])
        elif c in "=:#!":
            out.append("\\" + c)
        else:
            out.append(c)   # Properties.store(Writer): no \\u escapes
    return "".join(out)


def java_date(dt: datetime | None = None) -> str:
    """java.util.Date.toString() in UTC: ``Sat Feb 08 08:40:22 UTC 2025``."""
    dt = dt or datetime.now(timezone.utc)
    days = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"]
    months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
    return (f"{days[dt.weekday()]} {months[dt.month - 1]} {dt.day:02d} "
            f"{dt:%H:%M:%S} UTC {dt.year}")


@dataclass
class JavaProperties:
    """An ordered Java .properties file. ``comments`` are the leading comment lines
    (with their ``#``/``!``), which Properties.store writes before the entries."""

    items: dict = field(default_factory=dict)
    comments: list = field(default_factory=list)

    @classmethod
    def parse(cls, text: str) -> JavaProperties:
        self = cls()
        seen_entry = False
        for kind, line in _logical_lines(text):
            if kind == "comment":
                if not seen_entry:
                    self.comments.append(line)
                continue
            seen_entry = True
            key, value = _split_entry(line)
            self.items[key] = value
        return self

    def format(self) -> str:
        lines = list(self.comments)
        lines += [f"{_escape(k, True)}={_escape(v, False)}" for k, v in self.items.items()]
        return "".join(line + "\n" for line in lines)

    @classmethod
    def new(cls, items: dict, *, comment: str = "", date: datetime | None = None,
            sort: bool = True) -> JavaProperties:
        """As Kafka's PropertiesUtils.writePropertiesFile does: ``props.store(w, "")``.
        Keys are sorted (what Properties.store does since JDK 18)."""
        keys = sorted(items) if sort else list(items)
        return cls({k: items[k] for k in keys}, ["#" + comment, "#" + java_date(date)])


@dataclass
class MetaProperties:
    """meta.properties (Kafka's MetaProperties): version 0 (ZooKeeper era: broker.id) or
    1 (KRaft: node.id, cluster.id required); directory.id optional; other keys kept."""

    version: int
    cluster_id: str | None = None
    node_id: int | None = None
    directory_id: uuid.UUID | None = None
    properties: JavaProperties = field(default_factory=JavaProperties)

    @classmethod
    def parse(cls, text: str, *, file=None) -> MetaProperties:
        props = JavaProperties.parse(text)
        items = props.items
        if "version" not in items:
            raise StateFileError("meta.properties has no version", file)
        try:
            version = int(items["version"])
        except ValueError:
            raise StateFileError(f"bad version {items['version']!r}", file) from None
        if version not in (0, 1):
            raise StateFileError(f"unknown meta.properties version {version}", file)
        node = items.get("node.id", items.get("broker.id") if version == 0 else None)
        if version == 1 and (node is None or "cluster.id" not in items):
            raise StateFileError("meta.properties version 1 needs node.id and cluster.id", file)
        try:
            node_id = None if node is None else int(node)
            dir_id = items.get("directory.id")
            directory_id = None if dir_id is None else uuid_from_kafka(dir_id)
        except ValueError as e:
            raise StateFileError(f"bad meta.properties value: {e}", file) from None
        return cls(version, items.get("cluster.id"), node_id, directory_id, props)

    def to_properties(self) -> JavaProperties:
        """The properties with the typed fields written back, keeping order and unknown keys."""
        items = dict(self.properties.items)
        items["version"] = str(self.version)
        if self.cluster_id is not None:
            items["cluster.id"] = self.cluster_id
        if self.node_id is not None:
            key = "broker.id" if self.version == 0 and "node.id" not in items else "node.id"
            items[key] = str(self.node_id)
        if self.directory_id is not None:
            items["directory.id"] = uuid_to_kafka(self.directory_id)
        if self.properties.comments:
            return JavaProperties(items, list(self.properties.comments))
        return JavaProperties.new(items)

    def format(self) -> str:
        return self.to_properties().format()


def read_meta_properties(path) -> MetaProperties:
    with open(path, "rb") as f:
        return MetaProperties.parse(f.read().decode("utf-8"), file=path)


def write_meta_properties(path, meta: MetaProperties, *, fsync: bool = True) -> None:
    atomic_write(path, meta.format(), fsync=fsync)


# --- partition.metadata ----------------------------------------------------------------

def parse_partition_metadata(text: str, *, file=None) -> uuid.UUID:
    lines = text.split("\n")
    if len(lines) < 2 or not lines[0].startswith("version: "):
        raise StateFileError("partition.metadata must start with 'version: '", file, 1)
    if lines[0] != "version: 0":
        raise StateFileError(f"unrecognised partition.metadata version {lines[0][9:]!r}", file, 1)
    if not lines[1].startswith("topic_id: "):
        raise StateFileError("partition.metadata needs a 'topic_id: ' line", file, 2)
    try:
        return uuid_from_kafka(lines[1][len("topic_id: "):].strip())
    except ValueError as e:
        raise StateFileError(str(e), file, 2) from None


def format_partition_metadata(topic_id: uuid.UUID) -> str:
    return f"version: 0\ntopic_id: {uuid_to_kafka(topic_id)}"


def read_partition_metadata(path) -> uuid.UUID:
    with open(path, "rb") as f:
        return parse_partition_metadata(f.read().decode("utf-8"), file=path)


def write_partition_metadata(path, topic_id: uuid.UUID, *, fsync: bool = True) -> None:
    atomic_write(path, format_partition_metadata(topic_id), fsync=fsync)


def random_uuid() -> uuid.UUID:
    """Kafka's Uuid.randomUuid: a random (version 4) uuid whose base64url form does not start
    with '-' (it would read as a command-line option) and that is not reserved."""
    while True:
        u = uuid.uuid4()
        if u.int > 100 and not uuid_to_kafka(u).startswith("-"):     # DirectoryId reserves msb 0, lsb < 100
            return u
