"""The one table of Kafka 4.3.1's release versions and feature levels (kafkawire.feature_versions)
and the version-mapping / feature-dependencies look-ups of `kafkawire storage` and `kafkawire
features`. tests/interop/test_storage_vs_kafka.py compares every look-up with Kafka's tools;
these run without Kafka."""
from __future__ import annotations

import pytest

from kafkawire import feature_versions as fv
from kafkawire.tools.cli import main


def run(capsys, *argv) -> tuple[int, str, str]:
    status = main(list(argv))
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def test_the_table_is_kafka_4_3_1s():
    assert [mv.level for mv in fv.METADATA_VERSIONS] == list(range(7, 32))
    assert (fv.metadata_version(7).name, fv.metadata_version(30).name, fv.metadata_version(31).name) == \
        ("3.3-IV3", "4.3-IV0", "4.4-IV0")
    assert [f.name for f in fv.FEATURES] == ["kraft.version", "transaction.version", "group.version",
                                             "eligible.leader.replicas.version", "share.version", "streams.version"]
    # Each level appears once, and a metadata.version's release is what its name starts with.
    assert len({mv.name for mv in fv.METADATA_VERSIONS}) == len(fv.METADATA_VERSIONS)
    assert all(mv.name.startswith(mv.release + "-IV") for mv in fv.METADATA_VERSIONS)


@pytest.mark.parametrize("feature", fv.FEATURES, ids=lambda f: f.name)
def test_each_feature_passes_kafkas_own_consistency_checks(feature):
    """Feature.validateDefaultValueAndLatestProductionValue: the latest production level is one of
    the feature's and not below its default at the latest production metadata.version, and no
    default ever depends on more than that metadata.version's defaults give."""
    levels = [v.level for v in feature.versions]
    assert levels == sorted(levels) and feature.latest_production in levels
    assert feature.latest_production >= feature.default_level(fv.LATEST_PRODUCTION_LEVEL)
    for mv in fv.METADATA_VERSIONS:
        default = feature.version(feature.default_level(mv.level))
        for dependency, needed in default.dependencies:
            if dependency == fv.METADATA_VERSION:
                assert needed <= default.bootstrap_level
            else:
                assert needed <= fv.feature(dependency).default_level(mv.level)


def test_release_version_strings_as_kafka_parses_them():
    assert fv.from_version_string("4.3").name == fv.from_version_string("4.3.7").name == "4.3-IV0"
    assert fv.from_version_string("3.7").name == "3.7-IV4"
    assert fv.from_version_string("4.4-IV0", unstable_allowed=True).level == 31
    for text, unstable in (("4.4-IV0", False), ("4.4", True), ("3.2", True), ("4.3-iv0", True)):
        with pytest.raises(ValueError, match=f"^Unknown metadata.version '{text}'. Supported metadata.version are: "
                                             "3.3-IV3, "):
            fv.from_version_string(text, unstable_allowed=unstable)


def test_defaults_follow_each_levels_bootstrap_version():
    assert fv.default_levels(21) == {"kraft.version": 1, "transaction.version": 0, "group.version": 0,
                                     "eligible.leader.replicas.version": 0, "share.version": 0, "streams.version": 0}
    assert fv.default_levels(30) == {"kraft.version": 1, "transaction.version": 2, "group.version": 1,
                                     "eligible.leader.replicas.version": 1, "share.version": 1, "streams.version": 1}
    assert fv.default_levels(25)["eligible.leader.replicas.version"] == 0      # ELR is on by default from 4.1-IV0
    with pytest.raises(ValueError, match="because it depends on metadata.version level 23"):
        fv.validate_version("eligible.leader.replicas.version", 1, {"metadata.version": 22})


@pytest.mark.parametrize("tool", ["storage", "features"])
def test_version_mapping_prints_the_level_as_given_and_each_default(capsys, tool):
    assert run(capsys, tool, "version-mapping", "--release-version", "4.0") == (0, (
        "metadata.version=25 (4.0)\nkraft.version=1\ntransaction.version=2\ngroup.version=1\n"
        "eligible.leader.replicas.version=0\nshare.version=0\nstreams.version=0\n"), "")
    status, out, _ = run(capsys, tool, "version-mapping")
    assert status == 0 and out.startswith("metadata.version=30 (4.3-IV0)\n")
    status, out, err = run(capsys, tool, "version-mapping", "--release-version", "4.4")
    assert (status, out) == (1, "") and err.startswith("Unknown metadata.version '4.4'. ")


def test_feature_dependencies_in_both_tools_wordings(capsys):
    ok = (0, "eligible.leader.replicas.version=1 requires:\n    metadata.version=23 (4.0-IV1)\n"
             "metadata.version=30 (4.3-IV0) has no dependencies.\ngroup.version=1 has no dependencies.\n", "")
    for tool in ("storage", "features"):
        assert run(capsys, tool, "feature-dependencies", "--feature", "eligible.leader.replicas.version=1",
                   "--feature", "metadata.version=30", "--feature", " group.version = 1") == ok
    assert run(capsys, "storage", "feature-dependencies", "--feature", "group.version=2") == \
        (1, "", "Feature level 2 is not supported for feature group.version\n")
    assert run(capsys, "features", "feature-dependencies", "--feature", "group.version=2") == \
        (1, "", "No feature:group.version with feature level 2\n")
    assert run(capsys, "storage", "feature-dependencies", "--feature", "x") == \
        (1, "", "Invalid feature format: x. Expected format: 'feature=version' (e.g. 'group.version=1')\n")
    assert run(capsys, "features", "feature-dependencies", "--feature", "x") == \
        (1, "", "Can't parse feature=level string x: equals sign not found.\n")
    # the lines before a refusal are out first
    assert run(capsys, "features", "feature-dependencies", "--feature", "metadata.version=7",
               "--feature", "metadata.version=99") == \
        (1, "metadata.version=7 (3.3-IV3) has no dependencies.\n", "Unknown metadata.version 99\n")
