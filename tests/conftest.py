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
