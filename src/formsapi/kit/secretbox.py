"""Secrets we must be able to read back (webhook signing secrets), sealed
with the operator's keys: a copy of the database alone does not reveal them.

Keys are any strings of 32 characters or more; each is stretched to a Fernet
key with HKDF. The first seals, every one opens, so a key is rotated by
putting the new one first and dropping the old once `formsapi` has resealed
(or the secrets it sealed have been rotated)."""

import base64
import hashlib
import hmac

from cryptography.fernet import Fernet, InvalidToken, MultiFernet
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

MIN_KEY_LENGTH = 32


class SecretBoxError(Exception):
    """A sealed secret none of the keys opens."""


def _fernet(key: str) -> Fernet:
    stretched = HKDF(
        algorithm=hashes.SHA256(), length=32, salt=None, info=b"formsapi secretbox"
    ).derive(key.encode())
    return Fernet(base64.urlsafe_b64encode(stretched))


def _signing_key(key: str) -> bytes:
    return HKDF(
        algorithm=hashes.SHA256(), length=32, salt=None, info=b"formsapi signed links"
    ).derive(key.encode())


def _mac(key: bytes, message: bytes) -> str:
    digest = hmac.new(key, message, hashlib.sha256).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


class SecretBox:
    def __init__(self, keys: list[str]) -> None:
        if not keys or any(len(key) < MIN_KEY_LENGTH for key in keys):
            raise ValueError(f"each key must be at least {MIN_KEY_LENGTH} characters")
        self._fernet = MultiFernet([_fernet(key) for key in keys])
        self._signing = [_signing_key(key) for key in keys]

    def sign(self, message: bytes) -> str:
        """An HMAC-SHA256 of `message` under the first key (URL-safe base64),
        for links the service hands out and must later recognize."""
        return _mac(self._signing[0], message)

    def verify(self, message: bytes, signature: str) -> bool:
        """Whether any key signed `message` so (a rotated key's links live on)."""
        given = signature.encode("ascii", "replace")
        return any(hmac.compare_digest(_mac(key, message).encode(), given) for key in self._signing)

    def seal(self, secret: str) -> str:
        return self._fernet.encrypt(secret.encode()).decode()

    def open(self, sealed: str) -> str:
        try:
            return self._fernet.decrypt(sealed.encode()).decode()
        except InvalidToken:
            raise SecretBoxError(
                "no key opens this secret (FORMSAPI_SECRET_KEY changed?)"
            ) from None
