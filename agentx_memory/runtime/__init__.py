"""The embedded runtime: FalkorDB (redis-server + module) and PostgreSQL 18 + pgvector from pip wheels.

Used when no external database is configured. Both servers run as daemons in a data directory
(``EmbeddedSettings.home``, default ``./.agentx``), listen on unix sockets, and are shared by every process that
uses the same data directory::

    stack = EmbeddedStack(settings.embedded)
    endpoints = stack.ensure_running()      # starts them if needed (cross-process safe)
    FalkorDB(unix_socket_path=str(endpoints.falkordb_socket))
    psycopg.connect(endpoints.postgres_dsn)

Modules: ``stack`` (both servers of a data directory, the lock, the socket directory) · ``managed`` (the
probe/start/wait/stop state machine both servers share) · ``falkordb`` and ``postgres`` (the server-specific steps)
· ``processes`` (pids, sockets, ports, commands; waits go through :mod:`agentx_memory.polling`) · ``layout``
(paths inside the data directory) · ``locks`` (the cross-process lock).
"""

from .stack import EmbeddedStack, Endpoints

__all__ = ["EmbeddedStack", "Endpoints"]
