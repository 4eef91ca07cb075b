"""The BROKER_LOGGER resource on Python's logging (kafkawire/net/runtime_loggers.py): Kafka's
RuntimeLoggerManager rules and messages, log4j's level names, and changes that take effect."""
import logging
from types import SimpleNamespace

import pytest

from kafkawire.net import runtime_loggers as rl

NAME = "kafkawire.tests.runtime_loggers"


def change(name, operation, value=None):
    return SimpleNamespace(name=name, config_operation=operation, value=value)


@pytest.fixture
def logger():
    made = logging.getLogger(NAME)
    yield made
    made.setLevel(logging.NOTSET)


def test_every_logger_and_root_with_log4j_level_names(logger):
    logger.setLevel(rl.TRACE)
    levels = rl.loggers()
    assert levels[NAME] == "TRACE" and levels["root"] == rl._level_name(logging.getLogger().getEffectiveLevel())
    for python, log4j in ((logging.DEBUG, "DEBUG"), (logging.WARNING, "WARN"), (logging.CRITICAL, "FATAL"),
                          (logging.WARNING + 5, "WARN")):
        logger.setLevel(python)
        assert rl.loggers()[NAME] == log4j


def test_set_and_unset_take_effect(logger):
    logging.getLogger("kafkawire.tests").setLevel(logging.ERROR)
    try:
        rl.validate_changes([change(NAME, rl.SET, "DEBUG")])
        rl.apply_changes([change(NAME, rl.SET, "DEBUG")])
        assert logger.isEnabledFor(logging.DEBUG) and rl.loggers()[NAME] == "DEBUG"
        rl.apply_changes([change(NAME, rl.DELETE)])
        assert logger.level == logging.NOTSET and rl.loggers()[NAME] == "ERROR"     # its parent's again
    finally:
        logging.getLogger("kafkawire.tests").setLevel(logging.NOTSET)


@pytest.mark.parametrize("changes, message, invalid_request", [
    ([change("no.such.logger", rl.SET, "INFO")], "Logger no.such.logger does not exist!", False),
    ([change(NAME, rl.SET, "debug")], f"Cannot set the log level of {NAME} to debug as it is not a supported log "
                                      "level. Valid log levels are DEBUG, ERROR, FATAL, INFO, TRACE, WARN", False),
    ([change("root", rl.DELETE)], "Removing the log level of the root logger is not allowed", True),
    ([change(NAME, rl.APPEND, "INFO")], "APPEND operation is not allowed for the BROKER_LOGGER resource", True),
    ([change(NAME, rl.SUBTRACT, "INFO")], "SUBTRACT operation is not allowed for the BROKER_LOGGER resource", True),
    ([change(NAME, 7, "INFO")], "Unknown operation type 7 is not allowed for the BROKER_LOGGER resource", True),
    ([change(NAME, rl.SET, "INFO"), change("nope", rl.DELETE)], "Logger nope does not exist!", False),
])
def test_refusals_carry_kafkas_messages(logger, changes, message, invalid_request):
    with pytest.raises(rl.LoggerChangeError) as caught:
        rl.validate_changes(changes)
    assert (str(caught.value), caught.value.invalid_request) == (message, invalid_request)


@pytest.mark.parametrize("name, message", [
    ("x", "Node id must be an integer, but it is: x"), (" 1", "Node id must be an integer, but it is:  1"),
    ("2", "Unexpected node id. Expected 1, but received 2"), ("+01", None), ("1", None),
])
def test_the_resource_names_this_node(name, message):
    if message is None:
        rl.validate_node_id(name, 1)
    else:
        with pytest.raises(rl.LoggerChangeError, match=f"^{message}$"):
            rl.validate_node_id(name, 1)
