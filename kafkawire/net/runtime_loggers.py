"""The BROKER_LOGGER resource (KIP-412): a node's log levels, read with DescribeConfigs and
changed with IncrementalAlterConfigs (``kafka-configs --entity-type broker-loggers --entity-name
<node id>``), as Kafka's RuntimeLoggerManager and LoggingController do it, on Python's logging.

The loggers are the process's: ``root`` and every ``logging.Logger`` made so far (kafkawire's are
named after their modules, ``kafkawire.broker.fetch`` and so on, as Kafka's are after classes).
Levels are log4j's names, mapped to Python's: TRACE (5, below DEBUG), DEBUG, INFO, WARN
(WARNING), ERROR, FATAL (CRITICAL). A logger's level is its effective one; DELETE unsets a
logger's own level (NOTSET: it takes its parent's again), and root's may not be unset. Changes
are not persisted: a restart applies the node's log configuration again, as in Kafka.
"""
from __future__ import annotations

import logging
import re

from kafkawire.protocol.error_codes import Errors

__all__ = ["LoggerChangeError", "ROOT_LOGGER", "loggers", "validate_changes", "apply_changes",
           "validate_node_id", "change_for_resource"]

log = logging.getLogger(__name__)

ROOT_LOGGER = "root"
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3
TRACE = 5
_LEVELS = {"TRACE": TRACE, "DEBUG": logging.DEBUG, "INFO": logging.INFO, "WARN": logging.WARNING,
           "ERROR": logging.ERROR, "FATAL": logging.CRITICAL}
_VALID = ", ".join(sorted(_LEVELS))
_OPERATIONS = {APPEND: "APPEND", SUBTRACT: "SUBTRACT"}
_JAVA_INT = re.compile(r"[+-]?[0-9]+")          # what Integer.parseInt reads (no spaces)


class LoggerChangeError(Exception):
    """A refused change: ``invalid_request`` (INVALID_REQUEST) or INVALID_CONFIG, Kafka's message."""

    def __init__(self, message: str, *, invalid_request: bool):
        super().__init__(message)
        self.invalid_request = invalid_request


def _level_name(level: int) -> str:
    """log4j's name of a Python level: the highest log4j level at or below it (a custom Python
    level between two reads as the lower)."""
    name = "TRACE"
    for candidate, value in _LEVELS.items():
        if value <= level:
            name = candidate
    return name


def loggers() -> dict[str, str]:
    """Every logger of the process with its effective level, root included."""
    found = {name: _level_name(logger.getEffectiveLevel())
             for name, logger in list(logging.Logger.manager.loggerDict.items()) if isinstance(logger, logging.Logger)}
    found[ROOT_LOGGER] = _level_name(logging.getLogger().getEffectiveLevel())
    return found


def _exists(name: str) -> bool:
    if name == ROOT_LOGGER:
        return True
    return isinstance(logging.Logger.manager.loggerDict.get(name), logging.Logger)


def validate_node_id(resource_name: str, node_id: int) -> None:
    """RuntimeLoggerManager.validateResourceNameIsNodeId."""
    requested = int(resource_name) if _JAVA_INT.fullmatch(resource_name) else None
    if requested is None or not -(1 << 31) <= requested < (1 << 31):
        raise LoggerChangeError(f"Node id must be an integer, but it is: {resource_name}", invalid_request=True)
    if requested != node_id:
        raise LoggerChangeError(f"Unexpected node id. Expected {node_id}, but received {requested}",
                                invalid_request=True)


def validate_changes(configs) -> None:
    """RuntimeLoggerManager.validateLogLevelConfigs over ``configs`` (AlterableConfig: name,
    config_operation, value), in order; LoggerChangeError for the first refused."""
    for change in configs:
        name, operation = change.name, change.config_operation
        if operation in (SET, DELETE) and not _exists(name):
            raise LoggerChangeError(f"Logger {name} does not exist!", invalid_request=False)
        if operation == SET and change.value not in _LEVELS:
            raise LoggerChangeError(f"Cannot set the log level of {name} to {change.value} as it is not a supported "
                                    f"log level. Valid log levels are {_VALID}", invalid_request=False)
        if operation == DELETE and name == ROOT_LOGGER:
            raise LoggerChangeError(f"Removing the log level of the {ROOT_LOGGER} logger is not allowed",
                                    invalid_request=True)
        if operation in _OPERATIONS:
            raise LoggerChangeError(f"{_OPERATIONS[operation]} operation is not allowed for the BROKER_LOGGER "
                                    "resource", invalid_request=True)
        if operation not in (SET, DELETE):
            raise LoggerChangeError(f"Unknown operation type {operation} is not allowed for the BROKER_LOGGER "
                                    "resource", invalid_request=True)


def apply_changes(configs) -> None:
    """RuntimeLoggerManager.alterLogLevelConfigs, after ``validate_changes``."""
    for change in configs:
        logger = logging.getLogger() if change.name == ROOT_LOGGER else logging.getLogger(change.name)
        if change.config_operation == SET:
            logger.setLevel(_LEVELS[change.value])
            log.warning("Updated the log level of %s to %s", change.name, change.value)
        else:
            logger.setLevel(logging.NOTSET)
            log.warning("Unset the log level of %s", change.name)


def change_for_resource(resource, node_id: int, *, authorized: bool, validate_only: bool) -> tuple[int, str | None]:
    """RuntimeLoggerManager.applyChangesForResource of one BROKER_LOGGER resource (an
    IncrementalAlterConfigs AlterConfigsResource) on node ``node_id``: its (error code, message).
    ``authorized``: the node's check passed (a broker's ALTER_CONFIGS, a controller's
    CLUSTER_ACTION, on the cluster)."""
    if not authorized:
        return int(Errors.CLUSTER_AUTHORIZATION_FAILED), Errors.CLUSTER_AUTHORIZATION_FAILED.message
    try:
        validate_node_id(resource.resource_name, node_id)
        validate_changes(resource.configs)
    except LoggerChangeError as exc:
        return int(Errors.INVALID_REQUEST if exc.invalid_request else Errors.INVALID_CONFIG), str(exc)
    if not validate_only:
        apply_changes(resource.configs)
    return int(Errors.NONE), None
