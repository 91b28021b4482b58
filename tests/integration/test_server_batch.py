"""The REST service's batch writes: many entities, facts and relationships per request, each stored as the single
routes store it, all refused when one item is bad (the problem names the item), and never another user's."""

from __future__ import annotations

from tests.serving import served  # noqa: F401  (fixture)


def test_batches_store_every_item_or_none(served):  # noqa: F811
    api = served()
    alice = api.as_user("alice")
    made = alice.post("/v1/entities/batch", json={"entities": [
        {"name": "Lisbon", "type": "place"}, {"name": "Porto", "type": "place"}, {"name": "lisbon", "type": "place",
                                                                                   "aliases": ["LIS"]}]})
    assert made.status_code == 201, made.text
    lisbon, porto, merged = made.json()
    assert merged["id"] == lisbon["id"] and "LIS" in merged["aliases"]  # the third merged into the first
    assert alice.get(f"/v1/entities/{porto['id']}").json()["name"] == "Porto"

    facts = alice.post("/v1/facts/batch", json={"facts": [
        {"claim": "Alice lives in Lisbon", "entity_ids": [lisbon["id"]]},
        {"claim": "Alice left Porto", "entity_ids": [porto["id"]]}]})
    assert facts.status_code == 201, facts.text
    assert [f["claim"] for f in facts.json()] == ["Alice lives in Lisbon", "Alice left Porto"]
    links = alice.post("/v1/relationships/batch", json={"relationships": [
        {"source_id": lisbon["id"], "target_id": porto["id"], "rel_type": "RELATED_TO"}]})
    assert links.status_code == 201, links.text
    graph = alice.get(f"/v1/entities/{lisbon['id']}/graph", params={"depth": 1}).json()
    assert {(r["source_id"], r["target_id"]) for r in graph["relationships"]} == {(lisbon["id"], porto["id"])}

    # one bad item refuses the whole batch, naming it; nothing of it is stored
    bad = alice.post("/v1/facts/batch", json={"facts": [
        {"id": "f-ok", "claim": "Alice likes trams"}, {"id": "f-bad", "claim": "x", "confidence": 7}]})
    assert bad.status_code == 422 and bad.headers["content-type"].startswith("application/problem+json")
    assert "facts[1]" in (bad.json().get("field") or "") + bad.text
    assert alice.get("/v1/facts/f-ok").status_code == 404


def test_a_batch_never_reaches_another_users_entities(served):  # noqa: F811
    api = served()
    alice, bob = api.as_user("alice"), api.as_user("bob")
    lisbon, porto = alice.post("/v1/entities/batch", json={"entities": [
        {"name": "Lisbon", "type": "place"}, {"name": "Porto", "type": "place"}]}).json()
    refused = bob.post("/v1/relationships/batch", json={"relationships": [
        {"source_id": lisbon["id"], "target_id": porto["id"], "rel_type": "RELATED_TO"}]})
    assert refused.status_code == 404, refused.text
    foreign_fact = bob.post("/v1/facts/batch", json={"facts": [{"claim": "Bob knows Lisbon",
                                                                 "entity_ids": [lisbon["id"]]}]})
    assert foreign_fact.status_code == 404, foreign_fact.text
    graph = alice.get(f"/v1/entities/{lisbon['id']}/graph", params={"depth": 1}).json()
    assert graph["relationships"] == [] and graph["facts"] == []
