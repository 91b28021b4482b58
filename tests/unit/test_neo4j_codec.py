"""The Neo4j driver runs with its Rust packstream codec (``neo4j-rust-ext``, a dependency): without it a recall on
Neo4j spends 3-4 ms more client CPU packing the question's vector and unpacking rows (docs/benchmarks.md)."""

from __future__ import annotations

import importlib.metadata

from neo4j._codec.packstream import v1


def test_the_rust_codec_is_installed_for_the_installed_driver():
    # the extension pins the driver's exact version (6.4.1.0 needs neo4j 6.4.1): a mismatch would import the driver
    # without it, silently slower
    driver = importlib.metadata.version("neo4j")
    ext = importlib.metadata.version("neo4j-rust-ext")
    assert ext.rsplit(".", 1)[0] == driver
    assert v1._rust_pack is not None and v1._rust_unpack is not None
