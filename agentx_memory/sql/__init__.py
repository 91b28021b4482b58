"""PostgreSQL side: connection pool, migrations, and the durable logs (conversation, tool, timeline, audit)."""

from .postgres import PostgresStore, migrate, schema_dir

__all__ = ["PostgresStore", "migrate", "schema_dir"]
