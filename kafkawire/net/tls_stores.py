"""A TLS context's key store and trust store, loaded from a listener's or client's ssl.* settings
as Kafka's DefaultSslEngineFactory loads them: PEM (files, or the PEM text in
``ssl.keystore.certificate.chain`` + ``ssl.keystore.key`` / ``ssl.truststore.certificates``), JKS
and PKCS12 (either type reads either file format, as the JDK does). A key store's key and chain,
and a trust store's trusted certificates (those Java's trust manager trusts: see
kafkawire.metadata.java_key_stores), go to OpenSSL as PEM.

JCEKS is read too (Java's JCEKS type: JCEKS and JKS files). A ConfigError names the setting, the file and what is wrong with it.
"""
from __future__ import annotations

import os
import ssl
import tempfile
from typing import TYPE_CHECKING

from kafkawire._extras import require
from kafkawire.net.config import ConfigError

if TYPE_CHECKING:
    from kafkawire.net.security import SslSettings

__all__ = ["load_keystore", "load_truststore"]


def _read(s: SslSettings, key: str) -> bytes:
    path = s.get(key)
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError as exc:
        raise ConfigError(s.where(key), path, f"cannot be read: {exc.strerror or exc}") from None


def _password(s: SslSettings, key: str) -> bytes | None:
    value = s.get(key)
    return None if value is None else value.encode("utf-8")


def load_keystore(context: ssl.SSLContext, s: SslSettings) -> None:
    kind = s.get("ssl.keystore.type").upper()
    if kind != "PEM":
        _load_java_keystore(context, s)
        return
    if s.get("ssl.keystore.password") is not None:
        raise ConfigError(s.where("ssl.keystore.password"), "(hidden)", "cannot be given for a PEM key store: "
                                                                        "only ssl.key.password may be")
    if s.get("ssl.keystore.certificate.chain") is not None:
        if s.get("ssl.keystore.key") is None:
            raise ConfigError(s.where("ssl.keystore.key"), None, "is required with ssl.keystore.certificate.chain")
        _load_pem_chain(context, s.get("ssl.keystore.certificate.chain").encode(), s.get("ssl.keystore.key").encode(),
                        _password(s, "ssl.key.password"), s.where("ssl.keystore.certificate.chain"))
        return
    data = _read(s, "ssl.keystore.location")
    _load_pem_chain(context, data, data, _password(s, "ssl.key.password"), s.where("ssl.keystore.location"))


def _java_store(s: SslSettings, prefix: str):
    """The JKS, JCEKS or PKCS12 store at ``<prefix>.location``, opened with ``<prefix>.password``
    as Java's KeyStore of type ``<prefix>.type`` opens it."""
    require("cryptography", "security", "reading JKS, JCEKS and PKCS12 key and trust stores")
    from kafkawire.metadata.java_key_stores import KeyStoreError, read_key_store
    data = _read(s, f"{prefix}.location")
    try:
        return read_key_store(data, s.get(f"{prefix}.password"), s.get(f"{prefix}.type"))
    except KeyStoreError as exc:
        raise ConfigError(s.where(f"{prefix}.location"), s.get(f"{prefix}.location"), str(exc)) from None


def _load_java_keystore(context: ssl.SSLContext, s: SslSettings) -> None:
    """The store's first private key entry (in file order) and its chain. ssl.key.password opens
    a JKS key, else the store password does (Kafka's rule); a PKCS12 key opens with the store's."""
    from kafkawire.metadata.java_key_stores import KeyStoreError
    from cryptography.hazmat.primitives.serialization import Encoding, NoEncryption, PrivateFormat
    store = _java_store(s, "ssl.keystore")
    where, path = s.where("ssl.keystore.location"), s.get("ssl.keystore.location")
    entries = [entry for entry in store.keys if entry.chain]
    if not entries:
        raise ConfigError(where, path, f"holds no private key with its certificate (a {store.format} store)")
    key_password = s.get("ssl.key.password")
    if key_password is None:
        key_password = s.get("ssl.keystore.password")
    try:
        key = entries[0].private_key(key_password)
    except KeyStoreError as exc:
        if s.get("ssl.key.password") is not None:
            where, path = s.where("ssl.key.password"), "(hidden)"
        raise ConfigError(where, path, f"does not open the key store {s.get('ssl.keystore.location')}: {exc}") \
            from None
    chain = "".join(ssl.DER_cert_to_PEM_cert(der) for der in dict.fromkeys(entries[0].chain)).encode()
    pem_key = key.private_bytes(Encoding.PEM, PrivateFormat.PKCS8, NoEncryption())
    _load_pem_chain(context, chain, pem_key, None, s.where("ssl.keystore.location"))


def _load_pem_chain(context, chain: bytes, key: bytes, password, where: str) -> None:
    """load_cert_chain reads files only: the PEM goes through a private temporary directory."""
    with tempfile.TemporaryDirectory(prefix="kafkawire-tls-") as tmp:
        cert_path, key_path = os.path.join(tmp, "chain.pem"), os.path.join(tmp, "key.pem")
        for path, data in ((cert_path, chain), (key_path, key)):
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "wb") as f:
                f.write(data)
        try:
            context.load_cert_chain(cert_path, key_path, password=password)
        except ssl.SSLError as exc:
            raise ConfigError(where, "(key store)", f"does not hold a certificate chain and its private key "
                                                    f"(wrong ssl.key.password?): {exc.reason or exc}") from None


def load_truststore(context: ssl.SSLContext, s: SslSettings) -> None:
    if s.get("ssl.truststore.location") is None and s.get("ssl.truststore.certificates") is None:
        context.load_default_certs()          # Java falls back to the JVM's cacerts the same way
        return
    kind = s.get("ssl.truststore.type").upper()
    if kind == "PEM":
        if s.get("ssl.truststore.password") is not None:
            raise ConfigError(s.where("ssl.truststore.password"), "(hidden)",
                              "cannot be given for a PEM trust store")
        text = s.get("ssl.truststore.certificates")
        where = s.where("ssl.truststore.certificates")
        if text is None:
            text, where = _read(s, "ssl.truststore.location").decode("ascii", "replace"), \
                s.where("ssl.truststore.location")
        _load_cadata(context, text, where)
        return
    from kafkawire.metadata.java_key_stores import KeyStoreError
    store = _java_store(s, "ssl.truststore")
    try:
        trusted = store.trusted_certificates()
    except KeyStoreError as exc:
        raise ConfigError(s.where("ssl.truststore.location"), s.get("ssl.truststore.location"), str(exc)) from None
    if not trusted:
        # Java starts with an empty trust manager, and every handshake fails; refused here at start
        raise ConfigError(s.where("ssl.truststore.location"), s.get("ssl.truststore.location"),
                          f"holds no certificate Java trusts (a {store.format} store: a PKCS12 certificate bag is "
                          "trusted only with Oracle's trusted-key-usage attribute, which keytool writes and "
                          "openssl pkcs12 -export does not; without ssl.truststore.password a PKCS12 store's "
                          "encrypted certificates are not read)")
    _load_cadata(context, "".join(ssl.DER_cert_to_PEM_cert(der) for der in trusted),
                 s.where("ssl.truststore.location"))


def _load_cadata(context, text: str, where: str) -> None:
    if "-----BEGIN CERTIFICATE-----" not in text:
        raise ConfigError(where, "(trust store)", "holds no certificate")
    try:
        context.load_verify_locations(cadata=text)
    except ssl.SSLError as exc:
        raise ConfigError(where, "(trust store)", f"holds a certificate that does not load: {exc.reason or exc}") \
            from None
