"""The memory explorer's JSON, read with httpx through the ASGI app, on both graph backends: every view of the page
has its data, lists are paged, bad input is a problem naming the field, and a user's pages never show another
user's memory."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from importlib import resources
from typing import Any

import httpx
import pytest

from agentx_memory import AsyncAgentMemory
from agentx_memory.demo import DEMO_USER
from tests.explorer_support import OTHER_USER, SECRET, explorer_app, seed_explorer

Check = Callable[[httpx.AsyncClient, dict[str, Any]], Awaitable[None]]


def _explore(settings, check: Check) -> None:
    async def main() -> None:
        memory = await AsyncAgentMemory.open(settings(extraction={"extractor": "offline"}), user_id=DEMO_USER)
        try:
            seeded = await seed_explorer(memory)
            await memory.drain()
            transport = httpx.ASGITransport(app=explorer_app(memory))
            async with httpx.AsyncClient(transport=transport, base_url="http://explorer.test") as client:
                await check(client, seeded)
        finally:
            await memory.close()

    asyncio.run(main())


async def _get(client: httpx.AsyncClient, path: str, status: int = 200) -> Any:
    response = await client.get("/explorer/api/" + path)
    assert response.status_code == status, (path, response.status_code, response.text)
    return response.json()


def test_page_and_static_files(settings):
    async def check(client: httpx.AsyncClient, seeded: dict[str, Any]) -> None:
        page = await client.get("/explorer/")
        assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
        assert 'href="/explorer/static/explorer.css"' in page.text and 'src="/explorer/static/explorer.js"' in page.text
        assert "default-src 'self'" in page.headers["content-security-policy"]
        assert "{{" not in page.text
        redirected = await client.get("/explorer", follow_redirects=False)
        assert redirected.status_code in (307, 308) and redirected.headers["location"].endswith("/explorer/")
        js = await client.get("/explorer/static/explorer.js")
        assert js.status_code == 200 and js.headers["content-type"].startswith("text/javascript")
        css = await client.get("/explorer/static/explorer.css")
        assert css.status_code == 200 and css.headers["content-type"].startswith("text/css")
        for name in ("index.html", "router.py", "..%2Frouter.py", "%2e%2e/router.py"):
            missing = await client.get(f"/explorer/static/{name}")
            assert missing.status_code == 404 and "def explorer_router" not in missing.text, name
        unknown = await client.get("/explorer/static/router.py")
        assert unknown.headers["content-type"] == "application/problem+json"

    _explore(settings, check)


def test_users_overview_conversations_and_turns(settings):
    async def check(client: httpx.AsyncClient, seeded: dict[str, Any]) -> None:
        users = await _get(client, "users")
        assert users["items"] == [OTHER_USER, DEMO_USER] and users["next_after"] is None
        first = await _get(client, "users?limit=1")
        assert first == {"items": [OTHER_USER], "next_after": OTHER_USER}
        assert (await _get(client, f"users?limit=1&after={OTHER_USER}"))["items"] == [DEMO_USER]

        overview = await _get(client, f"users/{DEMO_USER}")
        counts = overview["counts"]
        assert counts["conversations"] == 7 and counts["turns"] == 26 and counts["tool_invocations"] == 5
        assert counts["entities"] == 6 and counts["goals"] == 5 and counts["strategies"] == 1
        facts = (await _get(client, f"users/{DEMO_USER}/facts?limit=500"))["items"]
        assert counts["facts"] == len(facts) and counts["facts"] > 7  # the demo's 7 and what extraction added
        assert counts["active_facts"] == len([f for f in facts if f["status"] == "active"]) < counts["facts"]
        assert overview["profile"]["preferences"]["diet"] == "vegetarian"

        convs = await _get(client, f"users/{DEMO_USER}/conversations?limit=2")
        assert [c["conversation_id"] for c in convs["items"]] == ["demo-move-2", "demo-s5"]
        assert convs["next_offset"] == 2 and convs["items"][1]["turns"] == 5
        rest = await _get(client, f"users/{DEMO_USER}/conversations?limit=10&offset=2")
        assert [c["conversation_id"] for c in rest["items"]] == ["demo-s4", "demo-s3", "demo-s2", "demo-move-1",
                                                                  "demo-s1"]
        assert rest["next_offset"] is None

        turns = await _get(client, f"users/{DEMO_USER}/conversations/demo-s1?limit=3")
        assert [t["index"] for t in turns["items"]] == [0, 1, 2] and turns["next_index"] == 3
        assert "Porto" in turns["items"][0]["content"] and "embedding" not in turns["items"][0]
        more = await _get(client, f"users/{DEMO_USER}/conversations/demo-s1?from_index=3&limit=50")
        assert more["items"][0]["index"] == 3 and more["next_index"] is None
        turn = await _get(client, f"users/{DEMO_USER}/turns/{turns['items'][2]['id']}")
        assert turn["content"] == turns["items"][2]["content"]
        await _get(client, f"users/{DEMO_USER}/conversations/no-such-conversation", 404)

    _explore(settings, check)


def test_entities_graph_and_facts_with_provenance(settings):
    async def check(client: httpx.AsyncClient, seeded: dict[str, Any]) -> None:
        graph = await _get(client, f"users/{DEMO_USER}/graph")
        names = {n["name"]: n["id"] for n in graph["nodes"]}
        assert set(names) == {"Sam", "Maya Costa", "Lena", "Lumen Labs", "Porto", "Lisbon"}
        edges = {(e["source"], e["type"], e["target"]) for e in graph["edges"]}
        demo = json.loads((resources.files("agentx_memory") / "data" / "demo_knowledge.json").read_text())
        key_names = {e["key"]: e["name"] for e in demo["entities"]}
        assert {(names[key_names[a]], rel, names[key_names[b]]) for a, rel, b in demo["relationships"]} <= edges
        assert len(edges) == len(graph["edges"]) and set(names.values()) >= {x for e in edges for x in e[::2]}
        small = await _get(client, f"users/{DEMO_USER}/graph?limit=2")
        assert len(small["nodes"]) == 2

        page = await _get(client, f"users/{DEMO_USER}/entities?limit=4")
        assert len(page["items"]) == 4 and page["next_offset"] == 4
        saliences = [e["salience"] for e in page["items"]]
        assert saliences == sorted(saliences, reverse=True)
        entity = await _get(client, f"users/{DEMO_USER}/entities/{names['Sam']}")
        assert entity["entity"]["name"] == "Sam"
        assert {e["name"] for e in entity["neighbours"]} >= {"Lumen Labs", "Maya Costa", "Lena"}
        assert "Sam is vegetarian" in {f["claim"] for f in entity["facts"]}
        vegetarian = next(f for f in entity["facts"] if f["claim"] == "Sam is vegetarian")
        assert vegetarian["source_turn_id"] and vegetarian["conversation_id"] == "demo-s1"

        facts = await _get(client, f"users/{DEMO_USER}/facts?limit=50")
        by_claim = {f["claim"]: f for f in facts["items"]}
        assert len(by_claim) > 7 and facts["next_offset"] is None
        times = [f["created_at"] for f in facts["items"]]
        assert times == sorted(times, reverse=True)
        paged = await _get(client, f"users/{DEMO_USER}/facts?limit=3&offset=3")
        assert [f["id"] for f in paged["items"]] == [f["id"] for f in facts["items"][3:6]]
        veg = by_claim["Sam is vegetarian"]
        assert veg["source_turn_ids"] == [veg["source_turn_id"]]
        detail = await _get(client, f"users/{DEMO_USER}/facts/{veg['id']}")
        assert [t["id"] for t in detail["source_turns"]] == [veg["source_turn_id"]]
        assert "vegetarian" in detail["source_turns"][0]["content"]
        # what superseded what: every superseded fact names its successor, which lists it as superseded
        superseded = await _get(client, f"users/{DEMO_USER}/facts?status=superseded")
        for fact in superseded["items"]:
            successor = await _get(client, f"users/{DEMO_USER}/facts/{fact['superseded_by']}")
            assert fact["id"] in successor["fact"]["supersedes"]
            old = await _get(client, f"users/{DEMO_USER}/facts/{fact['id']}")
            assert old["superseded_by"]["id"] == fact["superseded_by"]
        # the demo's own Porto fact and the one extracted from the move conversations, each replaced by a Lisbon fact
        # (the demo's Lisbon fact, said in November, replaces both)
        assert sorted(f["claim"] for f in superseded["items"]) == ["Sam lives in Porto", "Sam lives in Porto."]
        for porto in superseded["items"]:
            successor = next(f for f in facts["items"] if f["id"] == porto["superseded_by"])
            assert successor["claim"].startswith("Sam lives in Lisbon") and porto["id"] in successor["supersedes"]
        problem = await client.get(f"/explorer/api/users/{DEMO_USER}/facts?status=bogus")
        assert problem.status_code == 422 and problem.headers["content-type"] == "application/problem+json"
        assert problem.json()["field"] == "status" and problem.json()["error"] == "ValidationError"
        assert problem.json()["instance"] == f"/explorer/api/users/{DEMO_USER}/facts"  # as the REST service says it
        too_many = await client.get(f"/explorer/api/users/{DEMO_USER}/facts?limit=100000")
        assert too_many.status_code == 422 and too_many.json()["field"] == "limit"
        await _get(client, f"users/{DEMO_USER}/facts/no-such-fact", 404)

    _explore(settings, check)


def test_goals_tools_audit_and_search(settings):
    async def check(client: httpx.AsyncClient, seeded: dict[str, Any]) -> None:
        goals = (await _get(client, f"users/{DEMO_USER}/goals"))["items"]
        by_id = {g["id"]: g for g in goals}
        parent, *steps = seeded["plan"]
        assert all(by_id[s]["parent_id"] == parent for s in steps)
        assert by_id[steps[1]]["blocked_by"] == [steps[0]] and by_id[steps[0]]["status"] == "completed"

        tools = {t["tool_name"]: t for t in (await _get(client, f"users/{DEMO_USER}/tools"))["items"]}
        assert tools["criterion"]["usage_count"] == 2 and tools["criterion"]["success_count"] == 1
        assert tools["web-search"]["success_rate"] == 1.0

        ops = (await _get(client, f"users/{DEMO_USER}/audit-operations"))["items"]
        assert "store" in ops and "upsert" in ops
        trail = await _get(client, f"users/{DEMO_USER}/audit?operation=upsert&limit=4")
        assert len(trail["items"]) == 4 and {a["operation"] for a in trail["items"]} == {"upsert"}
        assert trail["next"] is not None
        older = await client.get(f"/explorer/api/users/{DEMO_USER}/audit", params={
            "operation": "upsert", "limit": 4, **trail["next"]})
        assert older.status_code == 200
        seen = {a["id"] for a in trail["items"]}
        assert older.json()["items"] and not seen & {a["id"] for a in older.json()["items"]}
        assert all(a["timestamp"] <= trail["items"][-1]["timestamp"] for a in older.json()["items"])

        response = await client.post(f"/explorer/api/users/{DEMO_USER}/search",
                                     json={"query": "Where does Sam live now?", "top_k": 5})
        assert response.status_code == 200, response.text
        bundle = response.json()
        assert bundle["items"] and bundle["query"] == "Where does Sam live now?"
        for item in bundle["items"]:
            assert item["signals"], item
            total = sum(s["contribution"] for s in item["signals"].values())
            assert total == pytest.approx(item["score"])
            for signal in item["signals"].values():
                assert signal["contribution"] == pytest.approx(signal["value"] * signal["weight"])
        turn = next(i for i in bundle["items"] if i["kind"] == "turn")
        assert turn["source"]["turn_id"] == turn["id"]
        bad = await client.post(f"/explorer/api/users/{DEMO_USER}/search", json={"query": "x", "top_k": 500})
        assert bad.status_code == 422 and bad.json()["field"] == "top_k"

    _explore(settings, check)


def test_a_users_pages_never_show_another_users_memory(settings):
    async def check(client: httpx.AsyncClient, seeded: dict[str, Any]) -> None:
        paths = [f"users/{DEMO_USER}", f"users/{DEMO_USER}/conversations?limit=100",
                 f"users/{DEMO_USER}/graph?limit=500", f"users/{DEMO_USER}/entities?limit=500",
                 f"users/{DEMO_USER}/facts?limit=500", f"users/{DEMO_USER}/goals",
                 f"users/{DEMO_USER}/tools", f"users/{DEMO_USER}/audit?limit=500"]
        for path in paths:
            body = json.dumps(await _get(client, path))
            assert SECRET not in body and OTHER_USER not in body, path
            for key in ("bob_turn", "bob_entity", "bob_fact", "bob_goal"):
                assert seeded[key] not in body, (path, key)
        # another user's ids, asked for under the demo user's path, are not found
        await _get(client, f"users/{DEMO_USER}/turns/{seeded['bob_turn']}", 404)
        await _get(client, f"users/{DEMO_USER}/conversations/bob-c1", 404)
        await _get(client, f"users/{DEMO_USER}/entities/{seeded['bob_entity']}", 404)
        await _get(client, f"users/{DEMO_USER}/facts/{seeded['bob_fact']}", 404)
        search = await client.post(f"/explorer/api/users/{DEMO_USER}/search", json={"query": f"{SECRET} locker code"})
        assert search.status_code == 200 and search.json()["items"]  # the query echoes the secret: look at the items
        recalled = json.dumps([(i["id"], i["text"], i["source"]) for i in search.json()["items"]])
        assert SECRET not in recalled and OTHER_USER not in recalled and "Bob" not in recalled
        theirs_ids = {seeded[k] for k in ("bob_turn", "bob_entity", "bob_fact")}
        assert not theirs_ids & {i["id"] for i in search.json()["items"]}
        # and the other user's own pages show theirs
        bob = json.dumps(await _get(client, f"users/{OTHER_USER}/facts"))
        assert seeded["bob_fact"] in bob and DEMO_USER not in json.dumps(
            await _get(client, f"users/{OTHER_USER}/graph"))
        theirs = await client.post(f"/explorer/api/users/{OTHER_USER}/search", json={"query": f"{SECRET} locker"})
        assert seeded["bob_fact"] in {i["id"] for i in theirs.json()["items"]}

    _explore(settings, check)
