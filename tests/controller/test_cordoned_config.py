"""The active controller's checks of a broker's ``cordoned.log.dirs`` (Kafka 4.3.1's
ConfigurationControlManager): refused below metadata.version 4.3-IV0, and, sent directly to the
controller (not forwarded by the broker, which checks the paths), only a subset of the current
value is taken; forwarded, any value passes here (the broker checked it against its log.dirs)."""
from __future__ import annotations

from types import SimpleNamespace

from kafkawire.controller.configs import incremental_alter_configs
from kafkawire.messages.incremental_alter_configs_request import (AlterableConfig, AlterConfigsResource,
                                                                  IncrementalAlterConfigsRequest)
from kafkawire.protocol.error_codes import Errors

SET, DELETE = 0, 1
SUBSET_ONLY = ("When updating cordoned.log.dirs via controllers,  the new value must be a subset of the current "
               "configuration value.")


def state(metadata_version: int, current: str | None = None):
    configs = {} if current is None else {(4, "1"): {"cordoned.log.dirs": current}}
    image = SimpleNamespace(configs=configs, metadata_version=metadata_version, finalized_features={},
                            brokers={1: object()}, controllers={}, topics_by_name={})
    return SimpleNamespace(image=image)


def answer(s, value, *, operation=SET, forwarded=False):
    request = IncrementalAlterConfigsRequest(resources=[AlterConfigsResource(resource_type=4, resource_name="1", configs=[
        AlterableConfig(name="cordoned.log.dirs", config_operation=operation, value=value)])])
    records, response = incremental_alter_configs(s, request, forwarded=forwarded)
    result = response.responses[0]
    return result.error_code, result.error_message, len(records)


def test_cordoned_log_dirs_need_4_3_iv0():
    assert answer(state(29), "/a", forwarded=True) == (
        Errors.INVALID_CONFIG, "The cordoned.log.dirs configuration value cannot be set because it requires "
                               "metadata.version >= 4.3-IV0", 0)
    assert answer(state(29), None, operation=DELETE, forwarded=True)[0] == Errors.INVALID_CONFIG
    assert answer(state(30), "/a", forwarded=True) == (Errors.NONE, None, 1)


def test_sent_directly_to_the_controller_only_a_subset_of_the_current_value_is_taken():
    assert answer(state(30, "/a, /b"), "/b") == (Errors.NONE, None, 1)
    assert answer(state(30, "/a,/b"), "/a,/c") == (Errors.INVALID_CONFIG, SUBSET_ONLY, 0)
    assert answer(state(30), "/a") == (Errors.INVALID_CONFIG, SUBSET_ONLY, 0)
    assert answer(state(30, "/a"), "  ") == (Errors.NONE, None, 1)             # emptied: always allowed
    assert answer(state(30, "/a"), None, operation=DELETE) == (Errors.NONE, None, 1)
    assert answer(state(30), "/a,/c", forwarded=True) == (Errors.NONE, None, 1)
