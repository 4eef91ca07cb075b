"""Every fenced code block of README.md and docs/*.md runs, as a reader would run it.

Each page's ``python`` and ``sh`` blocks run in order in one temporary directory, so a block can use
the files an earlier block of its page made: ``python`` blocks with this interpreter, ``sh`` blocks
with ``bash -e -o pipefail``, each bounded in time, with ``.venv/bin/python`` and
``.venv/bin/kafkawire`` (and ``kafkawire`` on the PATH) running this checkout. ``properties`` blocks
must parse as server.properties; ``text`` blocks are output and are not run. A block with no
language, or another one, fails the test: say what it is.

An HTML comment on the line before a fence changes that (docs/testing.md):

- ``<!-- test: needs=java -->``: the block needs Java, Kafka's jars or Spark; it runs only in the
  tests marked ``kafka`` (``pytest -m kafka``), in a directory of its own per page;
- ``<!-- test: skip (reason) -->``: not run; the reason is required, and each skipped block is a
  skipped test here, so pytest's summary lists it.
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
RUNNABLE = {"python", "sh"}
NOT_RUN = {"text", "properties"}
TIMEOUT_S = {"python": 120, "sh": 300}
MARKER = re.compile(r"^<!-- test: (?P<what>.*?) -->$")
SKIP = re.compile(r"^skip \((?P<reason>.+)\)$")
# The README's first block holds the two commands CI runs exactly (.ci/run): installing the
# package and running this very suite. It is the one block exempt from a marker, since the
# project's rules depend on the README starting with it unchanged.
README_FIRST_BLOCK_REASON = "the README's install-and-test commands: CI runs them (.ci/run)"


@dataclass(frozen=True)
class Block:
    page: Path
    line: int               # the line of the opening fence, 1-based
    lang: str
    code: str
    needs_java: bool = False
    skip_reason: str | None = None

    @property
    def where(self) -> str:
        return f"{self.page.relative_to(REPO)}:{self.line}"


def parse_marker(text: str, where: str) -> tuple[bool, str | None]:
    """(needs_java, skip reason) from a marker comment's inside; ValueError naming the place."""
    if text == "needs=java":
        return True, None
    skip = SKIP.match(text)
    if skip and skip.group("reason").strip():
        return False, skip.group("reason").strip()
    raise ValueError(f"{where}: unknown test marker {text!r} (use 'needs=java' or 'skip (reason)')")


def blocks_of(page: Path) -> list[Block]:
    lines = page.read_text(encoding="utf-8").splitlines()
    found: list[Block] = []
    i = 0
    while i < len(lines):
        fence = re.match(r"^```(\S*)\s*$", lines[i])
        if not fence:
            i += 1
            continue
        start = i
        end = next((j for j in range(i + 1, len(lines)) if lines[j].startswith("```")), None)
        if end is None:
            raise ValueError(f"{page.relative_to(REPO)}:{start + 1}: a code block that is never closed")
        where = f"{page.relative_to(REPO)}:{start + 1}"
        previous = lines[start - 1].strip() if start > 0 else ""
        marker = MARKER.match(previous)
        needs_java, reason = parse_marker(marker.group("what"), where) if marker else (False, None)
        if page.name == "README.md" and not found and reason is None:
            reason = README_FIRST_BLOCK_REASON
        found.append(Block(page, start + 1, fence.group(1), "\n".join(lines[start + 1:end]) + "\n",
                           needs_java, reason))
        i = end + 1
    return found


ALL_BLOCKS = [block for page in PAGES for block in blocks_of(page)]


def _page_id(page: Path) -> str:
    return str(page.relative_to(REPO))


def _wrappers(bin_dir: Path) -> None:
    """.venv/bin/python and .venv/bin/kafkawire in the block's directory, running this checkout
    with this interpreter (PYTHONPATH names the checkout)."""
    bin_dir.mkdir(parents=True)
    for name, command in (("python", f'exec "{sys.executable}" "$@"'),
                          ("kafkawire", f'exec "{sys.executable}" -m kafkawire.tools.cli "$@"')):
        script = bin_dir / name
        script.write_text(f"#!/bin/sh\n{command}\n")
        script.chmod(0o755)


def _workdir(tmp_path: Path) -> Path:
    _wrappers(tmp_path / ".venv" / "bin")
    for shared in ("examples", "tests", "benchmarks", "schemas"):      # read by blocks as the repo's own paths
        (tmp_path / shared).symlink_to(REPO / shared)
    return tmp_path


# The Spark sessions the blocks start: 2 shuffle partitions, as tests/spark's session (Spark's 200
# are 200 tasks for a groupBy of a few rows), and the JIT's quick tier only (a driver that lives for
# seconds); the blocks' results are the same. 165 s -> 100 s for docs/spark.md's Spark blocks.
SPARK_SUBMIT_ARGS = "--conf spark.sql.shuffle.partitions=2 --driver-java-options -XX:TieredStopAtLevel=1 pyspark-shell"


def run_block(block: Block, cwd: Path) -> None:
    env = dict(os.environ, PYTHONPATH=str(REPO), PATH=f"{cwd / '.venv' / 'bin'}{os.pathsep}{os.environ['PATH']}",
               SPARK_LOCAL_IP=os.environ.get("SPARK_LOCAL_IP", "127.0.0.1"), PYSPARK_PYTHON=sys.executable,
               PYSPARK_SUBMIT_ARGS=os.environ.get("PYSPARK_SUBMIT_ARGS", SPARK_SUBMIT_ARGS))
    if block.lang == "python":
        command = [sys.executable, "-c", block.code]
    else:
        command = ["bash", "-e", "-o", "pipefail", "-c", block.code]
    try:
        result = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True,
                                timeout=TIMEOUT_S[block.lang])
    except subprocess.TimeoutExpired:
        pytest.fail(f"{block.where}: the {block.lang} block ran past {TIMEOUT_S[block.lang]} s")
    assert result.returncode == 0, (f"{block.where}: the {block.lang} block exited {result.returncode}\n"
                                    f"--- stdout\n{result.stdout[-3000:]}\n--- stderr\n{result.stderr[-3000:]}")


def _run_in_order(blocks: list[Block], tmp_path: Path) -> None:
    cwd = _workdir(tmp_path)
    for block in blocks:
        run_block(block, cwd)


def _runnable(page: Path, *, java: bool) -> list[Block]:
    return [b for b in ALL_BLOCKS if b.page == page and b.lang in RUNNABLE
            and b.skip_reason is None and b.needs_java == java]


PLAIN_PAGES = [p for p in PAGES if _runnable(p, java=False)]
JAVA_PAGES = [p for p in PAGES if _runnable(p, java=True)]
SKIPPED = [b for b in ALL_BLOCKS if b.skip_reason is not None]


def test_every_block_says_what_it_is():
    """Every block has a language the test knows, and every page has at least its blocks parsed."""
    unknown = [f"{b.where}: language {b.lang!r}" for b in ALL_BLOCKS if b.lang not in RUNNABLE | NOT_RUN]
    assert not unknown, "blocks in a language this test does not know (python, sh, properties, text):\n" + \
        "\n".join(unknown)
    assert len(PAGES) >= 10 and any(b.lang == "python" for b in ALL_BLOCKS)


def test_every_marker_sits_right_before_a_fence():
    """A marker separated from its block (a blank line, text) would be ignored: refuse it."""
    stray = []
    for page in PAGES:
        lines = page.read_text(encoding="utf-8").splitlines()
        for n, line in enumerate(lines):
            if line.strip().startswith("<!-- test:") and not (n + 1 < len(lines) and lines[n + 1].startswith("```")):
                stray.append(f"{page.relative_to(REPO)}:{n + 1}")
    assert not stray, f"test markers not on the line before a fence: {stray}"


def test_skips_stay_rare():
    """A skip is for a block no test can run (it installs packages, needs a Kafka distribution's bin/,
    runs for minutes); most blocks run."""
    runnable = [b for b in ALL_BLOCKS if b.lang in RUNNABLE]
    assert len(SKIPPED) * 3 <= len(runnable), [b.where for b in SKIPPED]


@pytest.mark.parametrize("page", PLAIN_PAGES, ids=_page_id)
def test_the_page_blocks_run(page, tmp_path):
    _run_in_order(_runnable(page, java=False), tmp_path)


@pytest.mark.kafka
@pytest.mark.parametrize("page", JAVA_PAGES, ids=_page_id)
def test_the_page_blocks_that_need_java_run(page, tmp_path):
    from tests.interop import kafka_dist
    try:                                   # as tests/interop/conftest.py's kafka_libs fixture
        kafka_dist.ensure()
    except kafka_dist.KafkaDistUnavailable as exc:
        from tests.conftest import unavailable
        unavailable(f"Apache Kafka {kafka_dist.KAFKA_VERSION} is not available: {exc}")
    _run_in_order(_runnable(page, java=True), tmp_path)


@pytest.mark.parametrize("block", SKIPPED, ids=lambda b: b.where)
def test_skipped_block(block):
    pytest.skip(f"{block.where}: {block.skip_reason}")


@pytest.mark.parametrize("block", [b for b in ALL_BLOCKS if b.lang == "properties"], ids=lambda b: b.where)
def test_properties_blocks_parse(block):
    from kafkawire.net.config import parse_server_config
    parse_server_config(block.code.replace("\\\n", ""))


def test_a_marker_without_a_reason_is_refused():
    with pytest.raises(ValueError, match="unknown test marker"):
        parse_marker("skip", "README.md:1")
    with pytest.raises(ValueError, match="unknown test marker"):
        parse_marker("skip ()", "README.md:1")
    assert parse_marker("skip (needs a Kafka distribution's bin/)", "x") == (False, "needs a Kafka distribution's bin/")
    assert parse_marker("needs=java", "x") == (True, None)


def github_anchor(heading: str) -> str:
    """The fragment GitHub gives a heading: lower case, punctuation dropped, spaces as hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def _anchors(page: Path) -> set[str]:
    found, in_code = set(), False
    for line in page.read_text(encoding="utf-8").splitlines():
        in_code = in_code != line.startswith("```")
        heading = re.match(r"^#+ (.*)$", line)
        if heading and not in_code:
            found.add(github_anchor(heading.group(1)))
    return found


def test_every_link_between_the_docs_resolves():
    """Relative links of README, docs/ and benchmarks/README.md name a file that exists and, for a
    page, a heading it has (moving a section must not leave links behind)."""
    broken = []
    for page in [*PAGES, REPO / "benchmarks" / "README.md"]:
        # a code span is no link, even where its text looks like one (`RULE:[1:$1](.*)`)
        text = re.sub(r"(?<!`)`[^`]+`(?!`)", "", page.read_text(encoding="utf-8"))
        for target in re.findall(r"\]\(([^)\s]+)\)", text):
            if re.match(r"^[a-z]+:", target):
                continue
            path, _, fragment = target.partition("#")
            dest = (page.parent / path).resolve() if path else page
            if not dest.exists():
                broken.append(f"{page.relative_to(REPO)}: {target} (no such file)")
            elif fragment and dest.suffix == ".md" and fragment not in _anchors(dest):
                broken.append(f"{page.relative_to(REPO)}: {target} (no such heading)")
    assert not broken, "broken links:\n" + "\n".join(broken)
