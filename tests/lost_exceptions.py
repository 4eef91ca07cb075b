"""Exceptions of background asyncio work that nobody retrieved, named in the test run.

A task that raises and that nobody awaits is reported by asyncio only as "Task exception was
never retrieved", on the ``asyncio`` logger, when the task is garbage-collected: a test passes
all the same, and in production that is work that silently stopped (issue 29: a stand-in broker
without the share coordinator's APIs hid one for weeks). This plugin notes each such report (and
"Exception in callback", "Task was destroyed but it is pending", an exception of a server's
connection callback) and warns in the test during which asyncio logged it, so pytest's warnings
summary names that test (under pytest-xdist too), and lists them all at the end of the run
(without xdist). The report names the task's coroutine; the task may be an earlier test's (it is
reported when the collector frees it), which is why this warns and does not fail: which test sees
it depends on when the collector runs."""
from __future__ import annotations

import gc
import logging
import sys

import pytest

REPORTS = ("Task exception was never retrieved", "Future exception was never retrieved",
           "Exception in callback", "Task was destroyed but it is pending",
           "Unhandled exception in client_connected_cb")          # asyncio.start_server's callback


class AsyncioLostException(pytest.PytestWarning):
    """asyncio reported an exception (or a task) nobody retrieved during this test."""


class _Noting(logging.Handler):
    def __init__(self):
        super().__init__(logging.ERROR)
        self.unseen: list[str] = []         # since the last test's teardown
        self.every: list[tuple[str, str]] = []

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        if not message.startswith(REPORTS):
            return
        lines = message.splitlines()[:2]
        if record.exc_info and record.exc_info[1] is not None:
            lines.append(f"exception: {record.exc_info[1]!r}")
        self.unseen.append(" | ".join(lines))


_noting = _Noting()


def install(config) -> None:
    logging.getLogger("asyncio").addHandler(_noting)
    config.pluginmanager.register(sys.modules[__name__], "kafkawire-lost-exceptions")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_teardown(item):
    yield
    reports, _noting.unseen = _noting.unseen, []
    for report in reports:
        _noting.every.append((item.nodeid, report))
        item.warn(AsyncioLostException(f"asyncio logged during this test: {report}"))


def pytest_terminal_summary(terminalreporter):
    gc.collect()                        # the tasks freed only by the collector, reported now
    _noting.every.extend(("(at the end of the run)", report) for report in _noting.unseen)
    _noting.unseen = []
    if _noting.every:
        terminalreporter.section("asyncio: exceptions nobody retrieved (tests/lost_exceptions.py)", yellow=True)
        for nodeid, report in _noting.every:
            terminalreporter.line(f"{nodeid}: {report}")
