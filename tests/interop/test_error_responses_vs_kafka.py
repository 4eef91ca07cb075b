"""The UNKNOWN_SERVER_ERROR answer to a request whose handler failed, against Kafka 4.3.1's own
request classes: for every API key a kafkawire broker or controller serves, at every version
both Kafka 4.3.1 (its stable versions) and our schemas have, the default request and a filled
one (tests/net/error_response_requests.py) are parsed by Kafka's AbstractRequest.parseRequest,
answered by getErrorResponse(0, Errors.UNKNOWN_SERVER_ERROR.exception()) and written
(tests/interop/java/error_responses/ErrorResponses.java); ours is kafkawire.net.error_responses'
answer, the one the connection sends. The response bodies must be equal byte for byte, and where
Kafka answers nothing (Produce with acks 0) so must we (the connection is closed).

The cases Kafka answered differently before the table was made stay in a Java-free test,
tests/net/test_error_responses.py.
"""
from __future__ import annotations

import queue
import shutil
import subprocess
import threading
from pathlib import Path

import pytest

from kafkawire.protocol.apis import api_table
from kafkawire.protocol.error_codes import Errors
from kafkawire.net.error_responses import error_response
from tests.interop import kafka_dist
from tests.interop.codec_oracle import hex_diff
from tests.net.error_response_requests import SERVED_KEYS, cases

JAVA_SOURCES = Path(__file__).resolve().parent / "java" / "error_responses"
ANSWER_TIMEOUT = 60.0
# The fewest (API key, version) pairs the comparison must find (at the time of writing: 338), a
# guard against an enumeration that silently finds little.
MIN_PAIRS = 290
UNKNOWN_SERVER_ERROR = int(Errors.UNKNOWN_SERVER_ERROR)
# Where Kafka's getErrorResponse throws, its broker sends nothing (KafkaRequestHandler logs the
# exception; the client's request times out) and ours closes the connection (docs/differences.md):
# (API key, case) -> Kafka's exception.
KAFKA_THROWS = {(50, "nulls"): "NullPointerException (DescribeUserScramCredentials' null Users: every user)"}


class ErrorResponseOracle:
    """One JVM running ErrorResponses, asked a line at a time; killed by its pid at close."""

    def __init__(self, work: Path):
        javac = shutil.which("javac")
        if javac is None:
            from tests.conftest import unavailable
            unavailable("javac is not on PATH: a JDK 17 compiles tests/interop/java/error_responses")
        classes = work / "classes"
        built = subprocess.run([javac, "-nowarn", "-d", str(classes), "-cp", kafka_dist.classpath(),
                                *map(str, JAVA_SOURCES.glob("*.java"))], capture_output=True, text=True, timeout=180)
        assert built.returncode == 0, built.stdout + built.stderr
        self.log = open(work / "error-responses.stderr", "wb")
        self.process = subprocess.Popen(
            ["java", "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
             f"-Dlog4j2.configurationFile={kafka_dist.LOG4J_TOOLS}", "-cp", f"{classes}:{kafka_dist.classpath()}",
             "ErrorResponses"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.log, text=True, bufsize=1)
        self.lines: queue.Queue = queue.Queue()
        threading.Thread(target=self._pump, daemon=True).start()
        assert self._line() == "ready"

    def _pump(self):
        for line in self.process.stdout:
            self.lines.put(line.rstrip("\n"))
        self.lines.put(None)

    def _line(self) -> str:
        try:
            line = self.lines.get(timeout=ANSWER_TIMEOUT)
        except queue.Empty:
            raise AssertionError(f"ErrorResponses gave no answer within {ANSWER_TIMEOUT:.0f} s") from None
        assert line is not None, f"ErrorResponses exited ({self.process.poll()})"
        return line

    def ask(self, line: str) -> str:
        self.process.stdin.write(line + "\n")
        self.process.stdin.flush()
        return self._line()

    def close(self):
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait(timeout=10)
        self.log.close()


@pytest.fixture(scope="module")
def oracle(kafka_libs, tmp_path_factory):
    jvm = ErrorResponseOracle(tmp_path_factory.mktemp("error-responses"))
    yield jvm
    jvm.close()


def compared_versions(oracle, api_key: int) -> range:
    low, high = map(int, oracle.ask(f"versions {api_key}").split())
    api = api_table()[api_key]
    return range(max(low, api.min_version), min(high, api.max_version) + 1)


def differences(oracle, api_key: int, version: int, refused: list, thrown: set) -> list[str]:
    """What differs between Kafka's answer and ours for each case of ``api_key`` at ``version``;
    the default requests Kafka's request class refuses to parse (it never answers them with
    getErrorResponse) go to ``refused``, the cases of KAFKA_THROWS that Kafka throws on and ours
    closes to ``thrown``. A filled request Kafka refuses is a difference: the filler must make
    requests Kafka reads (FILLED_OVERRIDES)."""
    found = []
    for name, request in cases(api_key, version):
        what = f"api key {api_key} v{version} ({name} request)"
        kafka = oracle.ask(f"error {api_key} {version} {request.encode(version).hex()}")
        ours = error_response(api_key, request, version, UNKNOWN_SERVER_ERROR)
        if kafka.startswith("unparsable") and name == "default":
            refused.append(what)
        elif kafka.startswith("threw") and (api_key, name) in KAFKA_THROWS and ours is None:
            thrown.add((api_key, name))
        elif kafka.startswith(("threw", "unparsable")):
            found.append(f"{what}: Kafka {kafka}")
        elif kafka == "null":
            if ours is not None:
                found.append(f"{what}: Kafka answers nothing, ours {ours!r:.300}")
        elif ours is None:
            found.append(f"{what}: Kafka answers {kafka[3:][:200]}, ours nothing")
        else:
            theirs, mine = bytes.fromhex(kafka[3:]), ours.encode(version)
            if theirs != mine:
                kafkas = type(ours).decode(theirs, version)
                found.append(f"{what}: {hex_diff(mine, theirs)}\n  ours  {ours!r:.600}\n  Kafka {kafkas!r:.600}")
    return found


def test_every_served_api_answers_a_failed_request_as_kafkas_get_error_response(oracle):
    pairs, found, refused, thrown = 0, [], [], set()
    for api_key in sorted(SERVED_KEYS):
        for version in compared_versions(oracle, api_key):
            pairs += 1
            found += differences(oracle, api_key, version, refused, thrown)
    print(f"\n[error responses] {len(SERVED_KEYS)} APIs, {pairs} (API, version) pairs compared, "
          f"{len(found)} differences; default requests Kafka does not parse: {refused}")
    assert pairs >= MIN_PAIRS
    assert thrown == set(KAFKA_THROWS), "KAFKA_THROWS lists a case Kafka no longer throws on"
    assert not found, "\n".join(found)
