"""The choice between a tenant's scan and the global vector index (:func:`index_fetch`), and the statements' label."""

import pytest

from agentx_memory.graph import cypher
from agentx_memory.graph.dialects import FalkorDialect, Neo4jDialect
from agentx_memory.graph.port import tenant_label
from agentx_memory.graph.tenant_index import TenantSizes, index_fetch


def test_a_tenant_with_a_large_share_reads_a_fetch_deep_enough_for_its_share():
    # a fifth of 200k facts, 30 wanted: about 300 of the index's nearest keep ~60 of the tenant's
    assert index_fetch(30, 40_000, 200_000) == 300
    # the fetch never goes below k + 20
    assert index_fetch(10, 90_000, 100_000) == 30


@pytest.mark.parametrize(("k", "own", "total"), [
    (30, 1_500, 40_000),   # a small share: the fetch (1,600) costs more than scanning 1,500 nodes
    (30, 40, 40_000),      # a small tenant
    (30, 0, 40_000),       # nothing of its own
    (30, 50, 50),          # the only tenant, but too few nodes to beat a scan
    (0, 1_000, 2_000),
])
def test_the_scan_answers_when_it_costs_less(k, own, total):
    assert index_fetch(k, own, total) is None


def test_the_label_comes_from_the_tenant_match_marker():
    assert tenant_label(cypher.SEARCH_FACTS) == "Fact"
    assert tenant_label(cypher.SEARCH_ENTITIES) == "Entity"
    with pytest.raises(ValueError, match="no @tenant_match"):
        tenant_label(cypher.GET_FACTS)


@pytest.mark.parametrize("dialect", [FalkorDialect(), Neo4jDialect()])
def test_the_index_form_filters_the_global_nearest_by_tenant(dialect):
    rendered = dialect.render(cypher.SEARCH_FACTS, tenant_index=True)
    assert "$fetch" in rendered and "f.user_id = $user_id AND f.channel IN $channels" in rendered
    assert "{user_id: $user_id}" not in dialect.render(cypher.SEARCH_FACTS, tenant_index=True)
    assert "{user_id: $user_id}" in dialect.render(cypher.SEARCH_FACTS)


def test_counts_are_kept_for_their_time_only():
    sizes = TenantSizes(ttl=60)
    sizes.put("Fact", ("u", "_global"), 5)
    sizes.put("Fact", None, 50)
    assert (sizes.get("Fact", ("u", "_global")), sizes.get("Fact", None), sizes.get("Entity", ("u", "_global")),
            sizes.get("Fact", ("u", "_global", "work"))) == (5, 50, None, None)
    assert TenantSizes(ttl=0).get("Fact", ("u",)) is None
    expired = TenantSizes(ttl=0)
    expired.put("Fact", ("u",), 5)
    assert expired.get("Fact", ("u",)) is None
