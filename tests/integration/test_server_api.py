"""The REST service over a real socket (uvicorn on loopback, httpx), on both graph backends: every area's routes
store and read through the public API, and errors come back as application/problem+json naming our error class and
the field."""

from __future__ import annotations

import pytest

from tests.serving import served  # noqa: F401  (fixture)

PROBLEM = "application/problem+json"


@pytest.fixture
def api(served):  # noqa: F811
    return served()


def test_turns_conversations_and_timeline(api):
    alice = api.as_user("alice")
    r = alice.post("/v1/turns", json={"conversation_id": "c1", "content": "I moved to Lisbon in May."})
    assert r.status_code == 201, r.text
    turn = r.json()
    assert turn["user_id"] == "alice" and turn["channel"] == "_global" and "embedding" not in turn
    r = alice.post("/v1/turns/batch", json={"turns": [
        {"conversation_id": "c1", "role": "assistant", "content": "Lisbon is lovely in May."},
        {"conversation_id": "c1", "content": "My sister Clara visits in June."}]})
    assert r.status_code == 201, r.text
    conversation = alice.get("/v1/conversations/c1").json()
    assert [t["content"] for t in conversation] == ["I moved to Lisbon in May.", "Lisbon is lovely in May.",
                                                    "My sister Clara visits in June."]
    assert [t["index"] for t in conversation] == [0, 1, 2]
    recent = alice.get("/v1/turns/recent", params={"limit": 2}).json()
    assert len(recent) == 2
    timeline = alice.get("/v1/timeline", params={"memory_types": ["episodic"]}).json()
    assert {e["node_id"] for e in timeline} == {t["id"] for t in conversation}
    summary = alice.post("/v1/conversations/c1/summary")
    assert summary.status_code == 200, summary.text
    assert alice.get("/v1/conversations/c1/summary").json()["turn_count"] == 3
    missing = alice.get("/v1/conversations/nope")
    assert missing.status_code == 404 and missing.headers["content-type"] == PROBLEM
    assert missing.json()["error"] == "NotFoundError"


def test_entities_facts_relationships_and_remember(api):
    alice = api.as_user("alice")
    turn = alice.post("/v1/turns", json={"conversation_id": "c1", "content": "I moved to Lisbon in May."}).json()
    lisbon = alice.post("/v1/entities", json={"name": "Lisbon", "type": "place"}).json()
    portugal = alice.post("/v1/entities", json={"name": "Portugal", "type": "place"}).json()
    rel = alice.post("/v1/relationships", json={"source_id": lisbon["id"], "target_id": portugal["id"],
                                                "rel_type": "LOCATED_IN"})
    assert rel.status_code == 201, rel.text
    fact = alice.post("/v1/facts", json={"claim": "Alice lives in Lisbon", "entity_ids": [lisbon["id"]],
                                         "source_turn_id": turn["id"], "temporal": "current"})
    assert fact.status_code == 201, fact.text
    fact = fact.json()
    assert alice.get(f"/v1/facts/{fact['id']}").json()["claim"] == "Alice lives in Lisbon"
    assert alice.get(f"/v1/entities/{lisbon['id']}").json()["name"] == "Lisbon"
    graph = alice.get(f"/v1/entities/{lisbon['id']}/graph", params={"depth": 1}).json()
    assert {e["name"] for e in graph["entities"]} >= {"Lisbon", "Portugal"}
    assert fact["id"] in {f["id"] for f in graph["facts"]}
    bundle = alice.post("/v1/remember", json={"query": "Where does Alice live?", "top_k": 5})
    assert bundle.status_code == 200, bundle.text
    bundle = bundle.json()
    assert bundle["user_id"] == "alice" and fact["id"] in {f["item"]["id"] for f in bundle["facts"]}
    assert turn["id"] in {t["item"]["id"] for t in bundle["turns"]}
    assert all("embedding" not in t["item"] for t in bundle["turns"])
    assert all("signals" in f for f in bundle["facts"])
    as_of = alice.get("/v1/facts/as-of", params={"at": "2999-01-01T00:00:00Z"}).json()
    assert fact["id"] in {f["id"] for f in as_of}


def test_goals_tools_strategies_and_controls(api):
    alice = api.as_user("alice")
    goal = alice.post("/v1/goals", json={"description": "Learn Portuguese", "priority": 2}).json()
    sub = alice.post("/v1/goals", json={"description": "Book lessons", "parent_id": goal["id"]}).json()
    assert sub["parent_id"] == goal["id"]
    blocked = alice.post(f"/v1/goals/{goal['id']}/block", json={"blocker_id": sub["id"]})
    assert blocked.status_code == 200 and blocked.json()["blocked_by"] == [sub["id"]]
    done = alice.post(f"/v1/goals/{sub['id']}/complete", json={"result": "booked"}).json()
    assert done["status"] == "completed" and done["result"] == "booked"
    assert {g["id"] for g in alice.get("/v1/goals", params={"status": "active"}).json()} == {goal["id"]}
    plan = alice.post("/v1/goals/plan", json={"steps": ["find a school", "enrol"], "parent_description": "Study"})
    assert plan.status_code == 201 and len(plan.json()) == 3
    call = alice.post("/v1/tool-invocations", json={"conversation_id": "c1", "tool_name": "search",
                                                    "tool_input": {"q": "school"}, "tool_output": ["a"],
                                                    "success": True, "latency_ms": 12, "task_type": "lookup"})
    assert call.status_code == 201, call.text
    stats = alice.get("/v1/tools/stats").json()
    assert stats[0]["tool_name"] == "search"
    strategy = alice.post("/v1/strategies", json={"description": "Search schools, then compare prices",
                                                  "tool_sequence": ["search"], "task_type": "lookup"}).json()
    again = alice.post(f"/v1/strategies/{strategy['id']}/reinforce", json={"success": True}).json()
    assert again["success_count"] == strategy["success_count"] + 1
    found = alice.post("/v1/strategies/search", json={"task_description": "compare school prices"}).json()
    assert found[0]["id"] == strategy["id"] and "score" in found[0]
    rule = alice.post("/v1/controls", json={"content": "Never book without asking", "severity": "high"})
    assert rule.status_code == 201, rule.text
    assert alice.get("/v1/controls").json()[0]["content"] == "Never book without asking"
    assert alice.get("/v1/controls/search", params={"query": "booking"}).json()[0]["id"] == rule.json()["id"]


def test_working_memory_and_the_injection_ledger(api):
    alice = api.as_user("alice")
    assert alice.put("/v1/working/c1/values/city", json={"value": {"name": "Lisbon"}}).status_code == 200
    assert alice.get("/v1/working/c1/values/city").json() == {"value": {"name": "Lisbon"}, "ttl_seconds": None}
    assert alice.post("/v1/working/c1/thoughts", json={"thought": "ask about June"}).status_code == 201
    assert alice.put("/v1/working/c1/goal", json={"goal_id": "g1", "goal_description": "plan"}).status_code == 200
    assert alice.get("/v1/working/c1/goal").json()["goal_id"] == "g1"
    assert alice.put("/v1/working/c1/scratchpad", json={"content": "draft"}).status_code == 200
    assert alice.get("/v1/working/c1/scratchpad").json() == {"content": "draft"}
    context = alice.get("/v1/working/c1").json()
    assert context["values"] == {"city": {"name": "Lisbon"}} and context["thoughts"][0]["thought"] == "ask about June"
    alice.post("/v1/facts", json={"claim": "Alice lives in Lisbon"})
    first = alice.post("/v1/working/c1/inject", json={"query": "Where does Alice live?"}).json()["prompt"]
    assert "Alice lives in Lisbon" in first and "draft" in first
    second = alice.post("/v1/working/c1/inject", json={"query": "Where does Alice live?"}).json()["prompt"]
    assert "Alice lives in Lisbon" not in second  # the ledger: shown once
    ledger = alice.get("/v1/working/c1/ledger").json()
    fact_keys = [k for k in ledger if k.startswith("fact:")]
    assert fact_keys
    assert alice.delete(f"/v1/working/c1/ledger/{fact_keys[0]}").json() == {"deleted": 1}
    assert alice.post("/v1/working/c1/ledger", json={"item_keys": ["skill:x"]}).status_code == 200
    assert "skill:x" in alice.get("/v1/working/c1/ledger").json()
    assert alice.delete("/v1/working/c1/values/city").json() == {"deleted": 1}
    assert alice.get("/v1/working/c1/values/city").status_code == 404
    assert alice.delete("/v1/working/c1").json()["deleted"] >= 1


def test_pools(api):
    alice = api.as_user("alice")
    planner = {"agent_id": "planner"}
    r = alice.post("/v1/pools", params=planner, json={"pool_id": "trip", "data": {"city": "Lisbon"}})
    assert r.status_code == 201, r.text
    assert r.json()["owner_agent_id"] == "planner" and r.json()["version"] == 1
    assert alice.post("/v1/pools", params=planner, json={"pool_id": "trip"}).status_code == 409
    data = alice.get("/v1/pools/trip/data", params=planner).json()
    assert data == {"data": {"city": "Lisbon"}, "version": 1}
    assert alice.put("/v1/pools/trip/data", params=planner,
                     json={"data": {"city": "Porto"}, "expected_version": 1}).json() == {"version": 2}
    stale = alice.put("/v1/pools/trip/data", params=planner, json={"data": {}, "expected_version": 1})
    assert stale.status_code == 409 and stale.json()["error"] == "StaleVersionError"
    assert alice.patch("/v1/pools/trip/data", params=planner,
                       json={"patch": {"day": 3}, "expected_version": 2}).json() == {"version": 3}
    denied = alice.get("/v1/pools/trip", params={"agent_id": "booker"})
    assert denied.status_code == 403 and denied.json()["error"] == "PermissionDeniedError"
    granted = alice.post("/v1/pools/trip/grants", params=planner, json={"agent_id": "booker", "level": "read"})
    assert "booker" in granted.json()["readers"]
    assert alice.get("/v1/pools/trip", params={"agent_id": "booker"}).status_code == 200
    fact = alice.post("/v1/facts", json={"claim": "Alice likes trams"}).json()
    assert alice.post("/v1/pools/trip/share", params=planner,
                      json={"memory_id": fact["id"], "expected_version": 3}).json() == {"version": 4}
    assert alice.get("/v1/pools/trip/statistics", params=planner).json()["entries"] == 3
    assert [p["pool_id"] for p in alice.get("/v1/pools", params=planner).json()] == ["trip"]
    assert "booker" not in alice.delete("/v1/pools/trip/grants/booker", params=planner).json()["readers"]
    assert alice.delete("/v1/pools/trip", params=planner).json() == {"deleted": 1}
    need_agent = alice.get("/v1/pools")
    assert need_agent.status_code == 422 and need_agent.json()["field"] == "agent_id"


def test_forget_and_audit(api):
    alice = api.as_user("alice")
    turn = alice.post("/v1/turns", json={"conversation_id": "c1", "content": "My PIN is 1234"}).json()
    receipt = alice.post("/v1/forget", json={"ids": [turn["id"]]})
    assert receipt.status_code == 200, receipt.text
    assert turn["id"] in receipt.json()["ids"]
    assert alice.get("/v1/conversations/c1").status_code == 404
    trail = alice.get("/v1/audit", params={"operation": "forget"}).json()
    assert trail and trail[0]["user_id"] == "alice" and trail[0]["memory_type"] in ("memories", "episodic", "user")
    writes = alice.get("/v1/audit", params={"reads": False}).json()
    assert all(e["query_text"] is None for e in writes)
    gone = alice.post("/v1/forget/user", json={"confirm": True})
    assert gone.status_code == 200 and gone.json()["user_id"] == "alice"


def test_errors_are_problem_json_naming_the_class_and_the_field(api):
    alice = api.as_user("alice")
    bad = alice.post("/v1/turns", json={"conversation_id": "c1"})  # FastAPI's own validation: content missing
    assert bad.status_code == 422 and bad.headers["content-type"] == PROBLEM
    body = bad.json()
    assert body["error"] == "ValidationError" and body["field"] == "content" and body["status"] == 422
    assert body["type"] == "urn:agentx-memory:error:ValidationError" and body["title"]
    assert body["instance"] == "/v1/turns"
    ours = alice.post("/v1/turns", json={"conversation_id": " padded ", "content": "x"})  # the library's check
    assert ours.status_code == 422 and ours.json()["field"] == "conversation_id"
    query = alice.get("/v1/turns/recent", params={"limit": "many"})
    assert query.status_code == 422 and query.json()["field"] == "limit"
    nobody = api.client().get("/v1/me")
    assert nobody.status_code == 401 and nobody.headers["www-authenticate"] == "Bearer"
    assert nobody.headers["content-type"] == PROBLEM
    forged = api.client("axm_0123456789abcdef_" + "A" * 43).get("/v1/me")
    assert forged.status_code == 401
    assert api.client().get("/v1/nothing-here").json()["status"] == 404
    big = alice.put("/v1/working/c1/values/blob", json={"value": "x" * 70_000})
    assert big.status_code in (413, 422) and big.headers["content-type"] == PROBLEM
    assert big.json()["field"]


def test_openapi_and_docs_are_published(api):
    spec = api.client().get("/openapi.json").json()
    assert spec["info"]["title"] == "agentx-memory"
    for path in ("/v1/turns", "/v1/remember", "/v1/forget", "/v1/pools/{pool_id}/data", "/v1/audit", "/ready"):
        assert path in spec["paths"]
    problem = spec["paths"]["/v1/turns"]["post"]["responses"]["422"]["content"]
    assert list(problem) == [PROBLEM]
    assert spec["components"]["securitySchemes"]["ApiKey"]["scheme"] == "bearer"
    assert "swagger" in api.client().get("/docs").text.lower()


def test_a_body_that_is_not_json_or_too_big_is_refused_with_its_own_status(served):  # noqa: F811
    """A body that is not JSON is 400 with ``field`` ``body`` (FastAPI reports it at a character position), and one
    past server.max_request_bytes is 413 naming the setting, with a declared length or streamed in chunks (an error
    raised while the route read the stream reached the client as FastAPI's 400)."""
    api = served(server={"max_request_bytes": 2048})
    alice = api.as_user("alice")
    json_type = {"Content-Type": "application/json"}
    broken = alice.post("/v1/turns", content=b"nope", headers=json_type)
    assert broken.status_code == 400 and broken.headers["content-type"] == PROBLEM
    assert (broken.json()["error"], broken.json()["field"]) == ("ValidationError", "body")

    for big in (alice.post("/v1/turns", json={"conversation_id": "c", "content": "x" * 4096}),
                alice.post("/v1/turns", headers=json_type, content=iter(
                    [b'{"conversation_id": "c", "content": "', b"x" * 4096, b'"}']))):
        assert big.status_code == 413, big.text
        assert big.json()["field"] == "body" and "server.max_request_bytes" in big.json()["detail"]
    streamed = alice.post("/v1/turns", headers=json_type, content=iter(
        [b'{"conversation_id": "c", ', b'"content": "streamed in two chunks"}']))
    assert streamed.status_code == 201, streamed.text
    assert [t["content"] for t in alice.get("/v1/conversations/c").json()] == ["streamed in two chunks"]


def test_a_language_model_that_fails_is_the_providers_fault_not_a_server_error(served):  # noqa: F811
    """A summary with llm.query_model set asks the provider (its real SDK client, a local server in its wire
    format): no answer is 503 with Retry-After, an answer that cannot be used 502; neither is the 500 of a bug."""
    from agentx_memory.bench.wire import Reply, WireServer, openai_completion

    with WireServer().running() as wire:
        api = served(llm={"query_model": "openai:gpt-4o-mini", "openai_base_url": wire.url,
                          "openai_api_key": "test-key", "max_retries": 0})
        alice = api.as_user("alice")
        assert alice.post("/v1/turns", json={"conversation_id": "c", "content": "We fly to Oslo"}).status_code == 201
        wire.answer = lambda body: Reply({"error": {"message": "overloaded"}}, status=503)
        down = alice.post("/v1/conversations/c/summary")
        assert down.status_code == 503 and down.headers["retry-after"] == "1", down.text
        assert down.json()["error"] == "LLMUnavailableError" and "openai" not in down.json()["detail"]
        wire.answer = lambda body: Reply(openai_completion("not the JSON asked for", model=body["model"]))
        unusable = alice.post("/v1/conversations/c/summary")
        assert unusable.status_code == 502 and unusable.json()["error"] == "LLMOutputError", unusable.text
