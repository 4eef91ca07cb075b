"""Key and trust stores for the recorded SSL cases of a dynamic broker config change
(tests/broker/data/dynamic_ssl_config_cases.json): written into a directory, each case's
"{tmp}" standing for it. Certificates are EC P-256 (quick to make); what the checks compare (a
subject DN, SubjectAltNames, whether a store loads with its password) is the same on every run,
so Kafka's recorded answers hold for stores made anew."""
from __future__ import annotations

import datetime
import ipaddress
from pathlib import Path

PASSWORD = "secret"
KEY_PASSWORD = "keypass"
_SANS = ("localhost", "127.0.0.1", "broker.example")


def _certificate(common_name: str, sans: tuple[str, ...], issuer=None):
    """A key and its certificate, self-signed or signed by ``issuer`` (a CA's key and certificate)."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.ORGANIZATION_NAME, "kafkawire"),
                      x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
    names = [x509.IPAddress(ipaddress.ip_address(s)) if s[0].isdigit() else x509.DNSName(s) for s in sans]
    now = datetime.datetime.now(datetime.timezone.utc)
    signer, issuer_name = (key, name) if issuer is None else (issuer[0], issuer[1].subject)
    builder = (x509.CertificateBuilder().subject_name(name).issuer_name(issuer_name).public_key(key.public_key())
               .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(days=1))
               .not_valid_after(now + datetime.timedelta(days=30)))
    if names:
        builder = builder.add_extension(x509.SubjectAlternativeName(names), critical=False)
    if not sans:                                        # a CA
        builder = builder.add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
    return key, builder.sign(signer, hashes.SHA256())


def write_stores(directory: Path) -> Path:
    """The stores the cases name, in ``directory``; returns it."""
    from cryptography.hazmat.primitives.serialization import (BestAvailableEncryption, Encoding, NoEncryption,
                                                              PrivateFormat, pkcs12)

    from tests.net.tls_certs import java_truststore
    secret = BestAvailableEncryption(PASSWORD.encode())
    stores = {"ks": ("broker", _SANS), "ks-same": ("broker", _SANS), "ks-more-sans": ("broker", (*_SANS, "::1")),
              "ks-fewer-sans": ("broker", _SANS[:1]), "ks-other-dn": ("other", _SANS)}
    certificates = {}
    for name, (common_name, sans) in stores.items():
        key, certificate = _certificate(common_name, sans)
        certificates[name] = certificate
        (directory / f"{name}.p12").write_bytes(pkcs12.serialize_key_and_certificates(
            b"broker", key, certificate, None, secret))
        if name == "ks-same":
            chain = certificate.public_bytes(Encoding.PEM)
            plain = key.private_bytes(Encoding.PEM, PrivateFormat.PKCS8, NoEncryption())
            encrypted = key.private_bytes(Encoding.PEM, PrivateFormat.PKCS8,
                                          BestAvailableEncryption(KEY_PASSWORD.encode()))
            (directory / "ks-same.pem").write_bytes(plain + chain)
            (directory / "ks-enc.pem").write_bytes(encrypted + chain)
    for name, certificate in (("ts", certificates["ks"]), ("ts2", certificates["ks-same"])):
        (directory / f"{name}.p12").write_bytes(java_truststore([certificate], secret))
    (directory / "ts.pem").write_bytes(certificates["ks"].public_bytes(Encoding.PEM))
    # for the inter-broker listener's handshake: key stores signed by a CA, trust stores of CAs in
    # PEM (the recorded cases name these files)
    authorities = {name: _certificate(f"{name} authority", ()) for name in ("ca", "ca2")}
    for name, authority in (("ks-ca", "ca"), ("ks-ca2", "ca"), ("ks-other-ca", "ca2")):
        key, certificate = _certificate("broker", _SANS, authorities[authority])
        (directory / f"{name}.p12").write_bytes(pkcs12.serialize_key_and_certificates(
            b"broker", key, certificate, None, secret))
    pems = {name: authority[1].public_bytes(Encoding.PEM) for name, authority in authorities.items()}
    (directory / "ca.pem").write_bytes(pems["ca"])
    (directory / "ca2.pem").write_bytes(pems["ca2"])
    (directory / "ca-both.pem").write_bytes(pems["ca"] + pems["ca2"])
    (directory / "garbage.p12").write_bytes(b"not a key store")
    return directory


def with_directory(value, directory: Path):
    """``value`` (a case, or part of one) with "{tmp}" replaced by ``directory``."""
    if isinstance(value, dict):
        return {k: with_directory(v, directory) for k, v in value.items()}
    if isinstance(value, list):
        return [with_directory(v, directory) for v in value]
    if isinstance(value, str):
        return value.replace("{tmp}", str(directory))
    return value
