"""Refusals the controller answers with: a Kafka error code and, where Kafka gives one, its message."""
from __future__ import annotations

from kafkawire.protocol.error_codes import Errors


class ApiError(Exception):
    """Kafka's ApiError: ``error`` goes into the response's error code, ``message`` (None when
    Kafka sends none) into its error message."""

    def __init__(self, error: Errors, message: str | None = None):
        super().__init__(message or error.name)
        self.error = error
        self.message = message

    @property
    def code(self) -> int:
        return int(self.error)


def not_controller(leader_id: int | None) -> ApiError:
    """QuorumController.newNotControllerException."""
    if leader_id is None:
        return ApiError(Errors.NOT_CONTROLLER, "No controller appears to be active.")
    return ApiError(Errors.NOT_CONTROLLER, f"The active controller appears to be node {leader_id}.")


class WriteTimedOut(ApiError, TimeoutError):
    """A write whose deadline passed before its turn came: nothing was generated or written
    (Kafka's event queue completes such an event with a TimeoutException, REQUEST_TIMED_OUT).
    No error message on the wire, as Kafka's (a TimeoutException without one); the log says why.
    A TimeoutError too, so code waiting on a write can tell a timeout from other refusals."""

    def __init__(self, timeout_ms: int):
        ApiError.__init__(self, Errors.REQUEST_TIMED_OUT)
        self.args = (f"the controller did not start the request within {timeout_ms} ms",)
