"""API key secrets: recognizable, checksummed, stored only as a SHA-256 digest.

The secret has ~238 bits of entropy, so a plain (unkeyed) SHA-256 is as safe as a
slow hash and lets every request find its key with one indexed lookup.
"""

import hashlib
import hmac
import secrets
import string
import zlib

KEY_PREFIX = "fapi_"
_ALPHABET = string.digits + string.ascii_letters
_BODY_LENGTH = 40
_CHECKSUM_LENGTH = 6


def _base62(number: int, width: int) -> str:
    digits = []
    for _ in range(width):
        number, rest = divmod(number, 62)
        digits.append(_ALPHABET[rest])
    return "".join(reversed(digits))


def _checksum(body: str) -> str:
    return _base62(zlib.crc32(body.encode()), _CHECKSUM_LENGTH)


def generate_secret() -> str:
    """`fapi_` + 40 random base62 characters + a CRC32 checksum, like GitHub's tokens.

    The prefix lets secret scanners find leaked keys; the checksum lets us (and
    them) reject a mistyped key without touching the database.
    """
    body = "".join(secrets.choice(_ALPHABET) for _ in range(_BODY_LENGTH))
    return f"{KEY_PREFIX}{body}{_checksum(body)}"


def is_well_formed(secret: str) -> bool:
    if not secret.startswith(KEY_PREFIX):
        return False
    rest = secret[len(KEY_PREFIX) :]
    if len(rest) != _BODY_LENGTH + _CHECKSUM_LENGTH or not rest.isalnum() or not rest.isascii():
        return False
    body, checksum = rest[:_BODY_LENGTH], rest[_BODY_LENGTH:]
    return hmac.compare_digest(_checksum(body), checksum)


def hash_secret(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def display_prefix(secret: str) -> str:
    """What lists show to tell keys apart: enough to recognize, useless to attack."""
    return secret[: len(KEY_PREFIX) + 6]


def new_link_token() -> tuple[str, str]:
    """A token for a one-time link (an invitation, a password reset) and the
    SHA-256 hex to store: the link is the only copy of the token."""
    token = secrets.token_urlsafe(32)
    return token, hash_secret(token)


def sha1_hex(text: str) -> str:
    """SHA-1, as Redis names a script (not for secrets)."""
    return hashlib.sha1(text.encode(), usedforsecurity=False).hexdigest()
