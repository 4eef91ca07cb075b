"""kafkawire.metadata.rc2 against the test vectors of RFC 2268 section 5 (one block each, so CBC
with a zero IV is the block cipher itself); a whole store under 40-bit RC2 is read in
tests/net/test_java_stores.py and compared with Java in tests/interop/test_trust_stores_vs_keytool.py."""
import pytest

from kafkawire.metadata.rc2 import rc2_cbc_decrypt


@pytest.mark.parametrize("key, bits, plain, cipher", [
    ("0000000000000000", 63, "0000000000000000", "ebb773f993278eff"),
    ("ffffffffffffffff", 64, "ffffffffffffffff", "278b27e42e2f0d49"),
    ("3000000000000000", 64, "1000000000000001", "30649edf9be7d2c2"),
])
def test_rfc_2268_vectors(key, bits, plain, cipher):
    assert rc2_cbc_decrypt(bytes.fromhex(key), bits, bytes(8), bytes.fromhex(cipher)) == bytes.fromhex(plain)


def test_cbc_chains_blocks_and_refuses_partial_blocks():
    cipher = bytes.fromhex("ebb773f993278eff") * 2
    # the second block's plain text is the block cipher's output XORed with the first cipher block
    assert rc2_cbc_decrypt(bytes(8), 63, bytes(8), cipher)[8:] == bytes.fromhex("ebb773f993278eff")
    with pytest.raises(ValueError, match="whole 8-byte blocks"):
        rc2_cbc_decrypt(bytes(8), 63, bytes(8), cipher[:12])
