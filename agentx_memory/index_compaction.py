"""Rebuilding vector indexes that have filled with dead vectors (the ``compact_indexes`` worker job).

FalkorDB re-indexes a node whenever any of its properties changes -- a recall's reinforcement (``access_count``), an
entity merged with a new mention, a fact superseded -- and its vector index keeps the node's previous vector, dead,
until the index is rebuilt. Dead vectors cost memory (about 1.8 KB each at 384 dimensions) and crowd every search: the
index's nearest ``k`` hold fewer live nodes the more are dead (after four updates of every node, a search for 10
returned 2-3). Searches still find the tenant's nearest nodes (:meth:`~agentx_memory.graph.port.GraphStore.read_vectors`
counts the dead vectors into its fetch and scans instead when the index is not worth it), so this job is about memory
and speed.

The dead vectors are measured, not read off the database's document count, which also counts re-indexings before a
node held a vector (FalkorDB: :meth:`~agentx_memory.graph.port.GraphStore.vector_index_usage` probes the index).
An index whose dead share reaches ``worker.compact_dead_share`` and that holds at least ``worker.compact_min_dead``
dead vectors is dropped and created again; the database builds it in the background from the live nodes, and
searches scan the label's nodes until it is done. Neo4j reclaims deleted vectors itself: there the job finds nothing
to do.
"""

from __future__ import annotations

from typing import Any

from .errors import ValidationError
from .graph.port import GraphStore
from .polling import await_until

__all__ = ["check_wait_seconds", "compact_vector_indexes", "wait_for_vector_indexes"]


def check_wait_seconds(value: float) -> None:
    """Refuse a wait that is not a number of seconds in [0, 86400] (:class:`ValidationError` naming
    ``wait_seconds``)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 86_400:
        raise ValidationError("wait_seconds", f"must be a number of seconds in [0, 86400], got {value!r}")


async def compact_vector_indexes(graph: GraphStore, *, min_dead_share: float, min_dead: int, dry_run: bool = False
                                 ) -> dict[str, dict[str, Any]]:
    """Rebuild each vector index whose dead share is at least ``min_dead_share`` and that holds ``min_dead`` dead
    vectors or more; ``dry_run`` only reports. Returns, per label with an index the database reports on, its
    ``live`` and ``entries`` counts, its ``dead_share`` and what was done: ``rebuilt`` (True when a rebuild was
    started, or would be in a dry run) and ``building`` (a rebuild already in progress, left alone)."""
    report: dict[str, dict[str, Any]] = {}
    for label, usage in (await graph.vector_index_usage()).items():
        due = (not usage.building and usage.entries - usage.live >= min_dead
               and usage.dead_share >= min_dead_share and usage.dimension > 0)
        if due and not dry_run:
            await graph.create_vector_index(label, dimension=usage.dimension)  # drops the old one first
        report[label] = {"live": usage.live, "entries": usage.entries, "dead_share": round(usage.dead_share, 3),
                         "building": usage.building, "rebuilt": due}
    return report


async def wait_for_vector_indexes(graph: GraphStore, *, timeout: float) -> None:
    """Return once no vector index is being built, or raise
    :class:`~agentx_memory.polling.WaitTimeoutError` after ``timeout`` seconds."""
    check_wait_seconds(timeout)

    async def built() -> bool:
        return not any(usage.building for usage in (await graph.vector_index_usage()).values())

    await await_until(built, timeout=timeout, interval=0.2, what="the vector indexes to be built")
