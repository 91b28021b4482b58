"""Tool-call payloads (input, output, error message) as ``tool_invocations`` stores them: sealed with the active
encryption key when encryption is on, plaintext otherwise (:mod:`agentx_memory.crypto` says which columns and why),
and the re-encryption that moves every row to the active key (key rotation, or turning encryption on or off)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from .crypto import ColumnCipher, column_aad
from .models import ToolInvocation
from .sql.tool_invocations import StoredPayload, ToolInvocationLog

__all__ = ["ReencryptReport", "open_payload", "reencrypt", "same_payload", "seal_payload"]

_TABLE: Final = "tool_invocations"


def _aad(invocation_id: str, user_id: str, column: str) -> bytes:
    return column_aad(_TABLE, invocation_id, user_id, column)


def seal_payload(cipher: ColumnCipher, invocation_id: str, user_id: str, tool_input: Any, tool_output: Any,
                 error_message: str | None) -> StoredPayload:
    """The payload as a row stores it under the active key (plaintext when encryption is off). A missing output or
    error message stays NULL: that there was none is not a secret worth a ciphertext."""
    if not cipher.enabled:
        return StoredPayload(tool_input, tool_output, error_message)
    return StoredPayload(
        cipher.seal_json(tool_input, _aad(invocation_id, user_id, "tool_input")),
        None if tool_output is None else cipher.seal_json(tool_output, _aad(invocation_id, user_id, "tool_output")),
        None if error_message is None else cipher.seal(error_message.encode("utf-8"),
                                                       _aad(invocation_id, user_id, "error_message")),
        cipher.key_id)


def open_payload(cipher: ColumnCipher, row: Mapping[str, Any], invocation_id: str,
                 user_id: str) -> tuple[Any, Any, str | None]:
    """A row's ``(tool_input, tool_output, error_message)`` in plaintext; :class:`EncryptionKeyError` when it was
    sealed with a key that is not configured or is not the one under its id."""
    key_id = row["encrypted_with"]
    if key_id is None:
        return row["tool_input"], row["tool_output"], row["error_message"]
    output, error = row["tool_output"], row["error_message"]
    return (cipher.open_json(row["tool_input"], key_id, _aad(invocation_id, user_id, "tool_input")),
            None if output is None else cipher.open_json(output, key_id, _aad(invocation_id, user_id, "tool_output")),
            None if error is None else cipher.open(error, key_id, _aad(invocation_id, user_id,
                                                                       "error_message")).decode("utf-8"))


def same_payload(cipher: ColumnCipher, row: Mapping[str, Any], inv: ToolInvocation) -> bool:
    """Whether a stored row holds ``inv``'s input, output and error message (JSON compared by value)."""
    return open_payload(cipher, row, inv.id, inv.user_id) == (inv.tool_input, inv.tool_output, inv.error_message)


@dataclass
class ReencryptReport:
    """What a re-encryption did: rows ``resealed`` under ``key_id`` (None: made plaintext) and rows ``skipped``
    (changed by another re-encryption in between)."""

    key_id: str | None
    resealed: int = 0
    skipped: int = 0


async def reencrypt(log: ToolInvocationLog, cipher: ColumnCipher, *, batch_size: int) -> ReencryptReport:
    """Bring every row to the active key: rows sealed with another key are opened and sealed again, plaintext rows
    are sealed (with encryption off, sealed rows become plaintext). Every key a row names must be configured."""
    report = ReencryptReport(cipher.key_id)
    after = 0
    while True:
        rows = await log.not_under_key(cipher.key_id, after=after, limit=batch_size)
        if not rows:
            return report
        after = rows[-1]["id"]
        for row in rows:
            inv_id, user = row["invocation_id"], row["user_id"]
            payload = seal_payload(cipher, inv_id, user, *open_payload(cipher, row, inv_id, user))
            if await log.reseal(row["id"], row["encrypted_with"], payload):
                report.resealed += 1
            else:
                report.skipped += 1
