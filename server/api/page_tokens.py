"""List page tokens that tell a client nothing: sealed, and bound to their namespace.

A token is the position of the last record of a page (event time, turn, record key), encrypted
and authenticated under the server's secret (`<data_dir>/page_tokens.key`, made at first start):
a keystream of keyed BLAKE2b blocks over a random nonce, then a keyed BLAKE2b tag over the
namespace (as the core keeps it, so its tenant too), the nonce and the ciphertext (encrypt, then
MAC). So a token does not show the store's global record key (how many records the server holds),
cannot be forged or edited, and is refused in another namespace or another tenant's.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import math
import secrets
import struct

SECRET_BYTES = 32
_NONCE = 12
_TAG = 16
_POSITION = struct.Struct(">dqQ")  # event time, turn, record key


class PageTokens:
    def __init__(self, secret: bytes) -> None:
        if len(secret) < SECRET_BYTES:
            raise ValueError(f"a page-token secret has at least {SECRET_BYTES} bytes")
        self._enc = hashlib.blake2b(secret, person=b"pocketd-page-enc").digest()
        self._mac = hashlib.blake2b(secret, person=b"pocketd-page-mac").digest()

    def seal(self, namespace: str, after: tuple[float, int, int]) -> str:
        nonce = secrets.token_bytes(_NONCE)
        plain = _POSITION.pack(*after)
        ct = bytes(a ^ b for a, b in zip(plain, self._stream(nonce), strict=False))
        raw = nonce + ct + self._tag(namespace, nonce, ct)
        return base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")

    def open(self, namespace: str, token: str) -> tuple[float, int, int] | None:
        """The position sealed in `token` for `namespace`, or None if it is not one of ours."""
        try:
            raw = base64.urlsafe_b64decode(token.encode("ascii") + b"=" * (-len(token) % 4))
        except (ValueError, UnicodeError):
            return None
        if len(raw) != _NONCE + _POSITION.size + _TAG:
            return None
        nonce, ct, tag = raw[:_NONCE], raw[_NONCE:-_TAG], raw[-_TAG:]
        if not hmac.compare_digest(tag, self._tag(namespace, nonce, ct)):
            return None
        plain = bytes(a ^ b for a, b in zip(ct, self._stream(nonce), strict=False))
        t, turn, key = _POSITION.unpack(plain)
        return (t, turn, key) if math.isfinite(t) else None

    def _stream(self, nonce: bytes) -> bytes:
        return hashlib.blake2b(nonce, key=self._enc, digest_size=_POSITION.size).digest()

    def _tag(self, namespace: str, nonce: bytes, ct: bytes) -> bytes:
        data = namespace.encode() + b"\x00" + nonce + ct
        return hashlib.blake2b(data, key=self._mac, digest_size=_TAG).digest()
