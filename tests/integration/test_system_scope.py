"""The system scope (issue 19) on both graph backends: rules written with the admin key hold for every user, only the
admin key writes, changes or deletes them, and no user's delete, forget, export or snapshot reaches them."""

from __future__ import annotations

import logging

import pytest

from agentx_memory import AdminKeyError, AgentMemory, ConflictError, ControlMemory, PermissionDeniedError
from agentx_memory.admin import SYSTEM_USER_ID
from tests.conftest import sql

ADMIN_KEY = "correct horse battery staple"


def _admin_settings(settings, key: str | None = ADMIN_KEY):
    return settings(security={"admin_key": key}) if key is not None else settings()


def test_a_system_rule_holds_for_every_user_and_their_agents(settings):
    with AgentMemory(_admin_settings(settings), user_id="alice") as memory:
        admin = memory.as_admin(ADMIN_KEY)
        assert admin.is_admin and not memory.is_admin
        rule = admin.add_system_control("Never send customer data to an external URL", severity="critical",
                                        error_pattern="data_exfiltration", control_id="sys-no-exfil")
        assert (rule.id, rule.scope, rule.user_id) == ("sys-no-exfil", "system", SYSTEM_USER_ID)
        assert rule.channel == "_global"
        memory.add_control(ControlMemory(user_id="alice", content="Alice prefers metric units"))

        for user in ("alice", "bob"):
            assert memory.get_control("sys-no-exfil", user_id=user).content.startswith("Never send customer data")
            listed = memory.list_controls(user_id=user, channel="project-x")
            assert "sys-no-exfil" in [c.id for c in listed]
            assert ("Alice prefers metric units" in [c.content for c in listed]) == (user == "alice")
            found = memory.find_controls("may I post customer data to an external URL?", user_id=user)
            assert found[0].id == "sys-no-exfil"
            bundle = memory.remember("may I post customer data to an external URL?", user_id=user)
            assert bundle.controls[0].item.id == "sys-no-exfil"
            assert "(critical) Never send customer data" in bundle.to_prompt(400)
        agent = memory.for_agent("planner")
        assert [c.id for c in agent.list_controls(error_pattern="data_exfiltration")] == ["sys-no-exfil"]
        assert [c.id for c in memory.list_system_controls()] == ["sys-no-exfil"]

        changed = admin.add_system_control("Never send customer data outside the EU", severity="critical",
                                           control_id="sys-no-exfil")
        assert changed.content == "Never send customer data outside the EU"
        assert memory.get_control("sys-no-exfil", user_id="bob").content == changed.content
        assert admin.delete_system_control("sys-no-exfil") is True
        assert admin.delete_system_control("sys-no-exfil") is False
        assert [c.content for c in memory.list_controls(user_id="bob")] == []


def test_a_system_rule_through_add_control_needs_the_admin_view(settings):
    with AgentMemory(_admin_settings(settings), user_id="alice") as memory:
        rule = ControlMemory(user_id="alice", content="Always cite the source", scope="system")
        with pytest.raises(AdminKeyError) as caught:
            memory.add_control(rule)
        assert caught.value.field == "admin_key" and isinstance(caught.value, PermissionDeniedError)
        assert memory.list_system_controls() == []
        stored = memory.as_admin(ADMIN_KEY).add_control(rule)
        assert (stored.scope, stored.user_id) == ("system", SYSTEM_USER_ID)
        assert memory.get_control(rule.id, user_id="carol").content == "Always cite the source"


def test_a_wrong_or_missing_key_is_refused_naming_the_field_and_never_shown(settings, caplog):
    caplog.set_level(logging.DEBUG)
    with AgentMemory(_admin_settings(settings), user_id="alice") as memory:
        with pytest.raises(AdminKeyError) as wrong:
            memory.as_admin("correct horse battery stapl")
        assert wrong.value.field == "admin_key"
        with pytest.raises(AdminKeyError) as missing:
            memory.add_system_control("Never delete production data")
        assert missing.value.field == "admin_key"
        with pytest.raises(AdminKeyError):
            memory.delete_system_control("anything")
        for error in (wrong.value, missing.value):
            assert ADMIN_KEY not in str(error) and "stapl" not in str(error)
        assert "battery" not in caplog.text
        assert memory.list_system_controls() == []
    with AgentMemory(_admin_settings(settings, None), user_id="alice") as memory:
        with pytest.raises(AdminKeyError) as unset:
            memory.as_admin(ADMIN_KEY)
        assert unset.value.field == "security.admin_key"
        assert "battery" not in repr(memory.settings.security)


def test_a_key_changed_in_the_settings_stops_an_admin_view_made_before(settings):
    with AgentMemory(_admin_settings(settings), user_id="alice") as memory:
        admin = memory.as_admin(ADMIN_KEY)
        admin.add_system_control("Rule one", control_id="sys-1")
        memory.settings.security.admin_key = "a new key"  # type: ignore[assignment]  # validated into a SecretStr
        with pytest.raises(AdminKeyError):
            admin.add_system_control("Rule two")
        assert memory.as_admin("a new key").delete_system_control("sys-1") is True


def test_no_users_delete_forget_export_or_snapshot_reaches_a_system_rule(settings, tmp_path):
    with AgentMemory(_admin_settings(settings), user_id="alice") as memory:
        memory.as_admin(ADMIN_KEY).add_system_control("Never run rm -rf on a shared volume", control_id="sys-rm")
        own = memory.add_control(ControlMemory(user_id="alice", content="Alice's own rule"))
        with pytest.raises(ConflictError):  # a user cannot take a system rule's id
            memory.add_control(ControlMemory(id="sys-rm", user_id="alice", content="mine now"))

        assert memory.delete_control("sys-rm") is False
        memory.forget(["sys-rm"])
        path = memory.export_memory(tmp_path / "alice.jsonl").path
        assert "sys-rm" not in path.read_text() and own.id in path.read_text()
        snapshot = memory.create_snapshot()
        memory.delete_control(own.id)
        memory.restore_from_snapshot(snapshot.snapshot_id)  # replaces what alice has: never the system's rules
        assert sorted(c.id for c in memory.list_controls()) == sorted([own.id, "sys-rm"])
        memory.forget_user("alice")
        assert [c.id for c in memory.list_controls(user_id="alice")] == ["sys-rm"]
        memory.import_memory(path, user_id="dave")
        assert sorted(c.content for c in memory.list_controls(user_id="dave")) == [
            "Alice's own rule", "Never run rm -rf on a shared volume"]

        audit = sql(memory, "SELECT operation, user_id, metadata FROM memory_audit_log WHERE memory_type = 'control'"
                            " AND metadata->>'scope' = 'system' ORDER BY id")
        assert [(a["operation"], a["user_id"]) for a in audit] == [("store", None)]
        assert audit[0]["metadata"]["affected_ids"] == ["sys-rm"] and audit[0]["metadata"]["admin"] is True
