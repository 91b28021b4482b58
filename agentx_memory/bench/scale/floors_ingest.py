"""The write floor: the same rows as the engine's ingest, raw, into a scratch namespace with the same indexes.

Binary ``COPY`` into a scratch copy of ``conversation_logs`` and batched ``UNWIND … MERGE`` (the shared statements of
:mod:`.statements`, rendered by the store's dialect) into a scratch graph, without embedding, logging, timeline, audit
or working memory. The engine's throughput divided by this one is the ingest ratio.

Where the scratch graph lives depends on the database (:data:`.statements.OWN_GRAPH_PER_NAME`): on FalkorDB a graph
of its own, dropped afterwards; on Neo4j (one database) the benchmark's database, beside the engine's rows, under
prefixed ids that are deleted afterwards. There the floor's writes see the engine's rows in the indexes too, and the
earlier steps' rows are reloaded into PostgreSQL only (the graph already holds the engine's copy of them).
"""

from __future__ import annotations

import hashlib
import json
import time
from collections import defaultdict
from datetime import UTC, datetime
from itertools import pairwise
from typing import Any

from ...backends import drop_namespace
from ...models import RELATIONSHIP_TYPES
from ...settings import Settings
from ..progress import progress_bar
from .config import DIMENSION
from .corpus import Corpus
from .ingest import Slice, Vectors
from .statements import (
    DELETE_FLOOR_NODES,
    FLOOR_ABOUT,
    FLOOR_ENTITIES,
    FLOOR_FACTS,
    FLOOR_FOLLOWED_BY,
    FLOOR_RELATIONSHIPS,
    FLOOR_TURNS,
    OWN_GRAPH_PER_NAME,
)
from .stats import rate

__all__ = ["FLOOR_ID_PREFIX", "FLOOR_SUFFIX", "FloorStore"]

#: The scratch namespace's name: the benchmark's graph name / schema plus this.
FLOOR_SUFFIX = "_floor"
#: The id (and key) prefix of the floor's graph rows on a database it shares with the engine.
FLOOR_ID_PREFIX = "floor:"

_LOG_COLUMNS = ("turn_id", "user_id", "conversation_id", "turn_index", "timestamp", "role", "content", "content_hash",
                "token_count", "model", "channel", "metadata", "embedding")
_LOG_TYPES = ("varchar", "varchar", "varchar", "int4", "timestamptz", "varchar", "text", "varchar", "int4", "varchar",
              "varchar", "jsonb", "vector")
_DELETE_BATCH = 10_000
_COPY_CHUNK = 1000


class FloorStore:
    """A scratch namespace with the same schema (same indexes) that receives the same rows raw."""

    def __init__(self, settings: Settings, dsn: str, graph, *, prefix: str = ""):
        self.settings = settings
        self.schema = settings.postgres.db_schema
        self.dsn = dsn
        self.graph = graph
        #: Prefix of the graph rows' ids and keys: empty in a graph of its own, else :data:`FLOOR_ID_PREFIX`.
        self.prefix = prefix

    @property
    def own_graph(self) -> bool:
        """True when the floor's graph is a graph of its own (dropped whole), not the engine's database."""
        return not self.prefix

    @classmethod
    async def open(cls, bench_settings: Settings, dsn: str, falkordb_socket: str | None) -> FloorStore:
        """Create the scratch namespace next to the benchmark's (dropping a leftover one first)."""
        from ...backends import make_graph_store
        from ...sql.postgres import migrate

        name = bench_settings.graph.name + FLOOR_SUFFIX
        settings = bench_settings.model_copy(update={
            "graph": bench_settings.graph.model_copy(update={"name": name}),
            "postgres": bench_settings.postgres.model_copy(update={"db_schema": name}),
        })
        graph = make_graph_store(settings, falkordb_socket=falkordb_socket)
        own = OWN_GRAPH_PER_NAME.get(graph.dialect.name, False)
        floor = cls(settings, dsn, graph, prefix="" if own else FLOOR_ID_PREFIX)
        await floor.drop()
        await migrate(dsn, floor.schema, dimension=DIMENSION, model=settings.embedding.model)
        await floor.graph.apply_schema(dimension=DIMENSION, model=settings.embedding.model)
        return floor

    async def drop(self) -> None:
        """Drop the scratch schema, and the scratch graph (or, in a shared database, the floor's rows)."""
        if not self.own_graph:
            params = {"prefix": self.prefix, "limit": _DELETE_BATCH}
            for statement in DELETE_FLOOR_NODES.values():
                while (await self.graph.write(statement, params))[0]["deleted"]:
                    pass
        # keys=False: the scratch settings keep the benchmark's Redis key prefix, whose keys are the engine's
        await drop_namespace(self.settings, graph=self.own_graph, keys=False)

    async def close(self) -> None:
        """Close the scratch connections."""
        await self.graph.close()

    async def write(self, corpus: Corpus, part: Slice, vectors: Vectors, *, batch: int = 500, label: str = "floor",
                    graph: bool = True) -> dict[str, Any]:
        """COPY the slice's turns into the scratch conversation_logs, MERGE turns, entities, relationships and facts
        into the scratch graph (unless ``graph`` is false). Only the database calls are timed (COPY includes encoding
        the rows it streams)."""
        import psycopg
        from pgvector.psycopg import register_vector_async
        from psycopg import sql
        from psycopg.types.json import Jsonb

        from ...semantic import entity_key, normalize_name
        from ...timeutil import to_ms
        from ...tokens import count_tokens

        turn_vectors, entity_vectors, fact_vectors = vectors
        p = self.prefix
        turns = [(i, corpus.turns[i]) for i in part.turns(corpus)]
        pg_rows = [(t.id, t.user_id, t.conversation_id, t.index, t.timestamp, t.role, t.content,
                    hashlib.sha256(t.content.encode()).hexdigest(), count_tokens(t.content), None, t.channel,
                    Jsonb({"speaker": t.speaker}), turn_vectors[i]) for i, t in turns]
        token_counts = [row[8] for row in pg_rows]

        def graph_rows(start: int, stop: int) -> list[dict[str, Any]]:
            return [{"id": p + t.id, "user_id": t.user_id, "channel": t.channel,
                     "conversation_id": p + t.conversation_id, "index": t.index, "timestamp": to_ms(t.timestamp),
                     "role": t.role, "content": t.content,
                     "token_count": token_counts[k], "metadata": json.dumps({"speaker": t.speaker}),
                     "embedding": turn_vectors[i].tolist()} for k, (i, t) in enumerate(turns[start:stop], start)]

        pairs = [[p + a.id, p + b.id] for (_, a), (_, b) in pairwise(turns)
                 if a.conversation_id == b.conversation_id]
        now = to_ms(datetime.now(UTC))
        entity_rows = [{"key": p + entity_key(e.user_id, e.channel, e.type, e.name), "id": p + e.id,
                        "user_id": e.user_id, "channel": e.channel, "type": e.type, "name": e.name,
                        "normalized_name": normalize_name(e.name), "aliases": e.aliases, "description": e.description,
                        "now": now, "embedding": entity_vectors[i].tolist()}
                       for i, e in ((i, corpus.entities[i]) for i in part.entities(corpus))]
        relationships: dict[str, list[list[str]]] = defaultdict(list)
        for i in part.relationships(corpus):
            _, source, target, rel_type = corpus.relationships[i]
            relationships[rel_type].append([p + source, p + target])
        fact_rows: list[dict[str, Any]] = []
        about: list[list[str]] = []
        for i in part.facts(corpus):
            f = corpus.facts[i]
            fact_rows.append({"id": p + f.id, "user_id": f.user_id, "channel": f.channel, "claim": f.claim,
                              "source_turn_id": p + f.source_turn_id, "conversation_id": p + f.conversation_id,
                              "created_at": to_ms(f.created_at), "embedding": fact_vectors[i].tolist()})
            about += [[p + f.id, p + e] for e in f.entity_ids]

        out: dict[str, Any] = {}
        async with await psycopg.AsyncConnection.connect(self.dsn, autocommit=True) as conn:
            await register_vector_async(conn)
            started = time.perf_counter()
            async with conn.cursor() as cur:
                statement = sql.SQL("COPY {}.conversation_logs ({}) FROM STDIN (FORMAT BINARY)").format(
                    sql.Identifier(self.schema), sql.SQL(", ").join(map(sql.Identifier, _LOG_COLUMNS)))
                async with cur.copy(statement) as copy:
                    copy.set_types(list(_LOG_TYPES))
                    # The bar advances per chunk: a per-row update would weigh on the timed loop.
                    with progress_bar(f"{label}: COPY conversation_logs", len(pg_rows), unit="row") as bar:
                        for start in range(0, len(pg_rows), _COPY_CHUNK):
                            chunk = pg_rows[start:start + _COPY_CHUNK]
                            for row in chunk:
                                await copy.write_row(row)
                            bar.update(len(chunk))
            pg_seconds = time.perf_counter() - started
        out["postgres_copy"] = {"rows": len(pg_rows), "seconds": round(pg_seconds, 2),
                                "per_second": rate(len(pg_rows), pg_seconds)}
        if not graph:
            return out

        graph_turn_seconds = 0.0  # rows are built per batch (vectors as lists are large), outside the clock
        with progress_bar(f"{label}: graph MERGE turns", len(turns), unit="turn") as bar:
            for start in range(0, len(turns), batch):
                rows = graph_rows(start, start + batch)
                t0 = time.perf_counter()
                await self.graph.write(FLOOR_TURNS, {"rows": rows})
                graph_turn_seconds += time.perf_counter() - t0
                bar.update(len(rows))
        t0 = time.perf_counter()
        for start in range(0, len(pairs), 2000):
            await self.graph.write(FLOOR_FOLLOWED_BY, {"pairs": pairs[start:start + 2000]})
        graph_turn_seconds += time.perf_counter() - t0
        out["graph_turns"] = {"rows": len(turns), "seconds": round(graph_turn_seconds, 2),
                              "per_second": rate(len(turns), graph_turn_seconds)}
        out["turns"] = {"count": len(turns), "seconds": round(pg_seconds + graph_turn_seconds, 2),
                        "per_second": rate(len(turns), pg_seconds + graph_turn_seconds)}

        started = time.perf_counter()
        for start in range(0, len(entity_rows), batch):
            await self.graph.write(FLOOR_ENTITIES, {"rows": entity_rows[start:start + batch]})
        seconds = time.perf_counter() - started
        out["entities"] = {"count": len(entity_rows), "seconds": round(seconds, 2),
                           "per_second": rate(len(entity_rows), seconds)}

        started = time.perf_counter()
        for rel_type, pairs_of_type in relationships.items():
            assert rel_type in RELATIONSHIP_TYPES  # a whitelisted type, never input
            for start in range(0, len(pairs_of_type), 2000):
                await self.graph.write(FLOOR_RELATIONSHIPS[rel_type], {"rows": pairs_of_type[start:start + 2000]})
        seconds = time.perf_counter() - started
        count = sum(len(r) for r in relationships.values())
        out["relationships"] = {"count": count, "seconds": round(seconds, 2), "per_second": rate(count, seconds)}
        started = time.perf_counter()
        for start in range(0, len(fact_rows), batch):
            await self.graph.write(FLOOR_FACTS, {"rows": fact_rows[start:start + batch]})
        for start in range(0, len(about), 2000):
            await self.graph.write(FLOOR_ABOUT, {"pairs": about[start:start + 2000]})
        seconds = time.perf_counter() - started
        out["facts"] = {"count": len(fact_rows), "seconds": round(seconds, 2),
                        "per_second": rate(len(fact_rows), seconds)}
        return out
