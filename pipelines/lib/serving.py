"""The serving database's analysts: one group role, one login per person, least privilege; and
the rare publish that must replace a mart readers may be holding.

The group (`TALENT_PUBLISH_READER_ROLE`, default `talent_analysts`) cannot log in. It may
connect to the serving database and read schema `marts` (the publish grants that), and create
views in schema `analyst_views`, which the publish never drops. Nothing else: no temporary
tables (no TEMP on the database), nothing in `public`. Each person logs in as a login of their
own in the group (`talent analysts add NAME`), so one person changing their password (which
PostgreSQL always lets a login do, and nothing short of a server extension can stop) locks out
only themselves, and `talent analysts remove NAME` ends one person's access.

The group carries the timeouts (`statement_timeout`, `idle_in_transaction_session_timeout`);
PostgreSQL applies a role's settings only to sessions of that very role, never to its members,
so `add` copies them onto each login. A session may still raise its own: the publish does not
rely on them (it never waits on a reader, `replace_table`).

CONNECT on the other databases (`postgres`, `template1`, ...) is PUBLIC's by default and only
their owner (a superuser) can take it back; `add` lists every other database the new login can
connect to, with the statement that closes it.

Whoever runs these needs CREATEROLE on the server and ownership of the serving database (the
pipeline's role, `talent`, as `make postgres` provisions it). Every login created is also
administered by that role (`admin`), so it can end the login's sessions and drop its views.
"""

from __future__ import annotations

import re
import secrets
import time
from dataclasses import dataclass

from psycopg2 import errors, sql

from pipelines.lib.postgres import PostgresError, connect, describe

DEFAULT_GROUP = "talent_analysts"
VIEWS_SCHEMA = "analyst_views"
# On the group, copied onto every login: a query runs at most this long, and a transaction
# left open without a statement is ended after this long.
TIMEOUTS = {"statement_timeout": "10min", "idle_in_transaction_session_timeout": "5min"}
LOGIN_NAME = re.compile(r"[a-z][a-z0-9_]{1,47}")
# How long `replace_table` asks for a mart's lock (without queueing) before it ends the
# analysts' sessions holding it, and how long after that before it gives up.
LOCK_GRACE_SECONDS = 5.0


@dataclass(frozen=True)
class NewLogin:
    name: str
    password: str
    # other databases the login can still connect to (PUBLIC's CONNECT there), each with the
    # statement a superuser runs to close it
    open_databases: dict[str, str]


def ensure_group(cur, group: str, database: str) -> None:
    """The group role, its timeouts and its privileges on `database` (idempotent)."""
    cur.execute("select 1 from pg_roles where rolname = %s", [group])
    role = sql.Identifier(group)
    if cur.fetchone() is None:
        cur.execute(sql.SQL("create role {} nologin").format(role))
    for name, value in TIMEOUTS.items():
        cur.execute(
            sql.SQL("alter role {} set {} = {}").format(
                role, sql.Identifier(name), sql.Literal(value)
            )
        )
    db_name = sql.Identifier(database)
    # no TEMP, no CONNECT for PUBLIC; the group may connect, nothing more
    cur.execute(sql.SQL("revoke all on database {} from public").format(db_name))
    cur.execute(sql.SQL("grant connect on database {} to {}").format(db_name, role))
    cur.execute("revoke all on schema public from public")
    views = sql.Identifier(VIEWS_SCHEMA)
    cur.execute(sql.SQL("create schema if not exists {}").format(views))
    cur.execute(
        sql.SQL("comment on schema {} is {}").format(
            views,
            sql.Literal(
                "views analysts build on marts; the nightly publish keeps them (it never "
                "drops this schema)"
            ),
        )
    )
    cur.execute(sql.SQL("revoke all on schema {} from public").format(views))
    cur.execute(sql.SQL("grant usage, create on schema {} to {}").format(views, role))


def open_databases(cur, login: str, serving: str) -> dict[str, str]:
    """Other databases `login` can connect to, each with the statement that closes it."""
    cur.execute(
        "select datname from pg_database where datallowconn and datname <> %s "
        "and has_database_privilege(%s, oid, 'connect') order by 1",
        [serving, login],
    )
    return {
        d: sql.SQL("revoke connect, temporary on database {} from public")
        .format(sql.Identifier(d))
        .as_string(cur)
        for (d,) in cur.fetchall()
    }


def add_login(dsn: str, name: str, group: str, password: str | None = None) -> NewLogin:
    """Create login `name` in `group` (the group first, when missing) with a new password, or
    give an existing login of the group a new one."""
    if not LOGIN_NAME.fullmatch(name):
        raise PostgresError(
            f"{name!r} is not a usable login name: lower-case letters, digits and _, starting "
            "with a letter, 2 to 48 characters (for example jdoe or j_doe)."
        )
    password = password or secrets.token_urlsafe(18)
    con = connect(dsn, "talent-metrics analysts")
    try:
        cur = con.cursor()
        database = con.get_dsn_parameters()["dbname"]
        ensure_group(cur, group, database)
        login = sql.Identifier(name)
        cur.execute(
            "select rolcanlogin, pg_has_role(%s, %s, 'member') from pg_roles where rolname = %s",
            [name, group, name],
        )
        found = cur.fetchone()
        if found is None:
            cur.execute(
                sql.SQL("create role {} login in role {} admin current_user").format(
                    login, sql.Identifier(group)
                )
            )
        elif not (found[0] and found[1]):
            raise PostgresError(
                f"a role {name!r} already exists on {describe(dsn)} and is not a login of "
                f"{group}: choose another name."
            )
        cur.execute(
            sql.SQL("alter role {} login nocreatedb nocreaterole password {}").format(
                login, sql.Literal(password)
            )
        )
        for setting, value in TIMEOUTS.items():
            cur.execute(
                sql.SQL("alter role {} set {} = {}").format(
                    login, sql.Identifier(setting), sql.Literal(value)
                )
            )
        opened = open_databases(cur, name, database)
        con.commit()
    except Exception:
        con.rollback()
        raise
    finally:
        con.close()
    return NewLogin(name, password, opened)


def remove_login(dsn: str, name: str, group: str) -> list[str]:
    """End `name`'s sessions, drop what it owns in the serving database (its views in
    analyst_views) and the login; returns what was dropped."""
    con = connect(dsn, "talent-metrics analysts")
    try:
        cur = con.cursor()
        cur.execute(
            "select pg_has_role(%s, %s, 'member') from pg_roles where rolname = %s",
            [name, group, name],
        )
        found = cur.fetchone()
        if found is None or not found[0]:
            raise PostgresError(f"there is no login {name!r} of {group} on {describe(dsn)}.")
        cur.execute(
            "select c.relkind, n.nspname || '.' || c.relname from pg_class c join pg_namespace "
            "n on n.oid = c.relnamespace where c.relowner = %s::regrole order by 2",
            [name],
        )
        owned = [f"{'view' if kind == 'v' else 'table'} {what}" for kind, what in cur.fetchall()]
        login = sql.Identifier(name)
        cur.execute(sql.SQL("alter role {} nologin").format(login))
        cur.execute(
            "select pg_terminate_backend(pid) from pg_stat_activity where usename = %s", [name]
        )
        cur.execute(sql.SQL("drop owned by {}").format(login))
        cur.execute(sql.SQL("drop role {}").format(login))
        con.commit()
    except Exception:
        con.rollback()
        raise
    finally:
        con.close()
    return owned


# --- replacing a mart readers may hold -------------------------------------------------------


def _try_lock(cur, target: sql.Composed) -> bool:
    """The table's exclusive lock if no session holds a lock on it, without queueing (a queued
    request would make every new reader of the table wait behind it)."""
    cur.execute("savepoint talent_lock")
    try:
        cur.execute(sql.SQL("lock table {} in access exclusive mode nowait").format(target))
    except errors.LockNotAvailable:
        cur.execute("rollback to savepoint talent_lock")
        return False
    cur.execute("release savepoint talent_lock")
    return True


def end_readers(cur, target: sql.Composed, label: str, group: str) -> list[str]:
    """End the sessions of `group`'s logins that hold a lock on `target`; one line each."""
    cur.execute(
        "select a.pid, a.usename, a.state, date_trunc('second', now() - a.xact_start)::text "
        "from pg_locks l join pg_stat_activity a on a.pid = l.pid where l.relation = "
        "%s::regclass and a.pid <> pg_backend_pid() and pg_has_role(a.usename, %s, 'member') "
        "and a.usename <> current_user",
        [target.as_string(cur), group],
    )
    ended = []
    for pid, user, state, age in cur.fetchall():
        cur.execute("select pg_terminate_backend(%s)", [pid])
        ended.append(
            f"ended the session of analyst {user} ({state}, transaction open {age}) that held "
            f"{label}, whose columns this publish changes (or which it no longer publishes)"
        )
    return ended


def _lock_for_replacement(cur, target: sql.Composed, label: str, group: str) -> list[str]:
    notes: list[str] = []
    deadline = time.monotonic() + LOCK_GRACE_SECONDS
    while not _try_lock(cur, target):
        if time.monotonic() > deadline:
            if notes:
                raise PostgresError(
                    f"{label} is still held by a session that is not an "
                    f"analyst's ({group}) after {2 * LOCK_GRACE_SECONDS:.0f} s; see "
                    "pg_locks, end it, and publish again."
                )
            notes = end_readers(cur, target, label, group) or ["(no analyst session to end)"]
            deadline = time.monotonic() + LOCK_GRACE_SECONDS
        time.sleep(0.2)
    return [n for n in notes if not n.startswith("(")]


def _dependent_views(cur, target: sql.Composed) -> list[tuple]:
    """(name, owner, definition, grantees) of the views on `target`, in creation order."""
    cur.execute(
        "with recursive deps(oid) as (select distinct r.ev_class from pg_depend d join "
        "pg_rewrite r on r.oid = d.objid where d.classid = 'pg_rewrite'::regclass and "
        "d.refobjid = %s::regclass and r.ev_class <> d.refobjid union select distinct "
        "r.ev_class from deps join pg_depend d on d.refobjid = deps.oid join pg_rewrite r on "
        "r.oid = d.objid where d.classid = 'pg_rewrite'::regclass and r.ev_class <> deps.oid) "
        "select quote_ident(n.nspname) || '.' || quote_ident(c.relname), "
        "pg_get_userbyid(c.relowner), pg_get_viewdef(c.oid), array(select "
        "pg_get_userbyid(x.grantee) from aclexplode(c.relacl) x where x.privilege_type = "
        "'SELECT' and x.grantee <> c.relowner) from deps join pg_class c on c.oid = deps.oid "
        "join pg_namespace n on n.oid = c.relnamespace order by c.oid",
        [target.as_string(cur)],
    )
    return cur.fetchall()


def replace_table(cur, schema: str, table: str, group: str) -> tuple[list[str], list[tuple]]:
    """Drop mart `schema.table` (its columns changed, or it is no longer published) so that
    the caller can move the new one in; returns lines for the run summary and the views that
    were dropped with it.

    The lock is asked for without queueing, every 0.2 s for LOCK_GRACE_SECONDS; then the
    sessions of the group's logins holding the table are ended (named in the summary), and
    another LOCK_GRACE_SECONDS allowed. Views on the table are dropped with it; the caller
    recreates them (`recreate_views`) once the new marts are in place.
    """
    target = sql.SQL("{}.{}").format(sql.Identifier(schema), sql.Identifier(table))
    notes = _lock_for_replacement(cur, target, f"{schema}.{table}", group)
    views = _dependent_views(cur, target)
    cur.execute(sql.SQL("drop table {} cascade").format(target))
    return notes, views


def recreate_views(cur, views: list[tuple]) -> list[str]:
    """Recreate the views `replace_table` dropped, as their owners, with their grants; a view
    whose definition no longer fits the new marts is left out and named (with its definition,
    so that its owner can adapt it)."""
    notes = []
    for name, owner, definition, grantees in views:
        cur.execute("savepoint talent_view")
        try:
            cur.execute(sql.SQL("set local role {}").format(sql.Identifier(owner)))
            cur.execute(sql.SQL("create view {} as {}").format(sql.SQL(name), sql.SQL(definition)))
            cur.execute("reset role")
            for grantee in grantees:
                cur.execute(
                    sql.SQL("grant select on {} to {}").format(
                        sql.SQL(name), sql.Identifier(grantee)
                    )
                )
            cur.execute("release savepoint talent_view")
            notes.append(f"recreated view {name} of {owner} on the changed marts")
        except errors.Error as exc:
            cur.execute("rollback to savepoint talent_view")
            notes.append(
                f"view {name} of {owner} no longer fits the marts ({str(exc).strip()}); "
                f"it was dropped. Its definition was: {' '.join(definition.split())}"
            )
    return notes


# --- keys for BI tools ---------------------------------------------------------------------


def mart_grains(manifest: dict, schema: str = "marts") -> dict:
    """Each mart's grain as dbt tests it: the columns of its `unique_combination_of_columns`
    test, or its one column with a `unique` test (table name -> postgres.Grain). A grain whose
    columns all have a `not_null` test becomes a primary key, else a unique constraint that
    treats NULLs as equal, as the test's `group by` does."""
    from pipelines.lib.postgres import Grain

    nodes = manifest.get("nodes", {})
    unique: dict[str, tuple[str, ...]] = {}
    not_null: dict[str, set[str]] = {}
    for node in nodes.values():
        meta = node.get("test_metadata") or {}
        model = nodes.get(node.get("attached_node") or "")
        if node.get("resource_type") != "test" or not model or model.get("schema") != schema:
            continue
        table = model.get("alias") or model["name"]
        kwargs = meta.get("kwargs") or {}
        if meta.get("name") == "unique_combination_of_columns":
            unique[table] = tuple(kwargs["combination_of_columns"])
        elif meta.get("name") == "unique" and table not in unique:
            unique[table] = (kwargs["column_name"],)
        elif meta.get("name") == "not_null":
            not_null.setdefault(table, set()).add(kwargs["column_name"])
    return {
        table: Grain(columns, primary=set(columns) <= not_null.get(table, set()))
        for table, columns in unique.items()
    }
