"""Polling: after every input the current state is polled for its timers and for the
requests it must send (Kafka's pollLeader, pollCandidate, ... and pollShutdown), and the
next deadline is computed for the Ready. A part of RaftCore (see parts.py).
"""
from __future__ import annotations

from typing import assert_never

from . import rpc
from .bounds import can_start_election
from .parts import CoreParts
from .states import NEVER, Candidate, Follower, Leader, Prospective, Resigned, Unattached


class Polling(CoreParts):
    def _poll(self) -> None:
        for _ in range(8):   # a poll may transition; the new state is polled too (bounded)
            state = self.quorum.state
            if self.shutdown_deadline_ms is not None and self._poll_shutdown(self.shutdown_deadline_ms):
                return
            match state:
                case Leader():
                    self._poll_leader(state)
                case Candidate():
                    self._poll_candidate(state)
                case Prospective():
                    self._poll_prospective(state)
                case Follower():
                    self._poll_follower(state)
                case Unattached():
                    self._poll_unattached(state)
                case Resigned():
                    self._poll_resigned(state)
                case _:
                    assert_never(state)
            self.reconfig.poll()
            if self.quorum.state is state:
                return

    def _poll_shutdown(self, deadline_ms: int) -> bool:
        """Kafka's maybeCompleteShutdown: a leader resigns; the shutdown completes once another
        replica is known to lead (or we are an observer, or the only voter), or at the deadline.
        Until then the replica starts no election but still answers (and grants) votes and
        resends EndQuorumEpoch, so a successor can be elected with its vote."""
        state = self.quorum.state
        if isinstance(state, Leader):
            self._resign(state.book.preferred_successors())
            state = self.quorum.state
        leader_id = self.quorum.leader_id()
        voters = self.voters()
        only_voter = len(voters) == 1 and voters.node(self.quorum.local_id) is not None
        finished = (self.now_ms >= deadline_ms or self.quorum.is_observer() or only_voter
                    or (leader_id is not None and leader_id != self.quorum.local_id))
        if finished:
            self.shutdown_done = True
            return True
        if isinstance(state, Resigned):
            self._poll_resigned(state)
        return True

    def _poll_leader(self, leader: Leader) -> None:
        book = leader.book
        if book.check_quorum_expired(self.now_ms):
            self.counters["check_quorum_resignations"] += 1
            self._resign(())
            return
        if book.resign_requested:
            self._resign(book.preferred_successors())
            return
        if self.linger_deadline_ms is not None and (self.now_ms >= self.linger_deadline_ms or
                                                    sum(len(r) for _, r in self.accumulator) >= self.config.max_batch_records):
            self._flush_accumulator()
        self.parked.complete_ready()
        if self.now_ms >= book.begin_epoch_deadline_ms:
            for node_id in sorted(book.voter_states):
                if node_id == self.quorum.local_id or book.voter_states[node_id].has_endorsed:
                    continue
                if self.requests.is_ready(node_id, self.now_ms):
                    key = book.voter_states[node_id].key
                    self._send(node_id, self._address_of(node_id), rpc.begin_quorum_epoch_request(
                        self.config.cluster_id, leader.epoch, self.quorum.local_id, key, self.config.endpoints),
                        "BeginQuorumEpoch")
            book.begin_epoch_deadline_ms = self.now_ms + max(1, self.config.fetch_timeout_ms // 2)

    def _poll_candidate(self, state: Candidate) -> None:
        if self.now_ms >= state.election_deadline_ms:
            self._transition_to_prospective()
            return
        self._send_vote_requests(state.vote_election, state.epoch, pre_vote=False)

    def _poll_prospective(self, state: Prospective) -> None:
        if state.pre_election.is_granted and (self.now_ms >= state.election_deadline_ms
                                              or not self._yielding_to_peer()):
            # Won, and held back for a peer (voting.py, _note_pre_vote_granted) until now; a
            # won pre-vote is not lost to the election timer that ran meanwhile.
            self._transition_to_candidate()
            return
        if self.now_ms >= state.election_deadline_ms:
            self._handle_election_loss()
            return
        if not self.config.pre_vote:
            self._transition_to_candidate()
            return
        self._send_vote_requests(state.pre_election, state.epoch, pre_vote=True)

    def _poll_follower(self, state: Follower) -> None:
        # An observer has no fetch timeout (Kafka's pollFollowerAsObserver): it finds a new
        # leader through the bootstrap servers when a request to its leader fails.
        if self.quorum.is_voter() and self.now_ms >= state.fetch_deadline_ms:
            self._transition_to_prospective()
            return
        self._fetch_from_best_node(state)

    def _fetch_from_best_node(self, state: Follower) -> None:
        """Kafka's maybeSendFetchToBestNode: while the last request to the leader timed out
        (its connection is then forgotten) or failed and backs off, a Fetch goes to a bootstrap
        server instead, to learn of a leader change sooner (the one that answers may be a new
        leader, or the same leader at another address, whose answer is taken as the leader's);
        otherwise, with nothing in flight, the request goes to the leader."""
        requests, leader_id = self.requests, state.leader_id
        if requests.has_timed_out(leader_id):
            requests.reset(leader_id)
            self._maybe_send_bootstrap_fetch()
            return
        if requests.is_backing_off(leader_id, self.now_ms):
            self._maybe_send_bootstrap_fetch()
            return
        if requests.has_any_in_flight():
            return
        address = state.leader_endpoints.address(self.config.listener)
        if address is None:
            return
        # UpdateRaftVoter and auto-join requests take the place of a fetch when they are due,
        # as in Kafka (one request in flight to the leader at a time).
        if self.reconfig.maybe_send_to_leader(state, address):
            return
        if state.fetching_snapshot is not None:
            self._send(state.leader_id, address, self.snapshot_fetching.request_for(state, state.fetching_snapshot),
                       "FetchSnapshot")
        else:
            self._send(state.leader_id, address, self._fetch_request(state.epoch), "Fetch")

    def _fetch_request(self, epoch: int):
        hw = self.quorum.high_watermark()
        return rpc.fetch_request(self.config.cluster_id, self.quorum.local_key, epoch, self.log.end_offset,
                                 self.log.last_fetched_epoch, self.config.fetch_max_wait_ms, self.config.fetch_max_bytes,
                                 -1 if hw is None else hw)

    def _maybe_send_bootstrap_fetch(self) -> None:
        """Find the leader by fetching from a bootstrap server (KIP-853), or from any voter
        whose endpoint we know when no bootstrap servers are configured."""
        if self.requests.bootstrap:
            if self.requests.has_bootstrap_in_flight():
                return
            node = self.requests.ready_bootstrap_server(self.now_ms)
            if node is not None:
                self._send(node, self.requests.bootstrap[node], self._fetch_request(self.quorum.epoch), "Fetch")
            return
        candidates = [n.key.id for n in self.voters() if n.key.id != self.quorum.local_id
                      and self._address_of(n.key.id) is not None]
        if any(self.requests.in_flight(n) for n in candidates):
            return
        ready = [n for n in candidates if self.requests.is_ready(n, self.now_ms)]
        if ready:
            node = self.rng.choice(ready)
            self._send(node, self._address_of(node), self._fetch_request(self.quorum.epoch), "Fetch")

    def _poll_unattached(self, state: Unattached) -> None:
        if self.quorum.is_voter():
            if self.now_ms >= state.election_deadline_ms:
                self._transition_to_prospective()
                return
            if self.requests.bootstrap:
                self._maybe_send_bootstrap_fetch()
        else:
            self._maybe_send_bootstrap_fetch()

    def _poll_resigned(self, state: Resigned) -> None:
        if self.now_ms >= state.election_deadline_ms and self.shutdown_deadline_ms is None:
            if can_start_election(state.epoch):
                self._transition_to_unattached(state.epoch + 1)
                return
            self._postpone_impossible_election()
        for node_id in sorted(state.unacknowledged):
            if not self.requests.is_ready(node_id, self.now_ms):
                continue
            address = self._address_of(node_id)
            if address is None:
                continue
            self._send(node_id, address, rpc.end_quorum_epoch_request(
                self.config.cluster_id, state.epoch, state.local_id, state.preferred_successors,
                self.config.endpoints), "EndQuorumEpoch")

    def _next_wake_ms(self) -> int:
        now = self.now_ms
        if self.shutdown_done:
            return NEVER
        state = self.quorum.state
        times = [now + 60_000]
        for conn in self.requests.connections.values():
            times.append(conn.timeout_at_ms if conn.correlation_id is not None else conn.backoff_until_ms)
        times.append(self.requests.bootstrap_backoff_until_ms)
        if self.shutdown_deadline_ms is not None:
            times.append(self.shutdown_deadline_ms)
        match state:
            case Leader():
                times += [state.book.check_quorum_deadline_ms, state.book.begin_epoch_deadline_ms]
                if self.linger_deadline_ms is not None:
                    times.append(self.linger_deadline_ms)
                times += self.parked.deadlines()
            case Prospective():
                times.append(state.election_deadline_ms)
                if self.pre_vote_yield is not None:
                    times.append(self.pre_vote_yield.until_ms)
            case Candidate() | Unattached() | Resigned():
                times.append(state.election_deadline_ms)
            case Follower():
                times.append(state.fetch_deadline_ms)
            case _:
                assert_never(state)
        times += self.reconfig.deadlines()
        # Deadlines already past were acted on in this step's poll; an idle connection's old
        # backoff or an observer's expired fetch timer must not make the driver spin.
        return min(t for t in times if t is not None and t > now)
