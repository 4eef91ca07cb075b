"""KRaft control record values in real Kafka data decode through the generated classes and
re-encode to their original bytes."""
from collections import Counter
from pathlib import Path

import pytest

from kafkawire.records import iter_batches
from kafkawire.records.kraft_control import value_version
from kafkawire.records.errors import CorruptRecordError

KRAFT_DATA = Path(__file__).resolve().parents[2].parent / "shared" / "reference" / "kraft-data"


def test_real_control_values_round_trip():
    if not KRAFT_DATA.exists():
        pytest.skip(f"reference material not available: {KRAFT_DATA} is missing")
    seen = Counter()
    for path in sorted(KRAFT_DATA.rglob("*")):
        if path.suffix not in (".log", ".checkpoint") or not path.is_file():
            continue
        for batch in iter_batches(path.read_bytes(), file=str(path)):
            if not getattr(batch, "is_control", False):
                continue
            for record in batch:
                if record.control_type < 2:
                    continue
                value = record.control_value
                assert value.encode(value.version) == bytes(record.value), f"{path} offset {record.offset}"
                seen[type(value).__name__] += 1
    assert seen["SnapshotHeaderRecord"] > 0 and seen["SnapshotFooterRecord"] > 0 and seen["LeaderChangeMessage"] > 0


def test_a_value_without_a_version_is_reported():
    from kafkawire import messages
    with pytest.raises(CorruptRecordError, match="has no version"):
        value_version(messages.by_name("LeaderChangeMessage"), b"\x00")
