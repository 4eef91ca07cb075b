"""kafkawire.net.background.start: a background task's failure is logged once, naming its work,
and asyncio has nothing left to report; a cancel is no failure; the keeping set lets go."""
from __future__ import annotations

import asyncio
import contextvars
import gc
import logging

from kafkawire.net import background


def test_a_failure_is_logged_once_naming_the_work_and_a_cancel_is_not(caplog):
    async def go():
        kept: set = set()

        async def broken():
            raise ValueError("no such thing")

        failed = background.start(broken(), "Doing the thing", keep=kept)
        cancelled = background.start(asyncio.Event().wait(), "Waiting", keep=kept)
        await asyncio.sleep(0)
        cancelled.cancel()
        await asyncio.gather(cancelled, return_exceptions=True)
        while kept:                             # the done-callbacks ran (nobody awaits ``failed``)
            await asyncio.sleep(0)
        return kept
    caplog.set_level(logging.ERROR)
    assert asyncio.run(go()) == set()
    gc.collect()                # asyncio's "Task exception was never retrieved" would come now: it does not
    assert [(r.name, r.getMessage()) for r in caplog.records] == [
        ("kafkawire.net.background", "Doing the thing failed: no such thing")]
    assert caplog.records[0].exc_info[0] is ValueError


def test_a_task_given_a_context_runs_in_it_not_in_a_copy_of_the_callers():
    request = contextvars.ContextVar("request", default=None)

    async def go():
        async def seen():
            return request.get()
        request.set("the caller's request")
        copied = background.start(seen(), "Reading a copy")
        fresh = background.start(seen(), "Reading a fresh context", context=contextvars.Context())
        return await copied, await fresh
    assert asyncio.run(go()) == ("the caller's request", None)
