"""The background worker: APScheduler jobs that keep the memory healthy (``agentx-memory worker``)."""
