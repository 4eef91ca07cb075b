"""``version-mapping`` and ``feature-dependencies``: the two table look-ups that Kafka 4.3's
kafka-storage and kafka-features both have, answered from kafkawire.feature_versions.

    metadata.version=30 (4.3-IV0)          version-mapping [--release-version V]
    kraft.version=1                        (then every production feature's default level)
    ...
    eligible.leader.replicas.version=1 requires:       feature-dependencies --feature F=L ...
        metadata.version=23 (4.0-IV1)

The two tools print the same lines but word some refusals differently (StorageTool parses
``--feature`` itself, FeatureCommand with its parseNameAndLevel), so ``tool`` picks the wording.
Lines are yielded as they are made: a bad ``--feature`` after good ones fails after their
lines are out, as Kafka's tools print them before they fail.
"""
from __future__ import annotations

from collections.abc import Iterator

from kafkawire import feature_versions as fv

STORAGE, FEATURES = "storage", "features"


class VersionLookupError(Exception):
    """A refusal; the message is the line Kafka's tool prints on stderr (exit status 1)."""


def version_mapping(release_version: str | None) -> Iterator[str]:
    """runVersionMappingCommand / handleVersionMapping: the release version as given, its level,
    then each production feature's default level for it (unstable versions allowed)."""
    text = release_version if release_version is not None else fv.metadata_version(fv.LATEST_PRODUCTION_LEVEL).name
    try:
        mv = fv.from_version_string(text, unstable_allowed=True)
    except ValueError as exc:
        raise VersionLookupError(str(exc)) from None
    yield f"metadata.version={mv.level} ({text})"
    for name, level in fv.default_levels(mv.level).items():
        yield f"{name}={level}"


def _java_short(text: str) -> int | None:
    """Short.parseShort: optional sign, ASCII digits, -32768..32767; None when it would throw."""
    digits = text[1:] if text[:1] in "+-" else text
    if not digits or not (digits.isascii() and digits.isdigit()):
        return None
    value = int(text)
    return value if -2**15 <= value < 2**15 else None


def parse_name_and_level(text: str, tool: str) -> tuple[str, int]:
    if tool == STORAGE:
        if "=" not in text:
            raise VersionLookupError(f"Invalid feature format: {text}. Expected format: 'feature=version' "
                               f"(e.g. 'group.version=1')")
        name, level_text = (part.strip() for part in text.split("=", 1))
        level = _java_short(level_text)
        if level is None:
            raise VersionLookupError(f"Invalid version format: {level_text} for feature {name}")
        return name, level
    equals = text.find("=")
    if equals < 0:
        raise VersionLookupError(f"Can't parse feature=level string {text}: equals sign not found.")
    name, level_text = text[:equals].strip(), text[equals + 1:].strip()
    level = _java_short(level_text)
    if level is None:
        raise VersionLookupError(f"Can't parse feature=level string {text}: unable to parse {level_text} as a short.")
    return name, level


def feature_dependencies(features: list[str], tool: str) -> Iterator[str]:
    """runFeatureDependenciesCommand / handleFeatureDependencies for each ``--feature name=level``."""
    for text in features:
        name, level = parse_name_and_level(text, tool)
        if name == fv.METADATA_VERSION:
            try:
                mv = fv.metadata_version(level)
            except ValueError:
                raise VersionLookupError(f"Unknown metadata.version {level}") from None
            yield f"{name}={level} ({mv.name}) has no dependencies."
            continue
        if name not in fv.FEATURES_BY_NAME:
            raise VersionLookupError(f"Unknown feature: {name}")
        try:
            version = fv.feature(name).version(level, unstable_allowed=True)
        except ValueError as exc:
            raise VersionLookupError(f"Feature level {level} is not supported for feature {name}" if tool == STORAGE
                               else str(exc)) from None
        if not version.dependencies:
            yield f"{name}={level} has no dependencies."
            continue
        yield f"{name}={level} requires:"
        for dependency, needed in version.dependencies:
            suffix = f" ({fv.metadata_version(needed).name})" if dependency == fv.METADATA_VERSION else ""
            yield f"    {dependency}={needed}{suffix}"
