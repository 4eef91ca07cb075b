"""`kafkawire features` against a fake controller (a KafkaServer whose ApiVersions carries the
features and whose UpdateFeatures answers are built here). The expected text is written from
FeatureCommand.java (Kafka 4.x): handleDescribe's printf, update()'s report lines, its refusals."""
from __future__ import annotations

import pytest

from kafkawire.messages import api_versions_response as av
from kafkawire.messages.describe_cluster_response import DescribeClusterBroker, DescribeClusterResponse
from kafkawire.messages.update_features_response import UpdatableFeatureResult, UpdateFeaturesResponse
from kafkawire.protocol.error_codes import Errors
from fake_node import FakeNode, answers_metadata, closed_port
from kafkawire.tools import features
from kafkawire.tools.cli import main

UPDATE_FEATURES, DESCRIBE_CLUSTER = 57, 60


def with_features(supported, finalized, epoch):
    def fill(response):
        response.supported_features = [av.SupportedFeatureKey(name=n, min_version=lo, max_version=hi)
                                       for n, (lo, hi) in supported.items()]
        response.finalized_features = [av.FinalizedFeatureKey(name=n, min_version_level=lvl, max_version_level=lvl)
                                       for n, lvl in finalized.items()]
        response.finalized_features_epoch = epoch
    return fill


def controller(update=None, **kwargs) -> FakeNode:
    """A fake active controller; ``update(request, version)`` answers UpdateFeatures (default: all done)."""
    node = FakeNode({}, **kwargs)

    def cluster(request, version):
        return DescribeClusterResponse(endpoint_type=request.endpoint_type, cluster_id="MkU3OEVBNTcwNTJENDM2Qk",
                                       controller_id=1,
                                       brokers=[DescribeClusterBroker(broker_id=1, host="127.0.0.1", port=node.port)])
    node.handlers = {DESCRIBE_CLUSTER: cluster,
                     UPDATE_FEATURES: update or (lambda r, v: UpdateFeaturesResponse(error_message=None))}
    return node


def kafkawire(capsys, *argv):
    rc = main(list(argv))
    out, err = capsys.readouterr()
    return rc, out, err


def sent_updates(node):
    [received] = node.requests(UPDATE_FEATURES)
    request = received.request
    return received.api_version, request, [(u.feature, u.max_version_level, u.upgrade_type)
                                           for u in request.feature_updates]


# --- describe ------------------------------------------------------------------------------------------

def test_describe(capsys):
    fill = with_features({"kraft.version": (0, 1), "metadata.version": (7, 29), "group.version": (0, 1)},
                         {"kraft.version": 1, "metadata.version": 21}, 5)
    with controller(features=fill) as node:
        rc, out, err = kafkawire(capsys, "features", "--bootstrap-controller", node.address, "describe")
    assert (rc, err) == (0, "")
    # Kafka 4.3's printf: "Feature: %-40s  SupportedMinVersion: %-15s  SupportedMaxVersion: %-15s
    # FinalizedVersionLevel: %-15s  Epoch: %s" (two spaces between the columns).
    assert out == (
        "Feature: group.version                             SupportedMinVersion: 0                "
        "SupportedMaxVersion: 1                FinalizedVersionLevel: 0                Epoch: 5\n"
        "Feature: kraft.version                             SupportedMinVersion: 0                "
        "SupportedMaxVersion: 1                FinalizedVersionLevel: 1                Epoch: 5\n"
        "Feature: metadata.version                          SupportedMinVersion: 3.3-IV3          "
        "SupportedMaxVersion: 4.2-IV1          FinalizedVersionLevel: 3.9-IV0          Epoch: 5\n")


def test_describe_without_epoch_and_unknown_metadata_level(capsys):
    fill = with_features({"metadata.version": (1, 99)}, {}, -1)
    with answers_metadata(controller(features=fill)) as node:
        rc, out, err = kafkawire(capsys, "features", "--bootstrap-server", node.address, "describe")
    assert (rc, err) == (0, "")
    assert out == ("Feature: metadata.version                          SupportedMinVersion: UNKNOWN 1        "
                   "SupportedMaxVersion: UNKNOWN 99       FinalizedVersionLevel: UNKNOWN 0        Epoch: -\n")


def test_describe_api():
    fill = with_features({"kraft.version": (0, 1)}, {"kraft.version": 1}, 12)
    with controller(features=fill) as node:
        described = features.describe_features(node.address)
    assert described == [features.FeatureDescription("kraft.version", 0, 1, 1, 12)]


# --- upgrade, downgrade, disable -------------------------------------------------------------------

def test_upgrade_feature(capsys):
    with controller() as node:
        rc, out, err = kafkawire(capsys, "features", "--bootstrap-controller", node.address, "--timeout", "5000",
                                 "upgrade", "--feature", "kraft.version=1")
    assert (rc, out, err) == (0, "kraft.version was upgraded to 1.\n", "")
    version, request, updates = sent_updates(node)
    assert version == 2 and updates == [("kraft.version", 1, 1)]
    assert request.validate_only is False and 0 < request.timeout_ms <= 5000


def test_upgrade_dry_run(capsys):
    with controller() as node:
        rc, out, err = kafkawire(capsys, "features", "--bootstrap-controller", node.address, "upgrade",
                                 "--feature", "kraft.version=1", "--dry-run")
    assert (rc, out, err) == (0, "kraft.version can be upgraded to 1.\n", "")
    assert sent_updates(node)[1].validate_only is True


# The request lists the updates in the iteration order of the tool's HashMap; these orders are what
# a Java 17 HashMap<String, ?> filled with the same keys in the same order printed.
def test_upgrade_release_version(capsys):
    with controller() as node:
        rc, out, err = kafkawire(capsys, "features", "--bootstrap-controller", node.address, "upgrade",
                                 "--release-version", "4.2-IV1")
    assert (rc, err) == (0, "")
    assert out == ("eligible.leader.replicas.version was upgraded to 1.\n"
                   "group.version was upgraded to 1.\n"
                   "kraft.version was upgraded to 1.\n"
                   "metadata.version was upgraded to 29.\n"
                   "share.version was upgraded to 1.\n"
                   "streams.version was upgraded to 1.\n"
                   "transaction.version was upgraded to 2.\n")
    assert sent_updates(node)[2] == [("group.version", 1, 1), ("kraft.version", 1, 1), ("metadata.version", 29, 1),
                                     ("share.version", 1, 1), ("streams.version", 1, 1),
                                     ("transaction.version", 2, 1), ("eligible.leader.replicas.version", 1, 1)]


def test_upgrade_release_version_leaves_out_level_zero(capsys):
    with controller() as node:
        rc, out, err = kafkawire(capsys, "features", "--bootstrap-controller", node.address, "upgrade",
                                 "--release-version", "3.9")
    assert (rc, err) == (0, "")
    assert out == "kraft.version was upgraded to 1.\nmetadata.version was upgraded to 21.\n"
    assert sent_updates(node)[2] == [("kraft.version", 1, 1), ("metadata.version", 21, 1)]


def test_downgrade_release_version_sends_every_feature(capsys):
    with controller() as node:
        rc, out, err = kafkawire(capsys, "features", "--bootstrap-controller", node.address, "downgrade",
                                 "--release-version", "3.9-IV0", "--unsafe")
    assert (rc, err) == (0, "")
    assert out.splitlines() == ["eligible.leader.replicas.version was downgraded to 0.", "group.version was downgraded to 0.",
                                "kraft.version was downgraded to 1.", "metadata.version was downgraded to 21.",
                                "share.version was downgraded to 0.", "streams.version was downgraded to 0.",
                                "transaction.version was downgraded to 0."]
    assert sent_updates(node)[2] == [("group.version", 0, 3), ("kraft.version", 1, 3), ("metadata.version", 21, 3),
                                     ("share.version", 0, 3), ("streams.version", 0, 3),
                                     ("transaction.version", 0, 3), ("eligible.leader.replicas.version", 0, 3)]


def test_downgrade_and_disable(capsys):
    with controller() as node:
        rc, out, err = kafkawire(capsys, "features", "--bootstrap-controller", node.address, "downgrade",
                                 "--feature", "kraft.version=0", "--feature", "group.version=0")
        assert (rc, err) == (0, "")
        assert out == "group.version was downgraded to 0.\nkraft.version was downgraded to 0.\n"
        rc, out, err = kafkawire(capsys, "features", "--bootstrap-controller", node.address, "disable",
                                 "--feature", "group.version", "--dry-run")
    assert (rc, out, err) == (0, "group.version can be disabled.\n", "")
    first, second = node.requests(UPDATE_FEATURES)
    assert [(u.feature, u.max_version_level, u.upgrade_type) for u in first.request.feature_updates] == \
        [("group.version", 0, 2), ("kraft.version", 0, 2)]
    assert [(u.feature, u.max_version_level, u.upgrade_type) for u in second.request.feature_updates] == \
        [("group.version", 0, 2)]
    assert second.request.validate_only is True


def test_per_feature_errors_v1(capsys):
    """UpdateFeatures v1 answers per feature; a feature the answer leaves out fails too."""
    def update(request, version):
        return UpdateFeaturesResponse(error_message=None, results=[
            UpdatableFeatureResult(feature="kraft.version", error_code=int(Errors.INVALID_UPDATE_VERSION),
                                   error_message="kraft.version cannot go to 1 yet"),
            UpdatableFeatureResult(feature="group.version", error_message=None)])
    with controller(update, max_versions={UPDATE_FEATURES: 1}) as node:
        rc, out, err = kafkawire(capsys, "features", "--bootstrap-controller", node.address, "upgrade",
                                 "--feature", "kraft.version=1", "--feature", "group.version=1",
                                 "--feature", "share.version=1")
    assert rc == 1
    assert out == ("group.version was upgraded to 1.\n"
                   "Could not upgrade kraft.version to 1. kraft.version cannot go to 1 yet\n"
                   "Could not upgrade share.version to 1. The controller response did not contain a result for "
                   "feature share.version\n")
    assert err == "2 out of 3 operation(s) failed.\n"
    assert sent_updates(node)[0] == 1


def test_top_level_error(capsys):
    update = lambda r, v: UpdateFeaturesResponse(error_code=int(Errors.INVALID_UPDATE_VERSION), error_message=None)  # noqa: E731
    with controller(update) as node:
        rc, out, err = kafkawire(capsys, "features", "--bootstrap-controller", node.address, "upgrade",
                                 "--feature", "kraft.version=1", "--dry-run")
    assert (rc, err) == (1, "1 out of 1 operation(s) failed.\n")
    assert out == "Can not upgrade kraft.version to 1. The given update version was invalid.\n"


def test_not_controller_is_retried(capsys):
    answers = iter([UpdateFeaturesResponse(error_code=int(Errors.NOT_CONTROLLER), error_message=None)])
    with controller(lambda r, v: next(answers, UpdateFeaturesResponse(error_message=None))) as node:
        rc, out, err = kafkawire(capsys, "features", "--bootstrap-controller", node.address, "disable",
                                 "--feature", "group.version")
    assert (rc, out, err) == (0, "group.version was disabled.\n", "")
    assert len(node.requests(UPDATE_FEATURES)) == 2


def test_metadata_flag_is_deprecated(capsys):
    with answers_metadata(controller()) as node:
        rc, out, err = kafkawire(capsys, "features", "--bootstrap-server", node.address, "upgrade",
                                 "--metadata", "3.9-IV0")
    assert (rc, err) == (0, "")
    assert out == " `metadata` flag is deprecated and may be removed in a future release.\n" \
                  "metadata.version was upgraded to 21.\n"


# Kafka 4.3.1's FeatureCommand parses release versions allowing unstable ones: the list ends at 4.4-IV0.
SUPPORTED = ("3.3-IV3, 3.4-IV0, 3.5-IV0, 3.5-IV1, 3.5-IV2, 3.6-IV0, 3.6-IV1, 3.6-IV2, 3.7-IV0, 3.7-IV1, 3.7-IV2, "
             "3.7-IV3, 3.7-IV4, 3.8-IV0, 3.9-IV0, 4.0-IV0, 4.0-IV1, 4.0-IV2, 4.0-IV3, 4.1-IV0, 4.1-IV1, 4.2-IV0, 4.2-IV1, "
             "4.3-IV0, 4.4-IV0")


@pytest.mark.parametrize("argv, out, message", [
    (["upgrade", "--feature", "kraft.version"], "", "Can't parse feature=level string kraft.version: equals sign not found."),
    (["upgrade", "--feature", "kraft.version=one"], "",
     "Can't parse feature=level string kraft.version=one: unable to parse one as a short."),
    (["upgrade", "--feature", "kraft.version=40000"], "",
     "Can't parse feature=level string kraft.version=40000: unable to parse 40000 as a short."),
    (["upgrade", "--feature", "kraft.version=1", "--feature", "kraft.version = 1"], "",
     "Feature kraft.version was specified more than once."),
    (["upgrade", "--release-version", "4.0", "--feature", "kraft.version=1"], "",
     "Can not specify `release-version` with other feature flags."),
    (["upgrade", "--release-version", "3.2-IV0"], "", f"Unknown metadata.version '3.2-IV0'. Supported metadata.version are: {SUPPORTED}"),
    (["upgrade", "--metadata", "9.9"], " `metadata` flag is deprecated and may be removed in a future release.\n",
     f"Unknown metadata.version '9.9'. Supported metadata.version are: {SUPPORTED}"),
    (["upgrade", "--feature", "kraft.version=0"], "", "The upgradeType flag should be set to SAFE_DOWNGRADE or "
                                                      "UNSAFE_DOWNGRADE when the provided maxVersionLevel:0 is < 1."),
    (["downgrade", "--feature", "kraft.version=-1"], "", "Cannot specify a negative version level."),
    (["upgrade"], "", "You must specify at least one feature to upgrade"),
    (["disable"], "", "You must specify at least one feature to disable"),
    (["disable", "--feature", "a", "--feature", "a"], "", "Feature a was specified more than once."),
    (["upgrade", "--feature", " =1"], "", "Provided feature can not be empty."),
])
def test_refusals(capsys, argv, out, message):
    rc, printed, err = kafkawire(capsys, "features", "--bootstrap-controller", f"127.0.0.1:{closed_port()}", *argv)
    assert (rc, printed, err) == (1, out, message + "\n")


# --- connections, flags -------------------------------------------------------------------------------

def test_refused_connection(capsys):
    port = closed_port()
    rc, out, err = kafkawire(capsys, "features", "--bootstrap-controller", f"127.0.0.1:{port}", "--timeout", "300",
                             "upgrade", "--feature", "kraft.version=1")
    assert rc == 1
    assert out.startswith("Could not upgrade kraft.version to 1. Timed out waiting for a node assignment. "
                          "Call: updateFeatures (last error: ")
    assert out.count("\n") == 1 and "refused" in out
    # each failed attempt is a WARN line first (issue 20, item 6), then the tool's own line
    *warnings, last = err.splitlines()
    assert warnings and all(" WARN updateFeatures: attempt " in w and f"127.0.0.1:{port}" in w for w in warnings)
    assert last == "1 out of 1 operation(s) failed."
    rc, out, err = kafkawire(capsys, "features", "--bootstrap-server", f"127.0.0.1:{port}", "--timeout", "300",
                             "describe")
    *warnings, last = err.splitlines()
    assert (rc, out) == (1, "") and warnings and all(" WARN describeFeatures: attempt " in w for w in warnings)
    assert last.startswith("org.apache.kafka.common.errors.TimeoutException: Timed out waiting for a node assignment. "
                           "Call: describeFeatures")


def test_bad_flags(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["features", "--bootstrap-server", "a:1", "upgrade", "--unsafe"])
    out, err = capsys.readouterr()
    assert exit_.value.code != 0 and "unrecognized arguments: --unsafe" in err and "Traceback" not in err


@pytest.mark.parametrize("keys, java_order", [
    # java.util.HashMap iteration orders, from a Java 17 run with these keys put in this order.
    (["metadata.version", "kraft.version"], ["kraft.version", "metadata.version"]),
    (["kraft.version", "group.version"], ["group.version", "kraft.version"]),
    (["b", "a", "c", "kraft.version", "x.y"], ["a", "b", "x.y", "c", "kraft.version"]),
])
def test_java_hashmap_order(keys, java_order):
    assert features.java_hashmap_order(keys) == java_order
    assert features.java_string_hash("kraft.version") == -868769006 & 0xFFFFFFFF       # "kraft.version".hashCode()


# --- describe --node-id (Kafka 4.3) ------------------------------------------------------------------

def test_describe_node_id_asks_that_controller(capsys):
    """DescribeCluster names controllers 1 (active) and 2; --node-id 2 asks node 2's ApiVersions."""
    active = controller(features=with_features({"kraft.version": (0, 1)}, {"kraft.version": 1}, 5))
    other = FakeNode({}, features=with_features({"kraft.version": (0, 1)}, {"kraft.version": 1}, 4))
    active.handlers[DESCRIBE_CLUSTER] = lambda request, version: DescribeClusterResponse(
        endpoint_type=request.endpoint_type, cluster_id="MkU3OEVBNTcwNTJENDM2Qk", controller_id=1,
        brokers=[DescribeClusterBroker(broker_id=1, host="127.0.0.1", port=active.port),
                 DescribeClusterBroker(broker_id=2, host="127.0.0.1", port=other.port)])
    with active, other:
        results = [kafkawire(capsys, "features", "--bootstrap-controller", active.address, "describe", *flags)
                   for flags in ([], ["--node-id", "2"], ["--node-id", "1"])]
    assert [(rc, err) for rc, _, err in results] == [(0, "")] * 3
    assert [out.rstrip("\n").rsplit("Epoch: ", 1)[1] for _, out, _ in results] == ["5", "4", "5"]


def test_describe_node_id_of_a_broker(capsys):
    fill = with_features({"kraft.version": (0, 1)}, {"kraft.version": 1}, 7)
    with answers_metadata(controller(features=fill), node_id=3) as node:
        rc, out, err = kafkawire(capsys, "features", "--bootstrap-server", node.address, "describe", "--node-id", "3")
    assert (rc, err) == (0, "")
    assert out.rstrip("\n").endswith("Epoch: 7")


def test_describe_node_id_unknown_waits_for_a_node_until_the_timeout(capsys):
    with controller() as node:
        rc, out, err = kafkawire(capsys, "features", "--bootstrap-controller", node.address, "--timeout", "600",
                                 "describe", "--node-id", "9")
    assert (rc, out) == (1, "")
    # Kafka's Admin keeps the call pending (ConstantNodeIdProvider finds no node 9) until its deadline.
    assert err == "org.apache.kafka.common.errors.TimeoutException: Timed out waiting for a node assignment. " \
                  "Call: describeFeatures\n"
    assert len(node.requests(DESCRIBE_CLUSTER)) >= 2          # the metadata was asked again


def test_describe_negative_node_id(capsys):
    with controller() as node:
        rc, out, err = kafkawire(capsys, "features", "--bootstrap-controller", node.address, "describe",
                                 "--node-id", "-1")
    assert (rc, out, err) == (1, "", "Invalid node id -1: must be non-negative.\n")
    assert node.received == []
