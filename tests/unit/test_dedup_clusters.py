"""How a dedup run turns duplicate pairs into merges (agentx_memory.dedup.clusters)."""

from __future__ import annotations

import random

from agentx_memory.dedup.clusters import plan_merges


def test_every_member_merges_into_the_best_one_whatever_the_order_of_the_pairs():
    # 0 "Sam" (little used), 1 "Sam Lee" (most used), 2 "Sammy": all duplicates of each other
    pairs = [(0.95, 0, 1), (0.97, 0, 2), (0.93, 1, 2)]
    standing = [2, 0, 1]
    for seed in range(5):
        shuffled = pairs[:]
        random.Random(seed).shuffle(shuffled)
        assert plan_merges(shuffled, standing) == ([(1, 0, 0.95), (1, 2, 0.93)], 0)


def test_a_duplicate_of_a_duplicate_is_not_merged():
    # "Sam Lee" (1, the best) and "Sam Porto" (2) both pair with "Sam" (0), not with each other
    merges, left_out = plan_merges([(0.95, 0, 1), (0.96, 0, 2)], [1, 0, 2])
    assert merges == [(1, 0, 0.95)] and left_out == 1


def test_separate_clusters_merge_separately():
    merges, left_out = plan_merges([(0.99, 0, 1), (0.92, 2, 3)], [0, 1, 1, 0])
    assert merges == [(0, 1, 0.99), (3, 2, 0.92)] and left_out == 0
