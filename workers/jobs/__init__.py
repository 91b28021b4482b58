"""One module per job. Each job is ``async def run(memory: AsyncAgentMemory) -> dict[str, Any]`` (a summary for the
log) and uses the public API of :class:`~agentx_memory.AsyncAgentMemory` only: no ``memory.ctx``, no subsystem, no
SQL or Cypher of its own. What a job needs that the API lacks becomes a documented method of the API first."""
