"""The PKCS12 trust stores the tests write (tests/net/tls_certs.py, used by
tests/broker/dynamic_ssl_stores.py too) as Java reads them: ``keytool -list`` must show the CA as
a trustedCertEntry. A store from cryptography's serialize_key_and_certificates lists no entry in
Java (its certificate bag lacks Oracle's trusted-key-usage attribute), so a Kafka broker given
one trusts no CA; kafkawire reads the bags' attributes as Java does (tests/net/test_java_stores.py)."""
from __future__ import annotations

import shutil
import subprocess

from cryptography.hazmat.primitives import hashes

from tests.net.tls_certs import PASSWORD, make_pki


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
