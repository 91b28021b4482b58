"""Which merges a dedup run makes from the duplicate pairs it found (each cluster merges into its best member), and
the unit vectors pairs are compared with."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

__all__ = ["plan_merges", "unit_rows"]


def plan_merges(pairs: Sequence[tuple[float, int, int]], standing: Sequence[Any]
                ) -> tuple[list[tuple[int, int, float]], int]:
    """``(survivor, loser, cosine)`` merges and the number of members left out, from duplicate ``pairs``
    ``(cosine, i, j)``.

    Pairs are joined into clusters; each cluster's survivor is its best member by ``standing`` (a sort key per
    item, lowest first), and
    every other member merges into it directly, but only if it was found a duplicate *of the survivor* (being a
    duplicate of a duplicate is not enough: "Sam Porto" and "Sam Lee" both pair with "Sam" and must stay apart).
    So the result does not depend on the order the pairs were found in, and no merge chains through a loser."""
    parent: dict[int, int] = {}

    def root(i: int) -> int:
        while parent.setdefault(i, i) != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    cosine = {}
    for c, i, j in pairs:
        cosine[(min(i, j), max(i, j))] = c
        parent[root(i)] = root(j)
    clusters: dict[int, list[int]] = {}
    for i in parent:
        clusters.setdefault(root(i), []).append(i)
    merges, left_out = [], 0
    for members in clusters.values():
        survivor, *others = sorted(members, key=lambda i: standing[i])
        for member in others:
            found = cosine.get((min(survivor, member), max(survivor, member)))
            if found is None:
                left_out += 1
            else:
                merges.append((survivor, member, found))
    merges.sort(key=lambda m: (-m[2], standing[m[1]]))
    return merges, left_out


def unit_rows(items: Sequence[dict[str, Any]]) -> np.ndarray:
    """The items' ``embedding`` vectors as unit rows (a zero vector stays zero), so a dot product is the cosine."""
    vectors = np.asarray([item["embedding"] for item in items], dtype=np.float64)
    return vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
