"""Model providers: embeddings and LLMs, chosen with ``"provider:model"`` strings."""

from .embeddings import Embedder, make_embedder

__all__ = ["Embedder", "make_embedder"]
