"""The certificates Java trusts in a PKCS12 trust store, read from the store's SafeBags.

Python's ``cryptography`` reads a PKCS12 file's key and certificates but not the attributes of
their bags, and Java's PKCS12 KeyStore decides by those: a certificate bag is a trusted
certificate entry only if it carries Oracle's trusted-key-usage attribute (OID
2.16.840.1.113894.746875.1.1, which keytool writes); any other certificate only completes the
chain of a private key entry. A trust manager built from the store (what Kafka's
DefaultSslEngineFactory makes) trusts every trusted certificate entry and the first certificate
of each private key entry's chain. ``trusted_certificates`` returns those, in the store's order,
as DER.

The walk follows RFC 7292 (PFX, AuthenticatedSafe, SafeContents, SafeBag) and reads DER and BER
(indefinite lengths, constructed octet strings); every length is checked against its enclosing
element. Encrypted SafeContents are opened with the store password: PBES2 (PBKDF2, AES or
3DES, as keytool and OpenSSL 3 write) or the PKCS12 PBE schemes with SHA-1 (3DES, RC2). With no
password they are skipped, as Java skips them. 40-bit RC2 (Java 8's keytool, ``openssl -legacy``)
is kafkawire.metadata.rc2's. The password and MAC are checked by the caller
(``cryptography``), not here.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass

from .rc2 import rc2_cbc_decrypt

__all__ = ["Pkcs12Error", "trusted_certificates", "java_entries", "der_element", "der_children", "der_oid"]

_DATA, _ENCRYPTED_DATA = "1.2.840.113549.1.7.1", "1.2.840.113549.1.7.6"
_SHROUDED_KEY_BAG, _CERT_BAG = "1.2.840.113549.1.12.10.1.2", "1.2.840.113549.1.12.10.1.3"
_X509_CERTIFICATE = "1.2.840.113549.1.9.22.1"
_FRIENDLY_NAME, _LOCAL_KEY_ID = "1.2.840.113549.1.9.20", "1.2.840.113549.1.9.21"
_TRUSTED_KEY_USAGE = "2.16.840.1.113894.746875.1.1"
_PBES2, _PBKDF2 = "1.2.840.113549.1.5.13", "1.2.840.113549.1.5.12"
_PRF = {"1.2.840.113549.2.7": "sha1", "1.2.840.113549.2.8": "sha224", "1.2.840.113549.2.9": "sha256",
        "1.2.840.113549.2.10": "sha384", "1.2.840.113549.2.11": "sha512"}
_CIPHERS = {"2.16.840.1.101.3.4.1.2": ("AES", 16), "2.16.840.1.101.3.4.1.22": ("AES", 24),
            "2.16.840.1.101.3.4.1.42": ("AES", 32), "1.2.840.113549.3.7": ("3DES", 24)}
# RFC 7292 appendix C: pbeWithSHAAnd... (cipher, key bytes)
_PKCS12_PBE = {"1.2.840.113549.1.12.1.3": ("3DES", 24), "1.2.840.113549.1.12.1.5": ("RC2", 16),
               "1.2.840.113549.1.12.1.6": ("RC2", 5)}


class Pkcs12Error(ValueError):
    """What in the store is not what a PKCS12 file holds, and at which byte offset."""


@dataclass(frozen=True)
class Element:
    """One BER element: its tag byte, where its content starts and ends in ``data``."""
    tag: int
    start: int
    end: int
    after: int              # the offset past the element (past an indefinite length's end mark)

    def content(self, data: bytes) -> bytes:
        return data[self.start:self.end]


def der_element(data: bytes, pos: int, limit: int, depth: int = 0) -> Element:
    """The element at ``pos``, which must end by ``limit``."""
    if depth > 32:
        raise Pkcs12Error(f"elements nested more than 32 deep at offset {pos}")
    if pos + 2 > limit:
        raise Pkcs12Error(f"truncated at offset {pos}: an element's tag and length do not fit")
    tag, first = data[pos], data[pos + 1]
    if tag & 0x1F == 0x1F:
        raise Pkcs12Error(f"multi-byte tag at offset {pos} is not used by PKCS12")
    pos += 2
    if first == 0x80:                                   # BER indefinite length: children up to 00 00
        if not tag & 0x20:
            raise Pkcs12Error(f"indefinite length on a primitive element at offset {pos - 2}")
        child = pos
        while True:
            if child + 2 > limit:
                raise Pkcs12Error(f"truncated at offset {child}: no end of an indefinite-length element")
            if data[child] == 0 and data[child + 1] == 0:
                return Element(tag, pos, child, child + 2)
            child = der_element(data, child, limit, depth + 1).after
    if first & 0x80:
        count = first & 0x7F
        if count > 4 or pos + count > limit:
            raise Pkcs12Error(f"bad length at offset {pos - 1}")
        length = int.from_bytes(data[pos:pos + count], "big")
        pos += count
    else:
        length = first
    if pos + length > limit:
        raise Pkcs12Error(f"truncated at offset {pos}: an element of {length} bytes runs past byte {limit}")
    return Element(tag, pos, pos + length, pos + length)


def der_children(data: bytes, parent: Element) -> list[Element]:
    children, pos = [], parent.start
    while pos < parent.end:
        child = der_element(data, pos, parent.end)
        children.append(child)
        pos = child.after
    return children


def _fields(data: bytes, element: Element, count: int, what: str) -> list[Element]:
    """The children of a SEQUENCE that must have at least ``count`` of them."""
    children = der_children(data, _expect(element, 0x30, what))
    if len(children) < count:
        raise Pkcs12Error(f"{what} at offset {element.start} holds {len(children)} elements, expected {count}")
    return children


def _expect(element: Element, tag: int, what: str) -> Element:
    if element.tag != tag:
        raise Pkcs12Error(f"{what} at offset {element.start} has tag 0x{element.tag:02x}, expected 0x{tag:02x}")
    return element


def der_oid(data: bytes, element: Element) -> str:
    raw = _expect(element, 0x06, "object identifier").content(data)
    if not raw:
        raise Pkcs12Error(f"empty object identifier at offset {element.start}")
    parts, value = [], 0
    for byte in raw:
        value = (value << 7) | (byte & 0x7F)
        if not byte & 0x80:
            parts.append(value)
            value = 0
    if not parts:
        raise Pkcs12Error(f"object identifier at offset {element.start} does not end")
    first = min(parts[0] // 40, 2)
    return ".".join(str(p) for p in (first, parts[0] - 40 * first, *parts[1:]))


def _octets(data: bytes, element: Element) -> bytes:
    """An OCTET STRING's bytes (tag 0x04, or an implicit tag), primitive or BER-constructed."""
    if not element.tag & 0x20:
        return element.content(data)
    return b"".join(_octets(data, piece) for piece in der_children(data, element))


def _explicit(data: bytes, element: Element, what: str) -> Element:
    """The one element inside an ``[0] EXPLICIT`` wrapper."""
    inner = der_children(data, _expect(element, 0xA0, what))
    if len(inner) != 1:
        raise Pkcs12Error(f"{what} at offset {element.start} holds {len(inner)} elements, expected 1")
    return inner[0]


@dataclass
class _Bag:
    kind: str                   # "key" or "cert"
    alias: str | None
    key_id: bytes | None
    trusted: bool
    der: bytes = b""            # a certificate's DER
    first_in_contents: bool = False


def trusted_certificates(data: bytes, password: str | None) -> list[bytes]:
    """The DER of every certificate a Java trust manager given this PKCS12 store trusts."""
    return list(dict.fromkeys(der for _, der in java_entries(data, password) if der is not None))


def java_entries(data: bytes, password: str | None) -> list[tuple[str, bytes | None]]:
    """The store's entries as Java's KeyStore lists them (aliases(), in load order), each with
    getCertificate(alias): a trusted entry's certificate, a key entry's first chain certificate
    (None when no certificate matches its key)."""
    entries: dict[str, _Bag] = {}
    chain_candidates, counter, keys_seen = [], 0, 0
    for bag in _bags(data, password):
        if bag.kind == "key":
            keys_seen += 1
            if bag.key_id is None:
                if keys_seen != 1:
                    continue                 # Java skips a second key without a localKeyId
                bag.key_id = b"01"
        elif bag.key_id is None and keys_seen == 1 and bag.first_in_contents:
            bag.key_id = b"01"               # Java's fix-up for a lone key's certificate without an id
        if bag.kind == "cert" and not bag.trusted:
            chain_candidates.append(bag)
            continue
        if bag.alias is None:
            counter += 1
            bag.alias = str(counter)
        entries[bag.alias.lower()] = bag             # as a LinkedHashMap: a repeated alias keeps its place
    return [(alias, entry.der if entry.kind == "cert" else _key_certificate(entry, chain_candidates))
            for alias, entry in entries.items()]


def _key_certificate(key: _Bag, certificates: list[_Bag]) -> bytes | None:
    """The first certificate of a key entry's chain: same localKeyId (and alias, if one does),
    else the same alias."""
    by_id = [c for c in certificates if c.key_id == key.key_id]
    for c in by_id:
        if c.alias is not None and c.alias.lower() == key.alias.lower():
            return c.der
    if by_id:
        return by_id[-1].der
    by_alias = [c for c in certificates if c.alias is not None and c.alias.lower() == key.alias.lower()]
    return by_alias[-1].der if by_alias else None


def _bags(data: bytes, password: str | None):
    pfx = _expect(der_element(data, 0, len(data)), 0x30, "PFX")
    fields = der_children(data, pfx)
    if len(fields) < 2:
        raise Pkcs12Error("the PFX holds no authSafe")
    auth_safe = der_children(data, _expect(fields[1], 0x30, "authSafe"))
    if len(auth_safe) != 2 or der_oid(data, auth_safe[0]) != _DATA:
        raise Pkcs12Error("the authSafe is not of type data (a signed PKCS12 store is not read)")
    safes_der = _octets(data, _explicit(data, auth_safe[1], "authSafe content"))
    safes = _expect(der_element(safes_der, 0, len(safes_der)), 0x30, "AuthenticatedSafe")
    for info in der_children(safes_der, safes):
        parts = der_children(safes_der, _expect(info, 0x30, "ContentInfo"))
        if not parts:
            raise Pkcs12Error(f"empty ContentInfo at offset {info.start}")
        kind = der_oid(safes_der, parts[0])
        if kind == _DATA and len(parts) == 2:
            yield from _parsed_safe_contents(_octets(safes_der, _explicit(safes_der, parts[1], "data")))
        elif kind == _ENCRYPTED_DATA and len(parts) == 2:
            if password is not None:        # as Java, no password: encrypted contents are skipped
                yield from _parsed_safe_contents(
                    _decrypt_content(safes_der, _explicit(safes_der, parts[1], "encryptedData"), password))
        else:
            raise Pkcs12Error(f"ContentInfo of type {kind} is not read (data and encryptedData are)")


def _safe_contents(data: bytes, top: Element):
    """Key and certificate bags; Java skips other kinds (secret, CRL, nested SafeContents)."""
    for index, bag in enumerate(der_children(data, _expect(top, 0x30, "SafeContents"))):
        parts = der_children(data, _expect(bag, 0x30, "SafeBag"))
        if len(parts) < 2:
            raise Pkcs12Error(f"SafeBag at offset {bag.start} has no value")
        bag_id, value = der_oid(data, parts[0]), _explicit(data, parts[1], "bagValue")
        alias, key_id, trusted = _attributes(data, parts[2] if len(parts) > 2 else None)
        if bag_id == _SHROUDED_KEY_BAG:
            yield _Bag("key", alias, key_id, False)
        elif bag_id == _CERT_BAG:
            cert = der_children(data, _expect(value, 0x30, "CertBag"))
            if len(cert) != 2:
                raise Pkcs12Error(f"CertBag at offset {value.start} holds {len(cert)} elements, expected 2")
            if der_oid(data, cert[0]) == _X509_CERTIFICATE:
                der = _octets(data, _expect(_explicit(data, cert[1], "certValue"), 0x04, "certificate"))
                yield _Bag("cert", alias, key_id, trusted, der, first_in_contents=index == 0)


def _parsed_safe_contents(data: bytes):
    return _safe_contents(data, der_element(data, 0, len(data)))


def _attributes(data: bytes, attributes: Element | None) -> tuple[str | None, bytes | None, bool]:
    alias, key_id, trusted = None, None, False
    if attributes is None:
        return alias, key_id, trusted
    for attribute in der_children(data, _expect(attributes, 0x31, "bagAttributes")):
        parts = der_children(data, _expect(attribute, 0x30, "Attribute"))
        if len(parts) != 2:
            raise Pkcs12Error(f"Attribute at offset {attribute.start} holds {len(parts)} elements, expected 2")
        values = der_children(data, _expect(parts[1], 0x31, "attribute values"))
        oid = der_oid(data, parts[0])
        if not values:
            raise Pkcs12Error(f"Attribute {oid} at offset {attribute.start} has no value")
        if oid == _FRIENDLY_NAME:
            alias = _expect(values[0], 0x1E, "friendlyName").content(data).decode("utf-16-be", "replace")
        elif oid == _LOCAL_KEY_ID:
            key_id = _octets(data, values[0])
        elif oid == _TRUSTED_KEY_USAGE:
            trusted = True
    return alias, key_id, trusted


def _decrypt_content(data: bytes, encrypted: Element, password: str) -> bytes:
    """EncryptedData (version, EncryptedContentInfo) opened with the store password."""
    fields = der_children(data, _expect(encrypted, 0x30, "EncryptedData"))
    if len(fields) < 2:
        raise Pkcs12Error(f"EncryptedData at offset {encrypted.start} has no EncryptedContentInfo")
    info = der_children(data, _expect(fields[1], 0x30, "EncryptedContentInfo"))
    if len(info) < 3 or info[2].tag not in (0x80, 0xA0):
        raise Pkcs12Error(f"EncryptedContentInfo at offset {fields[1].start} holds no encrypted content")
    algorithm = _fields(data, info[1], 1, "contentEncryptionAlgorithm")
    ciphertext = _octets(data, info[2])
    return _decrypt(data, algorithm, ciphertext, password)


def _decrypt(data: bytes, algorithm: list[Element], ciphertext: bytes, password: str) -> bytes:
    oid = der_oid(data, algorithm[0])
    if oid == _PBES2 and len(algorithm) == 2:
        cipher, key, iv = _pbes2_key(data, algorithm[1], password)
    elif oid in _PKCS12_PBE and len(algorithm) == 2:
        salt_el, rounds_el = _fields(data, algorithm[1], 2, "PBE parameters")[:2]
        salt, rounds = _octets(data, salt_el), _integer(data, rounds_el)
        cipher, size = _PKCS12_PBE[oid]
        secret = password.encode("utf-16-be") + b"\0\0"
        key, iv = _pkcs12_kdf(secret, salt, rounds, 1, size), _pkcs12_kdf(secret, salt, rounds, 2, 8)
    else:
        raise Pkcs12Error(f"encrypted with {oid}, which kafkawire does not read (PBES2 and the PKCS12 "
                          "SHA-1 schemes are read)")
    return _cbc_decrypt(cipher, key, iv, ciphertext)


def _pbes2_key(data: bytes, params: Element, password: str) -> tuple[str, bytes, bytes]:
    kdf, scheme = _fields(data, params, 2, "PBES2 parameters")[:2]
    kdf_parts = _fields(data, kdf, 2, "key derivation function")
    if der_oid(data, kdf_parts[0]) != _PBKDF2:
        raise Pkcs12Error(f"PBES2 key derivation {der_oid(data, kdf_parts[0])} is not read (PBKDF2 is)")
    pbkdf2 = _fields(data, kdf_parts[1], 2, "PBKDF2 parameters")
    salt, rounds, prf = _octets(data, pbkdf2[0]), _integer(data, pbkdf2[1]), "sha1"
    for extra in pbkdf2[2:]:
        if extra.tag == 0x30:
            prf_oid = der_oid(data, _fields(data, extra, 1, "pseudo-random function")[0])
            if prf_oid not in _PRF:
                raise Pkcs12Error(f"PBKDF2 pseudo-random function {prf_oid} is not read")
            prf = _PRF[prf_oid]
    scheme_parts = _fields(data, scheme, 1, "encryption scheme")
    cipher_oid = der_oid(data, scheme_parts[0])
    if cipher_oid not in _CIPHERS or len(scheme_parts) != 2:
        raise Pkcs12Error(f"PBES2 cipher {cipher_oid} is not read (AES-CBC and DES-EDE3-CBC are)")
    cipher, size = _CIPHERS[cipher_oid]
    if rounds > 10_000_000:
        raise Pkcs12Error(f"PBKDF2 iteration count {rounds} is past 10,000,000")
    key = hashlib.pbkdf2_hmac(prf, password.encode("utf-8"), salt, rounds, size)
    return cipher, key, _octets(data, scheme_parts[1])


def _integer(data: bytes, element: Element) -> int:
    raw = _expect(element, 0x02, "INTEGER").content(data)
    if not raw or len(raw) > 8:
        raise Pkcs12Error(f"INTEGER of {len(raw)} bytes at offset {element.start}")
    return int.from_bytes(raw, "big", signed=True)


def _pkcs12_kdf(secret: bytes, salt: bytes, rounds: int, purpose: int, size: int) -> bytes:
    """RFC 7292 appendix B.2 with SHA-1 (u = 20, v = 64)."""
    if not 0 < rounds <= 10_000_000:
        raise Pkcs12Error(f"PBE iteration count {rounds} is out of range")
    v = 64

    def stretch(value: bytes) -> bytes:
        """Copies of ``value`` filling a whole number of v-byte blocks (RFC 7292 B.2 steps 2, 3)."""
        length = v * -(-len(value) // v)
        return (value * (length // len(value) + 1))[:length] if value else b""
    block = stretch(salt) + stretch(secret)
    out = b""
    while len(out) < size:
        digest = bytes([purpose]) * v + block
        for _ in range(rounds):
            digest = hashlib.sha1(digest).digest()
        out += digest
        b = int.from_bytes((digest * (v // 20 + 1))[:v], "big")
        block = b"".join(((int.from_bytes(block[i:i + v], "big") + b + 1) % (1 << (8 * v))).to_bytes(v, "big")
                         for i in range(0, len(block), v))
    return out[:size]


def _cbc_decrypt(cipher: str, key: bytes, iv: bytes, ciphertext: bytes) -> bytes:
    from cryptography.hazmat.primitives.ciphers import Cipher, modes
    from cryptography.hazmat.primitives.ciphers.algorithms import AES
    block = 16 if cipher == "AES" else 8
    if len(ciphertext) % block or not ciphertext:
        raise Pkcs12Error(f"encrypted content of {len(ciphertext)} bytes is not whole {block}-byte blocks")
    try:
        if cipher == "RC2":              # 40 or 128 effective bits, the key's own size
            out = rc2_cbc_decrypt(key, 8 * len(key), iv[:8], ciphertext)
        else:
            algorithm = AES(key) if cipher == "AES" else triple_des()(key)
            plain = Cipher(algorithm, modes.CBC(iv[:block])).decryptor()
            out = plain.update(ciphertext) + plain.finalize()
    except ValueError as exc:
        raise Pkcs12Error(f"encrypted content does not decrypt ({exc})") from None
    pad = out[-1]
    if not 0 < pad <= block or out[-pad:] != bytes([pad]) * pad:
        raise Pkcs12Error("encrypted content does not decrypt with this password (bad padding)")
    return out[:-pad]


def triple_des():
    try:
        from cryptography.hazmat.decrepit.ciphers.algorithms import TripleDES
    except ImportError:                  # cryptography before 43
        from cryptography.hazmat.primitives.ciphers.algorithms import TripleDES
    return TripleDES
