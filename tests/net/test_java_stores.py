"""JKS and PKCS12 key and trust stores as a Kafka node reads them: stores keytool wrote
(tests/net/data/java_stores, see SOURCE.md there; no Java needed) served on a TLS listener, the
refusals of a wrong password or a cut file, and which certificates of a PKCS12 trust store Java
trusts (Oracle's trusted-key-usage bag attribute). The tests that run Java are in
tests/interop/test_trust_stores_vs_keytool.py."""
from __future__ import annotations

from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.serialization import pkcs12

from kafkawire.metadata.dynamic_ssl_reconfiguration import SSL_RECONFIGURABLE, SslRefused, check
from kafkawire.metadata.java_key_stores import KeyStoreError, java_hashtable_order, read_key_store
from kafkawire.metadata.pkcs12_bags import trusted_certificates
from kafkawire.net.config import ConfigError
from kafkawire.net.server import KafkaServer

from .netlib import run
from .test_tls import client_settings, node_config, principal_seen
from .tls_certs import make_pki

STORES = Path(__file__).parent / "data" / "java_stores"
PASSWORD = "store-secret"            # make_stores.sh's store password; server-keypass.jks's key: key-secret


def store(name: str) -> str:
    return str(STORES / name)


def subjects(ders) -> list[str]:
    return [x509.load_der_x509_certificate(der).subject.rfc4514_string() for der in ders]


def jks_server(extra: str = "") -> str:
    """A listener on server.jks with Kafka's default store types (JKS): no ssl.*.type set."""
    return f"ssl.keystore.location={store('server.jks')}\nssl.keystore.password={PASSWORD}\n" + extra


def jks_client(extra: str = "") -> str:
    return f"ssl.truststore.location={store('truststore.jks')}\nssl.truststore.password={PASSWORD}\n" + extra


def start_refusal(config_text: str) -> ConfigError:
    with pytest.raises(ConfigError) as info:
        KafkaServer({}, security=node_config(config_text).security_of("CONTROLLER"))
    return info.value


def test_mutual_tls_with_jks_key_and_trust_stores_of_kafkas_default_type():
    server = node_config(jks_server(f"ssl.client.auth=required\nssl.truststore.location={store('truststore.jks')}\n"
                                    f"ssl.truststore.password={PASSWORD}\n"))
    client = client_settings(jks_client(f"ssl.keystore.location={store('client.jks')}\n"
                                        f"ssl.keystore.password={PASSWORD}\n"))
    assert run(principal_seen(server, client)) == ["User:CN=jks-client,O=kafkawire tests"]


def test_either_store_type_reads_either_format_and_a_jks_trust_store_needs_no_password():
    # the JDK's keystore.type.compat: type PKCS12 opens a JKS file, type JKS a PKCS12 file
    server = node_config(f"ssl.keystore.type=PKCS12\nssl.keystore.location={store('server.jks')}\n"
                         f"ssl.keystore.password={PASSWORD}\n")
    client = client_settings(f"ssl.truststore.location={store('truststore.jks')}\n")    # no integrity check
    assert run(principal_seen(server, client)) == ["User:ANONYMOUS"]
    server = node_config(f"ssl.keystore.location={store('server.p12')}\nssl.keystore.password={PASSWORD}\n")
    client = client_settings(f"ssl.truststore.type=PKCS12\nssl.truststore.location={store('truststore.p12')}\n"
                             f"ssl.truststore.password={PASSWORD}\n")
    assert run(principal_seen(server, client)) == ["User:ANONYMOUS"]


def test_a_jks_key_with_its_own_password_opens_with_ssl_key_password():
    keypass = f"ssl.keystore.location={store('server-keypass.jks')}\nssl.keystore.password={PASSWORD}\n"
    client = client_settings(jks_client())
    assert run(principal_seen(node_config(keypass + "ssl.key.password=key-secret\n"), client)) == ["User:ANONYMOUS"]
    refusal = start_refusal(keypass)                  # the store password does not open this key
    assert refusal.key == "ssl.keystore.location"
    assert "key entry 'server' does not open with this key password: Cannot recover key" in str(refusal)
    refusal = start_refusal(keypass + "ssl.key.password=wrong\n")
    assert refusal.key == "ssl.key.password" and "Cannot recover key" in str(refusal)


def test_jceks_stores_are_read_under_type_jceks_only_as_java_reads_them():
    server = node_config(f"ssl.keystore.type=JCEKS\nssl.keystore.location={store('server-keypass.jceks')}\n"
                         f"ssl.keystore.password={PASSWORD}\nssl.key.password=key-secret\n")
    assert run(principal_seen(server, client_settings(jks_client()))) == ["User:ANONYMOUS"]
    jceks = read_key_store((STORES / "server.jceks").read_bytes(), PASSWORD, "JCEKS")
    jks = read_key_store((STORES / "server.jks").read_bytes(), PASSWORD)
    assert jceks.certificate_entries() == jks.certificate_entries()          # a copy keytool made
    assert jceks.keys[0].private_key(PASSWORD).private_numbers() == jks.keys[0].private_key(PASSWORD).private_numbers()
    assert read_key_store((STORES / "server.jks").read_bytes(), PASSWORD, "JCEKS").format == "JKS"
    # Java 17: type JKS or PKCS12 refuses a JCEKS file ("Invalid keystore format"), JCEKS a PKCS12 one
    refusal = start_refusal(f"ssl.keystore.location={store('server.jceks')}\nssl.keystore.password={PASSWORD}\n")
    assert refusal.key == "ssl.keystore.location" and "type does not read (set the store's type to JCEKS)" \
        in str(refusal)
    with pytest.raises(KeyStoreError, match="is neither a JCEKS nor a JKS store"):
        read_key_store((STORES / "server.p12").read_bytes(), PASSWORD, "JCEKS")
    with pytest.raises(KeyStoreError, match="Cannot recover key"):
        read_key_store((STORES / "server-keypass.jceks").read_bytes(), PASSWORD, "JCEKS").keys[0].private_key(
            PASSWORD)


def test_a_wrong_store_password_or_a_cut_file_is_refused_at_start_naming_the_file(tmp_path):
    refusal = start_refusal(f"ssl.keystore.location={store('server.jks')}\nssl.keystore.password=wrong\n")
    assert refusal.key == "ssl.keystore.location" and refusal.value == store("server.jks")
    assert "Keystore was tampered with, or password was incorrect" in str(refusal)
    cut = tmp_path / "cut.jks"
    cut.write_bytes((STORES / "server.jks").read_bytes()[:700])
    refusal = start_refusal(f"ssl.keystore.location={cut}\nssl.keystore.password={PASSWORD}\n")
    assert refusal.value == str(cut) and "is truncated at offset 625: a certificate of" in str(refusal)
    pem = tmp_path / "server.pem"             # Kafka's default type JKS given a PEM file
    pem.write_text((STORES / "ca.pem").read_text())
    assert "is neither a JKS nor a PKCS12 store (it holds PEM: set the store's type to PEM)" in \
        str(start_refusal(f"ssl.keystore.location={pem}\nssl.keystore.password={PASSWORD}\n"))
    junk = tmp_path / "junk.jks"
    junk.write_bytes(b"\xfe\xed\xfe\xed\x00\x00\x00\x07")
    assert "is a JKS store of version 7" in str(start_refusal(f"ssl.keystore.location={junk}\n"
                                                               f"ssl.keystore.password={PASSWORD}\n"))


def test_every_cut_of_a_jks_store_is_refused_with_its_offset():
    data = (STORES / "server.jks").read_bytes()
    for end in range(4, len(data)):
        with pytest.raises(KeyStoreError, match="truncated at offset"):
            read_key_store(data[:end], PASSWORD)


def test_a_jks_trust_store_trusts_its_certificate_entries_and_each_key_entrys_own_certificate():
    # Java's TrustStoreUtil: trusted certificate entries, then the first certificate of each key's chain
    assert subjects(read_key_store((STORES / "server.jks").read_bytes(), PASSWORD).trusted_certificates()) == \
        ["CN=kafkawire JKS test CA,O=kafkawire tests", "CN=localhost,O=kafkawire tests"]


def test_a_pkcs12_trust_store_trusts_only_what_java_does(tmp_path):
    pki = make_pki(tmp_path)
    ca = pki.ca_cert.public_bytes(serialization.Encoding.DER)
    server = x509.load_pem_x509_certificates(pki.server_cert_pem.read_bytes())[0]
    secret = serialization.BestAvailableEncryption(PASSWORD.encode())
    # keytool's store: the CA is a trusted entry; cryptography's java trust store the same
    assert subjects(trusted_certificates((STORES / "truststore.p12").read_bytes(), PASSWORD)) == \
        ["CN=kafkawire JKS test CA,O=kafkawire tests"]
    assert trusted_certificates(pki.ca_p12.read_bytes(), PASSWORD) == [ca]
    # a key store as trust store: its key's certificate, not the CA beside it without the attribute
    assert trusted_certificates(pki.server_p12.read_bytes(), PASSWORD) == \
        [server.public_bytes(serialization.Encoding.DER)]
    # openssl pkcs12 -export's kind of trust store: certificates without the attribute, none trusted
    bare = tmp_path / "bare.p12"
    bare.write_bytes(pkcs12.serialize_key_and_certificates(None, None, None, [pki.ca_cert], secret))
    assert trusted_certificates(bare.read_bytes(), PASSWORD) == []
    refusal = start_refusal(f"ssl.keystore.location={store('server.jks')}\nssl.keystore.password={PASSWORD}\n"
                            f"ssl.client.auth=required\nssl.truststore.location={bare}\n"
                            f"ssl.truststore.password={PASSWORD}\n")
    assert refusal.key == "ssl.truststore.location" and "holds no certificate Java trusts" in str(refusal)


@pytest.mark.parametrize("encryption", ["pbes2", "3des", "none"])
def test_pkcs12_bags_are_read_under_each_encryption_cryptography_writes(tmp_path, encryption):
    pki = make_pki(tmp_path)
    chosen = {"pbes2": serialization.BestAvailableEncryption(PASSWORD.encode()),
              "3des": serialization.PrivateFormat.PKCS12.encryption_builder().kdf_rounds(1000)
              .key_cert_algorithm(pkcs12.PBES.PBESv1SHA1And3KeyTripleDESCBC).hmac_hash(hashes.SHA1())
              .build(PASSWORD.encode()),
              "none": serialization.NoEncryption()}[encryption]
    data = pkcs12.serialize_java_truststore([pkcs12.PKCS12Certificate(pki.ca_cert, b"ca")], chosen)
    assert trusted_certificates(data, PASSWORD) == [pki.ca_cert.public_bytes(serialization.Encoding.DER)]
    if encryption != "none":
        assert trusted_certificates(data, None) == []       # Java skips encrypted contents without a password
        with pytest.raises(KeyStoreError, match="this password opens"):
            read_key_store(data, "wrong")


def test_java_hashtable_order_is_javas():
    # printed by Java 17: a Hashtable<String, Object> put these keys in this order; keys() then listed
    # them so (two rehashes: 11, 23, 47 buckets)
    keys = ("alpha,bravo,charlie,delta,echo,foxtrot,golf,hotel,india,juliet,kilo,lima,mike,november,oscar,papa,"
            "quebec,romeo,sierra,tango,uniform,victor,whiskey,xray,yankee,zulu").split(",")
    java = ("zulu,india,romeo,lima,alpha,juliet,golf,xray,papa,kilo,whiskey,november,yankee,victor,tango,quebec,mike,"
            "foxtrot,sierra,uniform,echo,bravo,delta,hotel,oscar,charlie").split(",")
    assert java_hashtable_order(keys) == java
    assert java_hashtable_order(["server", "ca"]) == ["ca", "server"]


def ssl_values(keystore: str, **changes) -> dict:
    values = {key: None for key in SSL_RECONFIGURABLE}
    values.update({"ssl.keystore.type": "JKS", "ssl.truststore.type": "JKS", "ssl.keystore.location": store(keystore),
                   "ssl.keystore.password": PASSWORD})
    values.update({f"ssl.{key.replace('_', '.')}": value for key, value in changes.items()})
    return values


def test_a_dynamic_key_store_change_reads_jks_stores_as_kafka():
    # entries compare in KeyStore.aliases() order, which Java 17 gives as ca, server for server.jks and
    # server, ca for server.p12: Kafka refuses this change though the stores hold the same names
    with pytest.raises(SslRefused) as refused:
        check(ssl_values("server.jks"), ssl_values("server.p12", keystore_type="PKCS12"),
              allow_dn_changes=False, allow_san_changes=False)
    assert "existing={alias=ca, DN=CN=kafkawire JKS test CA, O=kafkawire tests}, new={alias=server, " \
           "DN=CN=localhost, O=kafkawire tests}" in str(refused.value)
    with pytest.raises(SslRefused) as refused:
        check(ssl_values("server.jks"), ssl_values("client.jks"), allow_dn_changes=False, allow_san_changes=True)
    assert str(refused.value).endswith(
        "ConfigException: Keystore DistinguishedName does not match:  existing={alias=server, DN=CN=localhost, "
        "O=kafkawire tests}, new={alias=client, DN=CN=jks-client, O=kafkawire tests}")
    with pytest.raises(SslRefused, match="UnrecoverableKeyException: Cannot recover key$"):
        check(ssl_values("server.jks"), ssl_values("server-keypass.jks"), allow_dn_changes=False,
              allow_san_changes=False)
    check(ssl_values("server.jks"), ssl_values("server-keypass.jks", key_password="key-secret"),
          allow_dn_changes=False, allow_san_changes=False)
    with pytest.raises(SslRefused, match=f"KafkaException: Failed to load SSL keystore {store('server.jks')} of "
                                         "type JKS$"):
        check(ssl_values("server.jks"), ssl_values("server.jks", keystore_password="wrong"),
              allow_dn_changes=False, allow_san_changes=False)


def test_a_legacy_pkcs12_store_with_40_bit_rc2_is_read():
    legacy = read_key_store((STORES / "legacy-rc2.p12").read_bytes(), "pw")
    assert subjects(legacy.trusted_certificates()) == ["CN=legacy rc2 store"]      # its key's certificate
    with pytest.raises(KeyStoreError, match="this password opens"):
        read_key_store((STORES / "legacy-rc2.p12").read_bytes(), "not-pw")


@pytest.mark.parametrize("name, password, unread_tail", [("truststore.p12", None, 0), ("server.jks", None, 20),
                                                         ("server.jks", PASSWORD, 0)])
def test_a_damaged_store_is_refused_with_a_key_store_error_never_another_exception(name, password, unread_tail):
    # unread_tail: a JKS store opened without a password is read without its 20-byte digest
    import random
    data = (STORES / name).read_bytes()

    def refused(damaged: bytes) -> bool:
        try:
            read_key_store(damaged, password)
        except KeyStoreError:
            return True
        return False
    assert sum(refused(data[:end]) for end in range(len(data))) == len(data) - unread_tail
    chance = random.Random(29)
    for _ in range(300):
        changed = bytearray(data)
        changed[chance.randrange(len(data))] = chance.randrange(256)
        refused(bytes(changed))                     # refused or read; any other exception fails the test


def test_a_pkcs12_store_whose_bags_are_unread_still_serves_its_key_but_trusts_nothing(monkeypatch):
    # cryptography opens more PKCS12 stores than kafkawire's bag reader (a signed authSafe, a cipher
    # outside PBES2's AES and 3DES): the key store still serves; as a trust store it is refused
    from kafkawire.metadata import java_key_stores
    from kafkawire.metadata.pkcs12_bags import Pkcs12Error

    def unreadable(data, password):
        raise Pkcs12Error("encrypted with 1.2.3.4, which kafkawire does not read")
    monkeypatch.setattr(java_key_stores, "java_entries", unreadable)
    server = node_config(f"ssl.keystore.location={store('server.p12')}\nssl.keystore.password={PASSWORD}\n")
    assert run(principal_seen(server, client_settings(jks_client()))) == ["User:ANONYMOUS"]
    refusal = start_refusal(f"ssl.keystore.location={store('server.jks')}\nssl.keystore.password={PASSWORD}\n"
                            f"ssl.client.auth=required\nssl.truststore.location={store('server.p12')}\n"
                            f"ssl.truststore.password={PASSWORD}\n")
    assert refusal.key == "ssl.truststore.location" and "encrypted with 1.2.3.4" in str(refusal)
