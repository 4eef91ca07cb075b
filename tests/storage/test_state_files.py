import os
import uuid

import pytest

from kafkawire import messages
from kafkawire.storage import state_files as sf


def test_atomic_write_uses_tmp_fsync_rename(tmp_path, monkeypatch):
    path = tmp_path / "quorum-state"
    path.write_bytes(b"old")
    calls = []
    real_fsync, real_replace = os.fsync, os.replace
    monkeypatch.setattr(os, "fsync", lambda fd: (calls.append(("fsync", os.readlink(f"/proc/self/fd/{fd}"))), real_fsync(fd)))
    monkeypatch.setattr(os, "replace", lambda a, b: (calls.append(("replace", a, b)), real_replace(a, b)))
    sf.atomic_write(path, "new")
    assert calls == [("fsync", str(path) + ".tmp"), ("replace", str(path) + ".tmp", str(path)),
                     ("fsync", str(tmp_path))]
    assert path.read_bytes() == b"new" and not (tmp_path / "quorum-state.tmp").exists()


def test_leader_epoch_checkpoint(tmp_path):
    p = tmp_path / "leader-epoch-checkpoint"
    sf.write_leader_epoch_checkpoint(p, [sf.EpochEntry(1, 0), sf.EpochEntry(4, 165)])
    assert p.read_bytes() == b"0\n2\n1 0\n4 165\n"
    assert sf.read_leader_epoch_checkpoint(p) == [sf.EpochEntry(1, 0), sf.EpochEntry(4, 165)]
    p.write_bytes(b"0\n3\n1 0\n")
    with pytest.raises(sf.StateFileError, match="expected 3 entries"):
        sf.read_leader_epoch_checkpoint(p)
    p.write_bytes(b"1\n0\n")
    with pytest.raises(sf.StateFileError, match="version 1"):
        sf.read_leader_epoch_checkpoint(p)
    p.write_bytes(b"")
    assert sf.read_leader_epoch_checkpoint(p) == []


def test_offset_checkpoint(tmp_path):
    p = tmp_path / "replication-offset-checkpoint"
    sf.write_offset_checkpoint(p, {("t", 0): 5, ("__consumer_offsets", 12): 0})
    assert p.read_bytes() == b"0\n2\nt 0 5\n__consumer_offsets 12 0\n"
    assert sf.read_offset_checkpoint(p) == {("t", 0): 5, ("__consumer_offsets", 12): 0}


def test_quorum_state_v0_and_v1(tmp_path):
    v0 = '{"clusterId":"","leaderId":1,"leaderEpoch":23,"votedId":-1,"appliedOffset":0,"currentVoters":[{"voterId":1}],"data_version":0}'
    state, version = sf.parse_quorum_state(v0)
    assert version == 0 and state.leader_epoch == 23
    assert sf.format_quorum_state(state, 0) == v0
    Q = messages.by_name("QuorumStateData")
    s1 = Q()
    s1.leader_id, s1.leader_epoch, s1.voted_id = -1, 7, 3
    s1.voted_directory_id = uuid.UUID(int=0x0102)
    p = tmp_path / "quorum-state"
    sf.write_quorum_state(p, s1, 1)
    text = p.read_text()
    assert text == ('{"leaderId":-1,"leaderEpoch":7,"votedId":3,'
                    '"votedDirectoryId":"AAAAAAAAAAAAAAAAAAABAg","data_version":1}')
    back, v = sf.read_quorum_state(p)
    assert v == 1 and back.voted_id == 3 and back.voted_directory_id == s1.voted_directory_id
    with pytest.raises(sf.StateFileError, match="data_version"):
        sf.parse_quorum_state('{"leaderId":1}')
    with pytest.raises(sf.StateFileError, match="data_version 7"):
        sf.parse_quorum_state('{"leaderId":1,"data_version":7}')


def test_meta_properties_round_trip_and_unknown_keys(tmp_path):
    text = ("#\n#Sat Feb 08 08:40:22 UTC 2025\nnode.id=1\ndirectory.id=uqILiACavwjFzy-6zrtdOw\n"
            "version=1\ncluster.id=0hwrdfy-QZuxnguQeaxgyg\nsome.future.key=a\\=b\\:c \\#x\n")
    meta = sf.MetaProperties.parse(text)
    assert (meta.version, meta.node_id, meta.cluster_id) == (1, 1, "0hwrdfy-QZuxnguQeaxgyg")
    assert sf.uuid_to_kafka(meta.directory_id) == "uqILiACavwjFzy-6zrtdOw"
    assert meta.properties.items["some.future.key"] == "a=b:c #x"
    assert meta.format() == text
    v0 = sf.MetaProperties.parse("#\n#x\nversion=0\nbroker.id=5\n")
    assert v0.version == 0 and v0.node_id == 5 and v0.cluster_id is None
    with pytest.raises(sf.StateFileError, match="needs node.id and cluster.id"):
        sf.MetaProperties.parse("version=1\nnode.id=1\n")
    new = sf.MetaProperties(1, "abc", 3, uuid.UUID(int=1))
    p = tmp_path / "meta.properties"
    sf.write_meta_properties(p, new)
    lines = p.read_text().split("\n")
    assert lines[0] == "#" and lines[1].startswith("#") and lines[1].endswith(" UTC " + lines[1][-4:])
    assert lines[2:] == ["cluster.id=abc", "directory.id=AAAAAAAAAAAAAAAAAAAAAQ", "node.id=3",
                         "version=1", ""]
    assert sf.read_meta_properties(p).node_id == 3


def test_java_properties_parsing():
    props = sf.JavaProperties.parse(
        "! bang comment\n  # indented comment\nkey1 = value one\nkey2:v2\nkey3 v3\n"
        "multi = first \\\n    second\nuni=\\u00e9t\\u00E9\nesc\\ key=tab\\there\n\n")
    assert props.items == {"key1": "value one", "key2": "v2", "key3": "v3",
                           "multi": "first second", "uni": "été", "esc key": "tab\there"}
    out = sf.JavaProperties(props.items, []).format()
    assert "esc\\ key=tab\\there\n" in out and "uni=été\n" in out
    assert sf.JavaProperties.parse(out).items == props.items


def test_partition_metadata(tmp_path):
    p = tmp_path / "partition.metadata"
    tid = uuid.UUID(int=1)
    sf.write_partition_metadata(p, tid)
    assert p.read_bytes() == b"version: 0\ntopic_id: AAAAAAAAAAAAAAAAAAAAAQ"
    assert sf.read_partition_metadata(p) == tid
    with pytest.raises(sf.StateFileError, match="version"):
        sf.parse_partition_metadata("version: 1\ntopic_id: AAAAAAAAAAAAAAAAAAAAAQ")


@pytest.mark.parametrize("text, entries, cut_short, strict", [
    ("0\n2\na 0 5\nb 1 7\n", [["a", "0", "5"], ["b", "1", "7"]], False, "same"),
    ("0\n2\na 0 5\nb 1 7", [["a", "0", "5"]], True, [["a", "0", "5"], ["b", "1", "7"]]),   # no last newline
    ("0\n3\na 0 5\n", [["a", "0", "5"]], True, None),      # lines the count promises are missing
    ("0\n", [], True, None), ("", [], True, []),             # cut before the entries
])
def test_a_partial_checkpoint_keeps_its_complete_lines(text, entries, cut_short, strict):
    """parse_checkpoint(partial=True) reads a file copied while it was written: a line without
    its newline may be cut, so it is left out. A broker's own read (strict) takes such a line, as
    Java's readLine does, and calls missing lines an error, as Kafka's CheckpointFile does."""
    found = sf.parse_checkpoint(text, fields=3, partial=True)
    assert (found, found.cut_short) == (entries, cut_short)
    if strict is None:
        with pytest.raises(sf.StateFileError):
            sf.parse_checkpoint(text, fields=3)
    else:
        assert sf.parse_checkpoint(text, fields=3) == (entries if strict == "same" else strict)


def test_checkpoint_lines_may_end_with_a_carriage_return_as_javas_readline_takes_them():
    assert sf.parse_checkpoint("0\r\n1\r\na 0 5\r\n", fields=3) == [["a", "0", "5"]]
