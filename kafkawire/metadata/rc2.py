"""RC2 decryption in CBC mode (RFC 2268), for the PKCS12 stores whose certificates are encrypted
with pbeWithSHAAnd40BitRC2-CBC: what Java 8's keytool (before 8u301) and ``openssl pkcs12
-export -legacy`` write. ``cryptography`` offers RC2 with 128-bit keys only, and a store written
by an older Java needs 40 bits. Slow (pure Python) and used only for a store's certificates,
a few kilobytes read once at start.
"""
from __future__ import annotations

__all__ = ["rc2_cbc_decrypt"]

# RFC 2268 section 2: PITABLE, a permutation of 0..255 from the digits of pi
_PITABLE = bytes.fromhex(
    "d978f9c419ddb5ed28e9fd794aa0d89d" "c67e37832b76538e624c6488448bfba2" "179a59f587b34f1361456d8d09817d32"
    "bd8f40eb86b77b0bf09521225c6b4e82" "54d66593ce60b21c7356c014a78cf1dc" "1275ca1f3bbee4d1423dd430a33cb626"
    "6fbf0eda4669075727f21d9bbc944303" "f811c7f690ef3ee706c3d52fc8661ed7" "08e8eade8052eef784aa72ac354d6a2a"
    "961ad2715a1549744b9fd05e0418a4ec" "c2e0416e0f51cbcc2491af50a1f47039" "997c3a8523b8b47afc02365b25559731"
    "2d5dfa98e38a92ae05df2910676cbac9" "d300e6cfe19ea82c6316013f58e289a9" "0d38341bab33ffb0bb480c5fb9b1cd2e"
    "c5f3db47e5a59c770aa62068fe7fc1ad")
_SHIFTS = (1, 2, 3, 5)
_MASK = 0xFFFF


def _expand(key: bytes, effective_bits: int) -> list[int]:
    """RFC 2268 section 2: the 64 16-bit subkeys of ``key`` with ``effective_bits``."""
    if not 1 <= len(key) <= 128 or not 1 <= effective_bits <= 1024:
        raise ValueError(f"RC2 key of {len(key)} bytes, {effective_bits} effective bits")
    table = bytearray(128)
    table[:len(key)] = key
    for i in range(len(key), 128):
        table[i] = _PITABLE[(table[i - 1] + table[i - len(key)]) & 0xFF]
    t8 = (effective_bits + 7) // 8
    tm = 0xFF % (1 << (8 + effective_bits - 8 * t8))
    table[128 - t8] = _PITABLE[table[128 - t8] & tm]
    for i in range(127 - t8, -1, -1):
        table[i] = _PITABLE[table[i + 1] ^ table[i + t8]]
    return [table[2 * i] | table[2 * i + 1] << 8 for i in range(64)]


def _decrypt_block(words: list[int], subkeys: list[int]) -> list[int]:
    """RFC 2268 section 4: five r-mixing rounds, an r-mashing, six r-mixing, an r-mashing, five."""
    r, j = list(words), 63
    for rounds, mash_after in ((5, True), (6, True), (5, False)):
        for _ in range(rounds):
            for i in (3, 2, 1, 0):
                r[i] = ((r[i] >> _SHIFTS[i]) | (r[i] << (16 - _SHIFTS[i]))) & _MASK
                r[i] = (r[i] - subkeys[j] - (r[i - 1] & r[i - 2]) - ((~r[i - 1]) & r[i - 3])) & _MASK
                j -= 1
        if mash_after:
            for i in (3, 2, 1, 0):
                r[i] = (r[i] - subkeys[r[i - 1] & 63]) & _MASK
    return r


def rc2_cbc_decrypt(key: bytes, effective_bits: int, iv: bytes, ciphertext: bytes) -> bytes:
    """The plain text, padding left on; ``ciphertext`` is whole 8-byte blocks."""
    if len(ciphertext) % 8 or len(iv) != 8:
        raise ValueError(f"RC2-CBC needs whole 8-byte blocks and an 8-byte IV ({len(ciphertext)}, {len(iv)})")
    subkeys, previous, out = _expand(key, effective_bits), iv, bytearray()
    for start in range(0, len(ciphertext), 8):
        block = ciphertext[start:start + 8]
        words = _decrypt_block([int.from_bytes(block[i:i + 2], "little") for i in range(0, 8, 2)], subkeys)
        plain = b"".join(w.to_bytes(2, "little") for w in words)
        out += bytes(a ^ b for a, b in zip(plain, previous))
        previous = block
    return bytes(out)
