"""The REST service serves the memory explorer page and, with observability on, Prometheus ``/metrics``: who may
open which user's pages (the admin key: everyone; a user's key: that user only; a key limited to channels: no one),
and the metrics of the served memory."""

from __future__ import annotations

import os
import signal
import subprocess
import time

import httpx
from prometheus_client.parser import text_string_to_metric_families

from agentx_memory import AgentMemory, Turn
from tests.conftest import cli_env
from tests.integration.test_server_ops import _serve, _wait_ready
from tests.serving import free_port, served  # noqa: F401  (fixture)

ADMIN = "operator-secret-of-this-installation"


def _seed(settings) -> None:
    with AgentMemory(settings) as memory:
        memory.store_turn(Turn(conversation_id="alice-trip", user_id="alice", content="I moved to Lisbon in May"))
        memory.store_turn(Turn(conversation_id="bob-notes", user_id="bob", content="Bob's private note"))


def test_the_explorer_is_served_to_the_admin_key_and_to_each_users_own_key(served):  # noqa: F811
    api = served(security={"admin_key": ADMIN})
    _seed(api.settings)
    anyone, admin = api.client(), api.client(ADMIN)
    alice, agent, channel_key = api.as_user("alice"), api.as_user("alice", agent_id="planner"), \
        api.as_user("alice", channels=["work"])

    page = anyone.get("/explorer/")
    assert page.status_code == 200 and "text/html" in page.headers["content-type"]
    assert anyone.get("/explorer/api/users").status_code == 401

    # the operator lists every user and reads any of them
    assert admin.get("/explorer/api/users").json()["items"] == ["alice", "bob"]
    bob_page = admin.get("/explorer/api/users/bob/conversations")
    assert bob_page.status_code == 200 and "bob-notes" in bob_page.text

    # a user's key reads that user's pages only, and may not list users
    assert alice.get("/explorer/api/users").status_code == 403
    mine = alice.get("/explorer/api/users/alice/conversations")
    assert mine.status_code == 200 and "alice-trip" in mine.text and "bob-notes" not in mine.text
    refused = alice.get("/explorer/api/users/bob/conversations")
    assert refused.status_code == 403 and "bob-notes" not in refused.text
    assert agent.get("/explorer/api/users/alice/conversations").status_code == 200
    assert agent.get("/explorer/api/users/bob/conversations").status_code == 403
    # an agent's key does not read the audit trail (every agent's queries), and the page is told so it leaves it out
    assert agent.get("/explorer/api/users/alice/audit").status_code == 403
    assert agent.get("/explorer/api/users/alice/access").json() == {"user_id": "alice", "audit_trail": False}
    assert alice.get("/explorer/api/users/alice/access").json() == {"user_id": "alice", "audit_trail": True}
    assert admin.get("/explorer/api/users/alice/access").json()["audit_trail"] is True
    assert alice.get("/explorer/api/users/bob/access").status_code == 403
    # the explorer shows every channel: a key limited to channels may not open it
    assert channel_key.get("/explorer/api/users/alice/conversations").status_code == 403
    # the explorer's routes stay out of the API's OpenAPI document
    assert not any(path.startswith("/explorer") for path in anyone.get("/openapi.json").json()["paths"])


def test_without_an_admin_key_configured_no_token_is_taken_for_one(served):  # noqa: F811
    api = served()
    _seed(api.settings)
    assert api.client("").get("/explorer/api/users").status_code == 401
    assert api.client("None").get("/explorer/api/users").status_code == 401


def test_metrics_are_served_when_observability_is_on(settings, embedded_home):
    # a process of its own: the Prometheus reader installs OpenTelemetry's global meter provider, once per process
    s = settings()
    _seed(s)
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    process = _serve(cli_env(s, AGENTX_OBSERVABILITY__ENABLED="true", AGENTX_SECURITY__ADMIN_KEY=ADMIN), port)
    try:
        _wait_ready(url, process)
        admin = {"Authorization": f"Bearer {ADMIN}"}
        assert httpx.get(f"{url}/explorer/api/users", headers=admin, timeout=30).json()["items"] == ["alice", "bob"]
        body = ""
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:  # the size gauges read a memory_stats() taken in the background
            response = httpx.get(f"{url}/metrics", timeout=30, follow_redirects=True)
            assert response.status_code == 200, response.text
            body = response.text
            if "graph_nodes" in body:
                break
            time.sleep(0.2)
        families = {f.name for f in text_string_to_metric_families(body)}
        assert any("operation" in name and "duration" in name for name in families), sorted(families)
        assert any("graph_nodes" in name for name in families), sorted(families)
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            os.kill(process.pid, signal.SIGKILL)
            process.wait()
