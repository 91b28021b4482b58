"""Every shared Cypher statement, written once for both databases.

Statements are module constants (``LiteralString``), parameterized only: user data always travels as ``$params``.
The ``@vec``, ``@cosine``, ``@vector_search`` and ``@fulltext_search`` markers are expanded by the store's dialect
(:mod:`agentx_memory.graph.port`). Timestamps are integers: **epoch milliseconds (UTC)**, so the same comparison
works on Neo4j and FalkorDB. ``metadata`` and other maps are stored as JSON strings (neither database stores maps as
property values). A statement that overwrites a vector ``REMOVE``s it first: FalkorDB 4.16 sometimes keeps a vector
property's old value when ``SET`` gives it another vector of the same dimension
(``tests/integration/test_vector_overwrite.py``).

A test renders every statement here through the Neo4j dialect and lints it with Neo4j's own Cypher front end, so
add new statements as module constants (names in UPPER_CASE) and they are covered automatically.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Final, LiteralString

from ..errors import EmbeddingDimensionMismatchError
from .port import VECTOR_LABELS

if TYPE_CHECKING:
    from .port import GraphStore

# --- schema bookkeeping -------------------------------------------------------------------------------------------

EMBEDDING_META: Final[LiteralString] = (
    "MERGE (m:AgentxMeta {key: 'embedding'}) "
    "ON CREATE SET m.model = $model, m.dimension = $dimension, m.created_at = $now "
    "RETURN m.model AS model, m.dimension AS dimension"
)

AWAIT_INDEXES: Final[LiteralString] = "CALL db.awaitIndexes(300)"

DELETE_ALL_NODES: Final[LiteralString] = (
    "MATCH (n) CALL (n) { DETACH DELETE n } IN TRANSACTIONS OF 10000 ROWS"
)

SHOW_CONSTRAINT_NAMES: Final[LiteralString] = "SHOW CONSTRAINTS YIELD name RETURN name"

#: The cheapest statement the graph must answer: the REST service's readiness probe.
PING: Final[LiteralString] = "RETURN 1 AS ok"

# Every named schema object (constraints' backing indexes carry the constraint's name), for apply_schema to skip.
SHOW_ALL_INDEX_NAMES: Final[LiteralString] = "SHOW INDEXES YIELD name RETURN name"

# The two token LOOKUP indexes are Neo4j's own (label and relationship-type scans): never dropped.
SHOW_INDEX_NAMES: Final[LiteralString] = (
    "SHOW INDEXES YIELD name, type, owningConstraint WHERE owningConstraint IS NULL AND type <> 'LOOKUP' RETURN name"
)

SHOW_VECTOR_INDEXES: Final[LiteralString] = (
    "SHOW VECTOR INDEXES YIELD name, properties RETURN name, properties"
)

SERVER_VERSION: Final[LiteralString] = (
    "CALL dbms.components() YIELD name, versions WHERE name = 'Neo4j Kernel' RETURN versions[0] AS version"
)


def all_statements() -> dict[str, str]:
    """Every shared statement of this module, by constant name (for the Neo4j lint test)."""
    return {name: value for name, value in globals().items() if name.isupper() and isinstance(value, str)}


async def check_embedding_meta(store: GraphStore, *, dimension: int, model: str) -> None:
    """Record the embedding model and dimension on first use; refuse a store created with different ones."""
    rows = await store.write(
        EMBEDDING_META, {"model": model, "dimension": int(dimension), "now": int(time.time() * 1000)}
    )
    stored_model, stored_dim = rows[0]["model"], rows[0]["dimension"]
    if stored_dim != dimension or stored_model != model:
        raise EmbeddingDimensionMismatchError(
            f"the graph was created with embedding model {stored_model!r} (dimension {stored_dim}); "
            f"configured now: {model!r} (dimension {dimension}). Vectors of different models cannot be compared: "
            "set embedding.model / embedding.dimension back, re-embed the memory (with the old model set: "
            "agentx-memory reembed --model M --dimension D, docs/reembed.md), or use a new graph name / data directory."
        )


def _seen_by_agent(var: LiteralString) -> LiteralString:
    # What the agent $agent_id may read of node `var` (null: the user's view, everything): global nodes and its own.
    # One predicate for every statement an agent's view reads or forgets through.
    return "($agent_id IS NULL OR coalesce(" + var + ".scope, 'global') = 'global' OR " + var + ".agent_id = $agent_id)"


# --- episodic ------------------------------------------------------------------------------------------------------
# Turns are projected from conversation_logs. MERGE by id makes re-projection idempotent. A Conversation is merged on
# (id, user_id): its owner is part of its identity, so a write of another user's conversation id never attaches to it
# (the unique constraint on Conversation.id refuses the second node; the logs refuse it first, see ConversationLog).
# Writing the Conversation node first serializes concurrent writers of one conversation (a write lock on Neo4j;
# FalkorDB runs writes one at a time), and linking both the previous and the next index makes the FOLLOWED_BY chain
# whole whatever order turns arrive in. A turn newer than the conversation's last one takes an archived conversation
# out of the archive (its archived turns stay archived): it goes on, so consolidation and pattern extraction see it
# again, and cleanup archives it again once the new turn is past retention.

PROJECT_TURNS: Final[LiteralString] = """
UNWIND $rows AS row
MERGE (c:Conversation {id: row.conversation_id, user_id: row.user_id})
ON CREATE SET c.channel = row.channel, c.started_at = row.timestamp, c.title = '',
              c.patterns_extracted = false, c.archived = false
SET c.archived = CASE WHEN coalesce(c.last_turn_at, 0) < row.timestamp THEN false ELSE c.archived END
SET c.last_turn_at = CASE WHEN coalesce(c.last_turn_at, 0) < row.timestamp THEN row.timestamp ELSE c.last_turn_at END
MERGE (t:Turn {id: row.id})
REMOVE t.embedding
SET t.user_id = row.user_id, t.channel = row.channel, t.conversation_id = row.conversation_id,
    t.index = row.index, t.timestamp = row.timestamp, t.role = row.role, t.content = row.content,
    t.token_count = row.token_count, t.metadata = row.metadata, t.embedding = @vec(row.embedding),
    t.archived = coalesce(t.archived, false), t.agent_id = row.agent_id, t.scope = row.scope
MERGE (c)-[:HAS_TURN]->(t)
WITH t, row
OPTIONAL MATCH (p:Turn {conversation_id: row.conversation_id, index: row.index - 1})
FOREACH (_ IN CASE WHEN p IS NULL THEN [] ELSE [1] END | MERGE (p)-[:FOLLOWED_BY]->(t))
WITH t, row
OPTIONAL MATCH (n:Turn {conversation_id: row.conversation_id, index: row.index + 1})
FOREACH (_ IN CASE WHEN n IS NULL THEN [] ELSE [1] END | MERGE (t)-[:FOLLOWED_BY]->(n))
RETURN count(t) AS projected
"""

TURN_IDS_OF_USER: Final[LiteralString] = """
MATCH (t:Turn) WHERE t.id IN $ids AND t.user_id = $user_id
RETURN t.id AS id, t.conversation_id AS conversation_id, t.channel AS channel
"""

COUNT_FOLLOWED_BY: Final[LiteralString] = """
MATCH (c:Conversation {id: $conversation_id})-[:HAS_TURN]->(a:Turn)-[:FOLLOWED_BY]->(b:Turn)
WHERE c.user_id = $user_id
RETURN count(*) AS links, sum(CASE WHEN b.index = a.index + 1 THEN 1 ELSE 0 END) AS consecutive
"""

COUNT_USER_TURNS: Final[LiteralString] = """
MATCH (t:Turn {user_id: $user_id}) RETURN count(t) AS turns
"""

COUNT_TURNS: Final[LiteralString] = "MATCH (n:Turn) RETURN count(n) AS n"
COUNT_ENTITIES: Final[LiteralString] = "MATCH (n:Entity) RETURN count(n) AS n"
COUNT_FACTS: Final[LiteralString] = "MATCH (n:Fact) RETURN count(n) AS n"


# --- semantic: entities --------------------------------------------------------------------------------------------
# An entity is merged by its key: a hash of (user, channel, type, normalized name). Aliases are merged as a set.
# Properties (a JSON string) are merged key by key in Python, so the write is optimistic: it applies only if the
# entity's ``version`` is still the one read (GET_ENTITY_BY_KEY), and returns no row otherwise (the caller reads
# again and retries). ``SET e._lock`` first takes the node's write lock on Neo4j, so the version is compared after
# any concurrent writer committed (Neo4j's documented idiom against lost updates; FalkorDB runs writes one at a time).

def _name_keys(var: LiteralString, carry: LiteralString = "") -> LiteralString:
    # The keys an entity is found by its names (RESOLVE_ENTITIES): its user and each of its normalized name and
    # lower-cased aliases, under an index (FalkorDB: a range index over the list; Neo4j: a keyword full-text index).
    # Every statement that writes a name or an alias sets them again, after a WITH (``carry``: the other variables the
    # statement goes on with): FalkorDB reads a property SET earlier in the same query part as it was before. The
    # lookup still filters on user_id, so a user id that holds the separator can only add candidates, never return
    # another user's entity.
    return ("WITH " + var + carry + "\nSET " + var + ".name_keys = [k IN [" + var + ".normalized_name] + "
            "[a IN coalesce(" + var + ".aliases, []) | toLower(a)] WHERE k IS NOT NULL | "
            + var + ".user_id + '|' + k]")


UPSERT_ENTITY: Final[LiteralString] = """
MERGE (e:Entity {key: $key})
ON CREATE SET e.id = $id, e.user_id = $user_id, e.channel = $channel, e.type = $type, e.name = $name,
              e.normalized_name = $normalized_name, e.first_seen = $now, e.access_count = 0, e.aliases = [],
              e.salience = $salience, e.salience_base = $salience, e.description = '', e.properties = '{}',
              e.version = 0
SET e._lock = true
WITH e, coalesce(e.version, 0) = $version AS fresh
SET e._lock = null
WITH e WHERE fresh
REMOVE e.embedding
SET e.aliases = e.aliases + [a IN $aliases WHERE NOT a IN e.aliases],
    e.description = CASE WHEN $description = '' THEN e.description ELSE $description END,
    e.salience = CASE WHEN $salience > e.salience THEN $salience ELSE e.salience END,
    e.salience_base = CASE WHEN $salience > coalesce(e.salience_base, e.salience) THEN $salience
                           ELSE coalesce(e.salience_base, e.salience) END,
    e.properties = $properties,
    e.embedding = @vec($embedding), e.updated_at = $now, e.version = coalesce(e.version, 0) + 1
""" + _name_keys("e") + """
RETURN e {.id, .user_id, .channel, .name, .type, .aliases, .description, .salience, .first_seen, .last_accessed,
          .access_count, .properties} AS entity
"""

# An entity merged into another by dedup leaves an EntityRedirect (id: its key) to the one it was merged into, so an
# upsert of its name and type again lands on the survivor instead of creating the duplicate again. ``key`` is the key
# the upsert must use; ``entity`` is null when none is stored yet.
GET_ENTITY_BY_KEY: Final[LiteralString] = """
OPTIONAL MATCH (:EntityRedirect {id: $key})-[:REDIRECTS_TO]->(t:Entity)
WITH coalesce(t.key, $key) AS key
OPTIONAL MATCH (e:Entity {key: key})
RETURN key, e {.id, .description, .properties, .aliases, .version} AS entity
"""

# --- semantic: batch writes (upsert_entities, learn_facts, create_relationships) -----------------------------------
# The batch statements are the single-item ones over ``UNWIND $rows``: one round trip per chunk of rows. The caller
# collapses duplicate keys inside a batch into one row (what calling the single-item statement in order would leave),
# so no statement ever sees one key twice, and sorts rows by key, so concurrent batches lock nodes in one order.

#: GET_ENTITY_BY_KEY for many keys: ``asked`` is the key asked for, ``key`` the one the upsert must use.
GET_ENTITIES_BY_KEYS: Final[LiteralString] = """
UNWIND $keys AS asked
OPTIONAL MATCH (:EntityRedirect {id: asked})-[:REDIRECTS_TO]->(t:Entity)
WITH asked, coalesce(t.key, asked) AS key
OPTIONAL MATCH (e:Entity {key: key})
RETURN asked, key, e {.id, .description, .properties, .aliases, .version} AS entity
"""

#: UPSERT_ENTITY per row, each row with its own version check: a row whose entity another writer changed since it was
#: read is skipped (no ``key`` comes back for it) and the caller reads it again.
UPSERT_ENTITIES: Final[LiteralString] = """
UNWIND $rows AS row
MERGE (e:Entity {key: row.key})
ON CREATE SET e.id = row.id, e.user_id = row.user_id, e.channel = row.channel, e.type = row.type, e.name = row.name,
              e.normalized_name = row.normalized_name, e.first_seen = $now, e.access_count = 0, e.aliases = [],
              e.salience = row.salience, e.salience_base = row.salience, e.description = '', e.properties = '{}',
              e.version = 0
SET e._lock = true
WITH e, row, coalesce(e.version, 0) = row.version AS fresh
SET e._lock = null
WITH e, row WHERE fresh
REMOVE e.embedding
SET e.aliases = e.aliases + [a IN row.aliases WHERE NOT a IN e.aliases],
    e.description = CASE WHEN row.description = '' THEN e.description ELSE row.description END,
    e.salience = CASE WHEN row.salience > e.salience THEN row.salience ELSE e.salience END,
    e.salience_base = CASE WHEN row.salience > coalesce(e.salience_base, e.salience) THEN row.salience
                           ELSE coalesce(e.salience_base, e.salience) END,
    e.properties = row.properties,
    e.embedding = @vec(row.embedding), e.updated_at = $now, e.version = coalesce(e.version, 0) + 1
""" + _name_keys("e", ", row") + """
RETURN row.key AS key, e {.id, .user_id, .channel, .name, .type, .aliases, .description, .salience, .first_seen,
                          .last_accessed, .access_count, .properties} AS entity
"""

#: Which of these ``[id, user_id]`` pairs are stored entities of that user.
ENTITY_IDS_OF_USERS: Final[LiteralString] = """
UNWIND $pairs AS pair
MATCH (e:Entity {id: pair[0]})
WHERE e.user_id = pair[1]
RETURN e.id AS id, e.user_id AS user_id
"""

#: How many of these distinct ``[id, user_id]`` pairs are stored entities of that user: one row back, so the common
#: case (all of them) costs no more; ENTITY_IDS_OF_USERS then says which are missing.
COUNT_ENTITIES_OF_USERS: Final[LiteralString] = """
UNWIND $pairs AS pair
MATCH (e:Entity {id: pair[0]})
WHERE e.user_id = pair[1]
RETURN count(e) AS n
"""

GET_ENTITIES: Final[LiteralString] = """
MATCH (e:Entity) WHERE e.id IN $ids AND e.user_id = $user_id
RETURN e {.id, .user_id, .channel, .name, .type, .aliases, .description, .salience, .first_seen, .last_accessed,
          .access_count, .properties} AS entity
"""

# One statement per relationship type: the type is chosen from a whitelist in Python, never interpolated.
CREATE_RELATED_TO: Final[LiteralString] = """
MATCH (s:Entity {id: $source_id, user_id: $user_id}), (t:Entity {id: $target_id, user_id: $user_id})
MERGE (s)-[r:RELATED_TO]->(t) ON CREATE SET r.created_at = $now SET r.properties = $properties
RETURN s.id AS source_id, t.id AS target_id
"""
CREATE_PART_OF: Final[LiteralString] = """
MATCH (s:Entity {id: $source_id, user_id: $user_id}), (t:Entity {id: $target_id, user_id: $user_id})
MERGE (s)-[r:PART_OF]->(t) ON CREATE SET r.created_at = $now SET r.properties = $properties
RETURN s.id AS source_id, t.id AS target_id
"""
CREATE_LOCATED_IN: Final[LiteralString] = """
MATCH (s:Entity {id: $source_id, user_id: $user_id}), (t:Entity {id: $target_id, user_id: $user_id})
MERGE (s)-[r:LOCATED_IN]->(t) ON CREATE SET r.created_at = $now SET r.properties = $properties
RETURN s.id AS source_id, t.id AS target_id
"""
CREATE_WORKS_FOR: Final[LiteralString] = """
MATCH (s:Entity {id: $source_id, user_id: $user_id}), (t:Entity {id: $target_id, user_id: $user_id})
MERGE (s)-[r:WORKS_FOR]->(t) ON CREATE SET r.created_at = $now SET r.properties = $properties
RETURN s.id AS source_id, t.id AS target_id
"""
CREATE_KNOWS: Final[LiteralString] = """
MATCH (s:Entity {id: $source_id, user_id: $user_id}), (t:Entity {id: $target_id, user_id: $user_id})
MERGE (s)-[r:KNOWS]->(t) ON CREATE SET r.created_at = $now SET r.properties = $properties
RETURN s.id AS source_id, t.id AS target_id
"""
CREATE_CREATED_BY: Final[LiteralString] = """
MATCH (s:Entity {id: $source_id, user_id: $user_id}), (t:Entity {id: $target_id, user_id: $user_id})
MERGE (s)-[r:CREATED_BY]->(t) ON CREATE SET r.created_at = $now SET r.properties = $properties
RETURN s.id AS source_id, t.id AS target_id
"""
CREATE_REFERENCES: Final[LiteralString] = """
MATCH (s:Entity {id: $source_id, user_id: $user_id}), (t:Entity {id: $target_id, user_id: $user_id})
MERGE (s)-[r:REFERENCES]->(t) ON CREATE SET r.created_at = $now SET r.properties = $properties
RETURN s.id AS source_id, t.id AS target_id
"""

CREATE_RELATIONSHIP: Final[dict[str, LiteralString]] = {
    "RELATED_TO": CREATE_RELATED_TO,
    "PART_OF": CREATE_PART_OF,
    "LOCATED_IN": CREATE_LOCATED_IN,
    "WORKS_FOR": CREATE_WORKS_FOR,
    "KNOWS": CREATE_KNOWS,
    "CREATED_BY": CREATE_CREATED_BY,
    "REFERENCES": CREATE_REFERENCES,
}


#: CREATE_RELATIONSHIP for many ``[source_id, target_id, user_id, rel_type, properties]`` rows of any types in one
#: statement, all or nothing: unless every row finds both its entities (the user's), no row is linked. Each row's type
#: picks one of the per-type MERGEs (a type is still a whitelisted literal here, never interpolated). Returns how many
#: rows were linked (0 or all).
CREATE_RELATIONSHIPS: Final[LiteralString] = """
UNWIND $rows AS row
OPTIONAL MATCH (s:Entity {id: row[0]}) WHERE s.user_id = row[2]
OPTIONAL MATCH (t:Entity {id: row[1]}) WHERE t.user_id = row[2]
WITH collect(CASE WHEN s IS NULL OR t IS NULL THEN null ELSE [s, t, row[3], row[4]] END) AS found, count(*) AS asked
UNWIND CASE WHEN size(found) = asked THEN found ELSE [] END AS edge
WITH edge[0] AS s, edge[1] AS t, edge[2] AS rel_type, edge[3] AS properties
FOREACH (_ IN CASE WHEN rel_type = 'RELATED_TO' THEN [1] ELSE [] END |
  MERGE (s)-[r:RELATED_TO]->(t) ON CREATE SET r.created_at = $now, r.properties = properties
  ON MATCH SET r.properties = properties)
FOREACH (_ IN CASE WHEN rel_type = 'PART_OF' THEN [1] ELSE [] END |
  MERGE (s)-[r:PART_OF]->(t) ON CREATE SET r.created_at = $now, r.properties = properties
  ON MATCH SET r.properties = properties)
FOREACH (_ IN CASE WHEN rel_type = 'LOCATED_IN' THEN [1] ELSE [] END |
  MERGE (s)-[r:LOCATED_IN]->(t) ON CREATE SET r.created_at = $now, r.properties = properties
  ON MATCH SET r.properties = properties)
FOREACH (_ IN CASE WHEN rel_type = 'WORKS_FOR' THEN [1] ELSE [] END |
  MERGE (s)-[r:WORKS_FOR]->(t) ON CREATE SET r.created_at = $now, r.properties = properties
  ON MATCH SET r.properties = properties)
FOREACH (_ IN CASE WHEN rel_type = 'KNOWS' THEN [1] ELSE [] END |
  MERGE (s)-[r:KNOWS]->(t) ON CREATE SET r.created_at = $now, r.properties = properties
  ON MATCH SET r.properties = properties)
FOREACH (_ IN CASE WHEN rel_type = 'CREATED_BY' THEN [1] ELSE [] END |
  MERGE (s)-[r:CREATED_BY]->(t) ON CREATE SET r.created_at = $now, r.properties = properties
  ON MATCH SET r.properties = properties)
FOREACH (_ IN CASE WHEN rel_type = 'REFERENCES' THEN [1] ELSE [] END |
  MERGE (s)-[r:REFERENCES]->(t) ON CREATE SET r.created_at = $now, r.properties = properties
  ON MATCH SET r.properties = properties)
RETURN count(*) AS linked
"""

# Variable-length bounds cannot be parameters in Cypher: one statement per allowed depth. Nearest neighbours first,
# so that the limit drops the farthest ones.
ENTITY_NEIGHBOURS_1: Final[LiteralString] = """
MATCH (e:Entity) WHERE e.id IN $ids AND e.user_id = $user_id
MATCH p = (e)-[:RELATED_TO|PART_OF|LOCATED_IN|WORKS_FOR|KNOWS|CREATED_BY|REFERENCES*1..1]-(n:Entity)
WHERE n.user_id = $user_id AND NOT n.id IN $ids
WITH n.id AS id, min(length(p)) AS hops
RETURN id, hops ORDER BY hops, id LIMIT $limit
"""
ENTITY_NEIGHBOURS_2: Final[LiteralString] = """
MATCH (e:Entity) WHERE e.id IN $ids AND e.user_id = $user_id
MATCH p = (e)-[:RELATED_TO|PART_OF|LOCATED_IN|WORKS_FOR|KNOWS|CREATED_BY|REFERENCES*1..2]-(n:Entity)
WHERE n.user_id = $user_id AND NOT n.id IN $ids
WITH n.id AS id, min(length(p)) AS hops
RETURN id, hops ORDER BY hops, id LIMIT $limit
"""
ENTITY_NEIGHBOURS_3: Final[LiteralString] = """
MATCH (e:Entity) WHERE e.id IN $ids AND e.user_id = $user_id
MATCH p = (e)-[:RELATED_TO|PART_OF|LOCATED_IN|WORKS_FOR|KNOWS|CREATED_BY|REFERENCES*1..3]-(n:Entity)
WHERE n.user_id = $user_id AND NOT n.id IN $ids
WITH n.id AS id, min(length(p)) AS hops
RETURN id, hops ORDER BY hops, id LIMIT $limit
"""
ENTITY_NEIGHBOURS: Final[dict[int, LiteralString]] = {
    1: ENTITY_NEIGHBOURS_1,
    2: ENTITY_NEIGHBOURS_2,
    3: ENTITY_NEIGHBOURS_3,
}

ENTITY_EDGES: Final[LiteralString] = """
MATCH (a:Entity)-[r]->(b:Entity)
WHERE a.id IN $ids AND b.id IN $ids AND a.user_id = $user_id AND b.user_id = $user_id
RETURN a.id AS source_id, type(r) AS rel_type, b.id AS target_id, r.properties AS properties
ORDER BY source_id, rel_type, target_id
LIMIT $limit
"""

# The WITH starts the match at the entities (by their id index) on FalkorDB, whose planner follows the statement: with
# every filter in one MATCH, it started at the user's facts (their user_id index) and traversed all of them, 16 times
# slower for a user with 4k facts. (Neo4j's planner chooses the start from its statistics either way.) Past $limit,
# the facts about the entities asked for ($seeds) are kept before their neighbours', each newest first: a LIMIT on
# the traversal's own order kept an entity's oldest facts. A fact about a seed and a neighbour is a row of each kind
# (the RETURN's grouping merges them, so a few fewer than $limit may come back): grouping first by fact to keep its
# nearest kind cost four times as much on Neo4j for an entity with 5,000 facts (61 against 22 ms).
FACTS_ABOUT: Final[LiteralString] = """
MATCH (e:Entity) @start_at(e, Entity, id) WHERE e.id IN $ids AND e.user_id = $user_id
WITH e
MATCH (f:Fact)-[:ABOUT]->(e)
WITH f, e WHERE f.user_id = $user_id AND coalesce(f.superseded, false) = false
  AND """ + _seen_by_agent("f") + """
WITH DISTINCT f, CASE WHEN e.id IN $seeds THEN 0 ELSE 1 END AS far
ORDER BY far, f.created_at DESC, f.id
LIMIT $limit
OPTIONAL MATCH (f)-[:ABOUT]->(x:Entity)
RETURN f {.id, .user_id, .channel, .agent_id, .scope, .claim, .confidence, .source, .source_turn_id,
          .conversation_id, .temporal, .certainty, .created_at, .last_accessed, .access_count,
          .metadata} AS fact, collect(DISTINCT x.id) AS entity_ids
"""

# --- semantic: facts -----------------------------------------------------------------------------------------------

# Keyed by (id, user_id): an id that is another user's fact makes the MERGE create a second node with that id,
# which the unique constraint on Fact.id refuses (ConflictError), so a fact is never taken over by another user.
# Re-learning a fact (same id) updates its claim, source, temporal and metadata, but it stays in its channel (no row
# comes back when the stored fact is in another one: the caller raises ConflictError, nothing is written), keeps the
# higher of the two confidences (evidence again does not make a fact less certain) and its first source turn and
# conversation (every source turn stays linked by DERIVED_FROM). Its agent and scope are those of its first write: a
# fact one agent keeps private does not become another's, nor global, by being said again.
STORE_FACT: Final[LiteralString] = """
MERGE (f:Fact {id: $id, user_id: $user_id})
ON CREATE SET f.created_at = $created_at, f.access_count = 0, f.channel = $channel, f.confidence = $confidence,
              f.confidence_base = $confidence, f.agent_id = $agent_id, f.scope = $scope
WITH f WHERE f.channel = $channel
REMOVE f.embedding
SET f.claim = $claim, f.slot_key = $slot_key, f.source = $source,
    f.confidence = CASE WHEN f.confidence >= $confidence THEN f.confidence ELSE $confidence END,
    f.confidence_base = CASE WHEN coalesce(f.confidence_base, f.confidence) >= $confidence
                             THEN coalesce(f.confidence_base, f.confidence) ELSE $confidence END,
    f.certainty = coalesce($certainty, f.certainty),
    f.source_turn_id = coalesce(f.source_turn_id, $source_turn_id),
    f.conversation_id = coalesce(f.conversation_id, $conversation_id), f.temporal = $temporal,
    f.metadata = $metadata, f.embedding = @vec($embedding), f.superseded = coalesce(f.superseded, false),
    f.stated_at = CASE WHEN coalesce(f.stated_at, f.created_at) >= $created_at THEN coalesce(f.stated_at, f.created_at)
                       ELSE $created_at END
WITH f
OPTIONAL MATCH (t:Turn {id: $source_turn_id, user_id: $user_id})
FOREACH (_ IN CASE WHEN t IS NULL THEN [] ELSE [1] END | MERGE (f)-[:DERIVED_FROM]->(t))
WITH f
UNWIND (CASE WHEN size($entity_ids) = 0 THEN [null] ELSE $entity_ids END) AS entity_id
OPTIONAL MATCH (e:Entity {id: entity_id, user_id: $user_id})
FOREACH (_ IN CASE WHEN e IS NULL THEN [] ELSE [1] END | MERGE (f)-[:ABOUT]->(e))
RETURN DISTINCT f.id AS id
"""

#: The stored facts with these ids, whoever's (a batch refuses another user's id, or another channel, before it
#: writes anything).
FACTS_BY_IDS: Final[LiteralString] = """
MATCH (f:Fact) WHERE f.id IN $ids
RETURN f.id AS id, f.user_id AS user_id, f.channel AS channel
"""

#: Which of these ``[id, user_id]`` pairs are turns of that user, with their conversation.
TURNS_OF_USERS: Final[LiteralString] = """
UNWIND $pairs AS pair
MATCH (t:Turn {id: pair[0]})
WHERE t.user_id = pair[1]
RETURN t.id AS id, t.user_id AS user_id, t.conversation_id AS conversation_id
"""

#: STORE_FACT per row, returning each fact written as GET_FACT reads it (a row of another channel is skipped). A row
#: stands for every item of the batch with its id, in order: ``confidence`` and
#: ``stated_at`` are their maxima, ``created_at`` the first's, ``certainty`` the last one given, ``source_turn_id`` /
#: ``conversation_id`` the first given, ``turn_ids`` / ``entity_ids`` all of them (each linked), the rest the last's.
STORE_FACTS: Final[LiteralString] = """
UNWIND $rows AS row
MERGE (f:Fact {id: row.id, user_id: row.user_id})
ON CREATE SET f.created_at = row.created_at, f.access_count = 0, f.channel = row.channel, f.confidence = row.confidence,
              f.confidence_base = row.confidence, f.agent_id = row.agent_id, f.scope = row.scope
WITH f, row WHERE f.channel = row.channel
REMOVE f.embedding
SET f.claim = row.claim, f.slot_key = row.slot_key, f.source = row.source,
    f.confidence = CASE WHEN f.confidence >= row.confidence THEN f.confidence ELSE row.confidence END,
    f.confidence_base = CASE WHEN coalesce(f.confidence_base, f.confidence) >= row.confidence
                             THEN coalesce(f.confidence_base, f.confidence) ELSE row.confidence END,
    f.certainty = coalesce(row.certainty, f.certainty),
    f.source_turn_id = coalesce(f.source_turn_id, row.source_turn_id),
    f.conversation_id = coalesce(f.conversation_id, row.conversation_id), f.temporal = row.temporal,
    f.metadata = row.metadata, f.embedding = @vec(row.embedding), f.superseded = coalesce(f.superseded, false),
    f.stated_at = CASE WHEN coalesce(f.stated_at, f.created_at) >= row.stated_at
                       THEN coalesce(f.stated_at, f.created_at) ELSE row.stated_at END
WITH f, row
UNWIND (CASE WHEN size(row.turn_ids) = 0 THEN [null] ELSE row.turn_ids END) AS turn_id
OPTIONAL MATCH (t:Turn {id: turn_id}) WHERE t.user_id = row.user_id
WITH f, row, collect(t) AS turns
FOREACH (t IN turns | MERGE (f)-[:DERIVED_FROM]->(t))
WITH f, row
UNWIND (CASE WHEN size(row.entity_ids) = 0 THEN [null] ELSE row.entity_ids END) AS entity_id
OPTIONAL MATCH (e:Entity {id: entity_id}) WHERE e.user_id = row.user_id
WITH f, collect(e) AS entities
FOREACH (e IN entities | MERGE (f)-[:ABOUT]->(e))
WITH f
OPTIONAL MATCH (f)-[:ABOUT]->(x:Entity)
RETURN f {.id, .user_id, .channel, .agent_id, .scope, .claim, .confidence, .source, .source_turn_id,
          .conversation_id, .temporal, .certainty, .created_at, .last_accessed, .access_count, .metadata, .status,
          .superseded_by} AS fact,
       collect(x.id) AS entity_ids
"""

GET_FACT: Final[LiteralString] = """
MATCH (f:Fact {id: $id, user_id: $user_id})
WHERE """ + _seen_by_agent("f") + """
OPTIONAL MATCH (f)-[:ABOUT]->(e:Entity)
RETURN f {.id, .user_id, .channel, .agent_id, .scope, .claim, .confidence, .source, .source_turn_id,
          .conversation_id, .temporal, .certainty, .created_at, .last_accessed, .access_count, .metadata, .status,
          .superseded_by} AS fact,
       collect(e.id) AS entity_ids
"""

# --- semantic: contradictions --------------------------------------------------------------------------------------
# A fact that is replaced is kept (an as-of read still finds it) and hidden from recall by ``superseded = true``,
# which every recall statement filters on; ``status`` says why (superseded, rejected, review).

def _private_to(var: LiteralString) -> LiteralString:
    # Who the fact ``var`` is private to: its agent when its scope is ``agent``, '' when every agent of the user reads
    # it. A merge or a contradiction hides one fact behind another, so it pairs only facts with the same readers.
    return "coalesce(CASE WHEN " + var + ".scope = 'agent' THEN " + var + ".agent_id END, '')"


#: The user's active facts in these channels of the slot ``$slot_key`` (``fact_slots.slot_key``: the candidates a new
#: fact may contradict), newest first: read through the slot key's index, whatever the number of the user's facts.
SLOT_CANDIDATES: Final[LiteralString] = """
MATCH (f:Fact {slot_key: $slot_key}) @start_at(f, Fact, slot_key)
WHERE f.user_id = $user_id AND f.channel IN $channels AND coalesce(f.superseded, false) = false
  AND NOT f.id IN $exclude AND """ + _private_to("f") + """ = $private_to
RETURN f {.id, .claim, .temporal, .created_at, .status} AS fact
ORDER BY f.created_at DESC, f.id LIMIT $k
"""

#: The user's active facts in these channels created since ``$since`` or ABOUT one of ``$entity_ids``, newest first:
#: what a correction may correct besides its slot (it names the corrected claim, not always in the same words). It
#: reads the user's facts; corrections are the rare facts the extractor marks as one.
CORRECTION_CANDIDATES: Final[LiteralString] = """
MATCH (f:Fact {user_id: $user_id})
WHERE f.channel IN $channels AND coalesce(f.superseded, false) = false AND NOT f.id IN $exclude
  AND """ + _private_to("f") + """ = $private_to
OPTIONAL MATCH (f)-[:ABOUT]->(e:Entity)
WITH f, collect(e.id) AS about
WHERE f.created_at >= $since OR any(x IN about WHERE x IN $entity_ids)
RETURN f {.id, .claim, .temporal, .created_at, .status} AS fact
ORDER BY f.created_at DESC, f.id LIMIT $k
"""

#: Facts written before facts had a slot key (``graph_backfills.backfill_slot_keys``), by id after ``$after``; a fact
#: whose claim has no slot keeps none and is read again by a later pass, never by the same one.
FACTS_WITHOUT_SLOT_KEY: Final[LiteralString] = """
MATCH (f:Fact) WHERE f.id > $after AND f.slot_key IS NULL
RETURN f.id AS id, f.user_id AS user_id, f.claim AS claim ORDER BY f.id LIMIT $limit
"""

#: Each ``$rows`` fact (id) gets its slot key, unless its claim changed since it was read.
SET_SLOT_KEYS: Final[LiteralString] = """
UNWIND $rows AS row
MATCH (f:Fact {id: row.id})
WHERE f.claim = row.claim AND f.slot_key IS NULL
SET f.slot_key = row.slot_key
RETURN count(f) AS updated
"""

#: Whether the backfill ``$key`` finished on this graph (``graph_backfills``), and recording that it did.
BACKFILL_DONE: Final[LiteralString] = "MATCH (m:AgentxMeta {key: $key}) RETURN m.done AS done"
MARK_BACKFILL_DONE: Final[LiteralString] = (
    "MERGE (m:AgentxMeta {key: $key}) SET m.done = true, m.at = $now RETURN m.done AS done")

#: ``$old_id`` is replaced by ``$new_id`` (prefer_new, a correction): hidden from recall, linked, kept.
SUPERSEDE_FACT: Final[LiteralString] = """
MATCH (new:Fact {id: $new_id, user_id: $user_id}), (old:Fact {id: $old_id, user_id: $user_id})
SET old.superseded = true, old.status = $status, old.superseded_by = new.id, old.superseded_at = $now,
    old.valid_until = CASE WHEN $status = 'superseded' AND new.created_at > old.created_at THEN new.created_at
                           ELSE old.created_at END
MERGE (new)-[:SUPERSEDES]->(old)
RETURN old.id AS id
"""

#: The turns the facts ``$ids`` replaced were derived from: per kept fact, the source turn of each fact it SUPERSEDES,
#: directly or down a chain of replacements (superseded under prefer_new or a correction, rejected under prefer_old;
#: a merged duplicate is no replacement).
REPLACED_FACT_SOURCES: Final[LiteralString] = """
MATCH (f:Fact) @start_at(f, Fact, id) WHERE f.id IN $ids AND f.user_id = $user_id
WITH f
MATCH (f)-[:SUPERSEDES*1..5]->(old:Fact)
WHERE old.user_id = $user_id AND old.status IN ['superseded', 'rejected'] AND old.source_turn_id IS NOT NULL
RETURN DISTINCT f.id AS fact_id, old.source_turn_id AS turn_id
"""

#: The user's facts as they stood at ``$at``: said by then and not yet replaced (a superseded fact holds until the
#: fact that replaced it was said; a rejected one never held), optionally only those ABOUT ``$entity_ids``.
FACTS_AS_OF: Final[LiteralString] = """
MATCH (f:Fact {user_id: $user_id})
WHERE f.channel IN $channels AND f.created_at <= $at
  AND (coalesce(f.superseded, false) = false OR f.valid_until > $at)
  AND """ + _seen_by_agent("f") + """
OPTIONAL MATCH (f)-[:ABOUT]->(e:Entity)
WITH f, collect(e.id) AS entity_ids
WHERE size($entity_ids) = 0 OR any(x IN entity_ids WHERE x IN $entity_ids)
RETURN f {.id, .user_id, .channel, .agent_id, .scope, .claim, .confidence, .source, .source_turn_id,
          .conversation_id, .temporal, .certainty, .created_at, .last_accessed, .access_count, .metadata, .status,
          .superseded_by} AS fact,
       entity_ids
ORDER BY f.created_at DESC, f.id LIMIT $limit
"""

#: Both facts kept and visible, marked for review, each naming the other (flag_review).
FLAG_CONFLICT: Final[LiteralString] = """
MATCH (a:Fact {id: $new_id, user_id: $user_id}), (b:Fact {id: $old_id, user_id: $user_id})
SET a.status = 'review', b.status = 'review',
    a.conflicts_with = [x IN coalesce(a.conflicts_with, []) WHERE x <> b.id] + [b.id],
    b.conflicts_with = [x IN coalesce(b.conflicts_with, []) WHERE x <> a.id] + [a.id]
RETURN a.id AS id
"""

#: The user's facts waiting for review, with the ids they conflict with.
FACTS_FOR_REVIEW: Final[LiteralString] = """
MATCH (f:Fact {user_id: $user_id}) WHERE f.status = 'review'
WITH f ORDER BY f.created_at, f.id LIMIT $limit
OPTIONAL MATCH (f)-[:ABOUT]->(e:Entity)
WITH f, collect(e.id) AS entity_ids
RETURN f {.id, .user_id, .channel, .agent_id, .scope, .claim, .confidence, .source, .source_turn_id,
          .conversation_id, .temporal, .certainty, .created_at, .last_accessed, .access_count, .metadata, .status,
          .superseded_by} AS fact,
       entity_ids, coalesce(f.conflicts_with, []) AS conflicts_with
ORDER BY f.created_at, f.id
"""

FACT_CONVERSATION_COUNT: Final[LiteralString] = """
MATCH (f:Fact {id: $id, user_id: $user_id})
OPTIONAL MATCH (f)-[:DERIVED_FROM]->(t:Turn)
WITH f, collect(DISTINCT t.conversation_id) + [x IN [f.conversation_id] WHERE x IS NOT NULL] AS conversations
UNWIND (CASE WHEN size(conversations) = 0 THEN [null] ELSE conversations END) AS conversation
RETURN count(DISTINCT conversation) AS conversations
"""

# A promotion is found again through its PROMOTED_FROM link (never by id alone), and the copy is merged on
# (id, user_id): a fact of another user that holds the copy's id is never linked (the unique constraint refuses it).
# From the source fact by its id (FalkorDB started at the user's global facts when the pattern began with them).
FIND_PROMOTION: Final[LiteralString] = """
MATCH (src:Fact {id: $source_id}) @start_at(src, Fact, id) WHERE src.user_id = $user_id
WITH src
MATCH (g:Fact)-[:PROMOTED_FROM]->(src)
WHERE g.user_id = $user_id AND g.channel = '_global'
RETURN g.id AS id ORDER BY g.created_at, g.id LIMIT 1
"""

PROMOTE_FACT: Final[LiteralString] = """
MATCH (src:Fact {id: $source_id, user_id: $user_id})
MERGE (g:Fact {id: $global_id, user_id: $user_id})
ON CREATE SET g.channel = '_global', g.claim = src.claim, g.slot_key = src.slot_key, g.confidence = src.confidence,
              g.agent_id = src.agent_id, g.scope = src.scope,
              g.source = 'promotion', g.source_turn_id = src.source_turn_id, g.conversation_id = src.conversation_id,
              g.temporal = src.temporal, g.metadata = src.metadata, g.embedding = src.embedding,
              g.created_at = $now, g.access_count = 0, g.superseded = false, g.promotion_reason = $reason
MERGE (g)-[:PROMOTED_FROM]->(src)
WITH g, src
OPTIONAL MATCH (src)-[:ABOUT]->(e:Entity)
FOREACH (_ IN CASE WHEN e IS NULL THEN [] ELSE [1] END | MERGE (g)-[:ABOUT]->(e))
WITH DISTINCT g, src
OPTIONAL MATCH (src)-[:DERIVED_FROM]->(t:Turn)
FOREACH (_ IN CASE WHEN t IS NULL THEN [] ELSE [1] END | MERGE (g)-[:DERIVED_FROM]->(t))
RETURN DISTINCT g.id AS id
"""

# Project-channel facts that meet every promotion threshold and were never promoted (spec 003 "Promotion
# Thresholds"): confidence, accesses, and distinct conversations they come from (DERIVED_FROM turns + their own).
# The global copy keeps the source's agent and scope (PROMOTE_FACT): an agent's private fact moves to the global
# channel still private to that agent.
PROMOTION_CANDIDATES: Final[LiteralString] = """
MATCH (f:Fact)
WHERE f.channel <> '_global' AND coalesce(f.superseded, false) = false
  AND f.confidence >= $min_confidence AND coalesce(f.access_count, 0) >= $min_access_count
  AND ($user_id IS NULL OR f.user_id = $user_id)
OPTIONAL MATCH (g:Fact)-[:PROMOTED_FROM]->(f)
WITH f, count(g) AS promoted
WHERE promoted = 0
OPTIONAL MATCH (f)-[:DERIVED_FROM]->(t:Turn)
WITH f, collect(DISTINCT t.conversation_id) + [x IN [f.conversation_id] WHERE x IS NOT NULL] AS conversations
UNWIND (CASE WHEN size(conversations) = 0 THEN [null] ELSE conversations END) AS conversation
WITH f, count(DISTINCT conversation) AS seen
WHERE seen >= $min_conversations
RETURN f.id AS id, f.user_id AS user_id, f.confidence AS confidence, coalesce(f.access_count, 0) AS accesses, seen
ORDER BY f.id LIMIT $limit
"""

# Undo of a promotion: the global copy goes (with its edges), found through its PROMOTED_FROM link to the source.
UNPROMOTE_FACT: Final[LiteralString] = """
MATCH (g:Fact {id: $global_id, user_id: $user_id})-[:PROMOTED_FROM]->(:Fact {id: $source_id, user_id: $user_id})
WHERE g.channel = '_global'
DETACH DELETE g
RETURN count(*) AS deleted
"""

#: A fact the short-term tier promoted, deleted with its edges by the promoting run's undo, only while it still holds
#: what that run wrote (its metadata names the run) and nothing superseded it.
UNPROMOTE_SHORT_TERM_FACT: Final[LiteralString] = """
MATCH (f:Fact {id: $id, user_id: $user_id})
WHERE f.metadata = $metadata AND coalesce(f.superseded, false) = false
DETACH DELETE f
RETURN count(*) AS deleted
"""

# Retention of facts: an active fact neither stated again nor accessed since ``$before`` expires: hidden from recall
# like a superseded fact (status 'expired'), valid until ``$now`` for as-of reads; undo puts back what it was.
EXPIRING_FACTS: Final[LiteralString] = """
MATCH (f:Fact)
WHERE f.id > $after AND coalesce(f.superseded, false) = false AND ($user_id IS NULL OR f.user_id = $user_id)
  AND coalesce(f.last_accessed, 0) < $before AND coalesce(f.stated_at, f.created_at) < $before
RETURN f.id AS id, f.user_id AS user_id, f.channel AS channel,
       f {.superseded, .status, .valid_until, .superseded_at} AS before
ORDER BY f.id LIMIT $limit
"""

EXPIRE_FACTS: Final[LiteralString] = """
UNWIND $ids AS fact_id
MATCH (f:Fact {id: fact_id})
WHERE coalesce(f.superseded, false) = false AND coalesce(f.last_accessed, 0) < $before
  AND coalesce(f.stated_at, f.created_at) < $before
SET f.superseded = true, f.status = 'expired', f.valid_until = $now, f.superseded_at = $now
RETURN f.id AS id
"""

RESTORE_EXPIRED_FACTS: Final[LiteralString] = """
UNWIND $rows AS row
MATCH (f:Fact {id: row.id})
WHERE f.status = 'expired'
SET f += row.before
RETURN count(f) AS restored
"""

# Context-rot archival (seed 002): a stale fact leaves recall like a superseded fact (status 'archived'; its status
# before is kept in ``status_before_archive``), a stale entity gets ``archived`` (vector and entity-centric recall skip
# it). The write checks again that the memory was not used since it was read (``since``), so a memory used in between
# stays. Undo (or unarchive) puts each back.
ROT_FACTS: Final[LiteralString] = """
UNWIND $ids AS fact_id
MATCH (f:Fact {id: fact_id})
WHERE coalesce(f.superseded, false) = false
RETURN f.id AS id, f.user_id AS user_id, f.channel AS channel, coalesce(f.last_accessed, f.created_at) AS since,
       coalesce(f.access_count, 0) AS accesses, f.confidence AS salience
"""

ROT_ENTITIES: Final[LiteralString] = """
UNWIND $ids AS entity_id
MATCH (e:Entity {id: entity_id})
WHERE coalesce(e.archived, false) = false
RETURN e.id AS id, e.user_id AS user_id, e.channel AS channel, coalesce(e.last_accessed, e.first_seen) AS since,
       coalesce(e.access_count, 0) AS accesses, e.salience AS salience
"""

ARCHIVE_FACTS: Final[LiteralString] = """
UNWIND $rows AS row
MATCH (f:Fact {id: row.id, user_id: row.user_id})
WHERE coalesce(f.superseded, false) = false AND coalesce(f.last_accessed, f.created_at) = row.since
SET f.status_before_archive = f.status
SET f.superseded = true, f.status = 'archived', f.superseded_at = $now, f.archived_at = $now
RETURN f.id AS id
"""

ARCHIVE_ENTITIES: Final[LiteralString] = """
UNWIND $rows AS row
MATCH (e:Entity {id: row.id, user_id: row.user_id})
WHERE coalesce(e.archived, false) = false AND coalesce(e.last_accessed, e.first_seen) = row.since
SET e.archived = true, e.archived_at = $now
RETURN e.id AS id
"""

UNARCHIVE_FACTS: Final[LiteralString] = """
UNWIND $ids AS fact_id
MATCH (f:Fact {id: fact_id, user_id: $user_id})
WHERE f.status = 'archived'
SET f.superseded = false, f.status = f.status_before_archive, f.superseded_at = null, f.archived_at = null,
    f.status_before_archive = null
RETURN f.id AS id
"""

UNARCHIVE_ENTITIES: Final[LiteralString] = """
UNWIND $ids AS entity_id
MATCH (e:Entity {id: entity_id, user_id: $user_id})
WHERE e.archived = true
SET e.archived = false, e.archived_at = null
RETURN e.id AS id
"""

# --- decay ---------------------------------------------------------------------------------------------------------
# The decay job reads a page of candidates (keyset by id) and writes the values it computed: value = base *
# rate ** days since the last access. ``salience_base`` / ``confidence_base`` are what was written (the highest);
# ``salience`` / ``confidence`` the decayed values recall reads.

DECAY_ENTITY_CANDIDATES: Final[LiteralString] = """
MATCH (e:Entity)
WHERE e.id > $after AND coalesce(e.last_accessed, e.first_seen) <= $idle_before
  AND ($user_id IS NULL OR e.user_id = $user_id)
RETURN e.id AS id, e.user_id AS user_id, coalesce(e.salience_base, e.salience) AS base, e.salience AS current,
       coalesce(e.last_accessed, e.first_seen) AS since, coalesce(e.access_count, 0) AS accesses
ORDER BY e.id LIMIT $limit
"""

SET_SALIENCE: Final[LiteralString] = """
UNWIND $rows AS row
MATCH (e:Entity {id: row.id})
SET e.salience = row.value, e.decayed_at = $now
RETURN count(e) AS updated
"""

DECAY_FACT_CANDIDATES: Final[LiteralString] = """
MATCH (f:Fact)
WHERE f.id > $after AND f.certainty = 'inferred' AND coalesce(f.superseded, false) = false
  AND ($user_id IS NULL OR f.user_id = $user_id)
RETURN f.id AS id, f.user_id AS user_id, coalesce(f.confidence_base, f.confidence) AS base, f.confidence AS current,
       coalesce(f.last_accessed, f.created_at) AS since
ORDER BY f.id LIMIT $limit
"""

SET_CONFIDENCE: Final[LiteralString] = """
UNWIND $rows AS row
MATCH (f:Fact {id: row.id})
SET f.confidence = row.value, f.decayed_at = $now
RETURN count(f) AS updated
"""

# Undo of a decay run: each value goes back to what it was before the run, unless it changed again since (the
# value is no longer the one the run wrote).
RESTORE_SALIENCE: Final[LiteralString] = """
UNWIND $rows AS row
MATCH (e:Entity {id: row.id})
WHERE e.salience = row.after
SET e.salience = row.before
RETURN count(e) AS restored
"""

RESTORE_CONFIDENCE: Final[LiteralString] = """
UNWIND $rows AS row
MATCH (f:Fact {id: row.id})
WHERE f.confidence = row.after
SET f.confidence = row.before
RETURN count(f) AS restored
"""

# --- cleanup -------------------------------------------------------------------------------------------------------
# Entities that faded (salience below the bound) and were not accessed since ``$before``: read with their edges (the
# audit entry records what is deleted), then deleted with the same condition re-checked, so an entity used in between
# stays.

IDLE_ENTITIES: Final[LiteralString] = """
MATCH (e:Entity)
WHERE e.id > $after AND e.salience < $min_salience AND coalesce(e.last_accessed, e.first_seen) <= $before
  AND ($user_id IS NULL OR e.user_id = $user_id)
OPTIONAL MATCH (e)-[out]->(x)
WITH e, collect(CASE WHEN x IS NULL THEN null ELSE {type: type(out), to: x.id} END) AS outgoing
OPTIONAL MATCH (y)-[inc]->(e)
WITH e, outgoing, collect(CASE WHEN y IS NULL THEN null ELSE {type: type(inc), from: y.id} END) AS incoming
RETURN e {.id, .user_id, .channel, .name, .type, .aliases, .description, .salience, .first_seen, .last_accessed,
          .access_count, .properties} AS entity, outgoing, incoming
ORDER BY e.id LIMIT $limit
"""

DELETE_IDLE_ENTITY: Final[LiteralString] = """
MATCH (e:Entity {id: $id, user_id: $user_id})
WHERE e.salience < $min_salience AND coalesce(e.last_accessed, e.first_seen) <= $before
DETACH DELETE e
RETURN count(*) AS deleted
"""

def _reinforce(label: LiteralString) -> LiteralString:
    # Add access counts (rows of ``reinforcement.AccessCounts``) to the label's nodes, each only where it is the
    # row's user's; the latest access time wins.
    return f"""
UNWIND $rows AS row
MATCH (n:{label} {{id: row.id}})
WHERE n.user_id = row.user_id
SET n.access_count = coalesce(n.access_count, 0) + row.count,
    n.last_accessed = CASE WHEN coalesce(n.last_accessed, 0) > row.last THEN n.last_accessed ELSE row.last END
RETURN count(n) AS reinforced
"""


#: Add access counts (rows of ``reinforcement.AccessCounts``) to facts, each only where it is the row's user's; the
#: latest access time wins.
REINFORCE_FACTS: Final[LiteralString] = _reinforce("Fact")

#: The same for entities.
REINFORCE_ENTITIES: Final[LiteralString] = _reinforce("Entity")


# --- procedural ----------------------------------------------------------------------------------------------------

CONVERSATION_OWNER: Final[LiteralString] = """
MATCH (c:Conversation {id: $id}) RETURN c.user_id AS user_id
"""

# A Tool node is shared by every user and carries its name only: usage counters on it would mix tenants, so per-user
# statistics come from the user's own rows (tool_invocations, get_tool_stats) and ToolInvocation nodes.
RECORD_INVOCATION: Final[LiteralString] = """
MERGE (c:Conversation {id: $conversation_id, user_id: $user_id})
ON CREATE SET c.channel = $channel, c.started_at = $timestamp, c.title = '',
              c.patterns_extracted = false, c.archived = false
MERGE (tool:Tool {name: $tool_name})
MERGE (ti:ToolInvocation {id: $id})
ON CREATE SET ti.user_id = $user_id, ti.channel = $channel, ti.conversation_id = $conversation_id,
              ti.turn_id = $turn_id, ti.tool_name = $tool_name, ti.task_type = $task_type, ti.success = $success,
              ti.latency_ms = $latency_ms, ti.timestamp = $timestamp
MERGE (c)-[:USED_TOOL]->(ti)
MERGE (ti)-[:INVOKED]->(tool)
RETURN ti.id AS id
"""

# Learning a strategy again: an empty context pattern, tool sequence, step list or trigger list (or a null task type)
# means "not given" and keeps the stored one (and the vector made with the stored pattern and triggers); a new tool
# sequence replaces the old one, USES_TOOL edges included.
UPSERT_STRATEGY: Final[LiteralString] = """
MERGE (s:Strategy {key: $key})
ON CREATE SET s.id = $id, s.user_id = $user_id, s.channel = $channel, s.description = $description,
              s.created_at = $now, s.success_count = 0, s.failure_count = 0, s.context_pattern = '',
              s.tool_sequence = []
WITH s, s.embedding AS kept
REMOVE s.embedding
SET s.embedding = CASE WHEN $context_pattern = '' AND size($trigger_conditions) = 0 AND kept IS NOT NULL
                       THEN kept ELSE @vec($embedding) END,
    s.context_pattern = CASE WHEN $context_pattern = '' THEN s.context_pattern ELSE $context_pattern END,
    s.tool_sequence = CASE WHEN size($tool_sequence) = 0 THEN s.tool_sequence ELSE $tool_sequence END,
    s.steps = CASE WHEN size($steps) = 0 THEN coalesce(s.steps, []) ELSE $steps END,
    s.trigger_conditions = CASE WHEN size($trigger_conditions) = 0 THEN coalesce(s.trigger_conditions, [])
                                ELSE $trigger_conditions END,
    s.task_type = CASE WHEN $task_type IS NULL THEN s.task_type ELSE $task_type END,
    s.last_used = $now,
    s.success_count = s.success_count + CASE WHEN $success THEN 1 ELSE 0 END,
    s.failure_count = s.failure_count + CASE WHEN $success THEN 0 ELSE 1 END
WITH s
OPTIONAL MATCH (s)-[old:USES_TOOL]->(gone:Tool)
WHERE size($tool_sequence) > 0 AND NOT gone.name IN $tool_sequence
WITH s, collect(old) AS stale
FOREACH (r IN stale | DELETE r)
WITH s
UNWIND (CASE WHEN size($tool_sequence) = 0 THEN [null] ELSE $tool_sequence END) AS tool_name
FOREACH (_ IN CASE WHEN tool_name IS NULL THEN [] ELSE [1] END |
    MERGE (t:Tool {name: tool_name})
    MERGE (s)-[:USES_TOOL]->(t))
WITH DISTINCT s
OPTIONAL MATCH (c:Conversation {id: $conversation_id, user_id: $user_id})
FOREACH (_ IN CASE WHEN c IS NULL OR NOT $success THEN [] ELSE [1] END | MERGE (s)-[:SUCCEEDED_IN]->(c))
RETURN s {.id, .user_id, .channel, .description, .context_pattern, .tool_sequence, .success_count, .failure_count,
          .created_at, .last_used, .steps, .trigger_conditions, .task_type} AS strategy
"""

GET_STRATEGY: Final[LiteralString] = """
MATCH (s:Strategy {id: $id, user_id: $user_id})
RETURN s {.id, .user_id, .channel, .description, .context_pattern, .tool_sequence, .success_count, .failure_count,
          .created_at, .last_used, .steps, .trigger_conditions, .task_type} AS strategy
"""

REINFORCE_STRATEGY: Final[LiteralString] = """
MATCH (s:Strategy {id: $id, user_id: $user_id})
SET s.success_count = s.success_count + CASE WHEN $success THEN 1 ELSE 0 END,
    s.failure_count = s.failure_count + CASE WHEN $success THEN 0 ELSE 1 END,
    s.last_used = $now
RETURN s {.id, .user_id, .channel, .description, .context_pattern, .tool_sequence, .success_count, .failure_count,
          .created_at, .last_used, .steps, .trigger_conditions, .task_type} AS strategy
"""

# Exact cosine over the user's own nodes (tenant-correct: the user filter is applied before ranking); a non-null
# $task_type keeps the strategies of that task type (a strategy stored without one is found only when none is asked).
SEARCH_STRATEGIES: Final[LiteralString] = """
WITH @vec($embedding) AS query_vector
@tenant_match(Strategy, s, query_vector)
WITH s, query_vector WHERE s.embedding IS NOT NULL AND ($task_type IS NULL OR s.task_type = $task_type)
WITH s, @cosine(s.embedding, query_vector) AS similarity
WHERE similarity IS NOT NULL AND similarity = similarity
WITH s, similarity ORDER BY similarity DESC, s.id LIMIT $k
RETURN s {.id, .user_id, .channel, .description, .context_pattern, .tool_sequence, .success_count, .failure_count,
          .created_at, .last_used, .steps, .trigger_conditions, .task_type} AS strategy, similarity
"""

# --- goals ---------------------------------------------------------------------------------------------------------

# Keyed by (id, user_id) like facts: another user's goal id violates the unique constraint on Goal.id (ConflictError).
ADD_GOAL: Final[LiteralString] = """
MERGE (u:User {id: $user_id})
MERGE (g:Goal {id: $id, user_id: $user_id})
ON CREATE SET g.created_at = $created_at, g.channel = $channel
WITH u, g WHERE g.channel = $channel
REMOVE g.embedding
SET g.description = $description, g.status = $status,
    g.priority = $priority, g.deadline = $deadline, g.metadata = $metadata, g.embedding = @vec($embedding)
MERGE (u)-[:HAS_GOAL]->(g)
WITH g
OPTIONAL MATCH (p:Goal {id: $parent_id, user_id: $user_id})
FOREACH (_ IN CASE WHEN p IS NULL THEN [] ELSE [1] END | MERGE (g)-[:SUBGOAL_OF]->(p))
WITH g
UNWIND (CASE WHEN size($blocked_by) = 0 THEN [null] ELSE $blocked_by END) AS blocker_id
OPTIONAL MATCH (b:Goal {id: blocker_id, user_id: $user_id})
FOREACH (_ IN CASE WHEN b IS NULL THEN [] ELSE [1] END | MERGE (g)-[:BLOCKED_BY]->(b))
RETURN DISTINCT g.id AS id
"""

GOAL_IDS_OF_USER: Final[LiteralString] = """
MATCH (g:Goal) WHERE g.id IN $ids AND g.user_id = $user_id RETURN g.id AS id
"""

GET_GOALS: Final[LiteralString] = """
MATCH (g:Goal) WHERE g.id IN $ids AND g.user_id = $user_id
OPTIONAL MATCH (g)-[:SUBGOAL_OF]->(p:Goal)
OPTIONAL MATCH (g)-[:BLOCKED_BY]->(b:Goal)
RETURN g {.id, .user_id, .channel, .description, .status, .priority, .created_at, .completed_at, .result,
          .deadline, .metadata} AS goal, p.id AS parent_id, collect(b.id) AS blocked_by
"""

LIST_GOALS: Final[LiteralString] = """
MATCH (g:Goal {user_id: $user_id})
WHERE g.channel IN $channels AND ($status IS NULL OR g.status = $status)
WITH g ORDER BY g.priority DESC, g.created_at ASC LIMIT $limit
OPTIONAL MATCH (g)-[:SUBGOAL_OF]->(p:Goal)
OPTIONAL MATCH (g)-[:BLOCKED_BY]->(b:Goal)
RETURN g {.id, .user_id, .channel, .description, .status, .priority, .created_at, .completed_at, .result,
          .deadline, .metadata} AS goal, p.id AS parent_id, collect(b.id) AS blocked_by
"""

COMPLETE_GOAL: Final[LiteralString] = """
MATCH (g:Goal {id: $id, user_id: $user_id})
SET g.status = $status, g.result = $result, g.completed_at = $completed_at
RETURN g.id AS id
"""

BLOCK_GOAL: Final[LiteralString] = """
MATCH (g:Goal {id: $id, user_id: $user_id}), (b:Goal {id: $blocker_id, user_id: $user_id})
MERGE (g)-[:BLOCKED_BY]->(b)
RETURN g.id AS id
"""


# --- retrieval -----------------------------------------------------------------------------------------------------
# Vector searches take their candidates from @tenant_match -- the user's own nodes through the user_id index (an
# exact scan), the user's among the global vector index's nearest (for a user with a large share of the label), or on
# Neo4j 2026.06+ the nearest of them from a vector index filtered by user and channel inside the index -- and rank
# them by exact cosine. Run them with GraphStore.read_vectors: it falls back to the scan whenever other tenants
# crowded the index's candidates, so they can never push a user's results out. A node without a
# vector, or one whose similarity is null or NaN (``x = x`` is false only for NaN), is never ranked: Neo4j sorts
# null first under DESC. Ties are broken by id, so both databases return the same ranking.

#: How many nodes a vector label has (:meth:`GraphStore.read_vectors` weighs a tenant's share of its index), by label.
COUNT_LABEL_NODES: Final[dict[str, LiteralString]] = {
    label: "MATCH (n:" + label + ") RETURN count(n) AS n" for label in VECTOR_LABELS}

#: How many nodes of a vector label ``$user_id`` has in ``$channels`` (through the user_id index), by label: the
#: tenant's share of the index is of the nodes a search keeps.
COUNT_TENANT_NODES: Final[dict[str, LiteralString]] = {
    label: "MATCH (n:" + label + " {user_id: $user_id}) WHERE n.channel IN $channels RETURN count(n) AS n"
    for label in VECTOR_LABELS}

#: How many live nodes a vector label's index returns among the ``$k`` entries nearest ``$embedding``, by label: on a
#: database whose index keeps dead vectors (FalkorDB), the share it returns is the live share of what it holds.
INDEX_PROBE: Final[dict[str, LiteralString]] = {
    label: "@vector_search(" + label + ", $k, $embedding) RETURN count(node) AS n" for label in VECTOR_LABELS}

#: The user's ``$k`` kept facts nearest ``$embedding`` in the window, best first, each with the ids of the entities
#: it is ABOUT (read for the ``$k`` only).
SEARCH_FACTS: Final[LiteralString] = """
WITH @vec($embedding) AS query_vector
@tenant_match(Fact, f, query_vector)
WITH f, query_vector
WHERE coalesce(f.superseded, false) = false AND f.embedding IS NOT NULL
  AND """ + _seen_by_agent("f") + """
  AND ($start IS NULL OR f.created_at >= $start) AND ($end IS NULL OR f.created_at < $end)
WITH f, @cosine(f.embedding, query_vector) AS similarity
WHERE similarity IS NOT NULL AND similarity = similarity
WITH f, similarity ORDER BY similarity DESC, f.id LIMIT $k
OPTIONAL MATCH (f)-[:ABOUT]->(x:Entity)
WITH f, similarity, collect(x.id) AS entity_ids
ORDER BY similarity DESC, f.id
RETURN f {.id, .user_id, .channel, .agent_id, .scope, .claim, .confidence, .source, .source_turn_id,
          .conversation_id, .temporal, .certainty, .created_at, .last_accessed, .access_count,
          .metadata} AS fact, similarity, entity_ids
"""

SEARCH_ENTITIES: Final[LiteralString] = """
WITH @vec($embedding) AS query_vector
@tenant_match(Entity, e, query_vector)
WITH e, query_vector WHERE e.embedding IS NOT NULL AND coalesce(e.archived, false) = false
WITH e, @cosine(e.embedding, query_vector) AS similarity
WHERE similarity IS NOT NULL AND similarity = similarity
WITH e, similarity ORDER BY similarity DESC, e.id LIMIT $k
RETURN e {.id, .user_id, .channel, .name, .type, .aliases, .description, .salience, .first_seen, .last_accessed,
          .access_count, .properties} AS entity, similarity
"""

# Consolidation: conversations whose last turn is older than the quiet time and newer than what was consolidated
# (``consolidated_upto``, the last turn's time when it was last consolidated), fewest failed runs first, then oldest;
# every user's.
PENDING_CONSOLIDATION: Final[LiteralString] = """
MATCH (c:Conversation)
WHERE c.last_turn_at <= $before AND coalesce(c.consolidated_upto, -1) < c.last_turn_at
  AND coalesce(c.archived, false) = false AND ($user_id IS NULL OR c.user_id = $user_id)
RETURN c.id AS id, c.user_id AS user_id, c.channel AS channel, c.last_turn_at AS last_turn_at
ORDER BY coalesce(c.consolidation_failures, 0), c.last_turn_at, c.id LIMIT $limit
"""

# Archiving (cleanup) and its undo: a conversation and its turns up to a time (ms) get ``archived``.
SET_CONVERSATIONS_ARCHIVED: Final[LiteralString] = """
UNWIND $rows AS row
MATCH (c:Conversation {id: row.conversation_id, user_id: row.user_id})
SET c.archived = $archived
WITH c, row
MATCH (c)-[:HAS_TURN]->(t:Turn)
WHERE t.timestamp <= row.upto
SET t.archived = $archived
RETURN count(t) AS turns
"""

# Pattern detection: conversations with tool calls whose last call is older than ``$before`` and whose patterns were
# not learned yet, with their calls in order; every user's or one user's.
PATTERN_CANDIDATES: Final[LiteralString] = """
MATCH (c:Conversation)-[:USED_TOOL]->(ti:ToolInvocation)
WHERE coalesce(c.patterns_extracted, false) = false AND coalesce(c.archived, false) = false
  AND ($user_id IS NULL OR c.user_id = $user_id)
WITH c, ti ORDER BY ti.timestamp, ti.id
WITH c, collect({tool: ti.tool_name, success: ti.success, task_type: ti.task_type}) AS calls,
     max(ti.timestamp) AS last_call
WHERE last_call <= $before
RETURN c.id AS id, c.user_id AS user_id, c.channel AS channel, calls, last_call
ORDER BY last_call, id LIMIT $limit
"""

PATTERNS_STATE: Final[LiteralString] = """
MATCH (c:Conversation {id: $conversation_id, user_id: $user_id})
RETURN coalesce(c.patterns_extracted, false) AS done
"""

MARK_PATTERNS_EXTRACTED: Final[LiteralString] = """
MATCH (c:Conversation {id: $conversation_id, user_id: $user_id})
SET c.patterns_extracted = true, c.patterns_at = $now
RETURN c.id AS id
"""

#: Read again under the conversation's lock: another worker may have consolidated it since the list was read.
CONSOLIDATION_STATE: Final[LiteralString] = """
MATCH (c:Conversation {id: $conversation_id, user_id: $user_id})
RETURN c.last_turn_at AS last_turn_at, coalesce(c.consolidated_upto, -1) AS upto
"""

MARK_CONSOLIDATED: Final[LiteralString] = """
MATCH (c:Conversation {id: $conversation_id, user_id: $user_id})
SET c.consolidated = true, c.consolidated_at = $now, c.consolidation_failures = 0,
    c.consolidated_upto = CASE WHEN coalesce(c.consolidated_upto, -1) < $upto THEN $upto ELSE c.consolidated_upto END
RETURN c.id AS id
"""

#: A consolidation of the conversation stopped early (budget, LLM failure): one more failure, and when; the count
#: puts it behind the conversations that have not failed (``PENDING_CONSOLIDATION``).
MARK_CONSOLIDATION_FAILED: Final[LiteralString] = """
MATCH (c:Conversation {id: $conversation_id, user_id: $user_id})
SET c.consolidation_failures = coalesce(c.consolidation_failures, 0) + 1, c.consolidation_failed_at = $now
RETURN c.consolidation_failures AS failures
"""

# The idempotency keys of the turn batches already extracted from a conversation (extraction skips them: a re-run
# neither pays for a call nor writes anything twice); a key names the extractor, the prompt and the turns' contents.
EXTRACTED_BATCHES: Final[LiteralString] = """
MATCH (c:Conversation {id: $conversation_id, user_id: $user_id})
RETURN coalesce(c.extracted_batches, []) AS keys
"""

MARK_BATCH_EXTRACTED: Final[LiteralString] = """
MATCH (c:Conversation {id: $conversation_id, user_id: $user_id})
SET c.extracted_batches = [k IN coalesce(c.extracted_batches, []) WHERE k <> $key] + [$key], c.extracted_at = $now
RETURN c.id AS id
"""

# (:Conversation)-[:MENTIONS]->(:Entity), written by extraction; both must be the user's (MERGE: idempotent).
LINK_MENTIONS: Final[LiteralString] = """
MATCH (c:Conversation {id: $conversation_id, user_id: $user_id})
UNWIND $entity_ids AS entity_id
MATCH (e:Entity {id: entity_id, user_id: $user_id})
MERGE (c)-[:MENTIONS]->(e)
RETURN count(e) AS linked
"""

#: Up to ``$limit`` entities written before entities had name keys, given them.
FILL_NAME_KEYS: Final[LiteralString] = """
MATCH (e:Entity) WHERE e.name_keys IS NULL
WITH e LIMIT $limit
""" + _name_keys("e") + """
RETURN count(e) AS updated
"""

#: The user's entities with one of ``$names`` (normalized) as their normalized name or a lower-cased alias, read
#: through their name keys' index (``_name_keys``), not by scanning the user's entities.
RESOLVE_ENTITIES: Final[LiteralString] = """
@entities_named(e, [n IN $names | $user_id + '|' + n])
WITH e WHERE e.user_id = $user_id AND e.channel IN $channels AND coalesce(e.archived, false) = false
RETURN e {.id, .user_id, .channel, .name, .type, .aliases, .description, .salience, .first_seen, .last_accessed,
          .access_count, .properties} AS entity
LIMIT $k
"""

#: The user's kept facts ``$ids`` that are visible in ``$channels`` (to ``$agent_id``), each with the ids of the
#: entities it is ABOUT.
GET_FACTS: Final[LiteralString] = """
MATCH (f:Fact) WHERE f.id IN $ids AND f.user_id = $user_id AND f.channel IN $channels
  AND coalesce(f.superseded, false) = false
  AND """ + _seen_by_agent("f") + """
OPTIONAL MATCH (f)-[:ABOUT]->(x:Entity)
WITH f, collect(x.id) AS entity_ids
RETURN f {.id, .user_id, .channel, .agent_id, .scope, .claim, .confidence, .source, .source_turn_id,
          .conversation_id, .temporal, .certainty, .created_at, .last_accessed, .access_count, .metadata} AS fact,
       entity_ids
"""


# --- dedup ---------------------------------------------------------------------------------------------------------
# Duplicates are found per user (blocking by name tokens in Python, then cosine), then the loser of each pair is
# merged into the survivor: its edges are copied to the survivor (MERGE: an edge the survivor has already is kept, a
# new one is marked with the run), the survivor takes its aliases and counts, a redirect keeps its key, and it is
# deleted. Undo recreates it from the snapshot, with its edges, and removes what the run added to the survivor.

DEDUP_USERS: Final[LiteralString] = """
MATCH (e:Entity) RETURN DISTINCT e.user_id AS user_id
UNION
MATCH (f:Fact) RETURN DISTINCT f.user_id AS user_id
"""

DEDUP_ENTITIES: Final[LiteralString] = """
MATCH (e:Entity {user_id: $user_id})
WHERE e.embedding IS NOT NULL
RETURN e.id AS id, e.channel AS channel, e.name AS name, e.type AS type, e.aliases AS aliases, e.key AS key,
       e.embedding AS embedding, coalesce(e.access_count, 0) AS accesses, e.salience AS salience,
       e.first_seen AS first_seen
ORDER BY e.id
"""

#: An entity as it is (every property but the vector, which is returned apart) with every edge in and out.
ENTITY_SNAPSHOT: Final[LiteralString] = """
MATCH (e:Entity {id: $id, user_id: $user_id})
OPTIONAL MATCH (e)-[out]->(x)
WITH e, collect(CASE WHEN x IS NULL THEN null ELSE {direction: 'out', type: type(out), other: x.id,
                                                    props: properties(out)} END) AS outgoing
OPTIONAL MATCH (y)-[inc]->(e)
WITH e, outgoing, collect(CASE WHEN y IS NULL THEN null ELSE {direction: 'in', type: type(inc), other: y.id,
                                                              props: properties(inc)} END) AS incoming
RETURN e {.id, .user_id, .channel, .name, .type, .key, .normalized_name, .aliases, .description, .salience,
          .salience_base, .first_seen, .last_accessed, .access_count, .properties, .version, .updated_at,
          .decayed_at, .merged_from} AS node, e.embedding AS embedding, outgoing + incoming AS edges
"""

#: What a merge changes on the survivor (and keeps for undo), without its edges.
SURVIVOR_STATE: Final[LiteralString] = """
MATCH (e:Entity {id: $id, user_id: $user_id})
RETURN e {.id, .name, .aliases, .description, .salience, .salience_base, .access_count, .first_seen, .last_accessed,
          .properties, .merged_from} AS node
"""

UPDATE_SURVIVOR: Final[LiteralString] = """
MATCH (s:Entity {id: $id, user_id: $user_id})
SET s += $values, s.version = coalesce(s.version, 0) + 1
""" + _name_keys("s") + """
RETURN s.id AS id
"""

ADD_REDIRECT: Final[LiteralString] = """
MATCH (s:Entity {id: $survivor_id, user_id: $user_id})
MERGE (r:EntityRedirect {id: $key})
ON CREATE SET r.user_id = $user_id, r.run_id = $run_id
MERGE (r)-[n:REDIRECTS_TO]->(s)
ON CREATE SET n.merged_run = $run_id
RETURN r.id AS id
"""

DELETE_MERGED: Final[LiteralString] = """
MATCH (l:Entity {id: $id, user_id: $user_id})
DETACH DELETE l
RETURN count(*) AS deleted
"""

ENTITY_EXISTS: Final[LiteralString] = "MATCH (e:Entity {id: $id}) RETURN count(e) AS n"

RECREATE_ENTITY: Final[LiteralString] = """
CREATE (e:Entity)
SET e += $node, e.embedding = @vec($embedding)
""" + _name_keys("e") + """
RETURN e.id AS id
"""

REMOVE_MERGED_EDGES: Final[LiteralString] = """
MATCH (s:Entity {id: $id, user_id: $user_id})-[n]-()
WHERE n.merged_run = $run_id
DELETE n
RETURN count(*) AS removed
"""

REMOVE_REDIRECT: Final[LiteralString] = """
MATCH (r:EntityRedirect {id: $key})
WHERE r.run_id = $run_id
DETACH DELETE r
RETURN count(*) AS removed
"""

#: (direction from the entity, relationship type, label of the node at the other end): every edge an entity has.
ENTITY_LINKS: Final[tuple[tuple[LiteralString, LiteralString, LiteralString], ...]] = (
    *(("out", t, "Entity") for t in ("RELATED_TO", "PART_OF", "LOCATED_IN", "WORKS_FOR", "KNOWS", "CREATED_BY",
                                      "REFERENCES")),
    *(("in", t, "Entity") for t in ("RELATED_TO", "PART_OF", "LOCATED_IN", "WORKS_FOR", "KNOWS", "CREATED_BY",
                                     "REFERENCES")),
    ("in", "ABOUT", "Fact"),
    ("in", "MENTIONS", "Conversation"),
    ("in", "REDIRECTS_TO", "EntityRedirect"),
)


def _move_edges(direction: LiteralString, rel: LiteralString, label: LiteralString) -> LiteralString:
    pattern = ("(l)-[r:" + rel + "]->(x:" + label + ")") if direction == "out" else (
        "(x:" + label + ")-[r:" + rel + "]->(l)")
    merge = ("(s)-[n:" + rel + "]->(x)") if direction == "out" else ("(x)-[n:" + rel + "]->(s)")
    return ("MATCH (l:Entity {id: $loser_id, user_id: $user_id})\nMATCH " + pattern
            + "\nWHERE x.id <> $survivor_id\nMATCH (s:Entity {id: $survivor_id, user_id: $user_id})\nMERGE "
            + merge + "\nON CREATE SET n += properties(r), n.merged_run = $run_id\nRETURN count(*) AS moved")


def _restore_edges(direction: LiteralString, rel: LiteralString, label: LiteralString) -> LiteralString:
    merge = ("(e)-[n:" + rel + "]->(x)") if direction == "out" else ("(x)-[n:" + rel + "]->(e)")
    return ("UNWIND $edges AS edge\nMATCH (e:Entity {id: $id, user_id: $user_id})\nMATCH (x:" + label
            + " {id: edge.other})\nMERGE " + merge + "\nSET n += edge.props\nRETURN count(n) AS restored")


#: Copy the loser's edges of one kind to the survivor (dedup), by (direction, type).
MOVE_EDGES: Final[dict[tuple[str, str], LiteralString]] = {
    (d, t): _move_edges(d, t, label) for d, t, label in ENTITY_LINKS}

#: Recreate a merged entity's edges of one kind from its snapshot (undo), by (direction, type).
RESTORE_EDGES: Final[dict[tuple[str, str], LiteralString]] = {
    (d, t): _restore_edges(d, t, label) for d, t, label in ENTITY_LINKS}

# Facts: a duplicate is kept, hidden from recall like a superseded fact (status 'duplicate', SUPERSEDES from the
# survivor, valid until the survivor was said), and the survivor gains its provenance (DERIVED_FROM) and ABOUT links,
# each new edge marked with the run, and the higher confidence and the summed accesses.

DEDUP_FACTS: Final[LiteralString] = """
MATCH (f:Fact {user_id: $user_id})
WHERE coalesce(f.superseded, false) = false AND coalesce(f.status, 'active') = 'active' AND f.embedding IS NOT NULL
OPTIONAL MATCH (f)-[:ABOUT]->(e:Entity)
WITH f, collect(e.id) AS about
RETURN f.id AS id, f.channel AS channel, f.claim AS claim, f.temporal AS temporal, f.embedding AS embedding,
       f.confidence AS confidence, coalesce(f.access_count, 0) AS accesses, f.created_at AS created_at, about,
       """ + _private_to("f") + """ AS private_to
ORDER BY f.id
"""

FACT_MERGE_STATE: Final[LiteralString] = """
MATCH (s:Fact {id: $survivor_id, user_id: $user_id}), (l:Fact {id: $loser_id, user_id: $user_id})
RETURN s {.confidence, .access_count, .last_accessed} AS survivor,
       l {.superseded, .status, .superseded_by, .superseded_at, .valid_until} AS loser,
       l {.confidence, .access_count, .last_accessed} AS loser_values
"""

#: What undoing a fact merge reads first: the survivor's merged values now, and whether the loser is still the
#: survivor's duplicate (either may have been forgotten since: null).
FACT_UNDO_STATE: Final[LiteralString] = """
OPTIONAL MATCH (s:Fact {id: $survivor_id, user_id: $user_id})
OPTIONAL MATCH (l:Fact {id: $loser_id, user_id: $user_id})
RETURN CASE WHEN s IS NULL THEN null ELSE s {.confidence, .access_count, .last_accessed} END AS survivor,
       CASE WHEN l IS NULL THEN null ELSE l {.status, .superseded_by} END AS loser
"""

#: The survivor's values it sets are what an undo takes back: ``dedup/facts.py::_merged`` computes the same, keep
#: the two in step.
MERGE_FACT: Final[LiteralString] = """
MATCH (s:Fact {id: $survivor_id, user_id: $user_id}), (l:Fact {id: $loser_id, user_id: $user_id})
SET l.superseded = true, l.status = 'duplicate', l.superseded_by = s.id, l.superseded_at = $now,
    l.valid_until = CASE WHEN s.created_at > l.created_at THEN s.created_at ELSE l.created_at END,
    s.confidence = CASE WHEN l.confidence > s.confidence THEN l.confidence ELSE s.confidence END,
    s.access_count = coalesce(s.access_count, 0) + coalesce(l.access_count, 0),
    s.last_accessed = CASE WHEN coalesce(l.last_accessed, 0) > coalesce(s.last_accessed, 0) THEN l.last_accessed
                           ELSE s.last_accessed END
MERGE (s)-[r:SUPERSEDES]->(l)
ON CREATE SET r.merged_run = $run_id
RETURN s.id AS id
"""

COPY_FACT_SOURCES: Final[LiteralString] = """
MATCH (l:Fact {id: $loser_id, user_id: $user_id})-[:DERIVED_FROM]->(t:Turn)
MATCH (s:Fact {id: $survivor_id, user_id: $user_id})
MERGE (s)-[n:DERIVED_FROM]->(t)
ON CREATE SET n.merged_run = $run_id
RETURN count(*) AS copied
"""

COPY_FACT_ABOUT: Final[LiteralString] = """
MATCH (l:Fact {id: $loser_id, user_id: $user_id})-[:ABOUT]->(e:Entity)
MATCH (s:Fact {id: $survivor_id, user_id: $user_id})
MERGE (s)-[n:ABOUT]->(e)
ON CREATE SET n.merged_run = $run_id
RETURN count(*) AS copied
"""

UNDO_FACT_SURVIVOR: Final[LiteralString] = """
MATCH (s:Fact {id: $id, user_id: $user_id})
SET s += $values
RETURN s.id AS id
"""

#: The loser of a fact merge back as it was, while it is still that survivor's duplicate.
UNDO_FACT_LOSER: Final[LiteralString] = """
MATCH (l:Fact {id: $id, user_id: $user_id})
WHERE l.status = 'duplicate' AND l.superseded_by = $survivor_id
SET l += $values
RETURN l.id AS id
"""

REMOVE_MERGED_FACT_EDGES: Final[LiteralString] = """
MATCH (s:Fact {id: $id, user_id: $user_id})-[n]->()
WHERE n.merged_run = $run_id
DELETE n
RETURN count(*) AS removed
"""

# --- episodic summaries --------------------------------------------------------------------------------------------

#: The entities extraction linked to a conversation (MENTIONS), by name.
CONVERSATION_ENTITIES: Final[LiteralString] = """
MATCH (c:Conversation {id: $conversation_id, user_id: $user_id})-[:MENTIONS]->(e:Entity)
RETURN e.id AS id, e.name AS name, e.type AS type ORDER BY name, id
"""

#: The tools a conversation called, in call order.
CONVERSATION_TOOLS: Final[LiteralString] = """
MATCH (c:Conversation {id: $conversation_id, user_id: $user_id})-[:USED_TOOL]->(ti:ToolInvocation)
RETURN ti.tool_name AS tool ORDER BY ti.timestamp, ti.id
"""

#: Spec 003's Conversation.title, set when the conversation is summarized (from the summary).
SET_CONVERSATION_TITLE: Final[LiteralString] = """
MATCH (c:Conversation {id: $conversation_id, user_id: $user_id})
SET c.title = $title
RETURN c.title AS title
"""

#: A conversation's title ('' until it is summarized); no row when the graph has no such conversation of the user.
GET_CONVERSATION_TITLE: Final[LiteralString] = """
MATCH (c:Conversation {id: $conversation_id, user_id: $user_id})
RETURN coalesce(c.title, '') AS title
"""

# --- control memories (seed 001): rules and constraints --------------------------------------------------------------
# Keyed by (id, user_id) like facts: another user's control id violates the unique constraint (ConflictError). A
# control stored again updates its text, pattern, severity and metadata and stays in its channel.

STORE_CONTROL: Final[LiteralString] = """
MERGE (c:Control {id: $id, user_id: $user_id})
ON CREATE SET c.channel = $channel, c.created_at = $created_at, c.access_count = 0, c.agent_id = $agent_id,
              c.scope = $scope
WITH c WHERE c.channel = $channel
REMOVE c.embedding
SET c.content = $content, c.error_pattern = $error_pattern, c.severity = $severity,
    c.source_trajectory_id = $source_trajectory_id, c.metadata = $metadata, c.embedding = @vec($embedding)
RETURN c.id AS id
"""

GET_CONTROL: Final[LiteralString] = """
MATCH (c:Control {id: $id, user_id: $user_id})
WHERE """ + _seen_by_agent("c") + """
RETURN c {.id, .user_id, .channel, .agent_id, .scope, .content, .error_pattern, .severity, .source_trajectory_id,
          .created_at, .last_accessed, .access_count, .metadata} AS control
"""

LIST_CONTROLS: Final[LiteralString] = """
MATCH (c:Control {user_id: $user_id})
WHERE c.channel IN $channels AND ($error_pattern IS NULL OR c.error_pattern = $error_pattern)
  AND """ + _seen_by_agent("c") + """
RETURN c {.id, .user_id, .channel, .agent_id, .scope, .content, .error_pattern, .severity, .source_trajectory_id,
          .created_at, .last_accessed, .access_count, .metadata} AS control
ORDER BY c.created_at DESC, c.id LIMIT $limit
"""

#: Exact cosine over the user's own controls in these channels (tenant-correct: the filter applies before ranking).
SEARCH_CONTROLS: Final[LiteralString] = """
WITH @vec($embedding) AS query_vector
@tenant_match(Control, c, query_vector)
WITH c, query_vector WHERE c.embedding IS NOT NULL
  AND """ + _seen_by_agent("c") + """
WITH c, @cosine(c.embedding, query_vector) AS similarity
WHERE similarity IS NOT NULL AND similarity = similarity
WITH c, similarity ORDER BY similarity DESC, c.id LIMIT $k
RETURN c {.id, .user_id, .channel, .agent_id, .scope, .content, .error_pattern, .severity, .source_trajectory_id,
          .created_at, .last_accessed, .access_count, .metadata} AS control, similarity
"""

DELETE_CONTROL: Final[LiteralString] = """
MATCH (c:Control {id: $id, user_id: $user_id})
DETACH DELETE c
RETURN count(*) AS deleted
"""

# --- the tier router's statistics -----------------------------------------------------------------------------------

#: The user's nodes of a label counted (long-term memory in the tier router's ``stats()``), by label.
USER_NODE_COUNTS: Final[dict[str, LiteralString]] = {
    "facts": "MATCH (n:Fact {user_id: $user_id}) RETURN count(n) AS n",
    "entities": "MATCH (n:Entity {user_id: $user_id}) RETURN count(n) AS n",
    "turns": "MATCH (n:Turn {user_id: $user_id}) RETURN count(n) AS n",
}

# --- forgetting a user ---------------------------------------------------------------------------------------------

#: Every label whose nodes carry a ``user_id`` (the user's own data), deleted in pages of ``$limit``.
USER_LABELS: Final[tuple[LiteralString, ...]] = (
    "Turn", "Conversation", "Entity", "EntityRedirect", "Fact", "Goal", "Strategy", "ToolInvocation", "Control")


def _forget_nodes(label: LiteralString) -> LiteralString:
    return ("MATCH (n:" + label + " {user_id: $user_id}) WITH n LIMIT $limit DETACH DELETE n "
            "RETURN count(*) AS deleted")


#: One page of the user's nodes of a label deleted with their edges, by label.
FORGET_NODES: Final[dict[str, LiteralString]] = {label: _forget_nodes(label) for label in USER_LABELS}

FORGET_USER_NODE: Final[LiteralString] = """
MATCH (u:User {id: $user_id})
DETACH DELETE u
RETURN count(*) AS deleted
"""

# --- forgetting chosen memories ------------------------------------------------------------------------------------
# ``forget(ids)`` and ``forget(where)``: first the targets are found (by id, or by filter), then derived memories are
# added (facts whose every source turn goes, the redirects to an entity that goes), then all go in one statement per
# label. Conversation nodes go when no turn or tool call of theirs is left.


def _find_by_id(label: LiteralString) -> LiteralString:
    return ("MATCH (n:" + label + ") WHERE n.id IN $ids AND n.user_id = $user_id AND " + _seen_by_agent("n") + " "
            "RETURN n.id AS id, n.conversation_id AS conversation_id, n.channel AS channel")


def _find_where(label: LiteralString) -> LiteralString:
    return ("MATCH (n:" + label + " {user_id: $user_id}) "
            "WHERE ($conversation_id IS NULL OR n.conversation_id = $conversation_id)"
            " AND ($channel IS NULL OR n.channel = $channel)"
            " AND ($before IS NULL OR coalesce(n.timestamp, n.created_at, n.first_seen) < $before)"
            " AND ($after IS NULL OR coalesce(n.timestamp, n.created_at, n.first_seen) >= $after) "
            "RETURN n.id AS id, n.conversation_id AS conversation_id, n.channel AS channel")


def _delete_by_id(label: LiteralString) -> LiteralString:
    return ("MATCH (n:" + label + ") WHERE n.id IN $ids AND n.user_id = $user_id DETACH DELETE n "
            "RETURN count(*) AS deleted")


#: Labels ``forget`` reaches by id or filter (a conversation's id reaches the conversation: all its turns).
FORGETTABLE_LABELS: Final[tuple[LiteralString, ...]] = (
    "Turn", "Fact", "Entity", "Goal", "Strategy", "Control", "ToolInvocation")

#: The user's nodes of a label with one of ``$ids`` that the agent ``$agent_id`` may read, by label.
FORGET_FIND_BY_ID: Final[dict[str, LiteralString]] = {label: _find_by_id(label) for label in FORGETTABLE_LABELS}

#: The user's nodes of a label that match the filter (each ``$param`` null means "any"; times in epoch ms against
#: the node's own time: a turn's or invocation's timestamp, a fact's, goal's, strategy's or control's creation, an
#: entity's first sighting), by label.
FORGET_FIND_WHERE: Final[dict[str, LiteralString]] = {label: _find_where(label) for label in FORGETTABLE_LABELS}

#: The user's nodes of a label with one of ``$ids`` deleted with their edges, by label.
FORGET_BY_ID: Final[dict[str, LiteralString]] = {label: _delete_by_id(label) for label in FORGETTABLE_LABELS}

#: The turns of the user's conversations among ``$ids`` that the agent ``$agent_id`` may read (forgetting a
#: conversation forgets all its turns).
FORGET_CONVERSATION_TURNS: Final[LiteralString] = """
MATCH (c:Conversation {user_id: $user_id})-[:HAS_TURN]->(t:Turn)
WHERE c.id IN $ids
  AND """ + _seen_by_agent("t") + """
RETURN t.id AS id, t.conversation_id AS conversation_id, t.channel AS channel
"""

#: Facts derived from the turns in ``$ids`` and from no other turn (derived knowledge goes with its source), found from
#: the turns by their ids (starting at the user's facts read all of them: 17 ms for 4,000).
FORGET_DERIVED_FACTS: Final[LiteralString] = """
MATCH (t:Turn) @start_at(t, Turn, id) WHERE t.id IN $ids AND t.user_id = $user_id
WITH t
MATCH (f:Fact)-[:DERIVED_FROM]->(t)
WHERE f.user_id = $user_id
WITH DISTINCT f
OPTIONAL MATCH (f)-[:DERIVED_FROM]->(o:Turn)
WITH f, collect(o.id) AS sources
WHERE all(s IN sources WHERE s IN $ids)
RETURN f.id AS id, f.conversation_id AS conversation_id, f.channel AS channel
"""

#: The redirects (dedup's merged names) that lead to the entities in ``$ids``, found from those entities (starting at
#: the redirects read every user's: the label has no index but its key).
FORGET_REDIRECTS: Final[LiteralString] = """
MATCH (e:Entity) @start_at(e, Entity, id) WHERE e.id IN $ids AND e.user_id = $user_id
WITH e
MATCH (r:EntityRedirect)-[:REDIRECTS_TO]->(e)
WHERE r.user_id = $user_id
DETACH DELETE r
RETURN count(*) AS deleted
"""

#: The user's conversations among ``$conversation_ids`` left without a turn or tool call, deleted.
FORGET_EMPTY_CONVERSATIONS: Final[LiteralString] = """
MATCH (c:Conversation {user_id: $user_id})
WHERE c.id IN $conversation_ids
OPTIONAL MATCH (c)-[:HAS_TURN]->(t:Turn)
WITH c, count(t) AS turns
OPTIONAL MATCH (c)-[:USED_TOOL]->(ti:ToolInvocation)
WITH c, turns, count(ti) AS calls
WHERE turns = 0 AND calls = 0
DETACH DELETE c
RETURN count(*) AS deleted
"""

# --- the full reconcile: which logged rows the graph holds ----------------------------------------------------------

def _present(label: LiteralString) -> LiteralString:
    # The ids of $ids that are nodes of the label (its unique id index answers each).
    return f"UNWIND $ids AS id MATCH (n:{label} {{id: id}}) RETURN n.id AS id"


#: Which of the turn ids ``$ids`` the graph has a Turn node for.
PRESENT_TURNS: Final[LiteralString] = _present("Turn")

#: Which of the invocation ids ``$ids`` the graph has a ToolInvocation node for.
PRESENT_INVOCATIONS: Final[LiteralString] = _present("ToolInvocation")


# --- snapshots: a user's subgraph out and back in ------------------------------------------------------------------
# A snapshot holds each node of the user with all its properties (the vector apart) and each edge leaving one of
# them. Restoring writes nodes by key, then edges by the keys of their ends, only among the user's own nodes (and
# the shared Tool nodes): a snapshot can never link into another user's data.



def _snapshot_key(label: LiteralString, ident: LiteralString) -> LiteralString:
    """How a node of ``label`` is found again from the id ``ident``: the user's own labels by id within the user,
    the user by ``$user_id``, the shared Tool nodes by name."""
    if label == "User":
        return "{id: $user_id}"
    if label == "Tool":
        return "{name: " + ident + "}"
    return "{id: " + ident + ", user_id: $user_id}"

#: The edges a snapshot may hold: (source label, type, target label).
SNAPSHOT_EDGES: Final[tuple[tuple[LiteralString, LiteralString, LiteralString], ...]] = (
    ("Conversation", "HAS_TURN", "Turn"), ("Conversation", "MENTIONS", "Entity"),
    ("Conversation", "USED_TOOL", "ToolInvocation"), ("Turn", "FOLLOWED_BY", "Turn"),
    ("Fact", "DERIVED_FROM", "Turn"), ("Fact", "ABOUT", "Entity"), ("Fact", "PROMOTED_FROM", "Fact"),
    ("Fact", "SUPERSEDES", "Fact"), ("Goal", "BLOCKED_BY", "Goal"), ("Goal", "SUBGOAL_OF", "Goal"),
    ("User", "HAS_GOAL", "Goal"), ("EntityRedirect", "REDIRECTS_TO", "Entity"), ("Strategy", "USES_TOOL", "Tool"),
    ("Strategy", "SUCCEEDED_IN", "Conversation"), ("ToolInvocation", "INVOKED", "Tool"),
    *(("Entity", rel, "Entity") for rel in CREATE_RELATIONSHIP))


def _snapshot_nodes(label: LiteralString, where: LiteralString = "") -> LiteralString:
    # ``where``: a further condition on the node ``n``, ending in AND (an agent's snapshot: _by_agent("n"))
    match = "MATCH (n:User {id: $user_id})" if label == "User" else "MATCH (n:" + label + " {user_id: $user_id})"
    return (match + " WHERE " + where + "n.id > $after WITH n ORDER BY n.id LIMIT $limit "
            "RETURN n.id AS id, properties(n) AS props")


def _snapshot_edges(label: LiteralString, where: LiteralString = "") -> LiteralString:
    # ``where``: a further condition on the source node ``a``, ending in AND (an agent's snapshot: _by_agent("a"))
    match = "MATCH (a:User {id: $user_id})" if label == "User" else "MATCH (a:" + label + " {user_id: $user_id})"
    return (match + " WHERE " + where + "a.id > $after WITH a ORDER BY a.id LIMIT $limit "
            "MATCH (a)-[r]->(b) RETURN a.id AS source, type(r) AS type, labels(b)[0] AS target_label, "
            "coalesce(b.id, b.name) AS target, properties(r) AS props")


def _snapshot_restore_nodes(label: LiteralString) -> LiteralString:
    # An entity's name keys are made again for the user it is restored to (a snapshot of an earlier version has none).
    keys: LiteralString = (_name_keys("n") + " ") if label == "Entity" else ""
    return ("UNWIND $rows AS row MERGE (n:" + label + " " + _snapshot_key(label, "row.id") + ") SET n += row.props "
            + keys + "RETURN count(n) AS restored")


def _snapshot_restore_vectors(label: LiteralString) -> LiteralString:
    return ("UNWIND $rows AS row MATCH (n:" + label + " " + _snapshot_key(label, "row.id") + ") "
            "SET n.embedding = @vec(row.embedding) RETURN count(n) AS restored")


def _snapshot_restore_edges(source: LiteralString, rel: LiteralString, target: LiteralString) -> LiteralString:
    return ("UNWIND $rows AS row MATCH (a:" + source + " " + _snapshot_key(source, "row.source")
            + ") MATCH (b:" + target + " " + _snapshot_key(target, "row.target") + ") "
            "MERGE (a)-[r:" + rel + "]->(b) SET r += row.props RETURN count(r) AS restored")


#: The labels a snapshot holds, in restore order.
SNAPSHOT_LABELS: Final[tuple[LiteralString, ...]] = ("User", *USER_LABELS)

#: One page (ids after ``$after``) of the user's nodes of a label with their properties, by label.
SNAPSHOT_NODES: Final[dict[str, LiteralString]] = {label: _snapshot_nodes(label) for label in SNAPSHOT_LABELS}

#: The edges leaving one page of the user's nodes of a label, by label.
SNAPSHOT_EDGES_FROM: Final[dict[str, LiteralString]] = {label: _snapshot_edges(label) for label in SNAPSHOT_LABELS}

#: Nodes of a label written back (``$rows``: id and props), by label; Tool nodes are shared and merged by name.
SNAPSHOT_RESTORE_NODES: Final[dict[str, LiteralString]] = {
    label: _snapshot_restore_nodes(label) for label in (*SNAPSHOT_LABELS, "Tool")}

#: Vectors of nodes of a label written back (``$rows``: id and embedding), by label.
SNAPSHOT_RESTORE_VECTORS: Final[dict[str, LiteralString]] = {
    label: _snapshot_restore_vectors(label) for label in VECTOR_LABELS}

#: Edges written back between the user's nodes (``$rows``: source, target, props), by (source label, type, target).
SNAPSHOT_RESTORE_EDGES: Final[dict[tuple[str, str, str], LiteralString]] = {
    edge: _snapshot_restore_edges(*edge) for edge in SNAPSHOT_EDGES}

#: The ids among ``$ids`` that another user's nodes of a label hold (a restore would collide with them), by label.
SNAPSHOT_COLLISIONS: Final[dict[str, LiteralString]] = {
    label: "MATCH (n:" + label + ") WHERE n.id IN $ids AND n.user_id <> $user_id RETURN n.id AS id LIMIT 5"
    for label in USER_LABELS}


# --- re-embedding: new vectors staged beside the live ones, then switched in one batch -----------------------------
# The active generation stays on the AgentxMeta 'embedding' node (EMBEDDING_META); a re-embed in progress is recorded
# on a second meta node, key 'reembed' (target model, dimension, start, phase, per-label cursors as a JSON string:
# neither database stores maps as property values). A node's staged vector is `embedding_next`, and
# `embedding_next_src` the hash of the target model and the text it was made from (agentx_memory/reembed.py).

#: The labels whose vectors a re-embed rebuilds (the vector-indexed labels).
REEMBED_LABELS: Final[tuple[LiteralString, ...]] = ("Turn", "Entity", "Fact", "Strategy", "Goal", "Control")

EMBEDDING_META_READ: Final[LiteralString] = (
    "MATCH (m:AgentxMeta {key: 'embedding'}) RETURN m.model AS model, m.dimension AS dimension"
)

#: Record the new active generation once every label is switched.
EMBEDDING_META_SWITCH: Final[LiteralString] = (
    "MATCH (m:AgentxMeta {key: 'embedding'}) "
    "SET m.model = $model, m.dimension = $dimension, m.switched_at = $now "
    "RETURN m.model AS model, m.dimension AS dimension"
)

REEMBED_RECORD: Final[LiteralString] = (
    "MATCH (m:AgentxMeta {key: 'reembed'}) "
    "RETURN m.model AS model, m.dimension AS dimension, m.started_at AS started_at, m.phase AS phase, "
    "m.cursors AS cursors"
)

REEMBED_RECORD_SAVE: Final[LiteralString] = (
    "MERGE (m:AgentxMeta {key: 'reembed'}) "
    "SET m.model = $model, m.dimension = $dimension, m.started_at = $started_at, m.phase = $phase, "
    "m.cursors = $cursors"
)

REEMBED_RECORD_DELETE: Final[LiteralString] = "MATCH (m:AgentxMeta {key: 'reembed'}) DELETE m"

#: What each label's vector is made of, as the re-embed reads it (agentx_memory/reembed.py turns it into the text).
_REEMBED_FIELDS: Final[dict[str, LiteralString]] = {
    "Turn": "{content: n.content, conversation_id: n.conversation_id, user_id: n.user_id, index: n.index}",
    "Entity": "{name: n.name, description: n.description}",
    "Fact": "{claim: n.claim}",
    "Strategy": "{description: n.description, context_pattern: n.context_pattern, "
                "trigger_conditions: n.trigger_conditions}",
    "Goal": "{description: n.description}",
    "Control": "{content: n.content}",
}


def _reembed_page(label: LiteralString) -> LiteralString:
    return ("MATCH (n:" + label + ") WHERE n.id > $after AND n.embedding IS NOT NULL "
            "WITH n ORDER BY n.id LIMIT $limit "
            "RETURN n.id AS id, " + _REEMBED_FIELDS[label] + " AS fields, n.embedding_next_src AS staged")


# FalkorDB 4.16 may keep a vector property's old value when SET gives it another vector of the same dimension
# (seen with two unit vectors of the hash embedder: the SET counted the node and changed nothing). Removing the
# property first makes every SET below a write of a new value.

def _reembed_stage(label: LiteralString) -> LiteralString:
    return ("UNWIND $rows AS row MATCH (n:" + label + " {id: row.id}) REMOVE n.embedding_next "
            "SET n.embedding_next = @vec(row.embedding), n.embedding_next_src = row.src RETURN count(n) AS staged")


def _reembed_swap(label: LiteralString) -> LiteralString:
    return ("UNWIND $ids AS id MATCH (n:" + label + " {id: id}) WHERE n.embedding_next IS NOT NULL "
            "WITH n, n.embedding_next AS staged REMOVE n.embedding, n.embedding_next, n.embedding_next_src "
            "SET n.embedding = staged RETURN count(n) AS swapped")


#: One page (ids after ``$after``, at most ``$limit``) of a label's nodes with a vector: id, the fields its vector is
#: made of, and the source hash of what is staged, by label.
REEMBED_PAGE: Final[dict[str, LiteralString]] = {label: _reembed_page(label) for label in REEMBED_LABELS}

#: Staged vectors written (``$rows``: id, embedding, src), by label.
REEMBED_STAGE: Final[dict[str, LiteralString]] = {label: _reembed_stage(label) for label in REEMBED_LABELS}

#: The staged vectors of the nodes ``$ids`` made the live ones (the staging slot emptied), by label.
REEMBED_SWAP: Final[dict[str, LiteralString]] = {label: _reembed_swap(label) for label in REEMBED_LABELS}

# --- snapshots of one agent's memory -------------------------------------------------------------------------------
# An agent's memory is what it wrote: its turns (kept in the log and projected again on restore), facts and control
# memories. Entities, goals and strategies are the user's and stay out.

#: The labels whose nodes record the agent that wrote them.
AGENT_LABELS: Final[tuple[LiteralString, ...]] = ("Turn", "Fact", "Control")


def _by_agent(var: LiteralString) -> LiteralString:
    return var + ".agent_id = $agent_id AND "


def _forget_agent_nodes(label: LiteralString) -> LiteralString:
    return ("MATCH (n:" + label + " {user_id: $user_id}) WHERE n.agent_id = $agent_id WITH n LIMIT $limit "
            "DETACH DELETE n RETURN count(*) AS deleted")


#: One page of an agent's facts or control memories with their properties, by label (its turns come from the log).
SNAPSHOT_AGENT_NODES: Final[dict[str, LiteralString]] = {
    label: _snapshot_nodes(label, _by_agent("n")) for label in ("Fact", "Control")}

#: The edges leaving one page of an agent's facts or control memories, by label.
SNAPSHOT_AGENT_EDGES_FROM: Final[dict[str, LiteralString]] = {
    label: _snapshot_edges(label, _by_agent("a")) for label in ("Fact", "Control")}

#: One page of an agent's nodes of a label deleted with their edges, by label.
FORGET_AGENT_NODES: Final[dict[str, LiteralString]] = {label: _forget_agent_nodes(label) for label in AGENT_LABELS}

# --- browsing one user's memory (the explorer page; agentx_memory.browse) ------------------------------------------
# Read-only, every statement scoped to one user and bounded by $limit.

#: A page of the user's entities, the most salient first.
BROWSE_ENTITIES: Final[LiteralString] = """
MATCH (e:Entity {user_id: $user_id})
WITH e ORDER BY e.salience DESC, e.name, e.id SKIP $offset LIMIT $limit
RETURN e {.id, .user_id, .channel, .name, .type, .aliases, .description, .salience, .first_seen, .last_accessed,
          .access_count, .properties} AS entity
"""

#: A page of the user's facts of every status (or of ``$status``) that the agent may read, the newest first.
BROWSE_FACTS: Final[LiteralString] = """
MATCH (f:Fact {user_id: $user_id})
WHERE ($status IS NULL OR coalesce(f.status, 'active') = $status)
  AND """ + _seen_by_agent("f") + """
WITH f ORDER BY f.created_at DESC, f.id SKIP $offset LIMIT $limit
OPTIONAL MATCH (f)-[:ABOUT]->(e:Entity)
RETURN f {.id, .user_id, .channel, .agent_id, .scope, .claim, .confidence, .source, .source_turn_id,
          .conversation_id, .temporal, .certainty, .created_at, .last_accessed, .access_count, .metadata, .status,
          .superseded_by} AS fact,
       collect(e.id) AS entity_ids
"""

#: The provenance of some of the user's facts: every turn each was DERIVED_FROM, and the facts each SUPERSEDES.
BROWSE_FACT_LINKS: Final[LiteralString] = """
MATCH (f:Fact {user_id: $user_id}) WHERE f.id IN $ids
OPTIONAL MATCH (f)-[:DERIVED_FROM]->(t:Turn)
WITH f, collect(DISTINCT t.id) AS source_turn_ids
OPTIONAL MATCH (f)-[:SUPERSEDES]->(old:Fact)
RETURN f.id AS id, source_turn_ids, collect(DISTINCT old.id) AS supersedes
"""

#: The user's goals in every channel, oldest first, with parent and blockers (the goal tree).
BROWSE_GOALS: Final[LiteralString] = """
MATCH (g:Goal {user_id: $user_id})
WITH g ORDER BY g.created_at, g.id LIMIT $limit
OPTIONAL MATCH (g)-[:SUBGOAL_OF]->(p:Goal)
OPTIONAL MATCH (g)-[:BLOCKED_BY]->(b:Goal)
RETURN g {.id, .user_id, .channel, .description, .status, .priority, .created_at, .completed_at, .result,
          .deadline, .metadata} AS goal, p.id AS parent_id, collect(b.id) AS blocked_by
"""

#: The user's nodes of a label counted, by the name the overview gives them.
BROWSE_COUNTS: Final[dict[str, LiteralString]] = {
    "entities": "MATCH (n:Entity {user_id: $user_id}) RETURN count(n) AS n",
    "facts": "MATCH (n:Fact {user_id: $user_id}) RETURN count(n) AS n",
    "active_facts": "MATCH (n:Fact {user_id: $user_id}) WHERE coalesce(n.superseded, false) = false "
                    "RETURN count(n) AS n",
    "goals": "MATCH (n:Goal {user_id: $user_id}) RETURN count(n) AS n",
    "strategies": "MATCH (n:Strategy {user_id: $user_id}) RETURN count(n) AS n",
    "controls": "MATCH (n:Control {user_id: $user_id}) RETURN count(n) AS n",
}
# --- memory size and the consolidation backlog (AsyncAgentMemory.memory_stats, observability's gauges) ------------
# Counts of one label or one relationship type with nothing else in the pattern are answered from the database's own
# counters (Neo4j's count store, FalkorDB's label and relation matrices), not by scanning the nodes.

#: Every node label the engine writes (AgentxMeta, its bookkeeping node, left out).
STATS_NODE_LABELS: Final[tuple[LiteralString, ...]] = (
    "User", "Conversation", "Turn", "Entity", "EntityRedirect", "Fact", "Goal", "Strategy", "Control", "Tool",
    "ToolInvocation")

#: Every relationship type the engine writes: the structural ones, then the entity links of ``create_relationship``.
STATS_RELATIONSHIP_TYPES: Final[tuple[LiteralString, ...]] = (
    "HAS_TURN", "FOLLOWED_BY", "MENTIONS", "ABOUT", "DERIVED_FROM", "SUPERSEDES", "PROMOTED_FROM", "REDIRECTS_TO",
    "HAS_GOAL", "SUBGOAL_OF", "BLOCKED_BY", "INVOKED", "USED_TOOL", "USES_TOOL", "SUCCEEDED_IN",
    "RELATED_TO", "PART_OF", "LOCATED_IN", "WORKS_FOR", "KNOWS", "CREATED_BY", "REFERENCES")


def _count_nodes(label: LiteralString) -> LiteralString:
    return "MATCH (n:" + label + ") RETURN '" + label + "' AS name, count(n) AS n"


def _count_relationships(rel: LiteralString) -> LiteralString:
    return "MATCH ()-[r:" + rel + "]->() RETURN '" + rel + "' AS name, count(r) AS n"


#: The number of nodes of each label: rows ``name``, ``n`` (one round trip).
STATS_NODE_COUNTS: Final[LiteralString] = "\nUNION ALL\n".join(_count_nodes(label) for label in STATS_NODE_LABELS)

#: The number of relationships of each type: rows ``name``, ``n`` (one round trip).
STATS_RELATIONSHIP_COUNTS: Final[LiteralString] = "\nUNION ALL\n".join(
    _count_relationships(rel) for rel in STATS_RELATIONSHIP_TYPES)

#: Conversations with turns newer than their last consolidation (archived ones aside), every user's: how many, and
#: the time (ms) of the oldest one's last turn -- how long the oldest has waited (a scan of the conversations only).
STATS_CONSOLIDATION_BACKLOG: Final[LiteralString] = """
MATCH (c:Conversation)
WHERE coalesce(c.consolidated_upto, -1) < c.last_turn_at AND coalesce(c.archived, false) = false
RETURN count(c) AS pending, min(c.last_turn_at) AS oldest_last_turn_at
"""


#: The reads every recall makes whose rows are few -- bounded by ``$k``, ``$limit`` or the ids given. A database whose
#: client pays for every record it reads may have their rows sent as one record (the Neo4j adapter does: 100 rows cost
#: its driver 8.8 ms of client CPU as records and about 1 ms as one list, docs/benchmarks.md).
FEW_ROW_READS: Final[frozenset[str]] = frozenset({
    SEARCH_FACTS, SEARCH_ENTITIES, SEARCH_STRATEGIES, SEARCH_CONTROLS, RESOLVE_ENTITIES, GET_FACTS, GET_ENTITIES,
    FACTS_ABOUT, *ENTITY_NEIGHBOURS.values(), ENTITY_EDGES, REPLACED_FACT_SOURCES, LIST_GOALS, LIST_CONTROLS,
})
