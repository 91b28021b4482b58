"""Tenancy is the server's: the user comes from the API key, never from the request. Two keys of two users, each
sending the other's ids (turns, facts, entities, conversations, goals, strategies, pools, working-memory sessions),
for reads, writes and forgetting: nothing of the other user is read, changed or removed. Then keys of one agent and
keys limited to channels."""

from __future__ import annotations

import pytest

from tests.serving import served  # noqa: F401  (fixture)


@pytest.fixture
def two(served):  # noqa: F811
    api = served()
    alice, bob = api.as_user("alice"), api.as_user("bob")
    turn = alice.post("/v1/turns", json={"conversation_id": "c-alice", "content": "My door code is 4711"}).json()
    entity = alice.post("/v1/entities", json={"name": "Lisbon", "type": "place"}).json()
    fact = alice.post("/v1/facts", json={"claim": "Alice's door code is 4711", "source_turn_id": turn["id"],
                                         "entity_ids": [entity["id"]]}).json()
    goal = alice.post("/v1/goals", json={"description": "Change the door code"}).json()
    strategy = alice.post("/v1/strategies", json={"description": "Rotate codes monthly"}).json()
    alice.post("/v1/pools", params={"agent_id": "planner"}, json={"pool_id": "trip", "data": {"code": 4711}})
    alice.put("/v1/working/c-alice/values/secret", json={"value": "4711"})
    alice.post("/v1/conversations/c-alice/summary")
    ids = {"turn": turn, "entity": entity, "fact": fact, "goal": goal, "strategy": strategy}
    return api, alice, bob, ids


def _alice_intact(alice, ids) -> None:
    """Everything alice stored is still there, unchanged."""
    conversation = alice.get("/v1/conversations/c-alice").json()
    assert [t["content"] for t in conversation] == ["My door code is 4711"]
    assert alice.get(f"/v1/facts/{ids['fact']['id']}").json()["claim"] == "Alice's door code is 4711"
    assert alice.get(f"/v1/entities/{ids['entity']['id']}").json()["name"] == "Lisbon"
    assert alice.get(f"/v1/goals/{ids['goal']['id']}").json()["status"] == "active"
    assert alice.get("/v1/pools/trip/data", params={"agent_id": "planner"}).json() == {"data": {"code": 4711},
                                                                                         "version": 1}
    assert alice.get("/v1/working/c-alice/values/secret").json()["value"] == "4711"


def test_reads_with_the_other_users_ids_find_nothing(two):
    _, _, bob, ids = two
    for path in (f"/v1/facts/{ids['fact']['id']}", f"/v1/entities/{ids['entity']['id']}",
                 f"/v1/entities/{ids['entity']['id']}/graph", f"/v1/goals/{ids['goal']['id']}",
                 "/v1/conversations/c-alice", "/v1/conversations/c-alice/summary"):
        r = bob.get(path)
        assert r.status_code == 404, (path, r.text)
        assert r.json()["error"] == "NotFoundError"
    for path in ("/v1/pools/trip", "/v1/pools/trip/data", "/v1/pools/trip/statistics"):
        assert bob.get(path, params={"agent_id": "planner"}).status_code == 404, path
    assert bob.get("/v1/pools", params={"agent_id": "planner"}).json() == []
    assert bob.get("/v1/working/c-alice/values/secret").status_code == 404
    session = bob.get("/v1/working/c-alice").json()
    assert session["user_id"] == "bob" and session["values"] == {} and session["recent_turns"] == []
    bundle = bob.post("/v1/remember", json={"query": "What is the door code 4711?"}).json()
    assert bundle["user_id"] == "bob"
    assert not bundle["turns"] and not bundle["facts"] and not bundle["entities"] and not bundle["goals"]
    assert bob.get("/v1/timeline").json() == []
    assert bob.get("/v1/goals").json() == []
    assert bob.get("/v1/turns/recent").json() == []
    assert bob.post("/v1/strategies/search", json={"task_description": "rotate codes"}).json() == []
    assert all(e["user_id"] == "bob" for e in bob.get("/v1/audit").json())
    # a body cannot name the user at all
    named = bob.post("/v1/remember", json={"query": "door code", "user_id": "alice"})
    assert named.status_code == 422 and named.json()["field"] == "user_id"


def test_writes_with_the_other_users_ids_change_nothing(two):
    _, alice, bob, ids = two
    turn, fact, goal = ids["turn"], ids["fact"], ids["goal"]
    same_turn = bob.post("/v1/turns", json={"id": turn["id"], "conversation_id": "c-alice", "content": "hijack"})
    assert same_turn.status_code == 409, same_turn.text
    into_conversation = bob.post("/v1/turns", json={"conversation_id": "c-alice", "content": "hijack"})
    assert into_conversation.status_code == 409, into_conversation.text
    same_fact = bob.post("/v1/facts", json={"id": fact["id"], "claim": "the code is 0000"})
    assert same_fact.status_code == 409, same_fact.text
    same_goal = bob.post("/v1/goals", json={"id": goal["id"], "description": "hijack"})
    assert same_goal.status_code == 409, same_goal.text
    for path, body in ((f"/v1/goals/{goal['id']}/complete", {"status": "abandoned"}),
                       (f"/v1/facts/{fact['id']}/promote", {"reason": "hijack"}),
                       (f"/v1/strategies/{ids['strategy']['id']}/reinforce", {"success": False})):
        r = bob.post(path, json=body)
        assert r.status_code == 404, (path, r.text)
    own_goal = bob.post("/v1/goals", json={"description": "bob's"}).json()
    assert bob.post(f"/v1/goals/{own_goal['id']}/block", json={"blocker_id": goal["id"]}).status_code == 404
    bob_entity = bob.post("/v1/entities", json={"name": "Porto"}).json()
    link = bob.post("/v1/relationships", json={"source_id": bob_entity["id"], "target_id": ids["entity"]["id"],
                                               "rel_type": "KNOWS"})
    assert link.status_code == 404, link.text
    call = bob.post("/v1/tool-invocations", json={"conversation_id": "c-alice", "tool_name": "x"})
    assert call.status_code == 409, call.text
    planner = {"agent_id": "planner"}
    assert bob.put("/v1/pools/trip/data", params=planner, json={"data": {}, "expected_version": 1}).status_code == 404
    assert bob.patch("/v1/pools/trip/data", params=planner,
                     json={"patch": {"code": None}, "expected_version": 1}).status_code == 404
    assert bob.post("/v1/pools/trip/grants", params=planner,
                    json={"agent_id": "spy", "level": "read"}).status_code == 404
    assert bob.delete("/v1/pools/trip", params=planner).json() == {"deleted": 0}
    # bob's own pool of the same id is his; sharing alice's fact into it finds no such memory
    assert bob.post("/v1/pools", params=planner, json={"pool_id": "trip"}).status_code == 201
    shared = bob.post("/v1/pools/trip/share", params=planner, json={"memory_id": fact["id"], "expected_version": 1})
    assert shared.status_code == 404, shared.text
    bob.put("/v1/working/c-alice/values/secret", json={"value": "0000"})
    bob.delete("/v1/working/c-alice")
    bob.delete("/v1/working/c-alice/ledger/fact:x")
    _alice_intact(alice, ids)


def test_forget_with_the_other_users_ids_removes_nothing(two):
    _, alice, bob, ids = two
    wanted = [ids[k]["id"] for k in ("turn", "fact", "entity", "goal", "strategy")] + ["c-alice"]
    receipt = bob.post("/v1/forget", json={"ids": wanted})
    assert receipt.status_code == 200, receipt.text
    assert receipt.json()["user_id"] == "bob" and receipt.json()["ids"] == []
    assert set(receipt.json()["not_found"]) == set(wanted)
    by_filter = bob.post("/v1/forget", json={"conversation_id": "c-alice"})
    assert by_filter.status_code == 200 and by_filter.json()["ids"] == []
    everything = bob.post("/v1/forget/user", json={"confirm": True})
    assert everything.status_code == 200 and everything.json()["user_id"] == "bob"
    _alice_intact(alice, ids)


def test_a_key_of_one_agent_acts_as_that_agent(served):  # noqa: F811
    api = served()
    planner = api.as_user("alice", agent_id="planner")
    booker = api.as_user("alice", agent_id="booker")
    alice = api.as_user("alice")
    private = planner.post("/v1/turns", json={"conversation_id": "c1", "content": "planner's private note"}).json()
    assert private["agent_id"] == "planner"
    assert booker.get("/v1/conversations/c1").status_code == 404  # another agent's private turn
    assert [t["id"] for t in planner.get("/v1/conversations/c1").json()] == [private["id"]]
    assert planner.get("/v1/me").json() == {"key_id": planner.headers["authorization"].split("_")[1],
                                            "user_id": "alice", "agent_id": "planner", "channels": [], "name": ""}
    # pools: the key's agent acts; naming another agent is refused
    assert planner.post("/v1/pools", json={"pool_id": "p"}).json()["owner_agent_id"] == "planner"
    other = planner.get("/v1/pools/p", params={"agent_id": "booker"})
    assert other.status_code == 422 and other.json()["field"] == "agent_id"
    assert booker.get("/v1/pools/p").status_code == 403
    # forgetting and the audit trail are for keys of the whole user (the explorer's audit pages too)
    for r in (planner.post("/v1/forget", json={"ids": [private["id"]]}), planner.get("/v1/audit"),
              planner.get("/explorer/api/users/alice/audit"),
              planner.get("/explorer/api/users/alice/audit-operations")):
        assert r.status_code == 403 and r.json()["error"] == "PermissionDeniedError"
    # nor through a summary, or a pool: the booker never reads the planner's private turn or fact
    assert booker.post("/v1/conversations/c1/summary").status_code == 404
    secret = planner.post("/v1/facts", json={"claim": "the planner's secret plan", "scope": "agent"}).json()
    assert booker.post("/v1/pools", json={"pool_id": "b"}).status_code in (200, 201)
    shared = booker.post("/v1/pools/b/share", json={"memory_id": secret["id"], "expected_version": 1})
    assert shared.status_code == 404
    assert planner.post("/v1/pools/p/share", json={"memory_id": secret["id"], "expected_version": 1}).json() == {
        "version": 2}  # its own
    assert "secret plan" not in booker.get("/v1/pools/b/data").text
    assert alice.post("/v1/forget", json={"ids": [private["id"]]}).json()["ids"] == [private["id"]]


def test_a_key_limited_to_channels(served):  # noqa: F811
    api = served()
    alice = api.as_user("alice")
    work = api.as_user("alice", channels=["work"])
    home_fact = alice.post("/v1/facts", json={"claim": "The spare key is under the mat", "channel": "home"}).json()
    written = work.post("/v1/facts", json={"claim": "Standup is at 9"}).json()
    assert written["channel"] == "work"  # the key's first channel is its default
    refused = work.post("/v1/facts", json={"claim": "x", "channel": "home"})
    assert refused.status_code == 403 and refused.json()["error"] == "PermissionDeniedError"
    to_global = work.post("/v1/turns", json={"conversation_id": "c", "content": "x", "channel": "_global"})
    assert to_global.status_code == 403
    assert work.get(f"/v1/facts/{home_fact['id']}").status_code == 404
    assert work.post("/v1/remember", json={"query": "spare key", "channel": "home"}).status_code == 403
    bundle = work.post("/v1/remember", json={"query": "Where is the spare key? standup"}).json()
    assert home_fact["id"] not in {f["item"]["id"] for f in bundle["facts"]}
    assert bundle["channels"] == ["work", "_global"]
    assert work.get("/v1/working/c1", params={"channel": "home"}).status_code == 403
    assert work.get("/v1/timeline", params={"channels": ["home"]}).status_code == 403
    assert {e["channel"] for e in work.get("/v1/timeline").json()} <= {"work", "_global"}
    assert work.post("/v1/forget", json={"ids": [home_fact["id"]]}).status_code == 403
    assert alice.get(f"/v1/facts/{home_fact['id']}").status_code == 200
    # a pool takes only what the key may read; a summary only of a conversation the key sees whole
    assert work.post("/v1/pools", json={"pool_id": "w"}, params={"agent_id": "w1"}).status_code in (200, 201)
    shared = work.post("/v1/pools/w/share", json={"memory_id": home_fact["id"], "expected_version": 1},
                       params={"agent_id": "w1"})
    assert shared.status_code == 404
    assert work.post("/v1/pools/w/share", json={"memory_id": written["id"], "expected_version": 1},
                     params={"agent_id": "w1"}).json() == {"version": 2}
    alice.post("/v1/turns", json={"conversation_id": "both", "content": "home: the key is under the mat",
                                  "channel": "home"})
    work.post("/v1/turns", json={"conversation_id": "both", "content": "work: standup at 9"})
    summary = work.post("/v1/conversations/both/summary")
    assert summary.status_code == 403 and "under the mat" not in summary.text
    assert alice.post("/v1/conversations/both/summary").status_code == 200
