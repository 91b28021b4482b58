"""The per-scope BM25 statistics cache (no servers): kept for its time to live, per exact scope, dropped per user."""

from __future__ import annotations

from agentx_memory.sql.search import SearchScope, TurnStatsCache


def test_statistics_are_kept_per_scope_and_dropped_for_the_users_that_changed():
    cache = TurnStatsCache(ttl=60)
    alice = SearchScope(user_id="alice", channels=["work", "_global"])
    cache.put(alice, 120, 14.5)
    cache.put(SearchScope(user_id="bob", channels=["_global"]), 3, 2.0)
    assert cache.get(SearchScope(user_id="alice", channels=["_global", "work"])) == (120, 14.5)  # channel order
    assert cache.get(SearchScope(user_id="alice", channels=["_global"])) is None  # another scope
    assert cache.get(SearchScope(user_id="alice", channels=["work", "_global"], agent_id="a1")) is None
    cache.changed(["alice"])
    assert cache.get(alice) is None
    assert cache.get(SearchScope(user_id="bob", channels=["_global"])) == (3, 2.0)


def test_statistics_expire():
    cache = TurnStatsCache(ttl=0)
    scope = SearchScope(user_id="alice", channels=["_global"])
    cache.put(scope, 1, 1.0)
    assert cache.get(scope) is None
