"""A fake raft for the metadata controller: one shared log, appends commit at once and in
order, every controller is told about every commit (as the driver tells each node), and an
election is a LeaderChange control record (it takes an offset, but no controller sees it).

send_to_leader calls the leader controller's handler directly, unless a failure was queued
for it (an exception to raise or a response to return instead)."""
from __future__ import annotations

import asyncio
import random
import uuid
from dataclasses import dataclass

from kafkawire.controller.controller import MetadataController
from kafkawire.metadata import decode_metadata_record
from kafkawire.metadata.frame import encode_metadata_record
from kafkawire.raft.contract import NoLeader, NotLeader
from kafkawire.raft.types import LeaderAndEpoch
from kafkawire.tools.storage import bootstrap_records

CLUSTER_ID = "MkU3OEVBNTcwNTJENDM2Qg"


def bootstrap(mv: int = 29) -> list[bytes]:
    return [encode_metadata_record(r, 0) for r in bootstrap_records(mv)]


@dataclass
class Ctx:
    api_version: int
    api_key: int = -1           # the handlers that serve several APIs (acl_apis.py) look at it


class FakeClock:
    def __init__(self):
        self.now = 1_000_000

    def __call__(self) -> int:
        return self.now


class FakeQuorum:
    def __init__(self):
        self.end_offset = 0
        self.entries: list[tuple[int, int, bytes]] = []      # (offset, epoch, value) of data records
        self.batches: list[list[bytes]] = []
        self.leader_id: int | None = None
        self.epoch = 0
        self.controllers: dict[int, MetadataController] = {}
        self.send_failures: dict[int, list] = {}              # node id -> queued failures
        self.sent: list[tuple[int, object]] = []
        self.kraft_version = 0                                # what every handle's kraft_version() says
        self.committed_batches: list[tuple[int, int, list[bytes]]] = []   # (base offset, epoch, records)
        self.prepared = 0                                     # records of prepare_append not committed yet

    def elect(self, node_id: int | None) -> None:
        self.epoch += 1
        self.leader_id = node_id
        if node_id is not None:
            self.end_offset += 1                                # the LeaderChange control record
        for controller in self.controllers.values():
            controller.on_leader_change(node_id, self.epoch)

    def commit(self, records: list[bytes]) -> int:
        base = self.end_offset
        self.end_offset += len(records)
        self.batches.append(list(records))
        self.committed_batches.append((base, self.epoch, list(records)))
        self.entries += [(base + i, self.epoch, v) for i, v in enumerate(records)]
        for controller in self.controllers.values():
            controller.on_committed(base, self.epoch, 0, list(records))
        return self.end_offset - 1

    def records(self):
        """(offset, message) of every data record."""
        return [(offset, decode_metadata_record(v).message) for offset, _, v in self.entries]

    def names(self) -> list[str]:
        return [type(m).NAME for _, m in self.records()]


class FakeHandle:
    def __init__(self, quorum: FakeQuorum, node_id: int):
        self.quorum = quorum
        self.node_id = node_id

    def leader(self):
        return LeaderAndEpoch(self.quorum.leader_id, self.quorum.epoch)

    def is_leader(self) -> bool:
        return self.quorum.leader_id == self.node_id

    def next_offset(self) -> int:
        return self.quorum.end_offset + self.quorum.prepared

    def kraft_version(self) -> int:
        return self.quorum.kraft_version

    def leader_caught_up(self) -> bool:
        """Appends commit at once here, so a leader has always applied what came before its epoch."""
        return self.is_leader()

    async def append(self, records: list[bytes]) -> int:
        if not self.is_leader():
            raise NotLeader(f"node {self.node_id} is not the leader")
        return self.quorum.commit(records)

    def prepare_append(self, records: list[bytes]) -> asyncio.Future:
        """The records commit on the next loop turn (after the caller applied them ahead)."""
        if not self.is_leader():
            raise NotLeader(f"node {self.node_id} is not the leader")
        appended = asyncio.get_running_loop().create_future()
        self.quorum.prepared += len(records)
        asyncio.get_running_loop().call_soon(lambda: self._commit_prepared(records, appended))
        return appended

    def _commit_prepared(self, records, appended: asyncio.Future) -> None:
        self.quorum.prepared -= len(records)
        if self.quorum.leader_id != self.node_id:
            appended.set_exception(NotLeader(f"node {self.node_id} lost leadership before the commit"))
        else:
            appended.set_result(self.quorum.commit(records))

    def replay_committed(self, listener) -> None:
        for base, epoch, records in self.quorum.committed_batches:
            listener.on_committed(base, epoch, 0, list(records))

    async def send_to_leader(self, request, timeout_ms: int = 5000):
        q = self.quorum
        q.sent.append((self.node_id, request))
        queued = q.send_failures.get(self.node_id)
        if queued:
            failure = queued.pop(0)
            if isinstance(failure, BaseException):
                raise failure
            return failure
        if q.leader_id is None:
            raise NoLeader("no leader is known")
        handler = q.controllers[q.leader_id].handlers()[request.API_KEY]
        return await handler.handle(Ctx(0), request)


def add_controller(quorum: FakeQuorum, node_id: int, *, mv: int = 29, clock=None, **kwargs) -> MetadataController:
    kwargs.setdefault("registration_backoff_ms", 1)
    controller = MetadataController(FakeHandle(quorum, node_id), cluster_id=CLUSTER_ID, bootstrap_records=bootstrap(mv),
                                    listeners=[("CONTROLLER", f"controller{node_id}", 9093, "PLAINTEXT")],
                                    clock=clock or FakeClock(), rng=random.Random(node_id), **kwargs)
    quorum.controllers[node_id] = controller
    return controller


async def until(predicate, what: str, rounds: int = 2000) -> None:
    """Let the event loop run until ``predicate()`` holds (bounded; no wall-clock assertions)."""
    for _ in range(rounds):
        if predicate():
            return
        await asyncio.sleep(0.001)
    raise AssertionError(f"gave up waiting: {what}")


def run(coro, timeout: float = 10):
    return asyncio.run(asyncio.wait_for(coro, timeout))


class Running:
    """``async with Running(controllers...)``: their run() tasks, cancelled on exit."""

    def __init__(self, *controllers):
        self.controllers = controllers
        self.tasks = []

    async def __aenter__(self):
        if not self.tasks:          # entered once more (start() enters, the test's ``async with`` again)
            self.tasks = [asyncio.ensure_future(c.run()) for c in self.controllers]
        return self

    async def __aexit__(self, *exc):
        for task in self.tasks:
            task.cancel()
        results = await asyncio.gather(*self.tasks, return_exceptions=True)
        for result in results:
            if isinstance(result, BaseException) and not isinstance(result, asyncio.CancelledError):
                raise result


def broker_request(broker_id: int, *, incarnation=None, log_dirs=None, cluster_id=CLUSTER_ID, features=None,
                   listeners=(("PLAINTEXT", "localhost", 9092),)):
    from kafkawire.messages.broker_registration_request import BrokerRegistrationRequest, Feature, Listener
    from kafkawire.controller.versions import SUPPORTED_FEATURES
    features = SUPPORTED_FEATURES if features is None else features
    return BrokerRegistrationRequest(
        broker_id=broker_id, cluster_id=cluster_id, incarnation_id=incarnation or uuid.uuid4(),
        listeners=[Listener(name=n, host=h, port=p, security_protocol=0) for n, h, p in listeners],
        features=[Feature(name=n, min_supported_version=lo, max_supported_version=hi) for n, (lo, hi) in features.items()],
        rack=None, log_dirs=[uuid.uuid4()] if log_dirs is None else log_dirs)


def heartbeat(broker_id: int, epoch: int, offset: int, *, want_fence=False, want_shut_down=False):
    from kafkawire.messages.broker_heartbeat_request import BrokerHeartbeatRequest
    return BrokerHeartbeatRequest(broker_id=broker_id, broker_epoch=epoch, current_metadata_offset=offset,
                                  want_fence=want_fence, want_shut_down=want_shut_down)
