"""Raft requests carrying the int32/int64 extremes in every epoch, offset, id and position
field, sent to a leader and to a follower (issue 18, item 1: arithmetic safe at the bounds).
Every one is answered with a response that encodes in its version, nothing raises, and none of
them moves an epoch: each is fenced, invalid, or too far a jump."""
from kafkawire.protocol.apis import api_table
from kafkawire.raft.io import RequestReceived
from kafkawire.raft.states import Follower, Leader

from .datadriven import Case
from .interaction import InteractionEnv, _injected_body

I32, I64 = 2**31 - 1, 2**63 - 1
EPOCHS = [-2**31, -1, 0, I32 - 1, I32]
OFFSETS = [-2**63, -1, 0, I64]
SOURCES = [-1, 3, 9, I32]


def _requests():
    for src in SOURCES:
        for epoch in EPOCHS:
            for offset in OFFSETS:
                yield "vote", src, {"epoch": str(epoch), "last": f"({max(0, min(epoch, 5))},{offset})"}
                yield "fetch", src, {"epoch": str(epoch), "offset": str(offset), "last-epoch": str(max(0, epoch - 1))}
                yield "fetch-snapshot", src, {"epoch": str(epoch), "snapshot": f"({epoch},{offset})",
                                              "position": str(offset)}
            yield "begin-epoch", src, {"epoch": str(epoch)}
            yield "end-epoch", src, {"epoch": str(epoch)}


def test_extreme_values_are_answered_and_move_nothing():
    env = InteractionEnv()
    env.handle(Case(1, "cluster", [], {"voters": "(1,2,3)"}))
    env.handle(Case(2, "elect", ["1"], {}))
    env.handle(Case(3, "stabilize", [], {}))
    answered = 0
    for target in (1, 2):
        node = env.nodes[target]
        for n, (kind, src, kw) in enumerate(_requests()):
            body = _injected_body(kind, target, src, kw)
            version = api_table()[body.API_KEY].max_version
            ready = node.core.step(RequestReceived(env.now, ("extreme", target, n), version, body))
            for response in ready.respond:
                response.body.encode(response.api_version)
                answered += 1
            env._apply(node, ready, [])
    assert answered == 2 * len(list(_requests()))
    assert isinstance(env.nodes[1].core.state, Leader) and isinstance(env.nodes[2].core.state, Follower)
    assert {node.core.epoch for node in env.nodes.values()} == {1}
