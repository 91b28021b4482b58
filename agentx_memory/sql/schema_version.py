"""The schema version of a namespace (the highest migration applied to its PostgreSQL schema), as statements for the
pool and as one ``psql`` script for the embedded server, so ``agentx-memory status`` can read it without psycopg.

This module imports nothing but the standard library."""

from __future__ import annotations

from typing import Final, LiteralString

__all__ = ["MAX_VERSION", "PRESENT", "VERSION_SCRIPT", "version_from_script"]

#: Whether the schema on the ``search_path`` is migrated (has the ``schema_version`` table): column ``present``.
PRESENT: Final[LiteralString] = "SELECT to_regclass('schema_version') IS NOT NULL AS present"

#: The highest migration applied: column ``v``.
MAX_VERSION: Final[LiteralString] = "SELECT max(version) AS v FROM schema_version"

#: :data:`PRESENT` then :data:`MAX_VERSION` as a psql script of the schema named by the psql variable ``schema``
#: (quoted by psql as an identifier): prints the version, or nothing when the schema is not migrated.
VERSION_SCRIPT: Final[str] = f"""SET search_path TO :"schema";
{PRESENT} \\gset
\\if :present
{MAX_VERSION};
\\endif
"""


def version_from_script(printed: str) -> int | None:
    """The version :data:`VERSION_SCRIPT` printed (unaligned, tuples only); None when it printed none."""
    text = printed.strip()
    return int(text) if text else None
