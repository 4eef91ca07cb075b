"""KIP-853 membership changes: AddRaftVoter, RemoveRaftVoter, UpdateRaftVoter, the
kraft.version upgrade, and auto-join.

Leader side (Kafka's AddVoterHandler, RemoveVoterHandler, UpdateVoterHandler). A change is
accepted only when

1. this replica is the leader (else NOT_LEADER_OR_FOLLOWER),
2. kraft.version is at least 1, i.e. the voters live in the log (else UNSUPPORTED_VERSION),
3. no other change is pending or uncommitted, and the leader has committed a record of its
   own epoch, so it knows the committed voter set (else REQUEST_TIMED_OUT),
4. the change itself is valid: a new voter is not a voter yet (DUPLICATE_VOTER), a removed or
   updated one is (VOTER_NOT_FOUND), the listener the quorum uses is among its endpoints and
   its kraft.version range holds the current version (INVALID_REQUEST).

AddRaftVoter then asks the new voter for its ApiVersions (it must answer and support the
current kraft.version) and requires it to have caught up with the leader within one fetch
timeout. The new VotersRecord is appended (it counts at once, KIP-853) and the answer waits
until it commits under the new majority, or the request's timeout passes. A leader that
removed itself resigns once the removal commits.

Replica side: a voter tells each new leader its endpoints and kraft.version range with
UpdateRaftVoter until acknowledged; with controller.quorum.auto.join.enable an observer first
removes a stale entry of its id (another directory, an old disk) and then adds itself.
"""
from __future__ import annotations

from dataclasses import dataclass

from kafkawire.messages import (add_raft_voter_request as add_req, add_raft_voter_response as add_resp,
                                api_versions_request as av_req, api_versions_response as av_resp,
                                remove_raft_voter_request as rm_req, remove_raft_voter_response as rm_resp,
                                update_features_request as uf_req, update_features_response as uf_resp,
                                update_raft_voter_request as up_req, update_raft_voter_response as up_resp)
from kafkawire.messages.k_raft_version_record import KRaftVersionRecord
from kafkawire.protocol.error_codes import Errors
from kafkawire.records import ControlRecordType

from .config import RaftConfig
from .control import ControlState
from .effects import Effects
from .io import RequestReceived
from .quorum_state import QuorumState
from .requests import RequestManager
from .states import Follower, Leader
from .types import Endpoints, ReplicaKey
from .voters import VoterNode, VoterSet

NONE = int(Errors.NONE)
KRAFT_VERSION_FEATURE = "kraft.version"
AUTO_JOIN_RETRY_MS = 1000


@dataclass(slots=True)
class PendingChange:
    kind: str                      # "add" | "remove" | "update" | "kraft.version"
    request: RequestReceived | None   # the request to answer (None for none)
    new_voters: VoterSet | None
    deadline_ms: int
    voter_key: ReplicaKey | None = None
    probe_correlation_id: int | None = None   # AddRaftVoter's ApiVersions probe, while in flight
    record_offset: int | None = None          # where the control batch went, once appended
    ack_when_committed: bool = True
    new_kraft_version: int | None = None


def api_versions_request(node_id: int, cluster_id: str | None):
    return av_req.ApiVersionsRequest(client_software_name="kafkawire-raft", client_software_version="0.1.0",
                                     cluster_id=cluster_id, node_id=node_id)


def api_versions_response(kraft_version_min: int, kraft_version_max: int, error_code: int = NONE):
    """An ApiVersionsResponse of every API we serve, advertising the kraft.version range we
    support (KIP-853: the leader reads it before adding a voter)."""
    from kafkawire.protocol.apis import api_versions_response as table_response
    response = table_response(error_code)
    response.supported_features = [av_resp.SupportedFeatureKey(name=KRAFT_VERSION_FEATURE, min_version=kraft_version_min,
                                                                max_version=kraft_version_max)]
    return response


class Reconfig:
    def __init__(self, effects: Effects, config: RaftConfig, quorum: QuorumState, control: ControlState,
                 requests: RequestManager):
        self.effects = effects
        self.config = config
        self.quorum = quorum
        self.control = control
        self.requests = requests
        # Replica side: when to send the next UpdateRaftVoter / auto-join request.
        self.update_sent_epoch: int | None = None
        self.update_acked_epoch: int | None = None
        # After a refused UpdateRaftVoter, fetch for a whole update-voter period before asking
        # again (Kafka's FollowerState update-voter timer: the fetch timeout); resending at the
        # retry backoff starved the fetches a pending voter change needed to commit.
        self.update_retry_at_ms = 0
        self.auto_join_next_ms = 0
        # kraft.version 0: what voters reported with UpdateRaftVoter, kept in memory until the
        # upgrade writes it to the log.
        self.learned: dict[int, VoterNode] = {}
        # Leader side: the one change in flight (KIP-853 allows one at a time).
        self.pending: PendingChange | None = None

    # --- routing -----------------------------------------------------------------------------
    def request_handler(self, body):
        return {
            add_req.AddRaftVoterRequest: self._handle_add_voter,
            rm_req.RemoveRaftVoterRequest: self._handle_remove_voter,
            up_req.UpdateRaftVoterRequest: self._handle_update_voter,
            uf_req.UpdateFeaturesRequest: self._handle_update_features,
        }.get(type(body))

    def response_handler(self, body):
        return {
            av_resp.ApiVersionsResponse: self._handle_api_versions_response,
            up_resp.UpdateRaftVoterResponse: self._handle_update_voter_response,
            add_resp.AddRaftVoterResponse: self._handle_auto_join_response,
            rm_resp.RemoveRaftVoterResponse: self._handle_auto_join_response,
        }.get(type(body))

    # --- shared checks ---------------------------------------------------------------------------
    @property
    def _leader(self) -> Leader | None:
        state = self.quorum.state
        return state if isinstance(state, Leader) else None

    def _sure_leader(self) -> Leader:
        """The leader state, where a check before (_leader_error, or a pending change, which
        leaving leadership answers) has established that this node leads."""
        leader = self._leader
        assert leader is not None, "a leader-only step while not leading"
        return leader

    def _leader_error(self) -> tuple[int, str | None]:
        """Kafka's KafkaRaftClient checks leadership, then the request's own fields (a directory
        id, the quorum's listener: INVALID_REQUEST), and only then its handlers the rest."""
        if self._leader is None or self.effects.shutting_down:
            return int(Errors.NOT_LEADER_OR_FOLLOWER), "this replica is not the leader"
        return NONE, None

    def _precheck(self) -> tuple[int, str | None]:
        """Rules 1-3 of the module docstring."""
        error, message = self._leader_error()
        if error != NONE:
            return error, message
        leader = self._sure_leader()
        if self.control.last_kraft_version() < 1:
            return int(Errors.UNSUPPORTED_VERSION), "the cluster's kraft.version is 0: its voters are static"
        if self.pending is not None:
            return int(Errors.REQUEST_TIMED_OUT), "another voter change is in progress"
        hw = leader.high_watermark
        if hw is None or hw <= leader.epoch_start_offset:
            return int(Errors.REQUEST_TIMED_OUT), "the leader has not committed a record of its epoch yet"
        if self.control.has_uncommitted_voter_change(hw):
            return int(Errors.REQUEST_TIMED_OUT), "the last voter change is not committed yet"
        return NONE, None

    def _valid_cluster_id(self, cluster_id) -> bool:
        return self.effects.valid_cluster_id(cluster_id)

    def _endpoints(self, listeners) -> Endpoints:
        return Endpoints(tuple((l.name, l.host, l.port) for l in listeners))

    def _respond(self, request, body) -> None:
        self.effects.respond(request, body)

    def _voters(self) -> VoterSet:
        return self.control.last_voter_set()

    def _start(self, change: PendingChange) -> None:
        self.pending = change

    def _append_voters(self, change: PendingChange, records) -> None:
        change.record_offset = self.effects.append_control_records(records)
        if not change.ack_when_committed:
            self._finish(change, NONE)

    def _cluster_and_leader_error(self, body) -> tuple[int, str | None]:
        """AddRaftVoter's and RemoveRaftVoter's first refusals: another cluster, then not the leader."""
        if not self._valid_cluster_id(body.cluster_id):
            return int(Errors.INCONSISTENT_CLUSTER_ID), "the cluster id does not match"
        return self._leader_error()

    # --- AddRaftVoter -------------------------------------------------------------------------------
    def _handle_add_voter(self, request) -> None:
        body = request.body

        def reply(error, message=None):
            self._respond(request, add_resp.AddRaftVoterResponse(error_code=error, error_message=message))
        error, message = self._cluster_and_leader_error(body)
        if error != NONE:
            return reply(error, message)
        key = ReplicaKey.of(body.voter_id, body.voter_directory_id)
        if key.directory_id is None:
            return reply(int(Errors.INVALID_REQUEST), "a new voter needs a directory id")
        endpoints = self._endpoints(body.listeners)
        address = endpoints.address(self.config.listener)
        if address is None:
            return reply(int(Errors.INVALID_REQUEST), f"the new voter has no endpoint for listener {self.config.listener}")
        error, message = self._precheck()
        if error != NONE:
            return reply(error, message)
        voters = self._voters()
        if voters.node(key.id) is not None:
            return reply(int(Errors.DUPLICATE_VOTER), f"node {key.id} is already a voter")
        timeout = body.timeout_ms if body.timeout_ms > 0 else self.config.request_timeout_ms
        change = PendingChange("add", request, None, self.effects.now_ms + timeout, voter_key=key,
                               ack_when_committed=bool(getattr(body, "ack_when_committed", True)))
        change.new_voters = voters.add(VoterNode(key, endpoints, 0, 0))   # range filled in from ApiVersions
        self._start(change)
        # Ask the new voter what it supports before it counts toward any majority.
        change.probe_correlation_id = self.effects.send(
            key.id, address, api_versions_request(self.quorum.local_id, self.config.cluster_id), "ApiVersions")

    def _handle_api_versions_response(self, event) -> bool:
        change = self.pending
        if change is None or change.kind != "add" or change.probe_correlation_id != event.correlation_id:
            return True
        change.probe_correlation_id = None
        body = event.body
        if body.error_code != NONE:
            return self._finish(change, int(Errors.REQUEST_TIMED_OUT),
                                f"the new voter answered ApiVersions with {Errors.for_code(body.error_code).name}")
        feature = next((f for f in body.supported_features if f.name == KRAFT_VERSION_FEATURE), None)
        current = self.control.last_kraft_version()
        low, high = (feature.min_version, feature.max_version) if feature else (0, 0)
        if not low <= current <= high:
            return self._finish(change, int(Errors.INVALID_REQUEST),
                                f"the new voter supports kraft.version {low}..{high}, the cluster is at {current}")
        key, voters = change.voter_key, change.new_voters
        assert key is not None and voters is not None, "an add names its voter and the voter set it makes"
        if not self._caught_up(key):
            return self._finish(change, int(Errors.REQUEST_TIMED_OUT),
                                f"the new voter {key} has not caught up with the leader")
        node = voters.node(key.id)
        assert node is not None, "an add's voter set holds the new voter"
        change.new_voters = voters = voters.update(VoterNode(node.key, node.endpoints, low, high))
        self._append_voters(change, [(ControlRecordType.KRAFT_VOTERS, voters.to_voters_record())])
        return True

    def _caught_up(self, key: ReplicaKey) -> bool:
        leader = self._sure_leader()
        state = leader.book.observer_states.get(key)
        if state is None or state.end_offset is None:
            return False
        return state.last_caught_up_ms >= self.effects.now_ms - self.config.fetch_timeout_ms

    # --- RemoveRaftVoter ------------------------------------------------------------------------------
    def _handle_remove_voter(self, request) -> None:
        body = request.body

        def reply(error, message=None):
            self._respond(request, rm_resp.RemoveRaftVoterResponse(error_code=error, error_message=message))
        error, message = self._cluster_and_leader_error(body)
        if error != NONE:
            return reply(error, message)
        key = ReplicaKey.of(body.voter_id, body.voter_directory_id)
        if key.directory_id is None:
            return reply(int(Errors.INVALID_REQUEST), "the voter to remove needs a directory id")
        error, message = self._precheck()
        if error != NONE:
            return reply(error, message)
        voters = self._voters()
        node = voters.node(key.id)
        if node is None or node.key.directory_id != key.directory_id:
            return reply(int(Errors.VOTER_NOT_FOUND), f"{key} is not a voter")
        if len(voters) == 1:
            # Kafka's VoterSet.removeVoter refuses to leave no voter; RemoveVoterHandler says VOTER_NOT_FOUND.
            return reply(int(Errors.VOTER_NOT_FOUND), "the last voter cannot be removed")
        new_voters = voters.remove(node.key)
        change = PendingChange("remove", request, new_voters, self.effects.now_ms + self.config.request_timeout_ms,
                               voter_key=node.key)
        self._start(change)
        self._append_voters(change, [(ControlRecordType.KRAFT_VOTERS, new_voters.to_voters_record())])

    # --- UpdateRaftVoter -------------------------------------------------------------------------------
    def _handle_update_voter(self, request) -> None:
        body = request.body

        def reply(error):
            self._respond(request, self._update_voter_response(error))
        if not self._valid_cluster_id(body.cluster_id):
            return reply(int(Errors.INCONSISTENT_CLUSTER_ID))
        epoch_error = self.effects.validate_leader_only_request(body.current_leader_epoch)
        if epoch_error != NONE:
            return reply(epoch_error)
        endpoints = self._endpoints(body.listeners)
        feature = body.k_raft_version_feature
        key = ReplicaKey.of(body.voter_id, body.voter_directory_id)
        if key.directory_id is None:
            return reply(int(Errors.INVALID_REQUEST))      # whatever the kraft.version, as Kafka
        if endpoints.address(self.config.listener) is None:
            return reply(int(Errors.INVALID_REQUEST))
        current = self.control.last_kraft_version()
        if not feature.min_supported_version <= current <= feature.max_supported_version:
            return reply(int(Errors.INVALID_REQUEST))      # UpdateVoterHandler.validVersionRange
        if current < 1:
            # Static voters: remember what the voter supports for a later kraft.version upgrade.
            if self._voters().node(key.id) is None:
                return reply(int(Errors.VOTER_NOT_FOUND))
            self.learned[key.id] = VoterNode(key, endpoints, feature.min_supported_version, feature.max_supported_version)
            return reply(NONE)
        error, _ = self._precheck()
        if error != NONE:
            return reply(error)
        voters = self._voters()
        node = voters.node(key.id)
        if node is None or (node.key.directory_id is not None and node.key.directory_id != key.directory_id):
            return reply(int(Errors.VOTER_NOT_FOUND))
        # The directory id is set only where the voter set did not know it (KIP-853).
        new_key = node.key if node.key.directory_id is not None else key
        # A voter's UpdateRaftVoter counts as hearing from it for check-quorum, as a fetch does
        # (Kafka's UpdateVoterHandler: updateCheckQuorumForFollowingVoter).
        self._sure_leader().book.record_voter_contact(new_key.id, self.effects.now_ms)
        updated = VoterNode(new_key, endpoints, feature.min_supported_version, feature.max_supported_version)
        if updated == node:
            return reply(NONE)
        # Answered once the record is appended, as Kafka's UpdateVoterHandler (the voter waits
        # for this answer before it fetches again, and its fetches help commit the record);
        # other changes still wait for the commit.
        new_voters = voters.update(updated)
        change = PendingChange("update", request, new_voters, self.effects.now_ms + self.config.request_timeout_ms,
                               voter_key=new_key, ack_when_committed=False)
        self._start(change)
        self._append_voters(change, [(ControlRecordType.KRAFT_VOTERS, new_voters.to_voters_record())])

    # --- UpdateFeatures: kraft.version ------------------------------------------------------------------
    def _handle_update_features(self, request) -> None:
        body = request.body

        def reply(error, message=None):
            response = uf_resp.UpdateFeaturesResponse(error_code=error, error_message=message)
            if request.api_version < 2:
                response.results = [uf_resp.UpdatableFeatureResult(feature=u.feature, error_code=error,
                                                                   error_message=message)
                                    for u in body.feature_updates]
            self._respond(request, response)
        updates = [u for u in body.feature_updates if u.feature == KRAFT_VERSION_FEATURE]
        if len(updates) != 1 or len(body.feature_updates) != 1:
            return reply(int(Errors.INVALID_REQUEST), "the raft layer updates kraft.version only, alone")
        target = updates[0].max_version_level
        leader = self._leader
        if leader is None:
            return reply(int(Errors.NOT_CONTROLLER), "this replica is not the leader")
        current = self.control.last_kraft_version()
        if target < current:
            return reply(int(Errors.INVALID_UPDATE_VERSION), f"kraft.version cannot go down from {current} to {target}")
        if target == current:
            return reply(NONE)
        if target > self.config.kraft_version_max:
            return reply(int(Errors.INVALID_UPDATE_VERSION), f"kraft.version {target} is not supported")
        if self.pending is not None:
            return reply(int(Errors.REQUEST_TIMED_OUT), "a voter change is in progress")
        voters = self._voters()
        new_nodes = []
        for node in voters:
            if node.key.id == self.quorum.local_id:
                new_nodes.append(VoterNode(self.quorum.local_key, self.config.endpoints,
                                           self.config.kraft_version_min, self.config.kraft_version_max))
                continue
            learned = self.learned.get(node.key.id)
            if learned is None or not learned.supports_kraft_version(target):
                return reply(int(Errors.INVALID_UPDATE_VERSION),
                             f"voter {node.key.id} has not reported support for kraft.version {target}")
            new_nodes.append(learned)
        if getattr(body, "validate_only", False):
            return reply(NONE)
        new_voters = VoterSet.of(new_nodes)
        change = PendingChange("kraft.version", request, new_voters, self.effects.now_ms + max(body.timeout_ms, 1),
                               new_kraft_version=target)
        self._start(change)
        # The version and the voter set go together, in one control batch (atomically).
        self._append_voters(change, [
            (ControlRecordType.KRAFT_VERSION, KRaftVersionRecord(version=0, k_raft_version=target)),
            (ControlRecordType.KRAFT_VOTERS, new_voters.to_voters_record())])

    def _update_voter_response(self, error: int):
        """Every UpdateRaftVoter answer names the leader we know, with its address on our
        listener (Kafka's RaftUtil.updateVoterResponse)."""
        response = up_resp.UpdateRaftVoterResponse(error_code=error)
        leader_id = self.quorum.leader_id()
        if leader_id is not None:
            address = self.quorum.leader_endpoints().address(self.config.listener) or ("", 0)
            response.current_leader = up_resp.CurrentLeader(leader_id=leader_id, leader_epoch=self.quorum.epoch,
                                                            host=address[0], port=address[1])
        return response

    # --- finishing --------------------------------------------------------------------------------------
    def _finish(self, change: PendingChange, error: int, message: str | None = None) -> bool:
        if self.pending is change:
            self.pending = None
        request = change.request
        if request is not None:
            change.request = None
            body = request.body
            if isinstance(body, add_req.AddRaftVoterRequest):
                self._respond(request, add_resp.AddRaftVoterResponse(error_code=error, error_message=message))
            elif isinstance(body, rm_req.RemoveRaftVoterRequest):
                self._respond(request, rm_resp.RemoveRaftVoterResponse(error_code=error, error_message=message))
            elif isinstance(body, up_req.UpdateRaftVoterRequest):
                self._respond(request, self._update_voter_response(error))
            elif isinstance(body, uf_req.UpdateFeaturesRequest):
                response = uf_resp.UpdateFeaturesResponse(error_code=error, error_message=message)
                if request.api_version < 2:
                    response.results = [uf_resp.UpdatableFeatureResult(feature=u.feature, error_code=error,
                                                                       error_message=message)
                                        for u in body.feature_updates]
                self._respond(request, response)
        return True

    def on_high_watermark(self) -> None:
        leader = self._leader
        change = self.pending
        if leader is None or change is None or change.record_offset is None:
            return
        if leader.high_watermark is not None and leader.high_watermark > change.record_offset:
            self._finish(change, NONE)
            removed = change.voter_key if change.kind == "remove" else None
            if removed is not None and removed.id == self.quorum.local_id:
                leader.book.resign_requested = True   # KIP-853: a removed leader steps down once it is committed
            if change.kind == "kraft.version":
                self.learned.clear()

    def on_state_change(self) -> None:
        """Leaving leadership answers the pending change; a new epoch means telling its leader
        about ourselves again."""
        state = self.quorum.state
        if not isinstance(state, Leader) and self.pending is not None:
            # UpdateFeatures says "not the active controller" with NOT_CONTROLLER (the admin client
            # then finds the new one); the raft RPCs say NOT_LEADER_OR_FOLLOWER.
            upgrade = self.pending.request is not None and isinstance(self.pending.request.body,
                                                                     uf_req.UpdateFeaturesRequest)
            error = Errors.NOT_CONTROLLER if upgrade else Errors.NOT_LEADER_OR_FOLLOWER
            self._finish(self.pending, int(error), "leadership changed")
        if self.update_acked_epoch != self.quorum.epoch:
            self.update_sent_epoch = None
            self.update_retry_at_ms = 0

    def on_request_failed(self, event, api) -> None:
        change = self.pending
        if change is not None and change.probe_correlation_id == event.correlation_id:
            self._finish(change, int(Errors.REQUEST_TIMED_OUT), "the new voter did not answer ApiVersions")

    # --- polling ------------------------------------------------------------------------------------------
    def poll(self) -> None:
        leader = self._leader
        if leader is not None:
            change = self.pending
            if change is not None:
                probed = change.voter_key if change.probe_correlation_id is not None else None
                if probed is not None and self.requests.in_flight(probed.id) is None:
                    self._finish(change, int(Errors.REQUEST_TIMED_OUT), "the new voter did not answer ApiVersions")
                elif self.effects.now_ms >= change.deadline_ms:
                    self._finish(change, int(Errors.REQUEST_TIMED_OUT), "timed out waiting for the change to commit")
            return

    def maybe_send_to_leader(self, state: Follower, address) -> bool:
        """Called by a follower whose connection to the leader is free: whether it sent an
        UpdateRaftVoter or auto-join request instead of its next fetch."""
        if self.quorum.is_voter():
            return self._maybe_send_update_voter(state, address)
        if self.config.auto_join:
            return self._maybe_auto_join(state, address)
        return False

    def deadlines(self) -> list[int]:
        leader = self._leader
        out = []
        if leader is not None and self.pending is not None:
            out.append(self.pending.deadline_ms)
        elif isinstance(self.quorum.state, Follower) and self.config.auto_join and self.quorum.is_observer():
            out.append(self.auto_join_next_ms)
        return out

    # --- replica side --------------------------------------------------------------------------------------
    def _maybe_send_update_voter(self, state: Follower, address) -> bool:
        if self.update_acked_epoch == state.epoch or self.update_sent_epoch == state.epoch:
            return False
        if self.effects.now_ms < self.update_retry_at_ms:
            return False
        if not state.has_fetched_from_leader:
            return False
        node = self._voters().node(self.quorum.local_id)
        local = VoterNode(self.quorum.local_key, self.config.endpoints, self.config.kraft_version_min,
                          self.config.kraft_version_max)
        if self.control.last_kraft_version() >= 1 and node == local:
            self.update_acked_epoch = state.epoch   # the voter set already says what we would
            return False
        self.update_sent_epoch = state.epoch
        self.effects.send(state.leader_id, address, up_req.UpdateRaftVoterRequest(
            cluster_id=self.config.cluster_id, current_leader_epoch=state.epoch, voter_id=self.quorum.local_id,
            voter_directory_id=self.quorum.local_key.wire_directory_id,
            listeners=[up_req.Listener(name=n, host=h, port=p) for n, h, p in self.config.endpoints.listeners],
            k_raft_version_feature=up_req.KRaftVersionFeature(min_supported_version=self.config.kraft_version_min,
                                                              max_supported_version=self.config.kraft_version_max)),
            "UpdateRaftVoter")
        return True

    def _handle_update_voter_response(self, event) -> bool:
        body = event.body
        # As Kafka's handleUpdateVoterResponse: the answer's CurrentLeader goes through the
        # epoch handling every response gets, so an answer naming a newer leader moves us
        # to it (testUpdateVoterResponseCausesEpochChange).
        leader = body.current_leader
        leader_id = leader.leader_id if leader.leader_id >= 0 else None
        endpoints = Endpoints(((self.config.listener, leader.host, leader.port),)) \
            if leader_id is not None and leader.host else Endpoints(())
        handled = self.effects.handle_common_response(body.error_code, leader_id, leader.leader_epoch, endpoints)
        if handled is not None:
            return handled   # (a new epoch resets what we told whom: on_state_change)
        state = self.quorum.state
        if body.error_code in (NONE, int(Errors.UNSUPPORTED_VERSION)) and isinstance(state, Follower):
            # Kafka treats the answer as contact with the leader, like a fetch.
            if body.error_code == NONE:
                self.update_acked_epoch = state.epoch
            self.effects.on_successful_fetch(state)
            return True
        self.update_sent_epoch = None   # try again after an update-voter period of fetching
        self.update_retry_at_ms = self.effects.now_ms + self.config.fetch_timeout_ms
        return body.error_code in (int(Errors.NOT_LEADER_OR_FOLLOWER), int(Errors.FENCED_LEADER_EPOCH))

    def _maybe_auto_join(self, state: Follower, address) -> bool:
        """An observer with auto-join on: drop a stale voter entry of our id, then add ourselves."""
        if self.control.last_kraft_version() < 1 or self.effects.now_ms < self.auto_join_next_ms:
            return False
        if not state.has_fetched_from_leader or self.quorum.local_key.directory_id is None:
            return False
        self.auto_join_next_ms = self.effects.now_ms + AUTO_JOIN_RETRY_MS
        stale = self._voters().node(self.quorum.local_id)
        if stale is not None:
            self.effects.send(state.leader_id, address, rm_req.RemoveRaftVoterRequest(
                cluster_id=self.config.cluster_id, voter_id=stale.key.id,
                voter_directory_id=stale.key.wire_directory_id), "RemoveRaftVoter")
        else:
            self.effects.send(state.leader_id, address, add_req.AddRaftVoterRequest(
                cluster_id=self.config.cluster_id, timeout_ms=self.config.request_timeout_ms, voter_id=self.quorum.local_id,
                voter_directory_id=self.quorum.local_key.wire_directory_id,
                listeners=[add_req.Listener(name=n, host=h, port=p) for n, h, p in self.config.endpoints.listeners],
                # As Kafka (KIP-1186): answered once appended, not committed: the new set's
                # majority may need this replica's own fetch, which waits for this answer.
                ack_when_committed=False),
                "AddRaftVoter")
        return True

    def _handle_auto_join_response(self, event) -> bool:
        """Kafka's handleAddVoterResponse / handleRemoveVoterResponse: added (removed), or the
        leader could not do it in time, or nothing to do, is a handled answer (the next Fetch
        goes to the leader at once); another error backs the leader off."""
        nothing_to_do = Errors.DUPLICATE_VOTER if isinstance(event.body, add_resp.AddRaftVoterResponse) \
            else Errors.VOTER_NOT_FOUND
        return event.body.error_code in (NONE, int(Errors.REQUEST_TIMED_OUT), int(nothing_to_do))


__all__ = ["Reconfig", "PendingChange", "api_versions_request", "api_versions_response"]
