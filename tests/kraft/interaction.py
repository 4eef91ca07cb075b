"""The interaction environment behind tests/kraft/testdata: raft cores driven by hand.

Each command drives the cores one step at a time and prints, in a stable one-line form,
what changed: state transitions (``2: Follower(e=1, leader=1) -> Prospective(e=1, leader=1)``),
messages put on the wire (``2->1 Vote pre=true epoch=1 last=(1,3)``), high watermark moves
and appends. Messages wait in a queue until ``deliver`` or ``stabilize`` hands them over,
encoded and decoded as real Kafka frames. Nothing here prints log text, so rewording a log
line never rewrites these files.
"""
from __future__ import annotations

import uuid

from kafkawire.messages import (add_raft_voter_request as add_req, remove_raft_voter_request as rm_req,
                                update_raft_voter_request as up_req)
from kafkawire.protocol import framing
from kafkawire.protocol.apis import api_table
from kafkawire.protocol.error_codes import Errors
from kafkawire.protocol.errors import UnsupportedVersionError
from kafkawire.raft.config import RaftConfig
from kafkawire.raft.io import OutboundResponse, Propose, RequestFailed, RequestReceived, ResponseReceived, Shutdown, Tick
from kafkawire.raft.reconfig import api_versions_response
from kafkawire.raft.rpc import adapt_request_for_version
from kafkawire.raft.simulate.node import SimNode
from kafkawire.raft.simulate.world import LISTENER, Simulation, address_of
from kafkawire.raft.states import Leader, describe
from kafkawire.raft.types import NO_DIRECTORY_ID, Endpoints, OffsetAndEpoch, ReplicaKey
from kafkawire.raft.voters import VoterNode, VoterSet

from .datadriven import Case, tuple_arg


def _err(code: int) -> str:
    return "" if code == 0 else f" err={Errors.for_code(code).name}"


def describe_message(body) -> str:
    """One line per RPC: the fields the protocol decisions depend on."""
    name = type(body).__name__
    if name == "VoteRequest":
        p = body.topics[0].partitions[0]
        return f"Vote pre={str(bool(p.pre_vote)).lower()} epoch={p.replica_epoch} last=({p.last_offset_epoch},{p.last_offset})"
    if name in ("VoteResponse", "BeginQuorumEpochResponse", "EndQuorumEpochResponse"):
        if body.error_code:
            return f"{name}{_err(body.error_code)}"
        p = body.topics[0].partitions[0]
        extra = f" granted={str(p.vote_granted).lower()}" if name == "VoteResponse" else ""
        leader = p.leader_id if p.leader_id >= 0 else "-"
        return f"{name}{_err(p.error_code)} epoch={p.leader_epoch} leader={leader}{extra}"
    if name == "BeginQuorumEpochRequest":
        p = body.topics[0].partitions[0]
        return f"BeginQuorumEpoch epoch={p.leader_epoch} leader={p.leader_id}"
    if name == "EndQuorumEpochRequest":
        p = body.topics[0].partitions[0]
        successors = ",".join(str(c.candidate_id) for c in p.preferred_candidates)
        return f"EndQuorumEpoch epoch={p.leader_epoch} leader={p.leader_id} successors=({successors})"
    if name == "FetchRequest":
        p = body.topics[0].partitions[0]
        # The fetcher's high watermark (Fetch v18) when it knows one; -1 (unknown) and the int64
        # maximum (an older version) are left out.
        hw = f" hw={p.high_watermark}" if 0 <= p.high_watermark < 2 ** 63 - 1 else ""
        return f"Fetch epoch={p.current_leader_epoch} offset={p.fetch_offset} last_epoch={p.last_fetched_epoch}{hw}"
    if name == "FetchResponse":
        if body.error_code:
            return f"FetchResponse{_err(body.error_code)}"
        p = body.responses[0].partitions[0]
        parts = [f"FetchResponse{_err(p.error_code)} epoch={p.current_leader.leader_epoch}",
                 f"leader={p.current_leader.leader_id if p.current_leader.leader_id >= 0 else '-'}",
                 f"hw={p.high_watermark}"]
        records = bytes(p.records or b"")
        if records:
            from kafkawire.records import iter_batches
            batches = list(iter_batches(records))
            parts.append(f"records={batches[0].base_offset}..{batches[-1].last_offset}")
        if p.diverging_epoch.epoch >= 0:
            parts.append(f"diverging=({p.diverging_epoch.epoch},{p.diverging_epoch.end_offset})")
        if p.snapshot_id.epoch >= 0:
            parts.append(f"snapshot=({p.snapshot_id.epoch},{p.snapshot_id.end_offset})")
        return " ".join(parts)
    if name == "DescribeQuorumResponse":
        if body.error_code:
            return f"DescribeQuorumResponse{_err(body.error_code)}"
        p = body.topics[0].partitions[0]
        if p.error_code:
            return f"DescribeQuorumResponse{_err(p.error_code)} epoch={p.leader_epoch} leader={p.leader_id}"
        voters = ",".join(f"{r.replica_id}:{r.log_end_offset}" for r in p.current_voters)
        observers = ",".join(f"{r.replica_id}:{r.log_end_offset}" for r in p.observers)
        return (f"DescribeQuorumResponse epoch={p.leader_epoch} leader={p.leader_id} hw={p.high_watermark} "
                f"voters(log end)={voters} observers={observers or '-'}")
    if name == "FetchSnapshotRequest":
        p = body.topics[0].partitions[0]
        return f"FetchSnapshot epoch={p.current_leader_epoch} snapshot=({p.snapshot_id.epoch},{p.snapshot_id.end_offset}) position={p.position}"
    if name == "FetchSnapshotResponse":
        if body.error_code:
            return f"FetchSnapshotResponse{_err(body.error_code)}"
        p = body.topics[0].partitions[0]
        return (f"FetchSnapshotResponse{_err(p.error_code)} snapshot=({p.snapshot_id.epoch},{p.snapshot_id.end_offset}) "
                f"position={p.position} bytes={len(p.unaligned_records or b'')} size={p.size}")
    return _describe_admin_message(name, body) or name


def _dir(directory_id) -> str:
    """The interaction clusters use uuid.UUID(int=node id) as directory ids: print that id."""
    if directory_id is None or directory_id.int == 0:
        return "-"
    return str(directory_id.int) if directory_id.int < 1 << 16 else str(directory_id)[:8]


def _listeners(listeners) -> str:
    return ",".join(f"{l.name}://{l.host}:{l.port}" for l in listeners) or "-"


def _describe_admin_message(name: str, body) -> str | None:
    """The reconfiguration RPCs (KIP-853), UpdateFeatures and ApiVersions."""
    if name == "AddRaftVoterRequest":
        return f"AddRaftVoter voter={body.voter_id} dir={_dir(body.voter_directory_id)} listeners={_listeners(body.listeners)}"
    if name == "RemoveRaftVoterRequest":
        return f"RemoveRaftVoter voter={body.voter_id} dir={_dir(body.voter_directory_id)}"
    if name == "UpdateRaftVoterRequest":
        f = body.k_raft_version_feature
        return (f"UpdateRaftVoter epoch={body.current_leader_epoch} voter={body.voter_id} dir={_dir(body.voter_directory_id)} "
                f"listeners={_listeners(body.listeners)} kraft=({f.min_supported_version},{f.max_supported_version})")
    if name == "UpdateRaftVoterResponse":
        leader = body.current_leader
        return (f"UpdateRaftVoterResponse{_err(body.error_code)} leader={leader.leader_id if leader.leader_id >= 0 else '-'} "
                f"epoch={leader.leader_epoch}")
    if name in ("AddRaftVoterResponse", "RemoveRaftVoterResponse"):
        return f"{name}{_err(body.error_code)}"
    if name == "UpdateFeaturesRequest":
        updates = ",".join(f"{u.feature}={u.max_version_level}" for u in body.feature_updates)
        return f"UpdateFeatures {updates} type={','.join(str(u.upgrade_type) for u in body.feature_updates)} " \
               f"validate-only={str(bool(body.validate_only)).lower()}"
    if name == "UpdateFeaturesResponse":
        return f"UpdateFeaturesResponse{_err(body.error_code)}"
    if name == "ApiVersionsRequest":
        return "ApiVersions"
    if name == "ApiVersionsResponse":
        kraft = next((f for f in body.supported_features if f.name == "kraft.version"), None)
        return f"ApiVersionsResponse{_err(body.error_code)} kraft.version=" + \
            (f"({kraft.min_version},{kraft.max_version})" if kraft else "-")
    return None


# The correlation id of injected requests: a later answer to one (delivered by ``stabilize``)
# matches no request the receiving core sent, so the core ignores it.
INJECTED = -1


def _injected_body(kind: str, to: int, src: int, kw: dict[str, str]):
    """A hand-made request (see InteractionEnv.cmd_inject)."""
    from kafkawire.raft import rpc
    cluster = {"none": None, "empty": ""}.get(kw.get("cluster", "cluster"), kw.get("cluster", "cluster"))
    endpoints = Endpoints(((LISTENER, *address_of(src)),))
    if kind == "vote":
        last = tuple(int(v) for v in tuple_arg(kw.get("last", "(0,0)")))
        voter_dir = _directory_arg(kw["voter-dir"], 0) if "voter-dir" in kw else None
        return rpc.vote_request(cluster, int(kw["epoch"]), ReplicaKey(src, None),
                                ReplicaKey(int(kw.get("voter", to)), voter_dir),
                                last[0], last[1], kw.get("pre", "false") == "true")
    if kind == "fetch":
        return rpc.fetch_request(cluster, ReplicaKey(src, None), int(kw["epoch"]), int(kw["offset"]),
                                 int(kw["last-epoch"]), 0, 1 << 20)
    if kind == "begin-epoch":
        voter_dir = _directory_arg(kw["voter-dir"], 0) if "voter-dir" in kw else None
        if "listeners" in kw:   # listeners=2: the leader names a second listener too
            endpoints = Endpoints(tuple((f"{LISTENER}{i}" if i else LISTENER, address_of(src)[0], address_of(src)[1] + i)
                                        for i in range(int(kw["listeners"]))))
        return rpc.begin_quorum_epoch_request(cluster, int(kw["epoch"]), src, ReplicaKey(int(kw.get("voter", to)), voter_dir),
                                              endpoints)
    if kind == "end-epoch":
        successors = tuple(ReplicaKey(int(i), None) for i in tuple_arg(kw.get("successors", "()")))
        return rpc.end_quorum_epoch_request(cluster, int(kw["epoch"]), src, successors, endpoints)
    if kind == "describe-quorum":
        from kafkawire.messages import describe_quorum_request as dq_req
        return dq_req.DescribeQuorumRequest(topics=[dq_req.TopicData(
            topic_name=rpc.METADATA_TOPIC, partitions=[dq_req.PartitionData(partition_index=rpc.METADATA_PARTITION)])])
    if kind == "fetch-snapshot":
        epoch, offset = (int(v) for v in tuple_arg(kw["snapshot"]))
        return rpc.fetch_snapshot_request(cluster, ReplicaKey(src, None), int(kw["epoch"]), OffsetAndEpoch(epoch, offset),
                                          int(kw.get("position", "0")), 1 << 20)
    if kind in ("add-voter", "remove-voter", "update-voter"):
        voter = int(kw.get("voter", src))
        directory = _directory_arg(kw.get("dir"), voter)
        host, port = kw.get("host", address_of(voter)[0]), int(kw.get("port", address_of(voter)[1]))
        listener = kw.get("listener", LISTENER)
        if kind == "add-voter":
            return add_req.AddRaftVoterRequest(cluster_id=cluster, timeout_ms=int(kw.get("timeout", "10000")),
                                               voter_id=voter, voter_directory_id=directory,
                                               listeners=[add_req.Listener(name=listener, host=host, port=port)],
                                               ack_when_committed=kw.get("ack-when-committed", "true") == "true")
        if kind == "remove-voter":
            return rm_req.RemoveRaftVoterRequest(cluster_id=cluster, voter_id=voter, voter_directory_id=directory)
        low, high = (int(v) for v in tuple_arg(kw.get("kraft", "(0,1)")))
        listeners = [up_req.Listener(name=listener, host=host, port=port)]
        if "extra-listener" in kw:   # a second listener, as Kafka's tests' ANOTHER_LISTENER
            listeners.append(up_req.Listener(name=kw["extra-listener"], host=host, port=port + 1000))
        return up_req.UpdateRaftVoterRequest(
            cluster_id=cluster, current_leader_epoch=int(kw["epoch"]), voter_id=voter, voter_directory_id=directory,
            listeners=listeners,
            k_raft_version_feature=up_req.KRaftVersionFeature(min_supported_version=low, max_supported_version=high))
    if kind == "update-features":
        # What `kafka-features upgrade|downgrade --feature NAME=LEVEL [--dry-run]` sends.
        from kafkawire.tools.features import SAFE_DOWNGRADE, UPGRADE, update_features_request
        upgrade_type = {"upgrade": UPGRADE, "downgrade": SAFE_DOWNGRADE}[kw.get("type", "upgrade")]
        return update_features_request({kw.get("feature", "kraft.version"): (int(kw["level"]), upgrade_type)},
                                       dry_run=kw.get("validate-only", "false") == "true",
                                       timeout_ms=int(kw.get("timeout", "10000")))
    raise ValueError(f"unknown message kind {kind!r}")


def _directory_arg(value: str | None, voter: int) -> uuid.UUID:
    """dir=N -> uuid(int=N); dir=none -> the zero uuid (no directory id); default: the voter's own."""
    if value == "none":
        return NO_DIRECTORY_ID
    return uuid.UUID(int=int(value) if value is not None else voter)


class InteractionEnv:
    def __init__(self):
        self.nodes: dict[int, SimNode] = {}
        self.queue: list[tuple] = []      # (kind, src, dst, payload...)
        self.now = 0
        self.blocked: set[tuple[int, int]] = set()
        self.tokens = 0
        self.max_versions: dict[int, dict[int, int]] = {}
        self.api_versions: dict[int, tuple[int, int, int]] = {}   # node -> its ApiVersions answer

    # --- plumbing -----------------------------------------------------------------------------
    def handle(self, case: Case) -> str:
        handler = getattr(self, "cmd_" + case.command.replace("-", "_"), None)
        if handler is None:
            raise ValueError(f"line {case.line}: unknown command {case.command!r}")
        out = handler(case)
        return "\n".join(out) if out else "ok"

    def _apply(self, node: SimNode, ready, out: list[str]) -> None:
        node.persist(ready)
        for old, new in ready.transitions:
            out.append(f"{node.node_id}: {old} -> {new}")
        for op in ready.log_ops:
            kind = type(op).__name__
            if kind == "Append":
                out.append(f"{node.node_id}: append {op.base_offset}..{op.last_offset} epoch={op.epoch}")
            elif kind == "TruncateTo":
                out.append(f"{node.node_id}: truncate to {op.offset}")
            elif kind == "InstallSnapshot":
                out.append(f"{node.node_id}: install snapshot ({op.snapshot_id.epoch},{op.snapshot_id.offset})")
            elif kind in ("DeleteBefore", "TruncateFully"):
                out.append(f"{node.node_id}: {kind} {op.offset}")
        if ready.committed_through is not None:
            out.append(f"{node.node_id}: high watermark {ready.committed_through}")
            node.machine.apply_committed(node.store, ready.committed_through)
        if ready.load_snapshot is not None:
            node.machine.load_snapshot(node.store.snapshots[ready.load_snapshot], ready.load_snapshot)
        for token, offset in ready.appends_committed:
            out.append(f"{node.node_id}: committed {token} at {offset}")
        for token, error in ready.appends_failed:
            out.append(f"{node.node_id}: append {token} failed{_err(error)}")
        if ready.shutdown_complete:
            out.append(f"{node.node_id}: shutdown complete")
            node.alive = False   # the process exits
        for request in ready.send:
            target = self._resolve(request)
            self.queue.append(("request", node.node_id, target, node.incarnation, request))
        for response in ready.respond:
            src = response.request_id[0]
            self.queue.append(("response", node.node_id, src, None, response))
        node.wake_at = ready.wake_at_ms

    def _resolve(self, request) -> int:
        if request.address is not None:
            for node_id in self.nodes:
                if address_of(node_id) == tuple(request.address):
                    return node_id
        return request.destination

    def _step(self, node: SimNode, event, out: list[str]) -> None:
        if node.alive:
            self._apply(node, node.core.step(event), out)

    def _version(self, src: int, dst: int, api_key: int) -> int:
        high = api_table()[api_key].max_version
        return min(high, self.max_versions.get(src, {}).get(api_key, high),
                   self.max_versions.get(dst, {}).get(api_key, high))

    def _deliver(self, item, out: list[str]) -> None:
        kind, src, dst, incarnation, message = item
        if kind == "response" and dst not in self.nodes and (src, dst) not in self.blocked:
            out.append(f"{src}->{dst} {describe_message(message.body)}")   # an admin client's answer
            return
        if (src, dst) in self.blocked or dst not in self.nodes:
            out.append(f"{src}->{dst} {describe_message(message.body)} (dropped)")
            return
        node = self.nodes[dst]
        if kind == "request" and message.body.API_KEY == 18:
            # ApiVersions is the network layer's business, not the raft core's (as in the simulator).
            out.append(f"{src}->{dst} {describe_message(message.body)}")
            if node.alive:
                low, high, error = self.api_versions.get(dst, (node.config.kraft_version_min,
                                                               node.config.kraft_version_max, 0))
                body = api_versions_response(low, high, error)
                version = self._version(src, dst, 18)
                self.queue.append(("response", dst, src, None,
                                   OutboundResponse((dst, message.destination, message.correlation_id), version, body)))
            return
        if kind == "request":
            version = self._version(src, dst, message.body.API_KEY)
            body = adapt_request_for_version(message.body, version)
            try:
                frame = framing.encode_request(body, version, message.correlation_id)
            except UnsupportedVersionError:
                out.append(f"{src}->{dst} {describe_message(message.body)} (v{version} cannot carry it: UNSUPPORTED_VERSION)")
                sender = self.nodes[src]
                self._step(sender, RequestFailed(self.now, message.correlation_id, message.destination,
                                                 int(Errors.UNSUPPORTED_VERSION)), out)
                return
            out.append(f"{src}->{dst} {describe_message(message.body)}")
            if not node.alive:
                return
            decoded = framing.decode_request(frame[4:])
            handle = (src, message.destination, decoded.correlation_id)
            self._step(node, RequestReceived(self.now, handle, version, decoded.body), out)
        else:
            src_node, destination_as_named, correlation_id = message.request_id
            out.append(f"{src}->{dst} {describe_message(message.body)}")
            if not node.alive:
                return
            frame = framing.encode_response(message.body, message.api_version, correlation_id)
            _, body = framing.decode_response(frame[4:], message.body.API_KEY, message.api_version)
            self._step(node, ResponseReceived(self.now, correlation_id, destination_as_named, body), out)

    def _tick_due(self, out: list[str]) -> None:
        for node in self.nodes.values():
            if node.alive and node.wake_at <= self.now:
                self._step(node, Tick(self.now), out)

    # --- commands ------------------------------------------------------------------------------------
    def cmd_cluster(self, case: Case) -> list[str]:
        """cluster voters=(1,2,3) [observers=(4)] [kraft-version=1] [pre-vote=false] [vote-v1=(3)]
        [brokers=(4)] [auto-join=(4)] [extra-listener=(1)] [static-voters=(1,2)]

        A second ``cluster`` in a file starts over: the nodes, the queue and the cuts go.

        Node i's directory id is uuid(int=i), also at kraft.version 0 (meta.properties always
        has one); at kraft.version 0 the voters are controller.quorum.voters (no directory ids).
        Observers listed in ``brokers`` are brokers (process.roles=broker): formatted without a
        voter set, they know none until they fetch one, and they do not fsync what they fetch."""
        voters = [int(v) for v in tuple_arg(case.kwargs.get("voters", "(1,2,3)"))]
        observers = [int(v) for v in tuple_arg(case.kwargs.get("observers", "()"))]
        kraft = int(case.kwargs.get("kraft-version", "1"))
        pre_vote = case.kwargs.get("pre-vote", "true") == "true"
        snapshot_clean = case.kwargs.get("clean-log-on-snapshot", "false") == "true"
        ids = voters + observers
        self.nodes.clear()
        self.queue.clear()
        self.blocked.clear()
        self.api_versions.clear()
        auto_join = {int(v) for v in tuple_arg(case.kwargs.get("auto-join", "()"))}
        directory = {i: uuid.UUID(int=i) for i in ids}
        endpoints = {i: Endpoints(((LISTENER, *address_of(i)),)) for i in ids}
        static = VoterSet.static({i: endpoints[i] for i in voters}) if kraft == 0 else None
        if "static-voters" in case.kwargs:   # controller.quorum.voters beside a bootstrap snapshot
            static = VoterSet.static({int(i): endpoints[int(i)] for i in tuple_arg(case.kwargs["static-voters"])})
        brokers = {int(v) for v in tuple_arg(case.kwargs.get("brokers", "()"))}
        if not brokers <= set(observers) or (brokers and not kraft):
            raise ValueError(f"line {case.line}: brokers={sorted(brokers)} must name observers of a "
                             f"kraft.version 1 cluster")
        # Nodes in ``extra-listener`` listen on a second listener (ANOTHER) that the bootstrap
        # voter set does not name (Kafka's tests: withLocalListeners).
        extra = {int(v) for v in tuple_arg(case.kwargs.get("extra-listener", "()"))}
        for i in ids:
            own = Endpoints(endpoints[i].listeners + (("ANOTHER", address_of(i)[0], address_of(i)[1] + 1000),)) \
                if i in extra else endpoints[i]
            config = RaftConfig(node_id=i, directory_id=directory[i], cluster_id="cluster",
                                listener=LISTENER, endpoints=own, static_voters=static,
                                bootstrap_servers=tuple(address_of(v) for v in voters) if i in observers else (),
                                pre_vote=pre_vote, clean_log_on_snapshot=snapshot_clean,
                                election_timeout_ms=1000, fetch_timeout_ms=2000, request_timeout_ms=1000,
                                can_become_voter=i not in brokers, auto_join=i in auto_join)
            node = SimNode(config, seed=i)
            node.wake_at = 0
            self.nodes[i] = node
        for i in tuple_arg(case.kwargs.get("vote-v1", "()")):
            self.max_versions.setdefault(int(i), {})[52] = 1
        if kraft:
            voter_set = VoterSet.of(VoterNode(ReplicaKey(i, directory[i]), endpoints[i], 0, 1) for i in voters)
            for node in self.nodes.values():
                if node.node_id not in brokers:
                    Simulation.format_bootstrap_snapshot(node, voter_set, kraft)
        for node in self.nodes.values():
            self._apply(node, node.boot(self.now), [])
        return [f"{n.node_id}: {describe(n.core.state)}" for n in self.nodes.values()]

    def cmd_tick(self, case: Case) -> list[str]:
        """tick ms=N: let N ms pass, waking each node whose deadline passed (in id order)."""
        out: list[str] = []
        target = self.now + int(case.kwargs.get("ms", "0"))
        while True:
            due = [n.wake_at for n in self.nodes.values() if n.alive and n.wake_at <= target]
            if not due:
                break
            self.now = max(self.now, min(due))
            self._tick_due(out)
        self.now = target
        return out

    def cmd_run(self, case: Case) -> list[str]:
        """run ms=N: let N ms pass on a live network: wake nodes as their deadlines come and
        deliver every message as soon as it is sent."""
        out: list[str] = []
        target = self.now + int(case.kwargs.get("ms", "0"))
        for _ in range(10_000):
            out += self.cmd_stabilize(Case(case.line, "stabilize", [], {}))
            due = [n.wake_at for n in self.nodes.values() if n.alive and n.wake_at <= target]
            if not due:
                break
            self.now = max(self.now, min(due))
            self._tick_due(out)
        self.now = target
        return out

    def cmd_expire(self, case: Case) -> list[str]:
        """expire <id>: make the node's election or fetch timer run out now."""
        out: list[str] = []
        for arg in case.args:
            node = self.nodes[int(arg)]
            state = node.core.state
            for attr in ("election_deadline_ms", "fetch_deadline_ms"):
                if hasattr(state, attr):
                    setattr(state, attr, self.now)
            self._step(node, Tick(self.now), out)
        return out

    def cmd_deliver(self, case: Case) -> list[str]:
        """deliver [from=X] [to=Y] [drop=true]: hand over the queued messages that match."""
        out: list[str] = []
        src = case.kwargs.get("from")
        dst = case.kwargs.get("to")
        drop = case.kwargs.get("drop") == "true"
        keep, todo = [], []
        for item in self.queue:
            if (src is None or item[1] == int(src)) and (dst is None or item[2] == int(dst)):
                todo.append(item)
            else:
                keep.append(item)
        self.queue = keep
        for item in todo:
            if drop:
                out.append(f"{item[1]}->{item[2]} {describe_message(item[4].body)} (dropped)")
            else:
                self._deliver(item, out)
        return out

    def cmd_stabilize(self, case: Case) -> list[str]:
        """stabilize: deliver until the queue is empty (bounded)."""
        out: list[str] = []
        for _ in range(int(case.kwargs.get("rounds", "50"))):
            if not self.queue:
                break
            todo, self.queue = self.queue, []
            for item in todo:
                self._deliver(item, out)
        return out

    def cmd_elect(self, case: Case) -> list[str]:
        """elect <id>: expire the node's timer, then stabilize."""
        out = self.cmd_expire(case)
        out += self.cmd_stabilize(Case(case.line, "stabilize", [], {}))
        return out

    def cmd_propose(self, case: Case) -> list[str]:
        """propose <id> [count=N]: append N records at the node, then flush its linger."""
        node = self.nodes[int(case.args[0])]
        out: list[str] = []
        for _ in range(int(case.kwargs.get("count", "1"))):
            self.tokens += 1
            self._step(node, Propose(self.now, f"t{self.tokens}", (f"v{self.tokens}".encode(),)), out)
        self.now += node.config.append_linger_ms
        self._step(node, Tick(self.now), out)
        return out

    def cmd_partition(self, case: Case) -> list[str]:
        """partition (1) (2,3): cut every link between the groups."""
        groups = [set(int(v) for v in tuple_arg(a)) for a in case.args]
        self.blocked = {(a, b) for g in groups for h in groups if g is not h for a in g for b in h}
        return []

    def cmd_heal(self, case: Case) -> list[str]:
        self.blocked.clear()
        return []

    def cmd_crash(self, case: Case) -> list[str]:
        for arg in case.args:
            self.nodes[int(arg)].crash()
        self.queue = [q for q in self.queue if str(q[1]) not in case.args]
        return [f"{a}: crashed" for a in case.args]

    def cmd_restart(self, case: Case) -> list[str]:
        out: list[str] = []
        for arg in case.args:
            node = self.nodes[int(arg)]
            self._apply(node, node.boot(self.now), out)
            out.insert(0, f"{arg}: restarted as {describe(node.core.state)}")
        return out

    def cmd_api_versions(self, case: Case) -> list[str]:
        """api-versions <id> [kraft=(0,0)] [error=INVALID_REQUEST]: what node <id>'s network
        layer answers to ApiVersions from now on (Kafka's tests hand-make that answer)."""
        node = self.nodes[int(case.args[0])]
        low, high = (int(v) for v in tuple_arg(case.kwargs.get(
            "kraft", f"({node.config.kraft_version_min},{node.config.kraft_version_max})")))
        error = int(Errors[case.kwargs["error"]]) if "error" in case.kwargs else 0
        self.api_versions[node.node_id] = (low, high, error)
        return []

    def cmd_resign(self, case: Case) -> list[str]:
        """resign <id> [epoch=N]: the state machine asks the leader to step down (RaftClient.resign)."""
        from kafkawire.raft.io import Resign
        node = self.nodes[int(case.args[0])]
        out: list[str] = []
        self._step(node, Resign(self.now, int(case.kwargs.get("epoch", node.core.state.epoch))), out)
        return out

    def cmd_set_epoch(self, case: Case) -> list[str]:
        """set-epoch <id> epoch=N [leader=L] [voted=V]: crash the node, leave epoch N in its
        quorum-state (as an older version or a hand edit would) with leader L and vote V if
        given (none by default), and restart it: Kafka's tests build their states so
        (withElectedLeader, withVotedCandidate, withUnknownLeader)."""
        from kafkawire.raft.types import ElectionState
        node = self.nodes[int(case.args[0])]
        node.crash()
        self.queue = [q for q in self.queue if q[1] != node.node_id]
        leader = int(case.kwargs["leader"]) if "leader" in case.kwargs else None
        voted = ReplicaKey(int(case.kwargs["voted"]), uuid.UUID(int=int(case.kwargs["voted"]))) \
            if "voted" in case.kwargs else None
        node.store.election = ElectionState(int(case.kwargs["epoch"]), leader, voted)
        out: list[str] = []
        self._apply(node, node.boot(self.now), out)
        return [f"{node.node_id}: restarted as {describe(node.core.state)}"] + out

    def cmd_shutdown(self, case: Case) -> list[str]:
        node = self.nodes[int(case.args[0])]
        out: list[str] = []
        self._step(node, Shutdown(self.now, int(case.kwargs.get("timeout", "5000"))), out)
        return out

    def cmd_snapshot(self, case: Case) -> list[str]:
        """snapshot <id>: the node's state machine snapshots what it applied (SnapshotFrozen)."""
        from kafkawire.raft.io import SnapshotFrozen
        node = self.nodes[int(case.args[0])]
        snapshot_id = node.maybe_snapshot(self.now, every=1)
        if snapshot_id is None:
            return [f"{node.node_id}: nothing new to snapshot"]
        out = [f"{node.node_id}: snapshot ({snapshot_id.epoch},{snapshot_id.offset})"]
        self._step(node, SnapshotFrozen(self.now, snapshot_id), out)
        return out

    def cmd_state(self, case: Case) -> list[str]:
        out = []
        for node in self.nodes.values():
            if not node.alive:
                out.append(f"{node.node_id}: down")
                continue
            core = node.core
            hw = core.high_watermark()
            out.append(f"{node.node_id}: {describe(core.state)} log=[{core.log.start_offset},{core.log.end_offset}) "
                       f"last_epoch={core.log.last_fetched_epoch} hw={'-' if hw is None else hw}")
        return out

    def cmd_log(self, case: Case) -> list[str]:
        node = self.nodes[int(case.args[0])]
        from kafkawire.records import iter_batches
        out = []
        for stored in node.store.batches:
            for batch in iter_batches(stored.data):
                if batch.is_control:
                    kinds = ",".join(r.control_key.name for r in batch)
                    out.append(f"{batch.base_offset}..{batch.last_offset} epoch={batch.partition_leader_epoch} control {kinds}")
                else:
                    values = ",".join(bytes(r.value).decode() for r in batch)
                    out.append(f"{batch.base_offset}..{batch.last_offset} epoch={batch.partition_leader_epoch} {values}")
        return out or ["(empty)"]

    def cmd_timers(self, case: Case) -> list[str]:
        """timers <id>...: how long until the node's election or fetch timer runs out (Kafka's
        tests read remainingElectionTimeMs so)."""
        out = []
        for arg in case.args:
            state = self.nodes[int(arg)].core.state
            timers = [f"{attr.removesuffix('_deadline_ms')} in {getattr(state, attr) - self.now} ms"
                      for attr in ("election_deadline_ms", "fetch_deadline_ms") if hasattr(state, attr)]
            if hasattr(state, "book"):
                timers.append(f"check-quorum in {state.book.check_quorum_deadline_ms - self.now} ms")
            out.append(f"{arg}: {', '.join(timers) or 'no timer'}")
        return out

    def cmd_queue(self, case: Case) -> list[str]:
        return [f"{q[1]}->{q[2]} {describe_message(q[4].body)}" for q in self.queue] or ["(empty)"]

    def cmd_inject(self, case: Case) -> list[str]:
        """inject <to> <message> key=value...: deliver a hand-made request from node ``from``
        (9 by default: an admin client, or a replica that is not in the cluster) and print the
        answers given at once; later answers to a client come out of ``stabilize``.

        Messages: vote, fetch, begin-epoch, end-epoch, fetch-snapshot, describe-quorum, add-voter, remove-voter,
        update-voter, update-features (see ``_injected_body``). ``cluster=other`` sends another
        cluster id, ``cluster=none`` none (Kafka does not check a missing one), ``cluster=empty``
        the empty string."""
        target = self.nodes[int(case.args[0])]
        src = int(case.kwargs.get("from", "9"))
        body = _injected_body(case.args[1], int(case.args[0]), src, case.kwargs)
        version = int(case.kwargs.get("version", api_table()[body.API_KEY].max_version))
        out = [f"{src}->{case.args[0]} {describe_message(body)}"]
        handle = (src, target.node_id, INJECTED)
        ready = target.core.step(RequestReceived(self.now, handle, version, body))
        self._apply(target, ready, out)
        # The answer to this request only: other messages to ``src`` (say, the answer to a
        # fetch node ``src`` really sent) stay queued for delivery.
        answers = [q for q in self.queue if q[0] == "response" and q[4].request_id == handle]
        self.queue = [q for q in self.queue if not (q[0] == "response" and q[4].request_id == handle)]
        out += [f"{q[1]}->{src} {describe_message(q[4].body)}" for q in answers]
        return out

    def cmd_voters(self, case: Case) -> list[str]:
        """voters [<id>...]: kraft.version and the voter set (committed or not) each node counts."""
        ids = [int(a) for a in case.args] or list(self.nodes)
        out = []
        for i in ids:
            node = self.nodes[i]
            if not node.alive:
                out.append(f"{i}: down")
                continue
            voters = " ".join(f"{n.key.id}/{_dir(n.key.directory_id)}@{n.endpoints}({n.min_kraft_version},"
                              f"{n.max_kraft_version})" for n in sorted(node.core.voters(), key=lambda n: n.key.id))
            out.append(f"{i}: kraft.version={node.core.kraft_version()} voters: {voters}")
        return out

    def cmd_leader(self, case: Case) -> list[str]:
        leaders = [n.node_id for n in self.nodes.values() if n.alive and isinstance(n.core.state, Leader)]
        return [f"leaders: {leaders}"]
