"""Operating the REST service: per-key rate limits with Retry-After, health and readiness per store (a store
really cut off), the `keys` and `serve` commands in subprocesses (keys hashed at rest, revocation, SIGTERM's
graceful shutdown)."""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import urlsplit

import httpx

from agentx_memory import AgentMemory
from agentx_memory.backends import locate_stores
from tests.conftest import cli_env, sql
from tests.faults import FaultyLink
from tests.integration.test_recall_cli import agentx
from tests.serving import LiveServer, free_port, served  # noqa: F401  (fixture)


def test_reads_and_writes_are_rate_limited_per_key_with_retry_after(served):  # noqa: F811
    api = served(server={"read_rate_limit": 3, "write_rate_limit": 2, "rate_window_seconds": 60})
    alice, other_key, bob = api.as_user("alice"), api.as_user("alice"), api.as_user("bob")
    for _ in range(3):
        assert alice.get("/v1/goals").status_code == 200
    refused = alice.get("/v1/goals")
    assert refused.status_code == 429 and refused.headers["content-type"] == "application/problem+json"
    assert 1 <= int(refused.headers["retry-after"]) <= 60
    body = refused.json()
    assert body["error"] == "RateLimitedError" and 0 < body["retry_after"] <= 60 and body["status"] == 429
    assert alice.post("/v1/remember", json={"query": "x"}).status_code == 429  # remember is a read
    # writes have their own count
    for n in range(2):
        assert alice.post("/v1/turns", json={"conversation_id": "c1", "content": f"turn {n}"}).status_code == 201
    third = alice.post("/v1/turns", json={"conversation_id": "c1", "content": "turn 2"})
    assert third.status_code == 429
    # the refused write did nothing; another key (of the same user) and another user have their own counts
    assert [t["content"] for t in other_key.get("/v1/conversations/c1").json()] == ["turn 0", "turn 1"]
    assert bob.get("/v1/goals").status_code == 200


def test_the_window_lets_requests_through_again(served):  # noqa: F811
    api = served(server={"read_rate_limit": 1, "rate_window_seconds": 1})
    alice = api.as_user("alice")
    assert alice.get("/v1/me").status_code == 200
    refused = alice.get("/v1/me")
    assert refused.status_code == 429
    time.sleep(refused.json()["retry_after"] + 0.05)
    assert alice.get("/v1/me").status_code == 200


def test_health_and_readiness_report_each_store(served):  # noqa: F811
    api = served()
    anyone = api.client()
    assert anyone.get("/health").json() == {"status": "ok"}
    ready = anyone.get("/ready")
    assert ready.status_code == 200, ready.text
    body = ready.json()
    assert body["status"] == "ready" and set(body["stores"]) == {"graph", "postgres", "redis"}
    assert all(s["status"] == "up" and s["latency_ms"] >= 0 for s in body["stores"].values())


def test_readiness_says_which_store_is_down_and_requests_get_503(settings):
    s = settings()
    redis_url = asyncio.run(locate_stores(s)).redis_url
    link = FaultyLink(urlsplit(redis_url).path, unix_name="redis.sock")
    faulty = s.model_copy(update={"redis": s.redis.model_copy(update={"url": f"unix://{link.path}",
                                                                        "socket_timeout_seconds": 0.5})})
    with AgentMemory(s) as memory:
        token = memory.create_api_key("alice").token
    server = LiveServer(faulty).start()
    try:
        with httpx.Client(base_url=server.url, timeout=30) as client:
            assert client.get("/ready").json()["stores"]["redis"]["status"] == "up"
            link.refuse()
            ready = client.get("/ready")
            assert ready.status_code == 503
            stores = ready.json()["stores"]
            assert stores["redis"]["status"] == "down" and stores["redis"]["error"]
            assert stores["graph"]["status"] == "up" and stores["postgres"]["status"] == "up"
            assert str(link.path) not in ready.text  # no paths or hosts out
            refused = client.get("/v1/me", headers={"Authorization": f"Bearer {token}"})
            assert refused.status_code == 503 and refused.headers["retry-after"] == "1"
            assert refused.json()["error"] == "StorageUnavailableError" and "redis" not in refused.json()["detail"]
            # the explorer's routes answer with the same problem, and name no store either
            page = client.get("/explorer/api/users/alice/conversations", headers={"Authorization": f"Bearer {token}"})
            assert page.status_code == 503 and page.headers["retry-after"] == "1", page.text
            assert {k: v for k, v in page.json().items() if k != "instance"} == {
                k: v for k, v in refused.json().items() if k != "instance"}
            link.heal()
            assert client.get("/ready").status_code == 200
    finally:
        server.stop()
        link.close()


def _serve(env: dict[str, str], port: int) -> subprocess.Popen:
    script = Path(sys.executable).with_name("agentx-memory")
    command = [str(script)] if script.exists() else [sys.executable, "-m", "agentx_memory.cli"]
    return subprocess.Popen([*command, "serve", "--port", str(port)], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)


def _wait_ready(url: str, process: subprocess.Popen, timeout: float = 90) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert process.poll() is None, process.communicate()[0]
        try:
            if httpx.get(f"{url}/health", timeout=2).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.1)
    raise TimeoutError("agentx-memory serve did not come up")


def test_keys_and_serve_commands(settings, embedded_home):
    s = settings()
    env = cli_env(s)
    made = agentx("keys", "create", "--user", "alice", "--agent", "planner", "--channel", "work", "--json", env=env)
    assert made.returncode == 0, made.stderr + made.stdout
    key = json.loads(made.stdout)
    token = key["token"]
    assert token.startswith("axm_") and key["user_id"] == "alice" and key["agent_id"] == "planner"
    assert key["channels"] == ["work"]
    plain = agentx("keys", "create", "--user", "bob", env=env)
    assert plain.returncode == 0 and plain.stdout.strip().splitlines()[-1].startswith("axm_")
    listed = agentx("keys", "list", "--json", env=env)
    assert {k["user_id"] for k in json.loads(listed.stdout)} == {"alice", "bob"}
    assert token not in listed.stdout and "key_hash" not in listed.stdout
    # hashed at rest: the table holds the token's SHA-256, never the token
    with AgentMemory(s) as memory:
        rows = sql(memory, "SELECT * FROM api_keys WHERE key_id = %s", (key["key_id"],))
    assert rows[0]["key_hash"] == hashlib.sha256(token.encode()).hexdigest()
    assert token not in json.dumps(rows, default=str)

    port = free_port()
    url = f"http://127.0.0.1:{port}"
    process = _serve(env, port)
    try:
        _wait_ready(url, process)
        me = httpx.get(f"{url}/v1/me", headers={"Authorization": f"Bearer {token}"}, timeout=30)
        assert me.status_code == 200 and me.json()["agent_id"] == "planner"
        revoked = agentx("keys", "revoke", key["key_id"], env=env)
        assert revoked.returncode == 0, revoked.stdout
        assert httpx.get(f"{url}/v1/me", headers={"Authorization": f"Bearer {token}"}, timeout=30).status_code == 401
        assert agentx("keys", "revoke", key["key_id"], env=env).returncode == 1  # not live any more
        assert "revoked" in agentx("keys", "list", "--all", env=env).stdout
        process.send_signal(signal.SIGTERM)
        out, _ = process.communicate(timeout=60)
        # uvicorn finishes the requests in flight, runs the lifespan's shutdown (which closes the memory), then
        # re-raises the signal so the exit status says what stopped it
        assert process.returncode in (0, -signal.SIGTERM), out
        assert out.index("Shutting down") < out.index("Application shutdown complete") < out.index("Finished server")
    finally:
        if process.poll() is None:
            os.kill(process.pid, signal.SIGKILL)
            process.wait()
