"""Integrations with agent frameworks, each an optional extra built on the public API of the memory.

``langgraph``  :class:`~agentx_memory.integrations.langgraph.AgentXStore`, a LangGraph ``BaseStore``
               (``pip install 'agentx-memory[langgraph]'``; docs/langgraph.md)
"""
