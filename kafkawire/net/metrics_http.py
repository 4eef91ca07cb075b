"""The Prometheus text endpoint of a node, and the metric families it renders: ``GET /metrics``
on the node's own event loop (kafkawire.raft.node.prometheus says what a controller exports,
kafkawire.broker.metrics what a broker exports; each gives Family objects, read from the node
when scraped).

The HTTP side is bounded: one request per connection (closed after the answer), a request
head of at most MAX_REQUEST_BYTES read within REQUEST_TIMEOUT_S (else 431 or a close), at most
MAX_CONNECTIONS at once (more are closed unanswered), and anything but ``GET /metrics`` is 404.

A scrape of a node holding many partitions walks them all (ten samples per partition held on a
broker: seconds at 100,000 partitions), on the loop that serves everything else. So a families
iterator yields PAUSE between pieces of such a walk, and the endpoint renders in steps
(``render.in_steps``): at a PAUSE, once STEP_BUDGET_S has passed since it last did, it gives the
loop back before going on. What a scrape shows is then read over several loop turns, each
partition's samples in one (Kafka's JMX exporter, too, reads the gauges one by one).
"""
from __future__ import annotations

import asyncio
import functools
import logging
import time
from dataclasses import dataclass, field
from typing import Callable, Iterable, Union

from kafkawire.net import background

log = logging.getLogger(__name__)

MISSING_CLIENT = "the metrics endpoint needs prometheus_client: pip install 'kafkawire[metrics]'"
MAX_REQUEST_BYTES = 8192
REQUEST_TIMEOUT_S = 10.0
MAX_CONNECTIONS = 16
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"     # what generate_latest writes
EXACT_INTEGERS = 2 ** 53        # below it in size, an integer's float is exact and its repr has no exponent
STEP_BUDGET_S = 0.005           # the longest a scrape holds the loop between two PAUSEs it may stop at
LINES_PER_PART = 2000           # sample lines encoded at once when rendering in steps


class _Pause:
    def __repr__(self) -> str:
        return "PAUSE"


# Yielded by a families iterator between pieces of a long walk: a point where a renderer on the
# event loop may give the loop back (``render.in_steps``); ``render()`` passes over it.
PAUSE = _Pause()

# What a families iterator yields (see Family, below).
FamilyOrPause = Union["Family", _Pause]


class MetricsUnavailable(RuntimeError):
    """The endpoint is enabled but cannot be served (prometheus_client is not installed)."""


@dataclass
class Family:
    """One metric family: ``samples`` are (labels, value); kind "gauge", "unknown" (untyped),
    "counter" (its sample is named ``name_total``) or "summary" (quantile samples, and ``count``).

    A large family (one sample per partition) gives ``lines`` instead: its samples already in the
    text format (``name{partition="0",topic="t"} 5.0\n``: label names sorted, values escaped and
    written by ``number``), about ten times cheaper than prometheus_client's sample objects."""
    name: str
    help: str
    samples: list[tuple[dict[str, str], float]] = field(default_factory=list)
    kind: str = "gauge"
    count: int = 0
    lines: list[str] | None = None
    counts: list[tuple[dict[str, str], float]] | None = None     # a labelled summary's ``_count`` samples


def number(value) -> str:
    """``value`` as prometheus_client writes it (floatToGoString: Python's repr of the float,
    with Go's exponent form from seven digits before the point), computed directly for an
    integer a float holds exactly (whose repr is its digits and ".0"), which most samples are."""
    if type(value) is int and -EXACT_INTEGERS < value < EXACT_INTEGERS:
        if value < 1_000_000:
            return f"{value}.0"
        digits = str(value)
        mantissa = f"{digits[0]}.{digits[1:]}".rstrip("0").rstrip(".")
        return f"{mantissa}e+{len(digits) - 1:02d}"
    return _go_float()(value)


@functools.cache
def _go_float():
    from prometheus_client.utils import floatToGoString      # optional: imported when first needed
    return floatToGoString


def gauge(name: str, help_text: str, value: float) -> Family:
    return Family(name, help_text, [({}, float(value))])


def exposition(families: Callable[[], Iterable[FamilyOrPause]]) -> Callable[[], bytes]:
    """``render() -> bytes``: the text format of ``families()`` as prometheus_client writes it,
    read in one go; ``await render.in_steps()``: the same, giving the loop back at the iterator's
    PAUSEs (module docstring). Raises MetricsUnavailable (MISSING_CLIENT) when prometheus_client
    is not installed."""
    try:
        import prometheus_client  # noqa: F401 - checked here, used by _small_text
    except ImportError:
        raise MetricsUnavailable(MISSING_CLIENT) from None

    def render() -> bytes:
        read = [f for f in families() if f is not PAUSE]
        return _small_text([f for f in read if f.lines is None]) + \
            "".join(_lines_text(f) for f in read if f.lines is not None).encode("utf-8")

    async def in_steps() -> list[bytes]:
        """render()'s body as a list of parts (joined, the same bytes), the loop given back
        between steps: at the families' PAUSEs, and every LINES_PER_PART lines written."""
        read: list[Family] = []
        since = time.perf_counter()
        for item in families():
            if item is PAUSE:
                since = await _pause_if_spent(since)
            else:
                read.append(item)
        parts = [_small_text([f for f in read if f.lines is None])]
        for family in read:
            if family.lines is None:
                continue
            parts.append(_lines_head(family).encode("utf-8"))
            lines = family.lines
            for start in range(0, len(lines), LINES_PER_PART):
                parts.append("".join(lines[start:start + LINES_PER_PART]).encode("utf-8"))
                since = await _pause_if_spent(since)
        return parts

    render.in_steps = in_steps
    return render


_SUFFIX = {"gauge": "", "unknown": "", "counter": "_total", "summary": ""}


def _small_text(small: list[Family]) -> bytes:
    """The families given as samples, written by prometheus_client's generate_latest."""
    from prometheus_client import CollectorRegistry, generate_latest
    from prometheus_client.core import Metric

    # A family's samples may carry different labels (a meter for all topics, none, and one per
    # topic, as the JMX exporter writes them), so samples are added one by one, named as the
    # *MetricFamily classes name them (a counter's ``_total``).
    class NodeCollector:
        def collect(self):
            for family in small:
                out = Metric(family.name, family.help, family.kind)
                for sample_labels, value in family.samples:
                    out.add_sample(family.name + _SUFFIX[family.kind], sample_labels, value)
                if family.counts is not None:
                    for sample_labels, value in family.counts:
                        out.add_sample(family.name + "_count", sample_labels, value)
                elif family.kind == "summary":
                    out.add_sample(family.name + "_count", {}, float(family.count))
                yield out

    registry = CollectorRegistry(auto_describe=False)
    registry.register(NodeCollector())
    return generate_latest(registry)


async def _pause_if_spent(since: float) -> float:
    """Give the loop back if STEP_BUDGET_S has passed since ``since``; the new step's start."""
    if time.perf_counter() - since <= STEP_BUDGET_S:
        return since
    await asyncio.sleep(0)
    return time.perf_counter()


def _lines_head(family: Family) -> str:
    """The HELP and TYPE lines of a family of ``lines``, as generate_latest writes them."""
    name = family.name + _SUFFIX[family.kind]
    kind = "untyped" if family.kind == "unknown" else family.kind
    help_text = family.help.replace("\\", r"\\").replace("\n", r"\n")
    return f"# HELP {name} {help_text}\n# TYPE {name} {kind}\n"


def _lines_text(family: Family) -> str:
    return _lines_head(family) + "".join(family.lines)


class EndpointStartError(RuntimeError):
    """The endpoint cannot start: prometheus_client missing, or its listener cannot be bound."""


async def start_metrics_endpoint(listener: tuple, families: Callable[[], Iterable[FamilyOrPause]]) -> "MetricsEndpoint":
    """A started endpoint on ``listener`` ((host or None, port), the parsed
    ``kafkawire.metrics.prometheus.listener``) rendering ``families()``; EndpointStartError,
    naming the setting, when it cannot start."""
    try:
        render = exposition(families)
    except MetricsUnavailable as exc:
        raise EndpointStartError(str(exc)) from None
    endpoint = MetricsEndpoint(listener[0], listener[1], render)
    try:
        await endpoint.start()
    except OSError as exc:
        raise EndpointStartError(f"kafkawire.metrics.prometheus.listener http://{listener[0] or ''}:{listener[1]}: "
                                 f"cannot bind: {exc.strerror or exc}") from None
    return endpoint


# --- HTTP ---------------------------------------------------------------------------------------

def _head(status: str, length: int, content_type: str = "text/plain; charset=utf-8") -> bytes:
    return (f"HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {length}\r\n"
            "Connection: close\r\n\r\n").encode("ascii")


def _response(status: str, body: bytes, content_type: str = "text/plain; charset=utf-8") -> bytes:
    return _head(status, len(body), content_type) + body


NOT_FOUND = _response("404 Not Found", b"only GET /metrics is served here\n")
TOO_LARGE = _response("431 Request Header Fields Too Large", b"request too large\n")
_RENDER = object()      # _answer's word for "a GET /metrics: render the body"


class MetricsEndpoint:
    """A tiny HTTP/1.1 server on the running loop answering ``GET /metrics`` with ``render()``."""

    def __init__(self, host: str | None, port: int, render: Callable[[], bytes]):
        self.host, self.port, self.render = host, port, render
        self._server: asyncio.base_events.Server | None = None
        self._connections: set[asyncio.Task] = set()

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._accept, self.host, self.port, limit=MAX_REQUEST_BYTES)
        self.port = self._server.sockets[0].getsockname()[1]

    def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if len(self._connections) >= MAX_CONNECTIONS:
            writer.close()
            return
        background.start(self._serve(reader, writer), f"Answering a metrics request on port {self.port}",
                         keep=self._connections, logger=log)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            async with asyncio.timeout(REQUEST_TIMEOUT_S):
                answer = await self._answer(reader)
            if answer is _RENDER:      # not under the request's timeout: the render's work is bounded
                answer = await self._rendered()
            for part in [answer] if isinstance(answer, bytes) else answer or ():
                writer.write(part)
                async with asyncio.timeout(REQUEST_TIMEOUT_S):
                    await writer.drain()
        except (asyncio.TimeoutError, ConnectionError):
            pass
        finally:
            writer.close()

    async def _answer(self, reader: asyncio.StreamReader) -> bytes | object | None:
        """The response to the one request on this connection (_RENDER: the metrics); None to
        close without one."""
        try:
            head = await reader.readuntil(b"\r\n\r\n")
        except asyncio.LimitOverrunError:
            return TOO_LARGE
        except asyncio.IncompleteReadError:
            return None
        if len(head) > MAX_REQUEST_BYTES:
            return TOO_LARGE
        request_line = head.split(b"\r\n", 1)[0].split(b" ")
        if len(request_line) != 3 or request_line[0] != b"GET" or request_line[1].split(b"?", 1)[0] != b"/metrics":
            return NOT_FOUND
        return _RENDER

    async def _rendered(self) -> list[bytes]:
        """The metrics response in parts (head, then the body's parts), written one at a time."""
        in_steps = getattr(self.render, "in_steps", None)
        try:
            body = [self.render()] if in_steps is None else await in_steps()
        except Exception:       # a bug in reading the node must not end the endpoint: log it, answer 500
            log.exception("cannot render the metrics")
            return [_response("500 Internal Server Error", b"cannot render the metrics\n")]
        return [_head("200 OK", sum(map(len, body)), CONTENT_TYPE), *body]

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
        for task in list(self._connections):
            task.cancel()
        await asyncio.gather(*self._connections, return_exceptions=True)
        if self._server is not None:
            await self._server.wait_closed()


__all__ = ["Family", "FamilyOrPause", "PAUSE", "gauge", "number", "MetricsEndpoint", "EndpointStartError", "start_metrics_endpoint", "MetricsUnavailable", "MISSING_CLIENT", "exposition",
           "MAX_CONNECTIONS", "MAX_REQUEST_BYTES"]
