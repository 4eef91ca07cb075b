from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"
REFERENCE = SHARED / "reference"


def require(path: Path) -> Path:
    """Skip the calling test, saying why, when reference material in ../shared is absent."""
    if not path.exists():
        pytest.skip(f"reference material not available: {path} is missing (it lives in ../shared beside the repo)")
    return path


def pytest_addoption(parser):
    parser.addoption("--rewrite", action="store_true",
                     help="rewrite the expected output of the datadriven files in tests/kraft/testdata")


@pytest.fixture(autouse=True)
def _no_tool_log_handler_leaks():
    """A network tool run in-process installs its WARN-to-stderr handler on the root logger for
    the rest of the process (tools.admin_client.show_warnings), as a CLI process wants; between
    tests that would send later tests' log records to their stderr. Take it off after each test."""
    import logging
    root = logging.getLogger()
    level = root.level
    yield
    for handler in [h for h in root.handlers if getattr(h, "kafkawire_tool_warnings", False)]:
        root.removeHandler(handler)
    root.setLevel(level)
