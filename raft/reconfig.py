"""KIP-853 membership changes: AddRaftVoter, RemoveRaftVoter, UpdateRaftVoter (placeholder)."""
from __future__ import annotations


class Reconfig:
    def __init__(self, core):
        self.core = core

    def request_handler(self, body):
        return None

    def response_handler(self, body):
        return None

    def on_state_change(self) -> None:
        pass

    def on_high_watermark(self) -> None:
        pass

    def on_request_failed(self, event, api) -> None:
        pass

    def poll(self) -> None:
        pass

    def deadlines(self) -> list[int]:
        return []
