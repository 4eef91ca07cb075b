"""Certificates made in a test: a CA, a server certificate for 127.0.0.1/localhost and client
certificates, written as PEM and PKCS12 files under a directory (with the ``cryptography`` package).

    pki = make_pki(tmp_path)          # pki.ca_pem, pki.server_pem (key + chain), pki.server_p12, ...
"""
from __future__ import annotations

import datetime
import ipaddress
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.serialization import pkcs12
from cryptography.x509.oid import NameOID

PASSWORD = "store-secret"


@dataclass
class Pki:
    dir: Path
    ca_pem: Path              # the CA certificate (trust store, PEM)
    ca_p12: Path              # the CA certificate as a PKCS12 trust store (PASSWORD)
    server_pem: Path          # private key + certificate chain in one PEM file (keystore type PEM)
    server_key_pem: Path      # the key alone
    server_cert_pem: Path     # the chain alone
    server_p12: Path          # key + chain, PKCS12 (PASSWORD)
    client_pem: Path          # a client certificate signed by the CA (CN=controller-client)
    client_p12: Path
    rogue_pem: Path           # key + self-signed certificate the CA did not sign
    elsewhere_pem: Path       # key + a CA-signed certificate for another host (elsewhere.invalid)
    ca_cert: x509.Certificate = None


def _name(cn: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.ORGANIZATION_NAME, "kafkawire tests"),
                      x509.NameAttribute(NameOID.COMMON_NAME, cn)])


def _cert(subject, issuer, public_key, signer, *, ca: bool, sans=()):
    now = datetime.datetime.now(datetime.timezone.utc)
    builder = (x509.CertificateBuilder().subject_name(subject).issuer_name(issuer).public_key(public_key)
               .serial_number(x509.random_serial_number())
               .not_valid_before(now - datetime.timedelta(minutes=5))
               .not_valid_after(now + datetime.timedelta(days=2))
               .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True))
    if sans:
        builder = builder.add_extension(x509.SubjectAlternativeName(list(sans)), critical=False)
    return builder.sign(signer, hashes.SHA256())


def _pem_key(key) -> bytes:
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


def _pem_cert(cert) -> bytes:
    return cert.public_bytes(serialization.Encoding.PEM)


def java_truststore(certificates, encryption) -> bytes:
    """A PKCS12 trust store Java trusts as well as Python: each certificate's bag carries Oracle's
    trusted-key-usage attribute, without which Java's PKCS12 KeyStore lists no trusted entry (a
    Kafka broker given the store starts with no CA). tests/interop/test_trust_stores_vs_keytool.py
    asks keytool."""
    return pkcs12.serialize_java_truststore(
        [pkcs12.PKCS12Certificate(c, f"ca{i}".encode()) for i, c in enumerate(certificates)], encryption)


def make_pki(directory: Path) -> Pki:
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca = _cert(_name("kafkawire test CA"), _name("kafkawire test CA"), ca_key.public_key(), ca_key, ca=True)
    server_key = ec.generate_private_key(ec.SECP256R1())
    server = _cert(_name("localhost"), ca.subject, server_key.public_key(), ca_key, ca=False,
                   sans=(x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))))
    client_key = ec.generate_private_key(ec.SECP256R1())
    client = _cert(_name("controller-client"), ca.subject, client_key.public_key(), ca_key, ca=False)
    rogue_key = ec.generate_private_key(ec.SECP256R1())
    rogue = _cert(_name("localhost"), _name("localhost"), rogue_key.public_key(), rogue_key, ca=False,
                  sans=(x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))))
    elsewhere_key = ec.generate_private_key(ec.SECP256R1())
    elsewhere = _cert(_name("elsewhere.invalid"), ca.subject, elsewhere_key.public_key(), ca_key, ca=False,
                      sans=(x509.DNSName("elsewhere.invalid"),))
    enc = serialization.BestAvailableEncryption(PASSWORD.encode())
    files = {
        "ca_pem": _pem_cert(ca),
        "ca_p12": java_truststore([ca], enc),
        "server_pem": _pem_key(server_key) + _pem_cert(server) + _pem_cert(ca),
        "server_key_pem": _pem_key(server_key),
        "server_cert_pem": _pem_cert(server) + _pem_cert(ca),
        "server_p12": pkcs12.serialize_key_and_certificates(b"server", server_key, server, [ca], enc),
        "client_pem": _pem_key(client_key) + _pem_cert(client) + _pem_cert(ca),
        "client_p12": pkcs12.serialize_key_and_certificates(b"client", client_key, client, [ca], enc),
        "rogue_pem": _pem_key(rogue_key) + _pem_cert(rogue),
        "elsewhere_pem": _pem_key(elsewhere_key) + _pem_cert(elsewhere) + _pem_cert(ca),
    }
    paths = {}
    for name, data in files.items():
        path = directory / (name.replace("_pem", ".pem").replace("_p12", ".p12"))
        path.write_bytes(data)
        paths[name] = path
    return Pki(directory, ca_cert=ca, **paths)
