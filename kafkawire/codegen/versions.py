"""Version ranges as Kafka's generator reads them: "", "none", "N", "N-M", "N+"."""
from __future__ import annotations

from dataclasses import dataclass

# Kafka stores an open end as Short.MAX_VALUE; so do we, so that "3+" and "3-32767" compare equal.
OPEN_END = 0x7FFF


@dataclass(frozen=True)
class Versions:
    lowest: int
    highest: int

    @classmethod
    def parse(cls, text: str | None, default: "Versions | None" = None) -> "Versions":
        if text is None or text == "":
            if default is None:
                raise ValueError("a version range is required here")
            return default
        text = text.strip()
        if text == "none":
            return NONE
        if text.endswith("+"):
            lowest = _version_number(text[:-1], text)
            return cls(lowest, OPEN_END)
        if "-" in text:
            low, _, high = text.partition("-")
            lowest, highest = _version_number(low, text), _version_number(high, text)
            if highest < lowest:
                raise ValueError(f"invalid version range {text!r}: {highest} is lower than {lowest}")
            return cls(lowest, highest)
        number = _version_number(text, text)
        return cls(number, number)

    @property
    def empty(self) -> bool:
        return self.lowest > self.highest

    @property
    def open_ended(self) -> bool:
        return not self.empty and self.highest == OPEN_END

    def __contains__(self, version: int) -> bool:
        return self.lowest <= version <= self.highest

    def contains_range(self, other: "Versions") -> bool:
        return other.empty or (self.lowest <= other.lowest and other.highest <= self.highest)

    def intersect(self, other: "Versions") -> "Versions":
        low, high = max(self.lowest, other.lowest), min(self.highest, other.highest)
        return Versions(low, high) if low <= high else NONE

    def __iter__(self):
        return iter(range(self.lowest, self.highest + 1))

    def __str__(self) -> str:
        if self.empty:
            return "none"
        if self.highest == OPEN_END:
            return f"{self.lowest}+"
        if self.lowest == self.highest:
            return str(self.lowest)
        return f"{self.lowest}-{self.highest}"


def _version_number(text: str, whole: str) -> int:
    try:
        number = int(text)
    except ValueError:
        raise ValueError(f"invalid version range {whole!r}") from None
    if number < 0 or number > OPEN_END:
        raise ValueError(f"invalid version range {whole!r}: {number} is out of range")
    return number


NONE = Versions(1, 0)
ALL = Versions(0, OPEN_END)
