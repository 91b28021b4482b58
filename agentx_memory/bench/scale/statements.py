"""The write floor's Cypher: shared text for both graph databases, rendered by the dialect of the store in use.

Vectors are written with the ``@vec`` marker (FalkorDB renders ``vecf32(...)``, Neo4j the plain list), so the same
statements run on FalkorDB and Neo4j; rendered by FalkorDB's dialect they are the FalkorDB Cypher the floor ran
before it was shared. ``tests/unit/test_bench_floor_cypher.py`` lints their Neo4j rendering.

What is not Cypher but differs per database is keyed by dialect name in :data:`OWN_GRAPH_PER_NAME` (a candidate for
the graph port: see its comment).
"""

from __future__ import annotations

from typing import Final, LiteralString

from ...models import RELATIONSHIP_TYPES

__all__ = [
    "DELETE_FLOOR_NODES",
    "FLOOR_ABOUT",
    "FLOOR_ENTITIES",
    "FLOOR_FACTS",
    "FLOOR_FOLLOWED_BY",
    "FLOOR_RELATIONSHIPS",
    "FLOOR_TURNS",
    "OWN_GRAPH_PER_NAME",
]

#: Whether a store of each dialect gives every graph name a graph of its own. FalkorDB does (a graph is a key of the
#: server), so the floor writes into a scratch graph and drops it whole. A Neo4j store is one database (Community has
#: no other), so the floor writes beside the engine's rows under prefixed ids (``floors_ingest.FLOOR_ID_PREFIX``)
#: and deletes exactly those rows afterwards. An unknown dialect counts as shared, so the floor never drops a graph
#: it does not own.
#: (For the graph port: a ``GraphStore`` capability such as "named graphs are separate" would replace this.)
OWN_GRAPH_PER_NAME: Final[dict[str, bool]] = {"falkordb": True, "neo4j": False}

FLOOR_TURNS: Final[LiteralString] = """
UNWIND $rows AS row
MERGE (c:Conversation {id: row.conversation_id})
ON CREATE SET c.user_id = row.user_id, c.channel = row.channel, c.started_at = row.timestamp
MERGE (t:Turn {id: row.id})
SET t.user_id = row.user_id, t.channel = row.channel, t.conversation_id = row.conversation_id, t.index = row.index,
    t.timestamp = row.timestamp, t.role = row.role, t.content = row.content, t.token_count = row.token_count,
    t.metadata = row.metadata, t.embedding = @vec(row.embedding)
MERGE (c)-[:HAS_TURN]->(t)
"""

FLOOR_FOLLOWED_BY: Final[LiteralString] = """
UNWIND $pairs AS pair
MATCH (a:Turn {id: pair[0]}), (b:Turn {id: pair[1]})
MERGE (a)-[:FOLLOWED_BY]->(b)
"""

FLOOR_ENTITIES: Final[LiteralString] = """
UNWIND $rows AS row
MERGE (e:Entity {key: row.key})
SET e.id = row.id, e.user_id = row.user_id, e.channel = row.channel, e.type = row.type, e.name = row.name,
    e.normalized_name = row.normalized_name, e.aliases = row.aliases, e.description = row.description,
    e.salience = 0.5, e.access_count = 0, e.first_seen = row.now, e.properties = '{}',
    e.embedding = @vec(row.embedding)
"""

_FLOOR_RELATIONSHIP: Final[LiteralString] = """
UNWIND $rows AS row
MATCH (a:Entity {id: row[0]}), (b:Entity {id: row[1]})
MERGE (a)-[:%s]->(b)
"""
#: One statement per relationship type (a type is a whitelisted name, never input).
FLOOR_RELATIONSHIPS: Final[dict[str, str]] = {rel_type: _FLOOR_RELATIONSHIP % rel_type
                                              for rel_type in RELATIONSHIP_TYPES}

FLOOR_FACTS: Final[LiteralString] = """
UNWIND $rows AS row
MERGE (f:Fact {id: row.id})
SET f.user_id = row.user_id, f.channel = row.channel, f.claim = row.claim, f.confidence = 0.8,
    f.source = 'conversation', f.source_turn_id = row.source_turn_id, f.conversation_id = row.conversation_id,
    f.created_at = row.created_at, f.access_count = 0, f.metadata = '{}', f.superseded = false,
    f.embedding = @vec(row.embedding)
WITH f, row
MATCH (t:Turn {id: row.source_turn_id})
MERGE (f)-[:DERIVED_FROM]->(t)
"""

FLOOR_ABOUT: Final[LiteralString] = """
UNWIND $pairs AS pair
MATCH (f:Fact {id: pair[0]}), (e:Entity {id: pair[1]})
MERGE (f)-[:ABOUT]->(e)
"""

_DELETE_FLOOR_NODES: Final[LiteralString] = """
MATCH (n:%s) WHERE n.id STARTS WITH $prefix
WITH n LIMIT $limit
DETACH DELETE n
RETURN count(*) AS deleted
"""
#: Per label the floor writes: delete up to ``$limit`` of its nodes whose id starts with ``$prefix`` (run until
#: ``deleted`` is 0). Used where the floor shares the engine's database.
DELETE_FLOOR_NODES: Final[dict[str, str]] = {label: _DELETE_FLOOR_NODES % label
                                             for label in ("Fact", "Entity", "Turn", "Conversation")}
