"""One module per job. Each job is ``async def run(memory: AsyncAgentMemory) -> dict`` (a summary for the log)."""
