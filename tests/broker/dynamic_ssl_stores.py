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


def _certificate(common_name: str, sans: tuple[str, ...]):
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.ORGANIZATION_NAME, "kafkawire"),
                      x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
    names = [x509.IPAddress(ipaddress.ip_address(s)) if s[0].isdigit() else x509.DNSName(s) for s in sans]
    now = datetime.datetime.now(datetime.timezone.utc)
    builder = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
               .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(days=1))
               .not_valid_after(now + datetime.timedelta(days=30)))
    if names:
        builder = builder.add_extension(x509.SubjectAlternativeName(names), critical=False)
    return key, builder.sign(key, hashes.SHA256())


def write_stores(directory: Path) -> Path:
    """The stores the cases name, in ``directory``; returns it."""
    from cryptography.hazmat.primitives.serialization import (BestAvailableEncryption, Encoding, NoEncryption,
                                                              PrivateFormat, pkcs12)
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
        (directory / f"{name}.p12").write_bytes(pkcs12.serialize_key_and_certificates(
            None, None, None, [certificate], secret))
    (directory / "ts.pem").write_bytes(certificates["ks"].public_bytes(Encoding.PEM))
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
