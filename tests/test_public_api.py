"""The public API (issue 25): ``import kafkawire`` gives the entry points, importing one module is
enough to use it (no import-order trap), frames are symmetric about the size prefix, every package
says what it exports (``__all__``) and every exported class, function and module has a docstring."""
from __future__ import annotations

import importlib
import inspect
import io
import subprocess
import sys
from pathlib import Path

import pytest

import kafkawire
from kafkawire.protocol.errors import DecodeError

REPO = Path(__file__).resolve().parents[1]
# ApiVersionsRequest v3 (flexible): header v2, correlation id 7, client id "c", empty body fields.
API_VERSIONS_V3_PAYLOAD = bytes.fromhex("0012 0003 00000007 0001 63 00 01 01 00".replace(" ", ""))


def fresh_python(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("code", [
    "import kafkawire\n"
    "frame = len(P).to_bytes(4, 'big') + P\n"
    "request = kafkawire.decode_request_frame(frame)\n"
    "assert request.header.correlation_id == 7 and request.body.NAME == 'ApiVersionsRequest'\n"
    "assert kafkawire.encode_request_frame(request.body, 3, 7, 'c') == frame\n",
    "from kafkawire.protocol import framing\n"
    "assert framing.decode_request(P).api_key == 18\n",
    "from kafkawire.protocol.apis import api_table\n"
    "assert 18 in api_table()\n",
], ids=["facade", "framing-alone", "api-table-alone"])
def test_one_import_is_enough_in_a_fresh_interpreter(code):
    """Nothing else has to be imported first: the codecs' registry installs itself on first use
    (before, framing.decode_request raised LookupError unless kafkawire.messages was imported)."""
    result = fresh_python(f"P = {API_VERSIONS_V3_PAYLOAD!r}\n{code}")
    assert result.returncode == 0, result.stderr


def test_import_kafkawire_loads_none_of_the_heavy_parts():
    result = fresh_python("import sys, kafkawire\n"
                          "print(sorted(m for m in sys.modules if m.startswith(('kafkawire.', 'dpkt'))))")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "['kafkawire._lazy']"


def test_version_comes_from_the_package_metadata():
    from importlib import metadata
    try:
        expected = metadata.version("kafkawire")
    except metadata.PackageNotFoundError:
        expected = "0+unknown"
    assert kafkawire.__version__ == expected


def test_request_frames_are_symmetric_about_the_size_prefix():
    body = kafkawire.messages.by_name("MetadataRequest")(topics=None)
    frame = kafkawire.encode_request_frame(body, 12, correlation_id=5, client_id="me")
    assert int.from_bytes(frame[:4], "big") == len(frame) - 4
    request = kafkawire.decode_request_frame(frame)
    assert (request.api_key, request.api_version, request.correlation_id, request.body) == (3, 12, 5, body)
    assert kafkawire.decode_request(frame[4:]).body == body          # the payload variant
    with pytest.raises(DecodeError, match="size prefix says"):
        kafkawire.decode_request_frame(frame[4:])                  # a payload is not a frame
    with pytest.raises(DecodeError, match="size prefix says"):
        kafkawire.decode_request_frame(frame + b"\0")


def test_response_frames_are_symmetric_about_the_size_prefix():
    body = kafkawire.messages.by_name("ApiVersionsResponse")(error_code=35)
    frame = kafkawire.encode_response_frame(body, 3, correlation_id=9)
    assert kafkawire.decode_response_frame(frame, 18, 3) == (9, body)
    assert kafkawire.decode_response(frame[4:], 18, 3) == (9, body)
    with pytest.raises(DecodeError):
        kafkawire.decode_response_frame(frame[:3], 18, 3)


def test_iter_frames_splits_bytes_and_files_and_refuses_a_cut_stream():
    frames = [kafkawire.encode_request_frame(kafkawire.messages.by_name("ApiVersionsRequest")(), 3, i, "c")
              for i in range(5)]
    stream = b"".join(frames)
    assert list(kafkawire.iter_frames(stream)) == [f[4:] for f in frames]
    assert list(kafkawire.iter_frames(io.BytesIO(stream), chunk_size=3)) == [f[4:] for f in frames]
    assert [kafkawire.decode_request(p).correlation_id for p in kafkawire.iter_frames(stream)] == list(range(5))
    with pytest.raises(DecodeError, match="ends inside a frame"):
        list(kafkawire.iter_frames(stream[:-1]))
    with pytest.raises(DecodeError, match="outside"):
        list(kafkawire.iter_frames(b"\xff\xff\xff\xff"))


def test_read_capture_pairs_requests_with_their_responses():
    capture = kafkawire.read_capture(REPO / "tests" / "data" / "pcaps" / "kafka-python.pcapng")
    exchanges = capture.exchanges()
    assert exchanges and all(e.response is not None for e in exchanges)
    for e in exchanges:
        assert (e.request.stream, e.request.correlation_id, e.request.api_key) == \
            (e.response.stream, e.response.correlation_id, e.response.api_key)
        assert e.request.status == e.response.status == "decoded"


def packages() -> list[str]:
    """Every package the wheel installs, from the files (an import error cannot hide one):
    each folder with an __init__.py under kafkawire/, and the top-level pyspark_kafkawire."""
    return sorted(".".join(init.parent.relative_to(REPO).parts)
                  for top in ("kafkawire", "pyspark_kafkawire") for init in (REPO / top).rglob("__init__.py"))


def _own_docstring(obj) -> str | None:
    doc = obj.__dict__.get("__doc__") if inspect.isclass(obj) else getattr(obj, "__doc__", None)
    if inspect.isclass(obj) and doc and doc.startswith(f"{obj.__name__}("):
        return None                       # the signature a dataclass writes when it has no docstring
    return doc.strip() if doc else None


@pytest.mark.parametrize("package", packages())
def test_every_package_says_what_it_exports_and_documents_it(package):
    """``__all__`` in every package; every class, function and module in it has its own
    docstring (constants cannot have one)."""
    if package in ("kafkawire.spark", "pyspark_kafkawire"):
        pytest.importorskip("pyspark")
    module = importlib.import_module(package)
    assert module.__doc__ and module.__doc__.strip(), f"{package} has no docstring"
    assert isinstance(getattr(module, "__all__", None), list), f"{package} defines no __all__"
    undocumented = []
    for name in module.__all__:
        value = getattr(module, name)
        if (inspect.isclass(value) or inspect.isroutine(value) or inspect.ismodule(value)) \
                and not _own_docstring(value):
            undocumented.append(name)
    assert not undocumented, f"{package}.__all__ names without a docstring: {undocumented}"


def test_py_typed_ships_with_the_package():
    assert (REPO / "kafkawire" / "py.typed").is_file()
    assert 'kafkawire = ["py.typed"]' in (REPO / "pyproject.toml").read_text(encoding="utf-8")


def _metadata_dir(tmp_path: Path) -> Path:
    """A __cluster_metadata-0 directory: a snapshot holding a FeatureLevelRecord and topic "a",
    then a log (offsets 0-3) whose records 0-1 the snapshot covers and 2-3 add topic "b"."""
    import uuid

    from kafkawire.metadata import encode_metadata_record
    from kafkawire.records import build_batch
    from kafkawire.storage import Log, SnapshotId, SnapshotWriter
    m = kafkawire.messages.by_name
    feature = encode_metadata_record(m("FeatureLevelRecord")(name="metadata.version", feature_level=27), 0)
    topic_a = encode_metadata_record(m("TopicRecord")(name="a", topic_id=uuid.UUID(int=1)), 0)
    topic_b = encode_metadata_record(m("TopicRecord")(name="b", topic_id=uuid.UUID(int=2)), 0)
    directory = tmp_path / "__cluster_metadata-0"
    with Log(directory) as log:
        log.append(build_batch([(None, feature), (None, topic_a)], base_offset=0, partition_leader_epoch=1))
        log.append(build_batch([(None, topic_b), (None, topic_b)], base_offset=2, partition_leader_epoch=1))
        log.flush()
    with SnapshotWriter(directory, SnapshotId(2, 1), last_contained_log_timestamp=5) as writer:
        writer.append([feature, topic_a])
    return directory


def test_metadata_is_read_into_records_and_an_image_without_writing(tmp_path):
    from tests.storage.test_reader import fingerprint
    directory = _metadata_dir(tmp_path)
    before = fingerprint(tmp_path)
    records = list(kafkawire.read_metadata_records(directory))
    assert [(offset, r.type_name) for offset, r in records] == [
        (None, "FeatureLevelRecord"), (None, "TopicRecord"), (2, "TopicRecord"), (3, "TopicRecord")]
    assert [offset for offset, _ in kafkawire.read_metadata_records(next(directory.glob("*.log")))] == [0, 1, 2, 3]
    snapshot = next(directory.glob("*.checkpoint"))
    assert [r.type_name for _, r in kafkawire.read_metadata_records(snapshot)] == ["FeatureLevelRecord", "TopicRecord"]
    replay = kafkawire.read_metadata_image(directory)
    assert sorted(replay.image.topics_by_name) == ["a", "b"] and replay.image.metadata_version == 27
    assert sorted(kafkawire.read_metadata_image(snapshot).image.topics_by_name) == ["a"]
    assert fingerprint(tmp_path) == before
