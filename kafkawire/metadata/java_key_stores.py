"""Java's key store files as a Kafka node reads them (DefaultSslEngineFactory's FileBasedStore):
JKS, read here, and PKCS12, read by ``cryptography`` with the trusted entries Java sees taken
from its bags (kafkawire.metadata.pkcs12_bags).

Both store types read both formats, as the JDK's (keystore.type.compat): a store of type JKS
may be a PKCS12 file and the reverse; the file's first bytes decide. This module sits in the
metadata layer so that the listener's TLS context (kafkawire.net.security) and the check of a
dynamic store change (kafkawire.metadata.dynamic_ssl_reconfiguration) read stores alike.

The JKS format, as the JDK documents and writes it: the magic 0xFEEDFEED, a version (1 or 2),
the entry count, the entries, then a SHA-1 digest of the password (UTF-16BE), the bytes of
"Mighty Aphrodite" and everything before the digest. An entry is a tag (1: private key, 2:
trusted certificate), an alias (Java's modified UTF-8 with a 2-byte length), a time stamp
(milliseconds), then for a key its protected form (an EncryptedPrivateKeyInfo) and its chain,
for a trusted certificate the certificate; each certificate is a type name (version 2), a
4-byte length and the DER. A protected key is Sun's KeyProtector's: 20 bytes of salt, the
PKCS#8 key XORed with a SHA-1 keystream (SHA-1 of the password and the salt, then of the
password and each previous block) and a SHA-1 of the password and the plain key to check it.
Every length is checked against the file's size before it is read.
"""
from __future__ import annotations

import hashlib
import hmac
import struct
from dataclasses import dataclass, field

from .java_text import java_string_hash
from .pkcs12_bags import Pkcs12Error, der_children, der_element, der_oid, java_entries

__all__ = ["KeyStoreError", "KeyStore", "KeyEntry", "read_key_store", "JKS_MAGIC", "JAVA_TAMPERED"]

JKS_MAGIC = b"\xfe\xed\xfe\xed"
JCEKS_MAGIC = b"\xce\xce\xce\xce"
JAVA_TAMPERED = "Keystore was tampered with, or password was incorrect"      # Java's IOException text
JAVA_CANNOT_RECOVER = "Cannot recover key"                                   # UnrecoverableKeyException
_KEY_PROTECTOR = "1.3.6.1.4.1.42.2.17.1.1"
_JCE_KEY_PROTECTOR = "1.3.6.1.4.1.42.2.19.1"                  # PBEWithMD5AndTripleDES
_WHITENER = b"Mighty Aphrodite"


class KeyStoreError(ValueError):
    """What is wrong with a store file (the caller names the file and the setting)."""


@dataclass
class KeyEntry:
    """A private key entry: its alias, its key still protected, and its chain (DER, leaf first)."""
    alias: str
    protected: bytes
    chain: list[bytes]
    pkcs12_key: object = None          # a PKCS12 store's key, already opened by cryptography

    def private_key(self, password: str | None):
        """The key, opened with ``password`` (ssl.key.password, else the store's)."""
        if self.pkcs12_key is not None:
            return self.pkcs12_key
        if password is None:
            raise KeyStoreError(f"key entry {self.alias!r} needs a password to open")
        from cryptography.hazmat.primitives.serialization import load_der_private_key
        plain = _unprotect(self.protected, password, self.alias)
        try:
            return load_der_private_key(plain, None)
        except (ValueError, TypeError) as exc:
            raise KeyStoreError(f"key entry {self.alias!r} is not a PKCS#8 private key ({exc})") from None


@dataclass
class KeyStore:
    """A store's entries in file order: ``format`` is "JKS" or "PKCS12"."""
    format: str
    keys: list[KeyEntry] = field(default_factory=list)
    trusted: list[tuple[str, bytes]] = field(default_factory=list)      # (alias, certificate DER)
    java_order: list[tuple[str, bytes | None]] = field(default_factory=list)
    unread: str | None = None        # why a PKCS12 store's bags could not be read (its key still was)

    def certificate_entries(self) -> list[tuple[str, bytes | None]]:
        """Java's KeyStore.aliases(), each with getCertificate(alias): a trusted entry's
        certificate or the first of a key entry's chain (DER; None for a key without one). A
        JKS store's aliases come in its Hashtable's order, a PKCS12 store's in load order."""
        if self.unread is not None:
            raise KeyStoreError(f"is not a PKCS12 store whose entries kafkawire reads: {self.unread}")
        return self.java_order

    def trusted_certificates(self) -> list[bytes]:
        """What Java's trust manager trusts (TrustStoreUtil): each trusted certificate entry and the
        first certificate of each private key entry's chain; DER, without repeats."""
        return list(dict.fromkeys(der for _, der in self.certificate_entries() if der is not None))


def read_key_store(data: bytes, password: str | None, kind: str = "JKS") -> KeyStore:
    """A store's entries, read as Java's KeyStore of type ``kind`` reads them: JKS and PKCS12
    read JKS and PKCS12 files, JCEKS reads JCEKS and JKS files. ``password`` None: a JKS or JCEKS
    store's digest is not checked and a PKCS12 store's encrypted parts are skipped, as Java does
    for a trust store without ssl.truststore.password."""
    kind = kind.upper()
    if data.startswith(JKS_MAGIC):
        return _read_jks(data, password, "JKS")
    if data.startswith(JCEKS_MAGIC):
        if kind != "JCEKS":
            raise KeyStoreError(f"is a JCEKS store, which Java's {kind} key store type does not read (set the "
                                "store's type to JCEKS)")
        return _read_jks(data, password, "JCEKS")
    if kind == "JCEKS":
        raise KeyStoreError("is neither a JCEKS nor a JKS store (its first bytes are not 0xCECECECE or 0xFEEDFEED), "
                            "which Java's JCEKS key store type reads")
    if not data.startswith(b"\x30"):
        pem = " (it holds PEM: set the store's type to PEM)" if b"-----BEGIN " in data[:65536] else ""
        raise KeyStoreError(f"is neither a JKS nor a PKCS12 store{pem}")
    return _read_pkcs12(data, password)


def _read_pkcs12(data: bytes, password: str | None) -> KeyStore:
    from cryptography.hazmat.primitives.serialization import Encoding, pkcs12
    store = KeyStore("PKCS12")
    if password is not None:
        try:
            loaded = pkcs12.load_pkcs12(data, password.encode("utf-8"))
        except ValueError as exc:
            raise KeyStoreError(f"is not a PKCS12 store this password opens ({exc})") from None
        if loaded.key is not None and loaded.cert is not None:
            chain = [c.certificate.public_bytes(Encoding.DER) for c in [loaded.cert, *loaded.additional_certs]]
            name = loaded.cert.friendly_name
            store.keys.append(KeyEntry(name.decode("utf-8", "replace").lower() if name else "", b"", chain,
                                       pkcs12_key=loaded.key))
    try:
        store.java_order = java_entries(data, password)
    except Pkcs12Error as exc:
        if password is None or not store.keys:
            raise KeyStoreError(f"is not a PKCS12 store kafkawire reads: {exc}") from None
        store.unread = str(exc)          # a key store's key and chain came from cryptography: enough to serve
    return store


class _Reader:
    """Bounded reads from a JKS file: every length is checked against the bytes left."""

    def __init__(self, data: bytes):
        self.data, self.pos = data, 0

    def take(self, size: int, what: str) -> bytes:
        if size < 0 or self.pos + size > len(self.data):
            raise KeyStoreError(f"is truncated at offset {self.pos}: {what} of {size} bytes runs past its end "
                                f"({len(self.data)} bytes)")
        chunk = self.data[self.pos:self.pos + size]
        self.pos += size
        return chunk

    def u16(self, what: str) -> int:
        return struct.unpack(">H", self.take(2, what))[0]

    def u32(self, what: str) -> int:
        return struct.unpack(">I", self.take(4, what))[0]

    def utf(self, what: str) -> str:
        return _modified_utf8(self.take(self.u16(what), what))

    def certificate(self, version: int) -> bytes:
        if version == 2:
            kind = self.utf("a certificate's type")
            if kind != "X.509":
                raise KeyStoreError(f"holds a certificate of type {kind!r} at offset {self.pos} (X.509 is read)")
        return self.take(self.u32("a certificate's length"), "a certificate")


def _read_jks(data: bytes, password: str | None, form: str) -> KeyStore:
    """A JKS or JCEKS file (the same layout; JCEKS adds secret key entries, tag 3, which are
    serialized Java objects kafkawire does not read)."""
    reader = _Reader(data)
    reader.take(4, "the magic number")
    version = reader.u32("the version")
    if version not in (1, 2):
        raise KeyStoreError(f"is a {form} store of version {version} (1 and 2 are read)")
    count = reader.u32("the entry count")
    store = KeyStore(form)
    by_alias: dict[str, bytes | None] = {}
    for _ in range(count):
        at = reader.pos
        tag = reader.u32("an entry's tag")
        alias = reader.utf("an alias")
        reader.take(8, "an entry's time stamp")
        if tag == 1:
            protected = reader.take(reader.u32("a protected key's length"), "a protected key")
            chain = [reader.certificate(version) for _ in range(reader.u32("a chain's length"))]
            store.keys.append(KeyEntry(alias, protected, chain))
            by_alias[alias.lower()] = chain[0] if chain else None
        elif tag == 2:
            store.trusted.append((alias, reader.certificate(version)))
            by_alias[alias.lower()] = store.trusted[-1][1]
        elif tag == 3 and form == "JCEKS":
            raise KeyStoreError(f"holds a secret key entry {alias!r} at offset {at}, which kafkawire does not read "
                                "(a TLS store needs none: remove it with keytool -delete)")
        else:
            raise KeyStoreError(f"holds an entry of unknown kind {tag} at offset {at} (1: private key, "
                                "2: trusted certificate)")
    if password is not None:
        digest = reader.take(20, "the integrity digest")
        expected = hashlib.sha1(password.encode("utf-16-be") + _WHITENER + data[:reader.pos - 20]).digest()
        if not hmac.compare_digest(digest, expected):
            raise KeyStoreError(f"does not open with this password: {JAVA_TAMPERED}")
    store.java_order = [(alias, by_alias[alias]) for alias in java_hashtable_order(list(by_alias))]
    return store


def java_hashtable_order(keys: list[str]) -> list[str]:
    """The order a java.util.Hashtable (11 buckets, load factor 0.75) filled with ``keys`` (distinct
    strings, in insertion order) enumerates them: the last bucket first, newest first within one;
    each rehash (to twice the buckets plus one) moves the entries bucket by bucket from the last."""
    capacity, table = 11, [[] for _ in range(11)]
    for count, key in enumerate(keys):
        if count >= int(capacity * 0.75):
            capacity = capacity * 2 + 1
            grown: list[list[str]] = [[] for _ in range(capacity)]
            for bucket in reversed(table):
                for old in bucket:
                    grown[(java_string_hash(old) & 0x7FFFFFFF) % capacity].insert(0, old)
            table = grown
        table[(java_string_hash(key) & 0x7FFFFFFF) % capacity].insert(0, key)
    return [key for bucket in reversed(table) for key in bucket]


def _unprotect(protected: bytes, password: str, alias: str) -> bytes:
    """The PKCS#8 key inside Sun's KeyProtector form (an EncryptedPrivateKeyInfo)."""
    try:
        fields = der_children(protected, der_element(protected, 0, len(protected)))
        if len(fields) != 2 or not der_children(protected, fields[0]):
            raise Pkcs12Error(f"{len(fields)} elements, expected an algorithm and the key")
        algorithm, encrypted = fields
        oid = der_oid(protected, der_children(protected, algorithm)[0])
        sealed = encrypted.content(protected)
    except (Pkcs12Error, ValueError) as exc:
        raise KeyStoreError(f"key entry {alias!r} is not an EncryptedPrivateKeyInfo ({exc})") from None
    if oid == _JCE_KEY_PROTECTOR:
        return _unprotect_jce(protected, algorithm, sealed, password, alias)
    if oid != _KEY_PROTECTOR:
        raise KeyStoreError(f"key entry {alias!r} is protected with {oid} (Sun's KeyProtector, "
                            f"{_KEY_PROTECTOR}, and JCEKS's PBEWithMD5AndTripleDES are read)")
    if len(sealed) < 40:
        raise KeyStoreError(f"key entry {alias!r} is truncated: {len(sealed)} bytes of protected key")
    secret = password.encode("utf-16-be")
    salt, masked, check = sealed[:20], sealed[20:-20], sealed[-20:]
    stream, block = bytearray(), salt
    while len(stream) < len(masked):
        block = hashlib.sha1(secret + block).digest()
        stream += block
    plain = bytes(a ^ b for a, b in zip(masked, stream))
    if not hmac.compare_digest(hashlib.sha1(secret + plain).digest(), check):
        raise KeyStoreError(f"key entry {alias!r} does not open with this key password: {JAVA_CANNOT_RECOVER}")
    return plain


def _modified_utf8(raw: bytes) -> str:
    """Java's DataInput.readUTF: UTF-8 with NUL as C0 80 and characters past U+FFFF as two
    encoded surrogates."""
    try:
        text = raw.replace(b"\xc0\x80", b"\x00").decode("utf-8", "surrogatepass")
    except UnicodeDecodeError as exc:
        raise KeyStoreError(f"holds an alias that is not modified UTF-8 ({exc.reason})") from None
    return text.encode("utf-16-be", "surrogatepass").decode("utf-16-be", "replace")


def _unprotect_jce(protected: bytes, algorithm, sealed: bytes, password: str, alias: str) -> bytes:
    """A JCEKS key: Sun's PBEWithMD5AndTripleDES. The 8-byte salt's halves (the first reordered
    as the JDK does when both are equal) are each hashed with the ASCII password, MD5 applied
    ``iterations`` times to the previous digest and the password; the 32 bytes give the 3DES key
    (24) and the CBC IV (8)."""
    from cryptography.hazmat.primitives.ciphers import Cipher, modes

    from .pkcs12_bags import triple_des
    try:
        params = der_children(protected, der_children(protected, algorithm)[1])
        salt = bytearray(params[0].content(protected))
        rounds = int.from_bytes(params[1].content(protected), "big")
        secret = password.encode("ascii")
    except (Pkcs12Error, IndexError) as exc:
        raise KeyStoreError(f"key entry {alias!r} has no PBEWithMD5AndTripleDES parameters ({exc})") from None
    except UnicodeEncodeError:
        raise KeyStoreError(f"key entry {alias!r} needs an ASCII password (Java: Password is not ASCII)") from None
    if len(salt) != 8 or not 0 < rounds <= 10_000_000 or not sealed or len(sealed) % 8:
        raise KeyStoreError(f"key entry {alias!r} has a salt of {len(salt)} bytes, {rounds} iterations and "
                            f"{len(sealed)} bytes of key: not PBEWithMD5AndTripleDES")
    if salt[:4] == salt[4:]:
        salt[0], salt[1], salt[2], salt[3] = salt[3], salt[0], salt[1], salt[3]     # the JDK's own reordering
    derived = b""
    for half in (bytes(salt[:4]), bytes(salt[4:])):
        for _ in range(rounds):
            half = hashlib.md5(half + secret).digest()
        derived += half
    decryptor = Cipher(triple_des()(derived[:24]), modes.CBC(derived[24:])).decryptor()
    plain = decryptor.update(sealed) + decryptor.finalize()
    pad = plain[-1]
    if not 0 < pad <= 8 or plain[-pad:] != bytes([pad]) * pad:
        raise KeyStoreError(f"key entry {alias!r} does not open with this key password: {JAVA_CANNOT_RECOVER}")
    return plain[:-pad]
