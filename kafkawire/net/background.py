"""Background tasks whose failure is logged, not lost.

A task nobody awaits that raises keeps its exception to itself: asyncio reports it, if at all, as
"Task exception was never retrieved" when the task is garbage-collected, with no word of what the
task was for. In a broker that is work that silently stopped (a topic never created, a state never
written). ``start`` runs a coroutine in a task whose unexpected failure is logged at once, once,
naming the work it stood for; the owner still retries or answers an error where it can."""
from __future__ import annotations

import asyncio
import contextvars
import functools
import logging

log = logging.getLogger(__name__)


def start(coroutine, what: str, *, keep: set | None = None, logger: logging.Logger | None = None,
          reported: tuple[type[BaseException], ...] = (),
          context: contextvars.Context | None = None) -> asyncio.Task:
    """Run ``coroutine`` in the background; ``what`` names its work in the message logged if it
    raises. ``keep`` (a set) holds the task while it runs (asyncio keeps only weak references);
    ``reported``: exceptions not logged here, their cause being logged where it happened (a
    node's failure, which every wait on the node then raises); ``context``: the context variables
    the task runs in (by default a copy of the caller's, as asyncio's; a fresh
    ``contextvars.Context()`` for work that is no part of the caller's request)."""
    if context is None:
        task = asyncio.ensure_future(coroutine)
    else:
        task = asyncio.get_running_loop().create_task(coroutine, context=context)
    if keep is not None:
        keep.add(task)
        task.add_done_callback(keep.discard)
    task.add_done_callback(functools.partial(log_failure, what, logger or log, reported))
    return task


def log_failure(what: str, logger: logging.Logger, reported: tuple, task: asyncio.Future) -> None:
    """A done-callback: log the task's exception, if any (a cancel is no failure), as an error
    naming ``what`` failed; retrieving it also keeps asyncio from reporting it again."""
    if task.cancelled():
        return
    failure = task.exception()
    if failure is not None and not isinstance(failure, reported):
        logger.error("%s failed: %s", what, failure or type(failure).__name__,
                     exc_info=(type(failure), failure, failure.__traceback__))
