"""Application-side encryption of sensitive PostgreSQL columns (issue 19): AES-256-GCM, off by default.

Which columns, and why those: a tool call's **input, output and error message** (``tool_invocations``). They are
the values most likely to carry secrets and personal data (API tokens passed as arguments, query results, file
contents, stack traces), PostgreSQL's log is their only copy (the graph's ``ToolInvocation`` node holds the tool's
name, outcome and latency, never the payload), and no search reads them, so encrypting them costs no recall. Turn
text is not encrypted: the graph (``Turn.content``), the timeline's summaries, the full-text vectors and the Redis
cache each hold a copy, and the lexical leg (PostgreSQL full text, our strongest recall signal) needs the words, so
encrypting ``conversation_logs.content`` alone would protect nothing while costing that leg (docs/encryption.md).

How: ``security.encryption_key_id`` names the key (in ``security.encryption_keys``, 32 random bytes in base64) that
encrypts every new value; None (the default) writes plaintext. Each value is sealed with its own random 96-bit nonce
and the row and column as associated data (``tool_invocations|<invocation id>|<user id>|<column>``), so a ciphertext
copied to another row or column does not decrypt. A row records the id of the key that sealed it
(``encrypted_with``; NULL: plaintext), so keys rotate: add a new key, make it the active one (new writes use it, old
rows still read with the old key), then ``AgentMemory.reencrypt_tool_invocations()`` re-seals the old rows with the
active key, after which the old key can go. A value sealed with a key that is not configured, or with another key
under that id, raises :class:`~agentx_memory.errors.EncryptionKeyError`; no key ever appears in a message or a log.

The ``cryptography`` package does the AES-GCM (``pip install 'agentx-memory[encryption]'``); it is imported only
when a key is configured or an encrypted value is read.
"""

from __future__ import annotations

import base64
import json
import os
from typing import TYPE_CHECKING, Any, Final

from .errors import ConfigurationError, EncryptionKeyError
from .settings import SecuritySettings

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM

__all__ = ["ColumnCipher", "column_aad"]

_NONCE_BYTES: Final = 12


def column_aad(table: str, row_key: str, user_id: str, column: str) -> bytes:
    """The associated data binding a sealed value to its table, row, owner and column."""
    return json.dumps([table, row_key, user_id, column], separators=(",", ":")).encode("utf-8")


def _aesgcm(key: bytes) -> AESGCM:
    try:
        from cryptography.hazmat.primitives.ciphers.aead import AESGCM
    except ImportError as exc:  # pragma: no cover - the dev install has it
        raise ConfigurationError("column encryption needs the cryptography package: "
                                 "pip install 'agentx-memory[encryption]'") from exc
    return AESGCM(key)


class ColumnCipher:
    """Seals and opens column values with the keys of ``security`` (see the module docstring)."""

    def __init__(self, security: SecuritySettings):
        self._keys = {kid: key.get_secret_value() for kid, key in security.encryption_keys.items()}
        #: The id of the key new values are sealed with; None: encryption is off.
        self.key_id = security.encryption_key_id

    @property
    def enabled(self) -> bool:
        """True when new values are encrypted."""
        return self.key_id is not None

    def _cipher(self, key_id: str) -> AESGCM:
        encoded = self._keys.get(key_id)
        if encoded is None:
            raise EncryptionKeyError(key_id, "is not configured: values sealed with this key cannot be read; add it "
                                             "back to security.encryption_keys")
        return _aesgcm(base64.b64decode(encoded))

    def seal(self, plaintext: bytes, aad: bytes) -> str:
        """``plaintext`` sealed with the active key: base64 of nonce and ciphertext (with its tag)."""
        if self.key_id is None:
            raise ConfigurationError("security.encryption_key_id is not set: there is no key to encrypt with")
        nonce = os.urandom(_NONCE_BYTES)
        return base64.b64encode(nonce + self._cipher(self.key_id).encrypt(nonce, plaintext, aad)).decode("ascii")

    def open(self, token: str, key_id: str, aad: bytes) -> bytes:
        """The plaintext of a value :meth:`seal` made with ``key_id``; :class:`EncryptionKeyError` when that key is
        not configured, is another key, or the value (or its row binding) was altered."""
        from cryptography.exceptions import InvalidTag

        cipher = self._cipher(key_id)
        try:
            raw = base64.b64decode(token, validate=True)
            return cipher.decrypt(raw[:_NONCE_BYTES], raw[_NONCE_BYTES:], aad)
        except (InvalidTag, ValueError) as exc:
            raise EncryptionKeyError(key_id, "does not decrypt this value: the key under this id is not the one it "
                                             "was encrypted with, or the stored value was altered") from exc

    def seal_json(self, value: Any, aad: bytes) -> str:
        """A JSON value sealed (its compact JSON text)."""
        return self.seal(json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode("utf-8"), aad)

    def open_json(self, token: str, key_id: str, aad: bytes) -> Any:
        """The JSON value :meth:`seal_json` sealed."""
        return json.loads(self.open(token, key_id, aad))
