"""The per-scope BM25 statistics cache (no servers): kept for its time to live, per exact scope, dropped per user."""

from __future__ import annotations

from agentx_memory.sql.search import Bm25, SearchScope, TurnStatsCache


def test_statistics_are_kept_per_scope_and_dropped_for_the_users_that_changed():
    cache = TurnStatsCache(ttl=60)
    alice = SearchScope(user_id="alice", channels=["work", "_global"])
    cache.put(alice, 120, 14.5, 30.0)
    cache.put(SearchScope(user_id="bob", channels=["_global"]), 3, 2.0, 2.0)
    assert cache.get(SearchScope(user_id="alice", channels=["_global", "work"])) == (120, 14.5, 30.0)  # channel order
    assert cache.get(SearchScope(user_id="alice", channels=["_global"])) is None  # another scope
    assert cache.get(SearchScope(user_id="alice", channels=["work", "_global"], agent_id="a1")) is None
    cache.changed(["alice"])
    assert cache.get(alice) is None
    assert cache.get(SearchScope(user_id="bob", channels=["_global"])) == (3, 2.0, 2.0)


def test_statistics_expire():
    cache = TurnStatsCache(ttl=0)
    scope = SearchScope(user_id="alice", channels=["_global"])
    cache.put(scope, 1, 1.0, 1.0)
    assert cache.get(scope) is None


def test_the_mean_length_counts_neighbours_words_at_the_near_weight():
    assert Bm25(near=0.3).average_length(10.0, 30.0) == 16.0
    assert Bm25(near=0.3, near_length=False).average_length(10.0, 30.0) == 10.0
