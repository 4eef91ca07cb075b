"""storage format --add-scram: the records authenticate with a SCRAM client (RFC 5802), and the
refusals are Kafka's (the byte-for-byte comparison with Kafka's StorageTool is in
tests/interop/test_storage_vs_kafka.py)."""
import re

import pytest
import scramp

from kafkawire.tools.scram_args import ScramArgumentError, parse_scram_arguments, scram_record_text


def authenticates(record, mechanism, user, password) -> bool:
    def auth_fn(name):
        assert name == record.name
        return bytes(record.salt), bytes(record.stored_key), bytes(record.server_key), record.iterations
    server = scramp.ScramMechanism(mechanism).make_server(auth_fn)
    client = scramp.ScramClient([mechanism], user, password)
    server.set_client_first(client.get_client_first())
    client.set_server_first(server.get_server_first())
    try:
        server.set_client_final(client.get_client_final())
    except scramp.ScramException:
        return False
    client.set_server_final(server.get_server_final())
    return True


@pytest.mark.parametrize("mechanism, type_id", [("SCRAM-SHA-256", 1), ("SCRAM-SHA-512", 2)])
def test_records_verify_the_password_and_only_it(mechanism, type_id):
    record, = parse_scram_arguments([f"{mechanism}=[name=alice,password=alice-secret]"])
    assert (record.name, record.mechanism, record.iterations) == ("alice", type_id, 4096)
    # ScramFormatter's random salt: a 130-bit number in base 36, as text
    assert re.fullmatch(rb"[0-9a-z]{1,26}", bytes(record.salt))
    assert authenticates(record, mechanism, "alice", "alice-secret")
    assert not authenticates(record, mechanism, "alice", "alice-secreT")


def test_salted_password_gives_the_same_record_as_the_password():
    import base64
    import hashlib
    salted = hashlib.pbkdf2_hmac("sha256", b"pw", b"salty", 8192)
    by_password, = parse_scram_arguments(['SCRAM-SHA-256=[name=a,salt="c2FsdHk=",iterations=8192,password=pw]'])
    by_salted, = parse_scram_arguments([f'SCRAM-SHA-256=[name=a,salt="c2FsdHk=",iterations=8192,'
                                        f'saltedpassword="{base64.b64encode(salted).decode()}"]'])
    assert by_password == by_salted
    assert scram_record_text(by_password).startswith("UserScramCredentialRecord(name='a', mechanism=1, "
                                                     "salt=[115, 97, 108, 116, 121], storedKey=[")


@pytest.mark.parametrize("argument, message", [
    ("SCRAM-SHA-256", "Failed to find equals sign in SCRAM argument 'SCRAM-SHA-256'"),
    ("SCRAM-SHA-1=[name=a]", "The add-scram mechanism SCRAM-SHA-1 is not supported."),
    ("SCRAM-SHA-256=[password=b]", "You must supply 'name' to add-scram"),
    ("SCRAM-SHA-256=[name=a,iterations=10,password=b]", "The 'iterations' value must be >= 4096 for add-scram using "
                                                         "SCRAM_SHA_256"),
])
def test_refusals(argument, message):
    with pytest.raises(ScramArgumentError, match=re.escape(message)):
        parse_scram_arguments([argument])
