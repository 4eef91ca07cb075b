"""Waiting until a kraft.version 0 quorum can be upgraded to kraft.version 1.

At kraft.version 0 the leader learns that a voter supports kraft.version 1 only from the
UpdateRaftVoter that voter sends after its first fetch in the epoch (Kafka's follower waits its
update-voter period first), and the controller also wants every controller's registration.
Until then an upgrade is refused ("voter 1 has not reported support for kraft.version 1", or
Kafka's "not all of the voters support it"); caught-up logs do not imply it. So a test asks the
leader to validate the upgrade (UpdateFeatures with validateOnly, the tool's --dry-run) until it
passes, bounded, before it sends the upgrade itself.
"""
from __future__ import annotations

import time
from typing import Callable

from kafkawire.tools.admin_client import ToolError
from kafkawire.tools.features import update_features

UPGRADABLE = ["kraft.version can be upgraded to 1."]


def wait_until_kraft_version_upgrade_validates(bootstrap_controller: str, timeout_s: float = 60,
                                               logs: Callable[[], str] = str) -> None:
    """Until ``features --bootstrap-controller B upgrade --feature kraft.version=1 --dry-run``
    passes; on time out, an AssertionError with the last answer and ``logs()``."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            outcome = update_features(bootstrap_controller, "upgrade", features=["kraft.version=1"], dry_run=True,
                                      timeout_ms=5000)
            last = outcome.lines
            if outcome.failures == 0:
                assert outcome.lines == UPGRADABLE, outcome.lines
                return
        except ToolError as exc:            # no answer within the call's timeout
            last = [str(exc)]
        assert time.monotonic() < deadline, \
            f"the leader did not accept a kraft.version=1 dry run within {timeout_s} s: {last}\n{logs()}"
        time.sleep(0.2)
