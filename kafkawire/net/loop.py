"""Run a coroutine on uvloop when it is installed, else on asyncio's default loop."""
from __future__ import annotations

import asyncio


def run(coro):
    try:
        import uvloop
    except ImportError:
        return asyncio.run(coro)
    return uvloop.run(coro)
