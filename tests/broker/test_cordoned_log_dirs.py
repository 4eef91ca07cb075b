"""Cordoned log directories on the broker (KIP-1066, ``cordoned.log.dirs``), in process on a
stand-in metadata image: the static setting checked as KafkaConfig checks it; new logs placed
outside the cordoned directories (all cordoned: the first); AlterReplicaLogDirs refusing a
cordoned destination; DescribeLogDirs' isCordoned from metadata.version 4.3-IV0; the heartbeats'
CordonedLogDirs (left out while STARTING and below 4.3-IV0), sent again at once when this
broker's dynamic value changes it. The controller's side: tests/controller/test_create_topics.py;
the whole round with kafkawire processes: tests/broker/test_cordoned_log_dirs_wire.py.
"""
from __future__ import annotations

import asyncio
from types import SimpleNamespace

import pytest

from kafkawire.broker.metrics import log_manager_families
from kafkawire.metadata.image import BROKER_RESOURCE
from kafkawire.net.config import ConfigError, parse_server_config
from kafkawire.protocol.error_codes import Errors

from .test_log_dirs import altered, heartbeats_recorded, image_of, make_broker, parent, registration

NODE = ("process.roles=broker,controller\nnode.id=1\ncontroller.listener.names=CONTROLLER\n"
        "listeners=PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:0\ncontroller.quorum.bootstrap.servers=127.0.0.1:1\n")


def test_the_static_setting_is_checked_as_kafka_config_checks_it(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    with pytest.raises(ConfigError, match=r"must be present in log.dirs or log.dir. Missing entries : /elsewhere"):
        parse_server_config(NODE + f"log.dirs={a},{b}\ncordoned.log.dirs={a},/elsewhere\n")
    with pytest.raises(ConfigError, match=r"When cordoned.log.dirs is set to \*, it must not contain other values"):
        parse_server_config(NODE + f"log.dirs={a},{b}\ncordoned.log.dirs=*,{a}\n")
    assert parse_server_config(NODE + f"log.dirs={a},{b}\ncordoned.log.dirs=*\n").cordoned_log_dirs == ("*",)
    assert parse_server_config(NODE + f"log.dirs={a},{b}\n").cordoned_log_dirs == ()


def set_configs(state, configs):
    """The image's dynamic configs changed, as a later metadata offset shows it."""
    image = state["image"]
    image.configs = configs
    image.provenance = SimpleNamespace(offset=getattr(getattr(image, "provenance", None), "offset", 0) + 1)


def cordoned_broker(tmp_path, metadata_version=30, cordoned="a"):
    dirs = [tmp_path / "a", tmp_path / "b"]
    for d in dirs:
        d.mkdir()
    image = image_of({i: registration() for i in range(3)}, metadata_version=metadata_version)
    broker, state = make_broker(dirs, image)
    # the static setting, as parse_server_config reads it
    broker.config = parse_server_config(NODE + f"log.dirs={dirs[0]},{dirs[1]}\ncordoned.log.dirs={tmp_path / cordoned}\n")
    broker.dir_assignments.submit = lambda *a: None
    beats = heartbeats_recorded(broker, cordoned_log_dirs=broker.cordoned_dirs.heartbeat_ids)
    return broker, state, dirs, beats


def test_new_logs_avoid_cordoned_directories_and_a_cordoned_destination_is_refused(tmp_path):
    async def go():
        broker, state, dirs, beats = cordoned_broker(tmp_path)
        broker.lifecycle.state = "RUNNING"
        broker.on_metadata()
        assert [parent(broker.partitions[("t", i)]) for i in range(3)] == [str(dirs[1])] * 3
        assert await altered(broker, dirs[0], 0) == {("t", 0): Errors.INVALID_REPLICA_ASSIGNMENT}
        assert [(r.log_dir, r.is_cordoned) for r in broker.log_dir_apis.log_dir_results(None)] == [
            (str(dirs[0]), True), (str(dirs[1]), False)]
        # every directory cordoned (this broker's dynamic value wins over the static one): a new
        # log goes to the first, as Kafka's nextLogDirs falls back
        set_configs(state, {(BROKER_RESOURCE, "1"): {"cordoned.log.dirs": "*"}})
        state["image"].topics_by_name["t"].partitions[3] = registration()
        broker.on_metadata()
        assert parent(broker.partitions[("t", 3)]) == str(dirs[0])
        assert [r.is_cordoned for r in broker.log_dir_apis.log_dir_results(None)] == [True, True]
        gauges = {(f.name, tuple(labels.items())): value for f in log_manager_families(broker.log_dirs)
                  for labels, value in f.samples}
        assert gauges[("kafka_log_logmanager_cordonedlogdirectorycount", ())] == 2
        assert gauges[("kafka_log_logmanager_logdirectorycordoned", (("logDirectory", str(dirs[1])),))] == 1
        assert gauges[("kafka_log_logmanager_logdirectoryoffline", (("logDirectory", str(dirs[1])),))] == 0
        # a dynamic empty value uncordons both; the cluster default is not a per-broker config's level
        set_configs(state, {(BROKER_RESOURCE, "1"): {"cordoned.log.dirs": ""},
                            (BROKER_RESOURCE, ""): {"cordoned.log.dirs": str(dirs[1])}})
        broker.on_metadata()
        assert broker.log_dirs.cordoned == frozenset()
        assert await altered(broker, dirs[0], 1) == {("t", 1): Errors.NONE}
        broker.lifecycle = SimpleNamespace(state="RUNNING", poke=lambda: None, broker_epoch=5)
        await broker.stop(graceful=False)
    asyncio.run(go())


def test_below_4_3_the_directories_are_still_avoided_but_neither_described_nor_sent(tmp_path):
    async def go():
        broker, state, dirs, beats = cordoned_broker(tmp_path, metadata_version=29, cordoned="b")
        broker.lifecycle.state = "RUNNING"
        broker.on_metadata()
        assert {parent(p) for p in broker.partitions.values()} == {str(dirs[0])}
        assert [r.is_cordoned for r in broker.log_dir_apis.log_dir_results(None)] == [False, False]
        await broker.lifecycle._heartbeat_once()
        assert beats[-1].cordoned_log_dirs is None
        broker.lifecycle = SimpleNamespace(state="RUNNING", poke=lambda: None, broker_epoch=5)
        await broker.stop(graceful=False)
    asyncio.run(go())


def test_heartbeats_carry_the_cordoned_ids_once_caught_up_and_a_change_at_once(tmp_path):
    async def go():
        broker, state, dirs, beats = cordoned_broker(tmp_path)
        id_a, id_b = broker.log_dirs.ids()
        await broker.lifecycle._heartbeat_once()           # STARTING: not caught up yet, the field left out
        assert beats[-1].cordoned_log_dirs is None and broker.lifecycle.state == "RECOVERY"
        broker.on_metadata()
        await broker.lifecycle._heartbeat_once()
        assert beats[-1].cordoned_log_dirs == [id_a]
        broker.lifecycle._wake.clear()
        set_configs(state, {(BROKER_RESOURCE, "1"): {"cordoned.log.dirs": f"{dirs[0]},{dirs[1]}"}})
        broker.on_metadata()
        assert broker.lifecycle._wake.is_set()             # the next heartbeat goes now
        await broker.lifecycle._heartbeat_once()
        assert beats[-1].cordoned_log_dirs == [id_a, id_b]
        broker.lifecycle._wake.clear()
        state["image"].topics_by_name["t"].partitions[4] = registration()    # a change that is not the setting's
        broker.on_metadata()
        assert broker.lifecycle.state == "RUNNING" and not broker.lifecycle._wake.is_set()
        broker.lifecycle = SimpleNamespace(state="RUNNING", poke=lambda: None, broker_epoch=5)
        await broker.stop(graceful=False)
    asyncio.run(go())
