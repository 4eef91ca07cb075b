"""A node logs directory and incarnation ids as Kafka's tools print them (Uuid.toString, URL-safe
base64), so a user can find in the log the id `storage info`, meta.properties and
`metadata-quorum describe --replication` show (issue 20, item 9: the logs had hyphenated UUIDs)."""
import os
import re
import uuid

from kafkawire.storage.state_files import read_meta_properties, uuid_to_kafka
from kafkawire.raft.node.local_quorum import LocalQuorum
from kafkawire.raft.types import ReplicaKey

HYPHENATED_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def test_replica_key_names_its_directory_in_kafkas_form():
    directory = uuid.UUID("76958afb-edcf-4c3d-8099-f24beda93390")
    assert str(ReplicaKey(3, directory)) == "3:dpWK--3PTD2AmfJL7akzkA"
    assert str(ReplicaKey(3, None)) == "3"


def test_node_log_names_ids_as_the_tools_print_them(tmp_path):
    with LocalQuorum(tmp_path, voters=1, extra_nodes=1) as quorum:
        quorum.format()
        quorum.start(1)
        quorum.start(2)
        try:
            quorum.wait_for_leader(120)
            quorum.wait_until(lambda: "acknowledged our registration" in open(quorum.log_path(2)).read(), 30,
                              "node 2's controller registration")
        finally:
            quorum.stop_all()
    for node_id in (1, 2):
        meta = read_meta_properties(os.path.join(quorum.data_dir(node_id), "meta.properties"))
        text = open(quorum.log_path(node_id)).read()
        assert f"directory {uuid_to_kafka(meta.directory_id)})" in text, text[-2000:]
        incarnations = re.findall(r"incarnation ([^)]+)\)", text)
        assert incarnations and all(re.fullmatch(r"[A-Za-z0-9_-]{22}", i) for i in incarnations), incarnations
        assert not HYPHENATED_UUID.search(text), HYPHENATED_UUID.search(text).group(0)
