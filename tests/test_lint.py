"""The linter and the type checker, as part of the test suite (and so of CI).

ruff runs its configured rules (pyproject.toml) over all hand-written code. mypy checks the
modules in TYPED, which type-check cleanly today; the list only grows (the architecture
step, issue 14, brings raft/core.py, records/batch.py and the rest)."""
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
HAND_WRITTEN = ["kafkawire", "tests", "pyspark_kafkawire", "benchmarks", "examples"]
TYPED = [
    "kafkawire/_extras.py", "kafkawire/_native.py",
    "kafkawire/net/acceptor.py", "kafkawire/net/admission.py", "kafkawire/net/authentication.py", "kafkawire/net/authorizer.py",
    "kafkawire/net/client.py", "kafkawire/net/loop.py", "kafkawire/net/serve_log.py",
    "kafkawire/protocol/error_codes.py", "kafkawire/protocol/errors.py", "kafkawire/protocol/framing.py",
    "kafkawire/protocol/registry.py", "kafkawire/protocol/handler.py", "kafkawire/protocol/__init__.py",
    "kafkawire/protocol/apis.py", "kafkawire/protocol/kafka_api_keys.py", "kafkawire/protocol/message.py",
    "kafkawire/protocol/primitives.py", "kafkawire/records/control.py", "kafkawire/records/errors.py",
    "kafkawire/records/kraft_control.py", "kafkawire/records/varint.py",
    "kafkawire/records/layout.py", "kafkawire/records/record.py", "kafkawire/records/record_decoding.py",
    "kafkawire/records/builder.py", "kafkawire/records/batch.py", "kafkawire/records/scan.py",
    "kafkawire/storage/txn_index.py", "kafkawire/storage/producer_snapshot.py",
    "kafkawire/raft/bounds.py", "kafkawire/raft/config.py", "kafkawire/raft/election.py", "kafkawire/raft/io.py", "kafkawire/raft/leader.py", "kafkawire/raft/quorum_state.py",
    "kafkawire/raft/requests.py", "kafkawire/raft/rpc.py", "kafkawire/raft/states.py", "kafkawire/raft/types.py", "kafkawire/raft/voters.py",
    "kafkawire/raft/core.py", "kafkawire/raft/effects.py", "kafkawire/raft/parts.py", "kafkawire/raft/voting.py",
    "kafkawire/raft/fetching.py", "kafkawire/raft/polling.py", "kafkawire/raft/snapshot_fetch.py", "kafkawire/raft/snapshots.py",
    "kafkawire/raft/snapshot_check.py", "kafkawire/net/install_aware_log.py",
    "kafkawire/raft/node/snapshot_writer.py", "kafkawire/raft/appends.py",
    "kafkawire/raft/contract.py", "kafkawire/raft/node/load_generator.py", "kafkawire/controller/acl_apis.py",
    "kafkawire/records/__init__.py", "kafkawire/records/compression.py", "kafkawire/records/legacy.py",
    "kafkawire/raft/__init__.py", "kafkawire/raft/log.py", "kafkawire/raft/control.py", "kafkawire/raft/reconfig.py",
    "kafkawire/raft/node/__init__.py", "kafkawire/raft/node/demo_client.py", "kafkawire/raft/node/local_quorum.py",
    "kafkawire/raft/node/metrics.py", "kafkawire/raft/node/quorum_state_file.py", "kafkawire/raft/node/disk_store.py",
    "kafkawire/raft/simulate/__init__.py", "kafkawire/raft/simulate/__main__.py", "kafkawire/raft/simulate/faults.py",
    "kafkawire/raft/simulate/invariants.py", "kafkawire/raft/simulate/kafka_scenarios.py",
    "kafkawire/raft/simulate/membership.py", "kafkawire/raft/simulate/node.py", "kafkawire/raft/simulate/scenario_kit.py",
    "kafkawire/raft/simulate/scenarios.py", "kafkawire/raft/simulate/store.py", "kafkawire/raft/simulate/world.py",
    "kafkawire/raft/node/driver.py", "kafkawire/raft/node/controller_node.py", "kafkawire/raft/node/prometheus.py",
    # Two generated modules, for the codegen's annotations (records, nullable, struct, list, lazy defaults):
    "kafkawire/messages/fetch_response.py", "kafkawire/messages/create_topics_request.py",
]


def _tool(name: str) -> list[str]:
    exe = Path(sys.executable).with_name(name)
    if exe.exists():
        return [str(exe)]
    if shutil.which(name):
        return [name]
    pytest.skip(f"{name} is not installed (pip install -e '.[dev]' brings it)")


def test_ruff_finds_nothing():
    result = subprocess.run([*_tool("ruff"), "check", *HAND_WRITTEN], cwd=REPO, capture_output=True, text=True,
                            timeout=300)
    assert result.returncode == 0, result.stdout[-5000:] + result.stderr[-2000:]


def test_mypy_on_the_typed_modules():
    result = subprocess.run([*_tool("mypy"), *TYPED], cwd=REPO, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout[-5000:] + result.stderr[-2000:]
