"""Benchmarks shipped with the package (``agentx-memory bench ...``): LoCoMo evidence recall and scale."""
