"""``kafkawire storage format --add-scram``: SCRAM credentials for the bootstrap metadata, as
Kafka's ScramParser reads them and ScramFormatter computes them.

    'SCRAM-SHA-256=[name=alice,password=alice-secret]'
    'SCRAM-SHA-512=[name=alice,iterations=8192,salt="N3E=",saltedpassword="YCE="]'

Each argument becomes one UserScramCredentialRecord (version 0) after the FeatureLevelRecords of
``bootstrap.checkpoint``. Without ``salt`` a random one is drawn as ScramFormatter's
secureRandomBytes does (a random 130-bit number in base 36, as text), without ``iterations`` 4096. The salted password is PBKDF2-HMAC (RFC 5802's
Hi) of the password's UTF-8 bytes, as Kafka's ScramFormatter (no SASLprep); the stored and server
keys follow RFC 5802. Refusals are FormatterException's messages.
"""
from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import os
from kafkawire import messages

__all__ = ["parse_scram_arguments", "scram_record_text", "ScramArgumentError"]

# ScramMechanism: name -> (type id, hash, min iterations, max iterations)
MECHANISMS = {"SCRAM-SHA-256": (1, "sha256", 4096, 16384), "SCRAM-SHA-512": (2, "sha512", 4096, 16384)}
DEFAULT_ITERATIONS = 4096


class ScramArgumentError(ValueError):
    pass


def _split_mechanism(argument: str) -> tuple[str, str]:
    text = argument.strip()
    equals = text.find("=")
    if equals < 0:
        raise ScramArgumentError(f"Failed to find equals sign in SCRAM argument '{text}'")
    mechanism, config = text[:equals], text[equals + 1:]
    if mechanism not in MECHANISMS:
        raise ScramArgumentError(f"The add-scram mechanism {mechanism} is not supported.")
    if not config.startswith("["):
        raise ScramArgumentError("Expected configuration string to start with [")
    if not config.endswith("]"):
        raise ScramArgumentError("Expected configuration string to end with ]")
    return mechanism, config[1:-1]


def _components(config: str) -> dict[str, str]:
    out = {}
    for component in config.split(","):
        equals = component.find("=")
        if equals < 0:
            raise ScramArgumentError(f"No equals sign found in SCRAM component: {component}")
        value = component[equals + 1:]
        if len(value) >= 2 and value.startswith('"') and value.endswith('"'):
            value = value[1:-1]
        out[component[:equals]] = value
    return out


def _base64(value: str, what: str) -> bytes:
    try:
        return base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        raise ScramArgumentError(f"Failed to decode given {what}: {value}") from None


def _random_salt() -> bytes:
    # Kafka's salt is the UTF-8 of a random 130-bit number written in base 36 (up to 26 bytes).
    number = int.from_bytes(os.urandom(17), "big") >> 6
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"
    text = ""
    while number:
        number, r = divmod(number, 36)
        text = digits[r] + text
    return (text or "0").encode()


def credential(mechanism: str, *, salt: bytes, iterations: int, password: str | None = None,
               salted_password: bytes | None = None) -> tuple[bytes, bytes]:
    """(stored_key, server_key) of RFC 5802 from the password or the salted password."""
    digest = MECHANISMS[mechanism][1]
    if salted_password is None:
        salted_password = hashlib.pbkdf2_hmac(digest, password.encode("utf-8"), salt, iterations)
    client_key = hmac.new(salted_password, b"Client Key", digest).digest()
    server_key = hmac.new(salted_password, b"Server Key", digest).digest()
    return hashlib.new(digest, client_key).digest(), server_key


def _record(mechanism: str, config: str):
    parts = _components(config)
    name = parts.pop("name", None)
    if name is None:
        raise ScramArgumentError("You must supply 'name' to add-scram")
    salt = _base64(parts.pop("salt"), "salt") if "salt" in parts else None
    iterations = DEFAULT_ITERATIONS
    if "iterations" in parts:
        text = parts.pop("iterations")
        try:
            iterations = int(text, 10)
        except ValueError:
            raise ScramArgumentError(f"Failed to parse iterations count: {text}") from None
    password, salted = parts.pop("password", None), parts.pop("saltedpassword", None)
    if password is None:
        if salted is None:
            raise ScramArgumentError("You must supply one of 'password' or 'saltedpassword' to add-scram")
        if salt is None:
            raise ScramArgumentError("You must supply 'salt' with 'saltedpassword' to add-scram")
        salted = _base64(salted, "saltedPassword")
    if parts:
        raise ScramArgumentError(f"Unknown SCRAM configurations: {', '.join(sorted(parts))}")
    type_id, _, low, high = MECHANISMS[mechanism]
    if salt is None:
        salt = _random_salt()
    if iterations < low:
        raise ScramArgumentError(f"The 'iterations' value must be >= {low} for add-scram using {mechanism.replace('-', '_')}")
    if iterations > high:
        raise ScramArgumentError(f"The 'iterations' value must be <= {high} for add-scram using {mechanism.replace('-', '_')}")
    stored_key, server_key = credential(mechanism, salt=salt, iterations=iterations, password=password,
                                        salted_password=salted)
    return messages.by_name("UserScramCredentialRecord")(name=name, mechanism=type_id, salt=salt,
                                                         stored_key=stored_key, server_key=server_key,
                                                         iterations=iterations)


def parse_scram_arguments(arguments: list[str] | None) -> list:
    """The UserScramCredentialRecords of the --add-scram arguments, in order."""
    return [_record(*_split_mechanism(argument)) for argument in arguments or ()]


def _java_bytes(data: bytes) -> str:
    """Arrays.toString(byte[]): signed bytes."""
    return "[" + ", ".join(str(b - 256 if b > 127 else b) for b in data) + "]"


def scram_record_text(r) -> str:
    """UserScramCredentialRecord.toString, as Kafka's generated class writes it."""
    return (f"UserScramCredentialRecord(name='{r.name}', mechanism={r.mechanism}, salt={_java_bytes(r.salt)}, "
            f"storedKey={_java_bytes(r.stored_key)}, serverKey={_java_bytes(r.server_key)}, "
            f"iterations={r.iterations})")
