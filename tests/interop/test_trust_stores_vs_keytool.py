"""The PKCS12 trust stores the tests write (tests/net/tls_certs.py, used by
tests/broker/dynamic_ssl_stores.py too) as Java reads them: ``keytool -list`` must show the CA as
a trustedCertEntry. A store from cryptography's serialize_key_and_certificates lists no entry in
Java (its certificate bag lacks Oracle's trusted-key-usage attribute), so a Kafka broker given
one trusts no CA; kafkawire reads the bags' attributes as Java does: the last test asks Java's own
trust manager (getAcceptedIssuers) which certificates of JKS and PKCS12 stores, with and without a
password, it trusts, and compares with kafkawire.metadata.java_key_stores."""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.serialization import pkcs12

from kafkawire.metadata.java_key_stores import read_key_store
from tests.net.tls_certs import PASSWORD, make_pki

JAVA_STORES = Path(__file__).parents[1] / "net" / "data" / "java_stores"
# Java's trust manager over each store named on the command line (path, type, password; "-": none):
# the serial numbers of getAcceptedIssuers(), what Kafka's DefaultSslEngineFactory trusts
TRUSTED_JAVA = """
import java.io.FileInputStream;
import java.security.KeyStore;
import java.security.cert.X509Certificate;
import javax.net.ssl.TrustManagerFactory;
import javax.net.ssl.X509TrustManager;
public class Trusted {
    public static void main(String[] args) throws Exception {
        for (int i = 0; i < args.length; i += 3) {
            KeyStore store = KeyStore.getInstance(args[i + 1]);
            try (FileInputStream in = new FileInputStream(args[i])) { store.load(in, args[i + 2].equals("-") ? null : args[i + 2].toCharArray()); }
            TrustManagerFactory factory = TrustManagerFactory.getInstance("PKIX");
            factory.init(store);
            StringBuilder line = new StringBuilder(args[i] + "," + args[i + 1] + "," + args[i + 2]);
            for (X509Certificate c : ((X509TrustManager) factory.getTrustManagers()[0]).getAcceptedIssuers())
                line.append(" ").append(c.getSerialNumber().toString(16));
            System.out.println(line);
        }
    }
}
"""


def test_keytool_lists_the_test_ca_as_a_trusted_certificate_entry(tmp_path):
    if not shutil.which("keytool"):
        from tests.conftest import unavailable
        unavailable("keytool (a JDK) is needed to ask Java what a PKCS12 trust store holds")
    pki = make_pki(tmp_path)
    listed = subprocess.run(["keytool", "-list", "-storetype", "PKCS12", "-keystore", str(pki.ca_p12),
                             "-storepass", PASSWORD, "-J-XX:+UseSerialGC"],
                            capture_output=True, text=True, timeout=120)
    assert listed.returncode == 0, listed.stdout + listed.stderr
    entries = [line for line in listed.stdout.splitlines() if "Entry" in line]
    assert len(entries) == 1 and "trustedCertEntry" in entries[0], listed.stdout
    fingerprint = ":".join(f"{b:02X}" for b in pki.ca_cert.fingerprint(hashes.SHA256()))
    assert f"(SHA-256): {fingerprint}" in listed.stdout, listed.stdout


def test_the_certificates_a_store_makes_java_trust_are_ours(tmp_path):
    if not shutil.which("java"):
        from tests.conftest import unavailable
        unavailable("a JDK is needed to ask Java's trust manager what a store trusts")
    pki = make_pki(tmp_path)
    bare = tmp_path / "bare.p12"          # openssl pkcs12 -export's kind: no trusted-key-usage attribute
    bare.write_bytes(pkcs12.serialize_key_and_certificates(
        None, None, None, [pki.ca_cert], serialization.BestAvailableEncryption(PASSWORD.encode())))
    stores = [(pki.ca_p12, "PKCS12", PASSWORD), (pki.server_p12, "PKCS12", PASSWORD), (bare, "PKCS12", PASSWORD)] + \
        [(JAVA_STORES / name, kind, password) for name, kind, password in (
            ("server.jks", "JKS", PASSWORD), ("client.jks", "JKS", PASSWORD), ("truststore.jks", "JKS", PASSWORD),
            ("server.p12", "PKCS12", PASSWORD), ("truststore.p12", "PKCS12", PASSWORD),
            ("truststore.jks", "JKS", "-"), ("truststore.p12", "PKCS12", "-"),      # no password
            ("legacy-rc2.p12", "PKCS12", "pw"),          # certificates under 40-bit RC2
            ("server.jceks", "JCEKS", PASSWORD), ("server.jks", "JCEKS", PASSWORD))]
    source = tmp_path / "Trusted.java"
    source.write_text(TRUSTED_JAVA)
    args = [str(part) for store in stores for part in store]
    ran = subprocess.run(["java", "-XX:+UseSerialGC", str(source), *args], capture_output=True, text=True,
                         timeout=120)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    java = {line.split(" ")[0]: set(line.split(" ")[1:]) for line in ran.stdout.splitlines()}
    assert len(java) == len(set(stores))
    ours = {f"{path},{kind},{password}": {format(x509.load_der_x509_certificate(der).serial_number, "x") for der in
                                   read_key_store(path.read_bytes(), None if password == "-" else password, kind)
                                   .trusted_certificates()}
            for path, kind, password in stores}
    assert ours == java
    # the cases that differ from "every certificate in the store"
    assert java[f"{bare},PKCS12,{PASSWORD}"] == set() and len(java[f"{pki.server_p12},PKCS12,{PASSWORD}"]) == 1
    assert java[f"{JAVA_STORES / 'truststore.p12'},PKCS12,-"] == set()


def test_a_store_keytool_writes_now_is_read(tmp_path):
    if not shutil.which("keytool"):
        from tests.conftest import unavailable
        unavailable("keytool (a JDK) is needed to write a new JKS store")
    path = tmp_path / "fresh.jks"
    made = subprocess.run(["keytool", "-J-XX:+UseSerialGC", "-genkeypair", "-keystore", str(path), "-storetype",
                           "JKS", "-storepass", PASSWORD, "-keypass", "k\u00e9y-pass", "-alias", "Gr\u00fc\u00dfe",
                           "-keyalg", "EC", "-groupname", "secp256r1", "-dname", "CN=fresh", "-validity", "2"],
                          capture_output=True, text=True, timeout=120)
    assert made.returncode == 0, made.stdout + made.stderr
    fresh = read_key_store(path.read_bytes(), PASSWORD)
    assert [entry.alias for entry in fresh.keys] == ["gr\u00fc\u00dfe"]      # keytool lower-cases aliases

    def raw(public_key):
        return public_key.public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    assert raw(fresh.keys[0].private_key("k\u00e9y-pass").public_key()) == \
        raw(x509.load_der_x509_certificate(fresh.keys[0].chain[0]).public_key())
