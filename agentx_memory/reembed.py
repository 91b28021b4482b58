"""Re-embedding after an embedding model change (issue 16), online and resumable.

Vectors of two models cannot be compared, so every store records the one generation its vectors belong to: the
graph on its ``AgentxMeta {key: 'embedding'}`` node, PostgreSQL in ``agentx_meta`` (``embedding``). That is how
"every vector records its model" holds here: per store generation, not per vector -- a store never holds vectors of
two models in its live slot, and opening it with another model is refused
(:class:`~agentx_memory.errors.EmbeddingDimensionMismatchError`).

:func:`reembed` moves both stores to a new model in three steps:

1. **Stage** (online). For every vector-bearing graph label (:data:`~agentx_memory.graph.cypher.REEMBED_LABELS`)
   and table (:data:`~agentx_memory.sql.reembed.REEMBED_TABLES`), page by page: rebuild the text the write path
   embedded (:func:`~agentx_memory.episodic.turn_text`, :func:`~agentx_memory.semantic.entity_text`,
   :func:`~agentx_memory.procedural.strategy_text`, :func:`~agentx_memory.summaries.summary_text`, a fact's claim,
   a goal's description, a control's content), embed it with the new model and store it in the staging slot
   (``embedding_next``) with a hash of (target model, dimension, text). Recall keeps using the old vectors. A
   progress record per store (target, start, phase, a cursor per label/table) is saved after every batch, so a
   rerun continues where the last one stopped; a row whose staged hash matches is skipped.
2. **Catch up.** Pass over everything again and stage what is missing or stale: rows written during the staging
   (by processes still on the old model) and rows whose text changed since they were staged. Only those are
   embedded; repeated until a pass finds nothing.
3. **Switch.** The graph: stage every label's stragglers, drop the vector indexes, make the staged vectors of every
   label the live ones in one batch, create the indexes at the new dimension. Then PostgreSQL, in one transaction
   (:meth:`~agentx_memory.sql.reembed.ReembedRows.switching`): stage the rows written since, swap the columns,
   rebuild the HNSW indexes, record the new model in ``agentx_meta`` and, last before the commit, on the graph's
   meta node. Until that commit both stores record the old model, so an interrupted switch leaves stores that open
   with the old model and a rerun that finishes the switch.

What is atomic: the PostgreSQL switch (readers wait on its lock, then see only new vectors) and the graph's swap of
vectors (one batch for every label: one transaction on Neo4j, one MULTI/EXEC on FalkorDB), so a reader sees the old
vectors or the new ones, never a mix. The graph's vector indexes are dropped before the swap and rebuilt after it;
meanwhile vector reads scan exactly. The two stores switch one after the other, and the memory that embeds queries
must be reopened with the new model afterwards (the stores refuse the old one); a graph-only write by a process still
on the old model between the staging and the swap keeps an old vector.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .context import MemoryContext
from .episodic import turn_text
from .errors import ConflictError, ValidationError
from .graph import cypher
from .graph.port import Statement
from .models import EpisodicSummary
from .procedural import strategy_text
from .providers.embeddings import Embedder, make_embedder
from .semantic import entity_text
from .settings import EmbeddingSettings
from .sql.postgres import Connection
from .summaries import summary_text
from .validation import check_int

__all__ = ["ReembedProgress", "ReembedReport", "reembed", "reembed_status", "target_embedder"]

#: Called with a stage ("staging Turn", "switching Fact", ...) and how many rows it has handled so far.
ReembedProgress = Callable[[str, int], None]

#: How many catch-up passes may still find rows to stage before the switch gives up (writers outpacing it).
MAX_CATCH_UP_PASSES = 5

_SWITCHED = "_switched"  # the record's list of graph labels already switched


@dataclass
class ReembedReport:
    """What one :func:`reembed` run did.

    ``embedded``: vectors this run made and staged, per label / table (``Turn``, ``Fact``, ..., ``conversation_logs``,
    ``episodic_summaries``); ``skipped``: rows passed over because a vector for the target was staged already (by
    an earlier, interrupted run, or by this run's first pass when the catch-up passes over them); ``switched``: both
    stores now serve the new vectors; ``previous``: the generation the stores held before, per store.
    """

    model: str
    dimension: int
    previous: dict[str, dict[str, Any]] = field(default_factory=dict)
    embedded: dict[str, int] = field(default_factory=dict)
    skipped: dict[str, int] = field(default_factory=dict)
    switched: bool = False
    seconds: float = 0.0


def _quiet(stage: str, done: int) -> None:
    """The default progress callback: says nothing."""


def _source_hash(model: str, dimension: int, text: str) -> str:
    return hashlib.sha256(f"{model}\x1f{dimension}\x1f{text}".encode()).hexdigest()[:32]


@dataclass
class _Item:
    """One vector to (maybe) stage: its key in its label/table, its text, the hash staged now and the one wanted."""

    key: Any
    text: str
    staged: str | None
    src: str
    vector: list[float] | None = None


class _Source:
    """One label or table: pages of items from a cursor, and staging their vectors."""

    name: str
    store: str  # "graph" | "postgres"
    start: Any

    def __init__(self, run: _Run):
        self.run = run

    async def page(self, cursor: Any, limit: int, conn: Connection | None = None) -> tuple[list[_Item], Any]:
        """Up to ``limit`` items after ``cursor``, and the cursor after them."""
        raise NotImplementedError

    async def embed(self, items: list[_Item]) -> None:
        """Fill each item's vector with the target model's."""
        vectors = await self.run.embedder.embed_documents([i.text for i in items])
        for item, vector in zip(items, vectors, strict=True):
            item.vector = vector.tolist()

    async def stage(self, items: list[_Item], conn: Connection | None = None) -> None:
        """Write the items' vectors into the staging slot."""
        raise NotImplementedError


class _GraphLabel(_Source):
    store = "graph"
    start = ""

    def __init__(self, run: _Run, label: str):
        super().__init__(run)
        self.name = label

    async def page(self, cursor, limit, conn=None):
        rows = await self.run.ctx.graph.read(cypher.REEMBED_PAGE[self.name], {"after": cursor, "limit": limit})
        if not rows:
            return [], cursor
        texts = await self._texts(rows)
        items = [_Item(r["id"], text, r["staged"], self.run.hash(text)) for r, text in zip(rows, texts, strict=True)]
        return items, rows[-1]["id"]

    async def _texts(self, rows: list[dict[str, Any]]) -> list[str]:
        fields = [r["fields"] for r in rows]
        if self.name == "Turn":
            previous = await self.run.ctx.sql.reembed.previous_contents([
                {"turn_id": r["id"], "conversation_id": f["conversation_id"], "user_id": f["user_id"],
                 "turn_index": f["index"]} for r, f in zip(rows, fields, strict=True)])
            mode = self.run.ctx.settings.embedding.turn_context
            return [turn_text(previous.get(r["id"]), f["content"] or "", mode)
                    for r, f in zip(rows, fields, strict=True)]
        if self.name == "Entity":
            return [entity_text(f["name"] or "", f["description"]) for f in fields]
        if self.name == "Strategy":
            return [strategy_text(f["description"] or "", f["context_pattern"], f["trigger_conditions"])
                    for f in fields]
        key = {"Fact": "claim", "Goal": "description", "Control": "content"}[self.name]
        return [f[key] or "" for f in fields]

    async def embed(self, items):
        if self.name == "Turn":
            # A Turn node holds the same vector as its log row: take the log's staged one when it was made from
            # the same text, and embed only the rest.
            staged = await self.run.ctx.sql.reembed.staged_turns([i.key for i in items])
            for item in items:
                vector, src = staged.get(item.key, (None, None))
                if src == item.src:
                    item.vector = vector
            items = [i for i in items if i.vector is None]
        if items:
            await super().embed(items)

    async def stage(self, items, conn=None):
        await self.run.ctx.graph.write(cypher.REEMBED_STAGE[self.name], {
            "rows": [{"id": i.key, "embedding": i.vector, "src": i.src} for i in items]})


class _ConversationLogs(_Source):
    name = "conversation_logs"
    store = "postgres"
    start = 0

    async def page(self, cursor, limit, conn=None, *, unstaged: bool = False):
        rows = await self.run.ctx.sql.reembed.log_page(int(cursor), limit, unstaged=unstaged, conn=conn)
        if not rows:
            return [], cursor
        previous = await self.run.ctx.sql.reembed.previous_contents(rows, conn=conn)
        mode = self.run.ctx.settings.embedding.turn_context
        items = []
        for r in rows:
            text = turn_text(previous.get(r["turn_id"]), r["content"], mode)
            items.append(_Item(r["id"], text, r["staged"], self.run.hash(text)))
        return items, rows[-1]["id"]

    async def stage(self, items, conn=None):
        await self.run.ctx.sql.reembed.stage(self.name, [(i.key, i.vector, i.src) for i in items], conn=conn)


class _Summaries(_Source):
    name = "episodic_summaries"
    store = "postgres"
    start = ("", "")

    async def page(self, cursor, limit, conn=None):
        rows = await self.run.ctx.sql.reembed.summary_page(tuple(cursor), limit, conn=conn)
        if not rows:
            return [], cursor
        items = []
        for r in rows:
            text = summary_text(EpisodicSummary(**{k: v for k, v in r.items() if k != "staged"}))
            items.append(_Item((r["user_id"], r["conversation_id"]), text, r["staged"], self.run.hash(text)))
        return items, [rows[-1]["user_id"], rows[-1]["conversation_id"]]

    async def stage(self, items, conn=None):
        await self.run.ctx.sql.reembed.stage(self.name, [(i.key, i.vector, i.src) for i in items], conn=conn)


class _Run:
    """One :func:`reembed` call: the target, the records of both stores, the counts."""

    def __init__(self, ctx: MemoryContext, embedder: Embedder, batch_size: int, progress: ReembedProgress):
        self.ctx, self.embedder, self.batch_size, self.progress = ctx, embedder, batch_size, progress
        self.model, self.dimension = embedder.model, int(embedder.dimension)
        self.report = ReembedReport(model=self.model, dimension=self.dimension)
        self.records: dict[str, dict[str, Any] | None] = {}

    def hash(self, text: str) -> str:
        """The source hash of a vector of the target model made from ``text``."""
        return _source_hash(self.model, self.dimension, text)

    def sources(self, store: str) -> list[_Source]:
        """The labels or tables of ``store``, in the order a re-embed visits them (the log before the graph's Turn
        nodes, which reuse its vectors)."""
        if store == "postgres":
            return [_ConversationLogs(self), _Summaries(self)]
        return [_GraphLabel(self, label) for label in cypher.REEMBED_LABELS]

    # --- records ----------------------------------------------------------------------------------------------

    async def load(self) -> list[str]:
        """Read both stores' generations and records; start records where needed; return the stores still to do."""
        graph_active = await self.ctx.graph.read(cypher.EMBEDDING_META_READ)
        active = {"graph": dict(graph_active[0]) if graph_active else {},
                  "postgres": await self.ctx.sql.reembed.active()}
        graph_record = await self.ctx.graph.read(cypher.REEMBED_RECORD)
        self.records = {"graph": _graph_record(graph_record[0]) if graph_record else None,
                        "postgres": await self.ctx.sql.reembed.record()}
        target = (self.model, self.dimension)
        todo = []
        for store in ("postgres", "graph"):
            record = self.records[store]
            current = (active[store].get("model"), active[store].get("dimension"))
            if record is not None and (record["model"], record["dimension"]) != target:
                raise ConflictError(
                    f"the {store} store is being re-embedded to {record['model']!r} (dimension {record['dimension']}),"
                    f" not {self.model!r} (dimension {self.dimension}): finish that re-embed first")
            if record is None and current == target:
                continue  # this store serves the target's vectors already
            self.report.previous[store] = {"model": current[0], "dimension": current[1]}
            if record is None:
                record = {"model": self.model, "dimension": self.dimension, "started_at": int(time.time() * 1000),
                          "phase": "staging", "cursors": {}}
                self.records[store] = record
                await self.save(store)
            todo.append(store)
        return todo

    async def save(self, store: str) -> None:
        """Write ``store``'s record as it is now."""
        record = self.records[store]
        assert record is not None
        if store == "postgres":
            await self.ctx.sql.reembed.save_record(record)
        else:
            await self.ctx.graph.write(cypher.REEMBED_RECORD_SAVE, {**record, "cursors": json.dumps(record["cursors"])})

    # --- staging ----------------------------------------------------------------------------------------------

    async def stage_pass(self, source: _Source, *, resume: bool, conn: Connection | None = None,
                         stage_name: str | None = None) -> int:
        """Stage every item of ``source`` whose staged hash is not the wanted one; from the record's cursor when
        ``resume`` (saving it after each batch), else from the start. Returns how many vectors were staged."""
        record = self.records[source.store]
        assert record is not None
        cursor = record["cursors"].get(source.name, source.start) if resume else source.start
        done = staged = 0
        while True:
            items, cursor = await source.page(cursor, self.batch_size, conn)
            if not items:
                break
            wanted = [i for i in items if i.staged != i.src]
            if wanted:
                await source.embed(wanted)
                await source.stage(wanted, conn)
            staged += len(wanted)
            self.report.embedded[source.name] = self.report.embedded.get(source.name, 0) + len(wanted)
            self.report.skipped[source.name] = self.report.skipped.get(source.name, 0) + len(items) - len(wanted)
            done += len(items)
            if resume:
                record["cursors"][source.name] = cursor
                await self.save(source.store)
            self.progress(stage_name or f"staging {source.name}", done)
            if len(items) < self.batch_size:
                break
        return staged

    async def stage_all(self, stores: list[str]) -> None:
        """Steps 1 and 2: stage from the cursors, then catch up until a pass stages nothing."""
        sources = [s for store in stores for s in self.sources(store)]
        for source in sources:
            await self.stage_pass(source, resume=True)
        for _ in range(MAX_CATCH_UP_PASSES):
            caught = 0
            for source in sources:
                caught += await self.stage_pass(source, resume=False, stage_name=f"catching up {source.name}")
            if not caught:
                return
        raise ConflictError(f"rows kept arriving faster than {MAX_CATCH_UP_PASSES} catch-up passes staged them; "
                            "run the re-embed again when writes are quieter (its staging is kept)")

    # --- switching --------------------------------------------------------------------------------------------

    async def switch_graph(self) -> None:
        """Stage the stragglers of every label, drop the vector indexes, swap every label's vectors in one
        :meth:`GraphStore.batch` (one transaction on Neo4j, one MULTI/EXEC on FalkorDB: a reader sees the old
        vectors or the new ones, never a mix), then index at the new dimension. While the indexes are rebuilt,
        vector reads scan exactly (slower, same answers)."""
        record = self.records["graph"]
        assert record is not None
        sources = self.sources("graph")
        for source in sources:
            await self.stage_pass(source, resume=False, stage_name=f"catching up {source.name}")
        for source in sources:
            await self.ctx.graph.drop_vector_index(source.name)
        swaps: list[Statement] = []
        for source in sources:
            cursor = source.start
            while True:
                rows = await self.ctx.graph.read(cypher.REEMBED_PAGE[source.name],
                                                 {"after": cursor, "limit": self.batch_size})
                if rows:
                    swaps.append(Statement(cypher.REEMBED_SWAP[source.name], {"ids": [r["id"] for r in rows]}))
                    cursor = rows[-1]["id"]
                if len(rows) < self.batch_size:
                    break
        self.progress("switching the graph", len(swaps))
        await self.ctx.graph.batch(swaps)
        for source in sources:
            await self.ctx.graph.create_vector_index(source.name, dimension=self.dimension)
        record["cursors"][_SWITCHED] = [source.name for source in sources]
        await self.save("graph")

    async def record_graph_generation(self) -> None:
        """Record the target as the graph's active generation (every label is switched)."""
        await self.ctx.graph.write(cypher.EMBEDDING_META_SWITCH, {"model": self.model, "dimension": self.dimension,
                                                                  "now": int(time.time() * 1000)})

    async def switch_postgres(self, *, graph_too: bool) -> None:
        """One transaction: stage what arrived since the catch-up, swap the columns, record the new model -- and,
        with ``graph_too``, the graph's new generation just before the commit, so that a failure anywhere before
        the commit leaves both stores recording the old model (their next open and this re-embed's rerun agree)."""
        rows = self.ctx.sql.reembed
        async with rows.switching() as conn:
            logs, summaries = self.sources("postgres")
            assert isinstance(logs, _ConversationLogs)
            cursor: Any = logs.start
            while True:  # new log rows: their text never changes (a stored turn is immutable), so "unstaged" is all
                items, cursor = await logs.page(cursor, self.batch_size, conn, unstaged=True)
                if not items:
                    break
                await logs.embed(items)
                await logs.stage(items, conn)
                self.report.embedded[logs.name] = self.report.embedded.get(logs.name, 0) + len(items)
            await self.stage_pass(summaries, resume=False, conn=conn, stage_name="switching episodic_summaries")
            await rows.swap(conn, model=self.model, dimension=self.dimension)
            if graph_too:
                await self.record_graph_generation()
        self.progress("switched postgres", 1)


def _graph_record(row: dict[str, Any]) -> dict[str, Any]:
    return {**row, "cursors": json.loads(row.get("cursors") or "{}")}


def target_embedder(settings: EmbeddingSettings, model: str, dimension: int) -> Embedder:
    """The embedder of ``model`` / ``dimension`` with the other embedding settings of ``settings`` (batch size,
    cache); :class:`~agentx_memory.errors.ConfigurationError` for an unknown model or a wrong dimension."""
    if not isinstance(model, str) or not model:
        raise ValidationError("model", f"must be a 'provider:model' string, got {model!r}")
    check_int(dimension, "dimension", low=8, high=4096)
    return make_embedder(EmbeddingSettings(**{**settings.model_dump(), "model": model, "dimension": dimension}))


async def reembed(ctx: MemoryContext, target: Embedder | EmbeddingSettings, *, batch_size: int = 256,
                  progress: ReembedProgress | None = None) -> ReembedReport:
    """Re-embed every vector of both stores with ``target`` (an embedder, or embedding settings naming the model
    and dimension) and switch to the new vectors (see the module docstring); return what was done.

    Resumable: a rerun with the same target after an interruption (an error, a crash, an exception raised by
    ``progress``) continues from the saved cursors and skips rows already staged. Another target while one is in
    progress is a :class:`~agentx_memory.errors.ConflictError`. A run on stores that already serve the target does
    nothing and reports ``switched=True``. After the switch, reopen the memory with the new model: this one (and
    every other process) still embeds queries with the old model, and the stores refuse it.
    """
    check_int(batch_size, "batch_size", low=1, high=10_000)
    embedder = target if isinstance(target, Embedder) else make_embedder(target)
    run = _Run(ctx, embedder, batch_size, progress or _quiet)
    started = time.monotonic()
    todo = await run.load()
    if any(run.records[s] and run.records[s]["phase"] == "staging" for s in todo):  # type: ignore[index]
        await run.stage_all(todo)
        for store in todo:
            run.records[store]["phase"] = "switching"  # type: ignore[index]
            await run.save(store)
    if "graph" in todo:
        await run.switch_graph()
    if "postgres" in todo:
        await run.switch_postgres(graph_too="graph" in todo)
    elif "graph" in todo:
        await run.record_graph_generation()
    if "graph" in todo:
        await ctx.graph.write(cypher.REEMBED_RECORD_DELETE)
    run.report.switched = True
    run.report.seconds = time.monotonic() - started
    return run.report


async def reembed_status(ctx: MemoryContext) -> dict[str, dict[str, Any]]:
    """Per store (``graph``, ``postgres``): the ``active`` generation (model, dimension) and the re-embed in
    progress (``reembed``: target model, dimension, ``started_at`` in epoch ms, ``phase``, ``cursors``), or None."""
    graph_active = await ctx.graph.read(cypher.EMBEDDING_META_READ)
    graph_record = await ctx.graph.read(cypher.REEMBED_RECORD)
    return {
        "graph": {"active": dict(graph_active[0]) if graph_active else {},
                  "reembed": _graph_record(graph_record[0]) if graph_record else None},
        "postgres": {"active": await ctx.sql.reembed.active(), "reembed": await ctx.sql.reembed.record()},
    }
