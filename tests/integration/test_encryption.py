"""Optional encryption of tool-call payloads in PostgreSQL (issue 19) on both graph backends: off by default,
AES-256-GCM per value bound to its row, read back in plaintext, refused with our error under a missing or wrong key,
and keys rotated by re-encryption."""

from __future__ import annotations

import base64
import json
import os

import pytest

from agentx_memory import AgentMemory, ConflictError, EncryptionKeyError
from agentx_memory.settings import SecuritySettings
from tests.conftest import sql

SECRET_INPUT = {"url": "https://api.example.com/orders", "token": "sk-live-4f9a1c"}
SECRET_OUTPUT = {"rows": [{"customer": "Ana Lopes", "card_last4": "4242"}]}


def _key() -> str:
    return base64.b64encode(os.urandom(32)).decode()


def _rows(memory: AgentMemory) -> list[dict]:
    return sql(memory, "SELECT invocation_id, tool_input, tool_output, error_message, encrypted_with"
                       " FROM tool_invocations ORDER BY id")


def _record(memory: AgentMemory, invocation_id: str, **extra):
    return memory.record_invocation("c1", None, "http_get", extra.get("tool_input", SECRET_INPUT),
                                    extra.get("tool_output", SECRET_OUTPUT), False, 120,
                                    error_message=extra.get("error_message", "401 for token sk-live-4f9a1c"),
                                    invocation_id=invocation_id)


def test_off_by_default_payloads_are_plaintext(settings):
    with AgentMemory(settings(), user_id="alice") as memory:
        assert memory.settings.security.encryption_key_id is None
        _record(memory, "inv-plain")
        row = _rows(memory)[0]
        assert row["encrypted_with"] is None and row["tool_input"] == SECRET_INPUT
        assert memory.get_tool_invocations("c1")[0].tool_output == SECRET_OUTPUT


def test_encrypted_payloads_hold_no_plaintext_and_read_back(settings):
    k1 = _key()
    with AgentMemory(settings(security={"encryption_key_id": "k1", "encryption_keys": {"k1": k1}},
                              audit={"level": "verbose"}), user_id="alice") as memory:
        stored = _record(memory, "inv-1")
        _record(memory, "inv-1")  # the same call again: idempotent, compared in plaintext
        with pytest.raises(ConflictError):
            _record(memory, "inv-1", tool_input={"url": "https://elsewhere.example.com"})
        row = _rows(memory)[0]
        assert row["encrypted_with"] == "k1"
        raw = json.dumps(row) + str(sql(memory, "SELECT metadata FROM memory_audit_log"))
        for secret in ("sk-live-4f9a1c", "Ana Lopes", "api.example.com", "4242"):
            assert secret not in raw  # not in the row, not in the (verbose) audit log
        back = memory.get_tool_invocations("c1")
        assert [(b.id, b.tool_input, b.tool_output, b.error_message) for b in back] == [
            ("inv-1", SECRET_INPUT, SECRET_OUTPUT, "401 for token sk-live-4f9a1c")]
        assert back[0].timestamp == stored.timestamp
        assert memory.get_tool_stats()[0]["usage_count"] == 1  # statistics never read the payload


def test_a_missing_or_wrong_key_and_a_moved_ciphertext_are_our_error(settings):
    k1 = _key()
    with AgentMemory(settings(security={"encryption_key_id": "k1", "encryption_keys": {"k1": k1}}),
                     user_id="alice") as memory:
        _record(memory, "inv-a")
        _record(memory, "inv-b", tool_input={"q": "other"})
        other = _key()
        memory.settings.security = SecuritySettings(encryption_key_id="k1", encryption_keys={"k1": other})
        with pytest.raises(EncryptionKeyError) as wrong:
            memory.get_tool_invocations("c1")
        assert wrong.value.key_id == "k1" and "security.encryption_keys" in str(wrong.value)
        assert k1 not in str(wrong.value) and other not in str(wrong.value)
        memory.settings.security = SecuritySettings()
        with pytest.raises(EncryptionKeyError, match="not configured"):
            memory.get_tool_invocations("c1")
        memory.settings.security = SecuritySettings(encryption_key_id="k1", encryption_keys={"k1": k1})
        sql(memory, "UPDATE tool_invocations SET tool_input = (SELECT tool_input FROM tool_invocations"
                    " WHERE invocation_id = 'inv-a') WHERE invocation_id = 'inv-b' RETURNING 1")
        with pytest.raises(EncryptionKeyError):  # bound to its row: inv-a's ciphertext does not open as inv-b's
            memory.get_tool_invocations("c1")


def test_keys_rotate_by_reencryption_and_plaintext_rows_get_sealed(settings):
    k1, k2 = _key(), _key()
    with AgentMemory(settings(), user_id="alice") as memory:
        _record(memory, "inv-plain")
        memory.settings.security = SecuritySettings(encryption_key_id="k1", encryption_keys={"k1": k1})
        _record(memory, "inv-k1")
        memory.settings.security = SecuritySettings(encryption_key_id="k2", encryption_keys={"k1": k1, "k2": k2})
        _record(memory, "inv-k2")
        assert [r["encrypted_with"] for r in _rows(memory)] == [None, "k1", "k2"]
        assert len(memory.get_tool_invocations("c1")) == 3  # old keys still read

        report = memory.reencrypt_tool_invocations(batch_size=1)
        assert (report.key_id, report.resealed, report.skipped) == ("k2", 2, 0)
        assert {r["encrypted_with"] for r in _rows(memory)} == {"k2"}
        memory.settings.security = SecuritySettings(encryption_key_id="k2", encryption_keys={"k2": k2})
        assert [b.tool_input for b in memory.get_tool_invocations("c1")] == [SECRET_INPUT] * 3

        memory.settings.security = SecuritySettings(encryption_keys={"k2": k2})  # encryption off: back to plaintext
        assert memory.reencrypt_tool_invocations().resealed == 3
        assert [r["tool_input"] for r in _rows(memory)] == [SECRET_INPUT] * 3
