"""The check a listener's SSL channel builder makes of a dynamic change to its key store or trust
store, as Kafka 4.3.1's SslFactory.validateReconfiguration makes it (SslChannelBuilder for an SSL
listener, SaslChannelBuilder for a SASL_SSL one; a PLAINTEXT or SASL_PLAINTEXT listener's builder
watches nothing): the new stores are loaded as DefaultSslEngineFactory loads them, then
- a listener that had a key store keeps one, one that had none gets none;
- each certificate entry of the new key store keeps the current one's subject DN (unless
  ssl.allow.dn.changes) and at least its SubjectAltNames (unless ssl.allow.san.changes);
- a listener that had no trust store gets none;
- on the inter-broker listener, a TLS handshake each way between the current and the new stores
  (SslEngineValidator; kafkawire.net.ssl_rotation, passed in by the broker, makes it).
A refusal is the text Kafka's ConfigException carries: "Validation of dynamic config update of
SSLFactory failed: " and the Java exception's class and message (its cause is not shown), which
kafkawire.metadata.dynamic_reconfiguration wraps as "Invalid dynamic configuration".

JKS and PKCS12 stores are read by kafkawire.metadata.java_key_stores (either type reads either
format, as the JDK's keystore.type.compat), PEM ones here. "The current" stores are those the current config
names, read now: Kafka compares with the stores it loaded when the listener started or was last
reconfigured, which differ only if a file was rewritten in place since.
"""
from __future__ import annotations

import base64
import ipaddress
import re

from .java_text import java_string_hash

__all__ = ["SSL_RECONFIGURABLE", "SslRefused", "check", "check_listener"]

# SslConfigs.RECONFIGURABLE_CONFIGS: what the channel builder watches
SSL_RECONFIGURABLE = ("ssl.keystore.type", "ssl.keystore.location", "ssl.keystore.password", "ssl.key.password",
                      "ssl.truststore.type", "ssl.truststore.location", "ssl.truststore.password",
                      "ssl.keystore.certificate.chain", "ssl.keystore.key", "ssl.truststore.certificates")
_FAILED = "Validation of dynamic config update of SSLFactory failed: "
_KAFKA = "org.apache.kafka.common.KafkaException"
_INVALID = "org.apache.kafka.common.errors.InvalidConfigurationException"
_CONFIG = "org.apache.kafka.common.config.ConfigException"
_PEM_ENTRY = r"-+BEGIN\s*.*{name}[^-]*-+\s+(?:\s*[^\r\n]*:[^\r\n]*[\r\n]+)*([a-zA-Z0-9/+=\s]*)-+END\s*.*{name}[^-]*-+\s+"
_PBES2 = bytes.fromhex("06092a864886f70d01050d")      # the OID 1.2.840.113549.1.5.13, DER-encoded


class SslRefused(Exception):
    """The ConfigException's message SslFactory.validateReconfiguration throws."""


class _JavaError(Exception):
    """A Java exception, as its toString shows it: "class: message"."""

    def __init__(self, java_class: str, message: str):
        super().__init__(f"{java_class}: {message}")


class _Entry:
    """SslFactory.CertificateEntries: a key store entry's alias, subject DN and SubjectAltNames."""

    def __init__(self, alias: str, certificate):
        self.alias = alias
        self.dn = _java_dn(certificate.subject)
        self.dn_key = certificate.subject.rfc4514_string().lower()
        self.sans = _java_sans(certificate)


def check_listener(current, new, listener: str, tls_handshake) -> None:
    """The listener's channel builder, given the current and new configs (dynamic_reconfiguration's
    _Config): nothing unless the listener is SSL or SASL_SSL and its stores' settings changed;
    then ``check`` and, on the inter-broker listener, ``tls_handshake`` (SslEngineValidator)."""
    protocol = current.protocols().get(listener)
    if protocol not in ("SSL", "SASL_SSL"):
        return
    old_values, new_values = ({n: c.listener_text(listener, n) for n in SSL_RECONFIGURABLE} for c in (current, new))
    if old_values == new_values:
        return
    check(old_values, new_values, allow_dn_changes=current.listener_flag(listener, "ssl.allow.dn.changes"),
          allow_san_changes=current.listener_flag(listener, "ssl.allow.san.changes"))
    if tls_handshake is not None and listener == current.inter_broker_listener():
        refusal = tls_handshake(listener, protocol, current.props, new.props)
        if refusal is not None:
            raise SslRefused(f"{_FAILED}javax.net.ssl.SSLHandshakeException: {refusal}")


def check(old: dict[str, str | None], new: dict[str, str | None], *, allow_dn_changes: bool,
          allow_san_changes: bool) -> None:
    """``old`` and ``new``: the listener's values of SSL_RECONFIGURABLE (its prefixed override or
    the base key, else Kafka's default) before and after the change; called only when they
    differ. Raises SslRefused with Kafka's message."""
    from kafkawire._extras import MissingExtra, require
    try:
        require("cryptography", "security", "checking a changed key or trust store")
    except MissingExtra as exc:
        raise SslRefused(f"{_FAILED}{exc}") from None
    try:
        old_keystore, old_truststore = _stores(old)
        new_keystore, new_truststore = _stores(new)
        if old_keystore is None and new_keystore is not None:
            raise _JavaError(_CONFIG, "Cannot add SSL keystore to an existing listener for which no keystore was "
                                      "configured.")
        if old_keystore is not None:
            if new_keystore is None:
                raise _JavaError(_CONFIG, "Cannot remove the SSL keystore from an existing listener for which a "
                                          "keystore was configured.")
            _ensure_compatible(new_keystore, old_keystore, allow_dn_changes, allow_san_changes)
        if not old_truststore and new_truststore:
            raise _JavaError(_CONFIG, "Cannot add SSL truststore to an existing listener for which no truststore "
                                      "was configured.")
    except _JavaError as exc:
        raise SslRefused(f"{_FAILED}{exc}") from None


def _ensure_compatible(new: list[_Entry], old: list[_Entry], allow_dn: bool, allow_san: bool) -> None:
    """CertificateEntries.ensureCompatible: entry by entry, in the stores' alias order."""
    if (not allow_dn or not allow_san) and len(new) != len(old):
        raise _JavaError(_CONFIG, f"Keystore entries do not match, existing store contains {len(old)} entries, "
                                  f"new store contains {len(new)} entries")
    if not allow_dn:
        for n, o in zip(new, old):
            if n.dn_key != o.dn_key:
                raise _JavaError(_CONFIG, f"Keystore DistinguishedName does not match:  existing={{alias={o.alias}, "
                                          f"DN={o.dn}}}, new={{alias={n.alias}, DN={n.dn}}}")
    if not allow_san:
        for n, o in zip(new, old):
            if not set(o.sans) <= set(n.sans):
                raise _JavaError(_CONFIG, f"Keystore SubjectAltNames do not match:  existing={{alias={o.alias}, "
                                          f"SAN={_java_set(o.sans)}}}, new={{alias={n.alias}, SAN={_java_set(n.sans)}}}")


def _stores(values: dict[str, str | None]) -> tuple[list[_Entry] | None, bool]:
    """DefaultSslEngineFactory.configure's createKeystore, createTruststore, then the SSLContext's
    KeyManagerFactory opening the key with ssl.key.password: the key store's certificate entries
    (None without one) and whether there is a trust store."""
    keystore, truststore = _keystore(values), _truststore(values)
    if keystore is not None and values["ssl.keystore.type"] != "PEM":
        _open_keys(values)
    return keystore, truststore


def _open_keys(v: dict[str, str | None]) -> None:
    """KeyManagerFactory.init: every key entry opens with ssl.key.password, else the store's."""
    from .java_key_stores import KeyStoreError
    password, key_password = v["ssl.keystore.password"], v["ssl.key.password"]
    store = _java_load(v["ssl.keystore.type"], v["ssl.keystore.location"], password)
    if store.format == "PKCS12":
        if key_password not in (None, password):
            # a PKCS12 store's key is sealed with the store's password; this is the JDK's refusal
            raise _JavaError(_KAFKA, "java.security.UnrecoverableKeyException: Get Key failed: Given final block not "
                                     "properly padded. Such issues can arise if a bad key is used during decryption.")
        return
    for entry in store.keys:
        try:
            entry.private_key(password if key_password is None else key_password)
        except KeyStoreError:
            raise _JavaError(_KAFKA, "java.security.UnrecoverableKeyException: Cannot recover key") from None


def _keystore(v: dict[str, str | None]) -> list[_Entry] | None:
    kind, path, password = v["ssl.keystore.type"], v["ssl.keystore.location"], v["ssl.keystore.password"]
    key, chain, key_password = v["ssl.keystore.key"], v["ssl.keystore.certificate.chain"], v["ssl.key.password"]
    if key is not None:
        if kind != "PEM":
            raise _JavaError(_INVALID, f"SSL private key can be specified only for PEM, but key store type is {kind}.")
        if chain is None:
            raise _JavaError(_INVALID, "SSL private key is specified, but certificate chain is not specified.")
        if path is not None:
            raise _JavaError(_INVALID, "Both SSL key store location and separate private key are specified.")
        if password is not None:
            raise _JavaError(_INVALID, "SSL key store password cannot be specified with PEM format, only key "
                                       "password may be specified.")
        return _pem_keystore(chain, key, key_password, "Invalid PEM keystore configs")
    if chain is not None:
        raise _JavaError(_INVALID, "SSL certificate chain is specified, but private key is not specified")
    if kind == "PEM" and path is not None:
        if password is not None:
            raise _JavaError(_INVALID, "SSL key store password cannot be specified with PEM format, only key password "
                                       "may be specified")
        text = _read_text(path, f"Failed to load PEM SSL keystore {path}")
        return _pem_keystore(text, text, key_password, f"Failed to load PEM SSL keystore {path}")
    if path is None and password is not None:
        raise _JavaError(_INVALID, "SSL key store is not specified, but key store password is specified.")
    if path is not None and password is None:
        raise _JavaError(_INVALID, "SSL key store is specified, but key store password is not specified.")
    if path is None:
        return None
    return _java_keystore(kind, path, password)


def _truststore(v: dict[str, str | None]) -> bool:
    kind, path, password, certs = (v["ssl.truststore.type"], v["ssl.truststore.location"],
                                   v["ssl.truststore.password"], v["ssl.truststore.certificates"])
    if certs is not None:
        if kind != "PEM":
            raise _JavaError(_INVALID, f"SSL trust store certs can be specified only for PEM, but trust store type is "
                                       f"{kind}.")
        if path is not None:
            raise _JavaError(_INVALID, "Both SSL trust store location and separate trust certificates are specified.")
        if password is not None:
            raise _JavaError(_INVALID, "SSL trust store password cannot be specified for PEM format.")
        _pem_certificates(certs, "Invalid PEM truststore configs", passes_own_errors=True)
        return True
    if kind == "PEM" and path is not None:
        if password is not None:
            raise _JavaError(_INVALID, "SSL trust store password cannot be specified for PEM format.")
        failed = f"Failed to load PEM SSL keystore {path}"
        try:
            _pem_certificates(_read_text(path, failed), failed, passes_own_errors=False)
        except _JavaError:
            raise _JavaError(_INVALID, failed) from None
        return True
    if path is None and password is not None:
        raise _JavaError(_INVALID, "SSL trust store is not specified, but trust store password is specified.")
    if path is None:
        return False
    _java_load(kind, path, password)
    return True


def _java_keystore(kind: str | None, path: str, password: str | None) -> list[_Entry]:
    """CertificateEntries.create: each alias of the store with an X.509 certificate (a trusted
    entry's, or the first of a key entry's chain), in KeyStore.aliases() order."""
    from cryptography import x509
    from .java_key_stores import KeyStoreError
    store = _java_load(kind, path, password)
    try:
        return [_Entry(alias, x509.load_der_x509_certificate(der)) for alias, der in store.certificate_entries()
                if der is not None]
    except (KeyStoreError, ValueError):
        raise _JavaError(_KAFKA, f"Failed to load SSL keystore {path} of type {kind}") from None


def _java_load(kind: str | None, path: str, password: str | None):
    """FileBasedStore: KeyStore.getInstance(type).load(file, password); a JKS-type store reads a
    PKCS12 file and the reverse, as Java's does (keystore.type.compat)."""
    from .java_key_stores import KeyStoreError, read_key_store
    failed = _JavaError(_KAFKA, f"Failed to load SSL keystore {path} of type {kind}")
    if (kind or "").upper() not in ("PKCS12", "JKS", "JCEKS"):
        raise failed                    # KeyStore.getInstance: no such type (PEM is case-sensitive too)
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError:
        raise failed from None
    try:
        return read_key_store(data, password, kind)
    except (KeyStoreError, ValueError):
        raise failed from None


def _read_text(path: str, failed: str) -> str:
    try:
        with open(path, encoding="utf-8") as f:
            return f.read()
    except (OSError, UnicodeDecodeError):
        raise _JavaError(_INVALID, failed) from None


def _pem_entries(text: str, name: str) -> list[bytes]:
    """DefaultSslEngineFactory.PemParser: every BEGIN/END block naming ``name``, base64-decoded."""
    pattern = re.compile(_PEM_ENTRY.format(name=name.replace(" ", r"\s+")))
    entries = [base64.b64decode(re.sub(r"\s", "", m.group(1))) for m in pattern.finditer(text + "\n")]
    if not entries:
        raise _JavaError(_INVALID, f"No matching {name} entries in PEM file")
    return entries


def _pem_certificates(text: str, failed: str, *, passes_own_errors: bool) -> list:
    from cryptography import x509
    try:
        return [x509.load_der_x509_certificate(der) for der in _pem_entries(text, "CERTIFICATE")]
    except _JavaError:
        if passes_own_errors:
            raise
        raise _JavaError(_INVALID, failed) from None
    except ValueError:
        raise _JavaError(_INVALID, failed) from None


def _pem_keystore(chain: str, key: str, key_password: str | None, failed: str) -> list[_Entry]:
    """PemStore: the key (PKCS8, encrypted when ssl.key.password is given; RSA, DSA or EC) and
    the chain under one alias, "kafka"."""
    from cryptography.hazmat.primitives.asymmetric import dsa, ec, rsa
    from cryptography.hazmat.primitives.serialization import load_der_private_key
    try:
        keys = _pem_entries(key, "PRIVATE KEY")
        if len(keys) != 1:
            raise _JavaError(_INVALID, failed)
        if key_password is not None and _PBES2 in keys[0][:32]:
            raise _JavaError(_INVALID, failed)      # EncryptedPrivateKeyInfo: no SecretKeyFactory "PBES2"
        try:
            private = load_der_private_key(keys[0], None if key_password is None else key_password.encode("utf-8"))
        except (ValueError, TypeError):
            raise _JavaError(_INVALID, failed) from None
        if not isinstance(private, (rsa.RSAPrivateKey, dsa.DSAPrivateKey, ec.EllipticCurvePrivateKey)):
            raise _JavaError(_INVALID, failed)
        certificates = _pem_certificates(chain, failed, passes_own_errors=False)
    except _JavaError:
        raise _JavaError(_INVALID, failed) from None
    return [_Entry("kafka", certificates[0])]


# --- Java's text of a certificate's subject and SubjectAltNames --------------------------------

_DN_KEYWORDS = {"2.5.4.3": "CN", "2.5.4.6": "C", "2.5.4.7": "L", "2.5.4.8": "ST", "2.5.4.10": "O", "2.5.4.11": "OU",
                "2.5.4.9": "STREET", "0.9.2342.19200300.100.1.25": "DC", "0.9.2342.19200300.100.1.1": "UID",
                "1.2.840.113549.1.9.1": "EMAILADDRESS"}


def _java_dn(name) -> str:
    """X500Principal.toString: the RDNs last first, ", " between them, "+" within one, a value
    with a special character quoted."""
    rdns = []
    for rdn in reversed(list(name.rdns)):
        parts = []
        for attribute in rdn:
            keyword = _DN_KEYWORDS.get(attribute.oid.dotted_string, f"OID.{attribute.oid.dotted_string}")
            value = str(attribute.value)
            if re.search(r'[,+=<>#;"\\]|^\s|\s$', value):
                value = '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
            parts.append(f"{keyword}={value}")
        rdns.append(" + ".join(parts))
    return ", ".join(rdns)


def _java_sans(certificate) -> list[tuple[int, str]]:
    """X509Certificate.getSubjectAlternativeNames: (type, text) of each name, in the extension's
    order; a name Java gives as bytes (otherName, x400Address, ediPartyName) is left out."""
    from cryptography import x509
    try:
        names = certificate.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except x509.ExtensionNotFound:
        return []
    sans = []
    for general in names:
        if isinstance(general, x509.RFC822Name):
            sans.append((1, general.value))
        elif isinstance(general, x509.DNSName):
            sans.append((2, general.value))
        elif isinstance(general, x509.DirectoryName):
            sans.append((4, general.value.rfc4514_string()))
        elif isinstance(general, x509.UniformResourceIdentifier):
            sans.append((6, general.value))
        elif isinstance(general, x509.IPAddress):
            sans.append((7, _java_ip(general.value)))
        elif isinstance(general, x509.RegisteredID):
            sans.append((8, general.value.dotted_string))
    return list(dict.fromkeys(sans))


def _java_ip(address) -> str:
    if isinstance(address, ipaddress.IPv6Address):
        return ":".join(format(int(group, 16), "x") for group in address.exploded.split(":"))
    return str(address)


def _java_set(sans: list[tuple[int, str]]) -> str:
    """A HashSet of List(type, value) as Java prints it: by hash bucket, insertion order within."""
    capacity = 16
    while len(sans) > capacity * 3 // 4:
        capacity *= 2

    def bucket(san: tuple[int, str]) -> int:
        h = (31 * (31 + san[0]) + java_string_hash(san[1])) & 0xFFFFFFFF
        return (h ^ (h >> 16)) & (capacity - 1)
    return "[" + ", ".join(f"[{t}, {v}]" for t, v in sorted(sans, key=bucket)) + "]"
