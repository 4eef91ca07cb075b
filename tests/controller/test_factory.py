"""Building the controller for a node: bootstrap.checkpoint as `storage format` writes it,
clear errors for a missing or damaged one, and the RaftHandle over the driver."""
import pytest

from kafkawire.controller.activation import BootstrapError
from kafkawire.controller.factory import controller_listeners, load_bootstrap_records
from kafkawire.net.config import parse_server_config
from kafkawire.tools.storage import write_bootstrap_checkpoint

from .harness import bootstrap


def test_the_bootstrap_records_are_those_storage_format_wrote(tmp_path):
    write_bootstrap_checkpoint(tmp_path, 27)
    records, source = load_bootstrap_records(tmp_path)
    assert records == bootstrap(27)
    assert source == f"the binary bootstrap metadata file: {tmp_path}/bootstrap.checkpoint"


def test_a_missing_bootstrap_file_is_refused_naming_it(tmp_path):
    with pytest.raises(BootstrapError, match=r"bootstrap.checkpoint does not exist: format the directory"):
        load_bootstrap_records(tmp_path)


def test_a_damaged_bootstrap_file_is_refused_naming_it(tmp_path):
    path = write_bootstrap_checkpoint(tmp_path, 29)
    data = bytearray(open(path, "rb").read())
    data[100] ^= 0xFF                       # inside the FeatureLevelRecord batch: its CRC fails
    open(path, "wb").write(bytes(data))
    with pytest.raises(BootstrapError, match="bootstrap.checkpoint"):
        load_bootstrap_records(tmp_path)


def test_controller_listeners_are_advertised_with_a_host():
    config = parse_server_config("node.id=1\nprocess.roles=controller\ncontroller.quorum.voters=1@h:9093\n"
                                 "listeners=CONTROLLER://:9093,OTHER://127.0.0.1:9094\n"
                                 "controller.listener.names=CONTROLLER,OTHER\n"
                                 "listener.security.protocol.map=CONTROLLER:PLAINTEXT,OTHER:SSL\nlog.dirs=/tmp/x\n")
    (name, host, port, protocol), other = controller_listeners(config)
    assert (name, port, protocol) == ("CONTROLLER", 9093, "PLAINTEXT") and host        # wildcard -> a name
    assert other == ("OTHER", "127.0.0.1", 9094, "SSL")
