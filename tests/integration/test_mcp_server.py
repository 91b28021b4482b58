"""The MCP server (``agentx-memory mcp``) as a client sees it: the SDK's own client, over stdio and streamable HTTP,
on both graph backends. What a user relies on: the tools and their schemas, what one tool stores another finds,
forgetting is forgetting, a bad argument is a tool error naming the field, and one user's server never reaches
another user's memory."""

from __future__ import annotations

import pytest

from agentx_memory import AgentMemory
from tests.conftest import cli_env, run
from tests.integration.mcp_harness import TRANSPORTS, call, call_error, mcp_client, read_json

TOOLS = {"remember", "store_turn", "learn_fact", "get_entity_graph", "add_goal", "list_goals", "update_goal",
         "forget"}


@pytest.fixture(params=TRANSPORTS)
def transport(request) -> str:
    return request.param


@pytest.fixture
def namespace(settings):
    s = settings()
    return s, cli_env(s)


def test_tools_and_resources_are_listed_with_their_schemas(namespace, transport):
    _, env = namespace

    async def scenario():
        async with mcp_client(transport, env, "alice") as client:
            assert client.server_info is not None and client.server_info.name == "agentx-memory"
            tools = {t.name: t for t in (await client.list_tools()).tools}
            resources = {str(r.uri) for r in (await client.list_resources()).resources}
        return tools, resources

    tools, resources = run(scenario())
    assert set(tools) == TOOLS
    for tool in tools.values():
        schema = tool.input_schema
        assert tool.description and schema["type"] == "object", tool.name
        assert "user_id" not in schema["properties"], f"{tool.name}: the server's user is fixed, not an argument"
        for name, prop in schema["properties"].items():
            assert prop.get("description"), f"{tool.name}.{name} has no description"
        assert tool.output_schema and tool.output_schema["type"] == "object", tool.name
    remember = tools["remember"].input_schema
    assert remember["required"] == ["query"]
    assert remember["properties"]["query"]["maxLength"] == 32 * 1024  # limits.max_text_bytes
    assert (remember["properties"]["top_k"]["minimum"], remember["properties"]["top_k"]["maximum"]) == (1, 100)
    assert set(tools["store_turn"].input_schema["required"]) == {"conversation_id", "content"}
    assert tools["store_turn"].input_schema["properties"]["role"]["enum"] == ["user", "assistant", "system", "tool"]
    assert tools["forget"].annotations.destructive_hint is True
    assert tools["remember"].annotations.read_only_hint is True
    assert resources == {"memory://profile", "memory://goals/active"}


def test_store_turn_then_remember_then_forget(namespace, transport):
    _, env = namespace

    async def scenario():
        async with mcp_client(transport, env, "alice") as client:
            moved = await call(client, "store_turn", conversation_id="trip", content="I moved to Lisbon in May.")
            await call(client, "store_turn", conversation_id="trip", role="assistant",
                       content="Lisbon has yellow trams and steep hills.")
            other = await call(client, "store_turn", conversation_id="pets", content="My cat Miso likes tuna.",
                               metadata={"mood": "happy"}, timestamp="2024-05-01T10:00:00Z")
            assert moved["conversation_id"] == "trip" and moved["index"] == 0 and moved["channel"] == "_global"
            assert other["timestamp"].startswith("2024-05-01T10:00:00")

            found = await call(client, "remember", query="Where did I move?", top_k=5)
            turns = {i["id"]: i for i in found["items"] if i["kind"] == "turn"}
            assert moved["id"] in turns
            hit = turns[moved["id"]]
            assert hit["text"] == "I moved to Lisbon in May." and hit["details"]["conversation_id"] == "trip"
            assert hit["score"] == pytest.approx(sum(v for v in hit["signals"].values() if v is not None))
            scores = [i["score"] for i in found["items"]]
            assert scores == sorted(scores, reverse=True)
            assert "I moved to Lisbon in May." in found["prompt"] and found["complete"] is True

            receipt = await call(client, "forget", ids=[moved["id"]])
            assert receipt["ids"] == [moved["id"]] and receipt["not_found"] == []
            assert receipt["postgres"]["conversation_logs"] == 1 and receipt["total"] >= 2
            again = await call(client, "remember", query="Where did I move?", top_k=5)
            assert moved["id"] not in {i["id"] for i in again["items"]}
            assert "I moved to Lisbon in May." not in again["prompt"]

            by_filter = await call(client, "forget", conversation_id="pets")
            assert other["id"] in by_filter["ids"]
            cats = await call(client, "remember", query="cat Miso tuna", top_k=5)
            assert other["id"] not in {i["id"] for i in cats["items"]}

    run(scenario())


def test_learn_fact_then_get_entity_graph(namespace, transport):
    _, env = namespace

    async def scenario():
        async with mcp_client(transport, env, "alice") as client:
            turn = await call(client, "store_turn", conversation_id="c1", content="I moved to Lisbon to work at Acme.")
            learned = await call(client, "learn_fact", claim="Alice lives in Lisbon", confidence=0.9,
                                 temporal="current", source_turn_id=turn["id"],
                                 entities=[{"name": "Lisbon", "type": "place"}, {"name": "Alice", "type": "person"}])
            fact, entities = learned["fact"], {e["name"]: e for e in learned["entities"]}
            assert fact["claim"] == "Alice lives in Lisbon" and fact["source_turn_id"] == turn["id"]
            assert set(fact["entity_ids"]) == {entities["Lisbon"]["id"], entities["Alice"]["id"]}
            # a second fact about the same entity, by id: merged, not duplicated
            second = await call(client, "learn_fact", claim="Lisbon is the capital of Portugal",
                                entity_ids=[entities["Lisbon"]["id"]], entities=[{"name": "lisbon", "type": "place"}])
            assert [e["id"] for e in second["entities"]] == [entities["Lisbon"]["id"]]

            graph = await call(client, "get_entity_graph", entity_id=entities["Lisbon"]["id"])
            assert graph["entity"]["name"] == "Lisbon" and graph["entity"]["type"] == "place"
            claims = {f["claim"] for f in graph["facts"]}
            assert {"Alice lives in Lisbon", "Lisbon is the capital of Portugal"} <= claims
            by_name = await call(client, "get_entity_graph", name="lisbon", type="place", depth=2)
            assert by_name["entity"]["id"] == entities["Lisbon"]["id"]
            assert {f["claim"] for f in by_name["facts"]} == claims

            found = await call(client, "remember", query="Where does Alice live?")
            assert fact["id"] in {i["id"] for i in found["items"] if i["kind"] == "fact"}

            # forgetting the source turn forgets the fact derived only from it
            receipt = await call(client, "forget", ids=[turn["id"]])
            assert fact["id"] in receipt["ids"]
            graph = await call(client, "get_entity_graph", entity_id=entities["Lisbon"]["id"])
            assert {f["claim"] for f in graph["facts"]} == {"Lisbon is the capital of Portugal"}

    run(scenario())


def test_goals_round_trip_and_the_resources(namespace, transport):
    s, env = namespace
    with AgentMemory(s, user_id="alice") as memory:
        memory.set_preference("language", "Portuguese")

    async def scenario():
        async with mcp_client(transport, env, "alice", channel="trip") as client:
            trip = await call(client, "add_goal", description="Book the flight to Lisbon", priority=5,
                              deadline="2030-06-01T00:00:00Z")
            home = await call(client, "add_goal", description="Water the plants", channel="_global")
            assert trip["status"] == "active" and trip["channel"] == "trip" and home["channel"] == "_global"
            step = await call(client, "add_goal", description="Compare fares", parent_id=trip["id"])
            assert step["parent_id"] == trip["id"]

            active = await call(client, "list_goals")
            assert {g["id"] for g in active["goals"]} == {trip["id"], home["id"], step["id"]}
            assert active["goals"][0]["id"] == trip["id"]  # highest priority first
            resource = await read_json(client, "memory://goals/active")
            assert [g["id"] for g in resource] == [g["id"] for g in active["goals"]]

            done = await call(client, "update_goal", goal_id=trip["id"], result="Booked TP123")
            assert done["status"] == "completed" and done["result"] == "Booked TP123" and done["completed_at"]
            active = await call(client, "list_goals")
            assert trip["id"] not in {g["id"] for g in active["goals"]}
            completed = await call(client, "list_goals", status="completed")
            assert [g["id"] for g in completed["goals"]] == [trip["id"]]
            assert trip["id"] not in {g["id"] for g in await read_json(client, "memory://goals/active")}
            reopened = await call(client, "update_goal", goal_id=trip["id"], status="active")
            assert reopened["status"] == "active"
            recalled = await call(client, "remember", query="flight")
            assert trip["id"] in {g["id"] for g in recalled["goals"]}

            profile = await read_json(client, "memory://profile")
            assert profile["user_id"] == "alice" and profile["preferences"] == {"language": "Portuguese"}

    run(scenario())


def test_bad_arguments_are_tool_errors_naming_the_field_and_the_limit(namespace, transport):
    _, env = namespace

    async def scenario():
        async with mcp_client(transport, env, "alice") as client:
            errors = {
                # the schema's limits, checked before the tool runs
                "top_k": await call_error(client, "remember", query="x", top_k=1000),
                "role": await call_error(client, "store_turn", conversation_id="c", content="hi", role="robot"),
                "missing": await call_error(client, "store_turn", conversation_id="c"),
                # the engine's own checks: our ValidationError and NotFoundError
                "query bytes": await call_error(client, "remember", query="é" * 20_000),
                "channel": await call_error(client, "store_turn", conversation_id="c", content="hi",
                                            channel="Not A Channel!"),
                "goal": await call_error(client, "update_goal", goal_id="no-such-goal"),
                "entity": await call_error(client, "get_entity_graph", entity_id="no-such-entity"),
                "entity or name": await call_error(client, "get_entity_graph"),
                "entity_ids": await call_error(client, "learn_fact", claim="x", entity_ids=["no-such-entity"]),
                "forget": await call_error(client, "forget"),
                "forget both": await call_error(client, "forget", ids=["a"], conversation_id="c"),
                "metadata": await call_error(client, "store_turn", conversation_id="c", content="hi",
                                             metadata={"blob": "x" * 20_000}),
            }
            # nothing was stored by the refused calls
            nothing = await call(client, "remember", query="hi")
            assert nothing["items"] == []
        return errors

    errors = run(scenario())
    assert errors["top_k"] == ("Error executing tool remember: top_k: Input should be less than or equal to 100 "
                               "(got 1000)")
    assert errors["role"].endswith("role: Input should be 'user', 'assistant', 'system' or 'tool' (got 'robot')")
    assert errors["missing"].endswith("store_turn: content: Field required")
    assert errors["query bytes"].endswith("query: is 40000 bytes; the limit is 32768 bytes")
    assert "channel: 'Not A Channel!' is not a channel name" in errors["channel"]
    assert errors["goal"].endswith("goal 'no-such-goal' not found")
    assert errors["entity"].endswith("entity 'no-such-entity' not found")
    assert "entity_id: give the entity's id or its name" in errors["entity or name"]
    assert errors["entity_ids"].endswith("entity 'no-such-entity' not found")
    assert "where: give at least one criterion" in errors["forget"]
    assert "ids: give ids or a filter" in errors["forget both"]
    assert "metadata" in errors["metadata"] and "16384" in errors["metadata"]
    for text in errors.values():
        assert "Traceback" not in text and 'File "' not in text


def test_one_users_server_never_reaches_another_users_memory(namespace, transport):
    _, env = namespace

    async def scenario():
        async with mcp_client(transport, env, "alice") as alice:
            turn = await call(alice, "store_turn", conversation_id="secret", content="My locker code is 4711.")
            fact = await call(alice, "learn_fact", claim="Alice's locker code is 4711",
                              entities=[{"name": "Locker", "type": "object"}])
            goal = await call(alice, "add_goal", description="Change the locker code")
        entity_id = fact["entities"][0]["id"]
        ids = [turn["id"], fact["fact"]["id"], entity_id, goal["id"]]

        async with mcp_client(transport, env, "bob") as bob:
            found = await call(bob, "remember", query="locker code 4711")
            assert found["items"] == [] and found["goals"] == [] and "4711" not in found["prompt"]
            assert (await call(bob, "list_goals"))["goals"] == []
            assert await read_json(bob, "memory://goals/active") == []
            assert (await read_json(bob, "memory://profile"))["user_id"] == "bob"
            assert (await call_error(bob, "get_entity_graph", entity_id=entity_id)).endswith("not found")
            assert (await call_error(bob, "get_entity_graph", name="Locker")).endswith("entity 'Locker' not found")
            assert (await call_error(bob, "update_goal", goal_id=goal["id"])).endswith("not found")
            assert (await call_error(bob, "learn_fact", claim="x", entity_ids=[entity_id])).endswith("not found")
            receipt = await call(bob, "forget", ids=ids)
            assert receipt["ids"] == [] and sorted(receipt["not_found"]) == sorted(ids) and receipt["total"] == 0
            await call(bob, "store_turn", conversation_id="bob-notes", content="Bob's locker code is 1234.")

        async with mcp_client(transport, env, "alice") as alice:
            found = await call(alice, "remember", query="locker code")
            assert {turn["id"], fact["fact"]["id"]} <= {i["id"] for i in found["items"]}
            assert "1234" not in found["prompt"]
            assert [g["id"] for g in (await call(alice, "list_goals"))["goals"]] == [goal["id"]]

    run(scenario())


def test_an_agents_server_keeps_its_private_turns_from_other_agents(namespace, transport):
    _, env = namespace

    async def scenario():
        async with mcp_client(transport, env, "alice", agent="planner") as planner:
            mine = await call(planner, "store_turn", conversation_id="plan", content="Draft itinerary for Porto.")
            assert mine["agent_id"] == "planner"
        async with mcp_client(transport, env, "alice", agent="critic") as critic:
            seen = await call(critic, "remember", query="itinerary Porto")
            assert mine["id"] not in {i["id"] for i in seen["items"]}
        async with mcp_client(transport, env, "alice", agent="planner") as planner:
            seen = await call(planner, "remember", query="itinerary Porto")
            assert mine["id"] in {i["id"] for i in seen["items"]}
        async with mcp_client(transport, env, "alice", agent="critic") as critic:
            # forgetting reaches every agent's memories: an agent's server may not (the user's may)
            refused = await call_error(critic, "forget", memory_types=["episodic"])
            assert "PermissionDenied" in refused or "may not forget" in refused, refused
        async with mcp_client(transport, env, "alice", agent="planner") as planner:
            seen = await call(planner, "remember", query="itinerary Porto")
            assert mine["id"] in {i["id"] for i in seen["items"]}  # still there

    run(scenario())
