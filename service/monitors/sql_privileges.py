"""Warnings about a SQL monitor's database user: a superuser, or one that can write or read server files.

The query check and the READ ONLY transaction are layers; the one that holds whatever they
miss is a database user with read-only grants. These warnings are shown on the monitor (its
JSON ``source_warnings``) and stored with its definition; they never block it.
"""
from __future__ import annotations

import logging
from typing import Any

from sqlalchemy import text

log = logging.getLogger("contextshift.monitors")
_ADVICE = "give the monitor a read-only user (GRANT SELECT only; see the README's monitoring section)"
_POSTGRES_PRIVILEGES = text("""
SELECT current_user AS name, r.rolsuper AS superuser,
       has_database_privilege(current_database(), 'CREATE') AS creates,
       EXISTS (SELECT 1 FROM pg_namespace n WHERE n.nspname NOT LIKE 'pg\\_%' AND n.nspname <> 'information_schema'
               AND has_schema_privilege(n.oid, 'CREATE')) AS creates_in_schema,
       EXISTS (SELECT 1 FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
               WHERE c.relkind IN ('r', 'p') AND n.nspname NOT LIKE 'pg\\_%' AND n.nspname <> 'information_schema'
                 AND has_table_privilege(c.oid, 'INSERT, UPDATE, DELETE, TRUNCATE')) AS writes,
       pg_has_role(current_user, 'pg_read_server_files', 'MEMBER')
         OR pg_has_role(current_user, 'pg_write_server_files', 'MEMBER')
         OR pg_has_role(current_user, 'pg_execute_server_program', 'MEMBER') AS server_files
FROM pg_roles r WHERE r.rolname = current_user
""")


def postgres_warnings(conn: Any) -> list[str]:
    row = conn.execute(_POSTGRES_PRIVILEGES).mappings().first()
    if row is None:
        return []
    user = row["name"]
    if row["superuser"]:
        return [f"unsafe: the database user {user!r} is a superuser: {_ADVICE}"]
    warnings = []
    if row["writes"] or row["creates"] or row["creates_in_schema"]:
        warnings.append(f"unsafe: the database user {user!r} can write (INSERT, UPDATE, DELETE, TRUNCATE or "
                        f"CREATE): {_ADVICE}")
    if row["server_files"]:
        warnings.append(f"unsafe: the database user {user!r} may read or write server files or run programs "
                        f"(pg_read_server_files, pg_write_server_files, pg_execute_server_program): {_ADVICE}")
    return warnings


def source_warnings(engine: Any) -> list[str]:
    """What is unsafe about the database user of ``engine`` (PostgreSQL); nothing for other databases."""
    if engine.dialect.name != "postgresql":
        return []
    try:
        with engine.connect() as conn:
            return postgres_warnings(conn)
    except Exception as exc:  # an unreachable database is reported by the runs, not here
        log.warning("could not check the monitor database user's privileges: %s", type(exc).__name__)
        return ["the database user's privileges could not be checked (the database did not answer)"]
