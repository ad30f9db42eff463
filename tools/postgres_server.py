"""A local PostgreSQL server for development and tests (`make postgres`, `make postgres-stop`).

Debian's PostgreSQL binaries, run as the unprivileged `postgres` user when started by root (the
server refuses to run as root), with its data, socket and log in `.postgres/` of the checkout
(or, when the `postgres` user cannot reach the checkout, as in a private `mktemp -d` folder, in a
folder of its own under /var/tmp named after the checkout; `.postgres/server-dir` says where),
listening on 127.0.0.1 only, on a port of its own (`POSTGRES_PORT`, default 55432) so that it
does not collide with a server another checkout runs.

It provisions what the pipeline and the tests expect:

- role `talent` (login, may create databases and roles): owns database `talent`, where the
  marts are published for analysts, and `talent_build`, where dbt can build
  (`--build-target postgres`); it makes the analysts' logins (`talent analysts add`);
- group `talent_analysts` and its login `analyst` (made as `talent analysts add analyst` makes
  one): `connect` on `talent`, `select` on schema `marts` (publishing grants it), views in
  `analyst_views`; no other database, `postgres` and `template1` included (CONNECT and TEMP
  are taken from PUBLIC there);
- database `talent_dagster` (owned by `talent`) for Dagster's run, event-log and schedule
  storage (deploy/dagster-postgres.yaml).

Passwords come from `TALENT_PG_PASSWORD` and `TALENT_ANALYST_PASSWORD` when set, else from the
previous start, else they are generated. They are written, with the port and the DSNs, to
`.postgres/env` (mode 600, git-ignored, never committed): `source .postgres/env` puts them in
the environment, which is where `talent run` reads a password from (`PGPASSWORD`).

    python -m tools.postgres_server start [--port N]
    python -m tools.postgres_server stop
    python -m tools.postgres_server status
"""

from __future__ import annotations

import argparse
import hashlib
import os
import pwd
import secrets
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

CHECKOUT = Path(__file__).resolve().parent.parent
DEFAULT_DIR = CHECKOUT / ".postgres"
DEFAULT_PORT = 55432
SERVER_USER = "postgres"  # the unprivileged user Debian's package creates
PIPELINE_ROLE = "talent"
ANALYST_ROLE = "analyst"  # a login in ANALYST_GROUP, for trying things and the tests
ANALYST_GROUP = "talent_analysts"
SERVING_DB = "talent"
BUILD_DB = "talent_build"
DAGSTER_DB = "talent_dagster"


class ServerError(RuntimeError):
    """The local server cannot be started or stopped; the message says what to do."""


def bin_dir() -> Path:
    """The newest installed PostgreSQL's binaries (Debian keeps them out of PATH)."""
    found = sorted(
        Path("/usr/lib/postgresql").glob("*/bin"),
        key=lambda p: int(p.parent.name) if p.parent.name.isdigit() else 0,
    )
    if found and (found[-1] / "initdb").exists():
        return found[-1]
    on_path = shutil.which("initdb")
    if on_path:
        return Path(on_path).parent
    raise ServerError(
        "PostgreSQL is not installed: `apt-get install -y postgresql` (Debian's package; "
        ".ci/run installs it)."
    )


def _as_server_user(argv: list[str]) -> list[str]:
    """Run as `postgres` when we are root (initdb and the server refuse root), else as us."""
    if os.geteuid() != 0:
        return argv
    return ["runuser", "-u", SERVER_USER, "--", *argv]


def _server_uid_gid() -> tuple[int, int] | None:
    if os.geteuid() != 0:
        return None
    try:
        entry = pwd.getpwnam(SERVER_USER)
    except KeyError:
        raise ServerError(
            f"there is no `{SERVER_USER}` user to run the server as (PostgreSQL refuses root): "
            "`apt-get install -y postgresql` creates it."
        ) from None
    return entry.pw_uid, entry.pw_gid


def _owned_dir(path: Path) -> None:
    path.mkdir(parents=True, exist_ok=True)
    ids = _server_uid_gid()
    if ids:
        os.chown(path, *ids)
    path.chmod(0o700)


def server_dir(folder: Path) -> Path:
    """Where the server's data, socket and log live: `folder` (`.postgres/` of the checkout) when
    the server user can reach it, else `/var/tmp/talent-postgres-<hash of folder>` (recorded in
    `folder/server-dir`, so that stop and status find it)."""
    pointer = folder / "server-dir"
    if pointer.exists():
        return Path(pointer.read_text().strip())
    if os.geteuid() != 0 or _server_user_reaches(folder.parent):
        return folder
    key = hashlib.sha256(str(folder).encode()).hexdigest()[:12]
    home = Path("/var/tmp") / f"talent-postgres-{key}"
    home.mkdir(parents=True, exist_ok=True)
    folder.mkdir(parents=True, exist_ok=True)
    pointer.write_text(f"{home}\n")
    return home


def _server_user_reaches(path: Path) -> bool:
    """True when the server user can enter `path` (every folder above it lets others pass)."""
    proc = subprocess.run(_as_server_user(["test", "-x", str(path)]), cwd="/")
    return proc.returncode == 0


def _run(argv: list[str], *, stdin: str | None = None) -> str:
    # cwd /: the server user may not be allowed into the caller's working directory
    proc = subprocess.run(argv, input=stdin, capture_output=True, text=True, cwd="/")
    if proc.returncode != 0:
        raise ServerError(
            f"{shlex.join(argv[:6])} ... failed ({proc.returncode}):\n{proc.stdout}{proc.stderr}"
        )
    return proc.stdout


def read_env_file(path: Path) -> dict[str, str]:
    """The `export NAME=value` lines of `.postgres/env`."""
    values: dict[str, str] = {}
    if not path.exists():
        return values
    for line in path.read_text().splitlines():
        if line.startswith("export ") and "=" in line:
            name, _, value = line[len("export ") :].partition("=")
            values[name] = shlex.split(value)[0] if value else ""
    return values


def dsn(role: str, port: int, database: str) -> str:
    """A DSN without a password: libpq takes it from PGPASSWORD (or ~/.pgpass)."""
    return f"postgresql://{role}@127.0.0.1:{port}/{database}"


def env_lines(port: int, pipeline_password: str, analyst_password: str) -> list[str]:
    values = {
        "TALENT_PG_PORT": str(port),
        "TALENT_PG_PASSWORD": pipeline_password,
        "TALENT_ANALYST_PASSWORD": analyst_password,
        # libpq's password for the DSNs below that log in as the pipeline's role: a daemon or
        # `talent run` started in a shell that sourced this file publishes
        "PGPASSWORD": pipeline_password,
        "TALENT_PUBLISH_DSN": dsn(PIPELINE_ROLE, port, SERVING_DB),
        "TALENT_BUILD_DSN": dsn(PIPELINE_ROLE, port, BUILD_DB),
        "TALENT_ANALYST_DSN": dsn(ANALYST_ROLE, port, SERVING_DB),
        # deploy/dagster-postgres.yaml
        "DAGSTER_PG_HOST": "127.0.0.1",
        "DAGSTER_PG_PORT": str(port),
        "DAGSTER_PG_USERNAME": PIPELINE_ROLE,
        "DAGSTER_PG_PASSWORD": pipeline_password,
        "DAGSTER_PG_DB": DAGSTER_DB,
    }
    return [f"export {k}={shlex.quote(v)}" for k, v in values.items()]


def _sql_literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def provisioning_sql(pipeline_password: str) -> str:
    """Roles and databases, idempotent (run on every start; passwords follow the environment).

    The analysts' group and logins are made by the pipeline's role afterwards (`talent
    analysts add`, pipelines/lib/serving.py); what only a superuser can do is here: CREATEROLE
    for `talent`, and CONNECT/TEMP on `postgres` and `template1` taken from PUBLIC.
    """
    return f"""
\\set ON_ERROR_STOP on
select format('create role %I', '{PIPELINE_ROLE}')
 where not exists (select from pg_roles where rolname = '{PIPELINE_ROLE}') \\gexec
alter role {PIPELINE_ROLE} login createdb createrole password {_sql_literal(pipeline_password)};
select format('create role %I nologin', '{ANALYST_GROUP}')
 where not exists (select from pg_roles where rolname = '{ANALYST_GROUP}') \\gexec
-- an `{ANALYST_ROLE}` login made before logins were per person: into the group, administered by
-- the pipeline's role like the logins it makes
select format('grant %I to %I', '{ANALYST_GROUP}', '{ANALYST_ROLE}')
 where exists (select from pg_roles where rolname = '{ANALYST_ROLE}') \\gexec
select format('grant %I to %I with admin option', '{ANALYST_ROLE}', '{PIPELINE_ROLE}')
 where exists (select from pg_roles where rolname = '{ANALYST_ROLE}') \\gexec
select format('create database %I owner %I', '{SERVING_DB}', '{PIPELINE_ROLE}')
 where not exists (select from pg_database where datname = '{SERVING_DB}') \\gexec
select format('create database %I owner %I', '{BUILD_DB}', '{PIPELINE_ROLE}')
 where not exists (select from pg_database where datname = '{BUILD_DB}') \\gexec
select format('create database %I owner %I', '{DAGSTER_DB}', '{PIPELINE_ROLE}')
 where not exists (select from pg_database where datname = '{DAGSTER_DB}') \\gexec
revoke all on database {BUILD_DB} from public;
revoke all on database {DAGSTER_DB} from public;
revoke all on database {SERVING_DB} from public;
-- no one but the pipeline's role reaches the maintenance and template databases
revoke connect, temporary on database postgres from public;
revoke connect, temporary on database template1 from public;
grant connect on database postgres to {PIPELINE_ROLE};
\\connect {SERVING_DB}
revoke all on schema public from public;
\\connect {BUILD_DB}
revoke all on schema public from public;
"""


def provision_analyst(port: int, pipeline_password: str, analyst_password: str) -> None:
    """The group and the `analyst` login, made as the pipeline's role by the same code as
    `talent analysts add analyst` (with the password of `.postgres/env`)."""
    from pipelines.lib.serving import add_login

    saved = os.environ.get("PGPASSWORD")
    os.environ["PGPASSWORD"] = pipeline_password
    try:
        add_login(
            dsn(PIPELINE_ROLE, port, SERVING_DB), ANALYST_ROLE, ANALYST_GROUP, analyst_password
        )
    finally:
        if saved is None:
            os.environ.pop("PGPASSWORD")
        else:
            os.environ["PGPASSWORD"] = saved


def start(folder: Path, port: int) -> Path:
    """initdb (once), start the server, provision roles and databases, write `.postgres/env`."""
    bins = bin_dir()
    folder.mkdir(parents=True, exist_ok=True)
    home = server_dir(folder)
    data, socket = home / "data", home / "socket"
    _owned_dir(socket)
    if not (data / "PG_VERSION").exists():
        _owned_dir(data)
        _run(
            _as_server_user(
                [
                    str(bins / "initdb"),
                    "-D",
                    str(data),
                    "-U",
                    "postgres",
                    "-E",
                    "UTF8",
                    "--locale=C.UTF-8",
                    # the socket folder is the server user's alone (0700), so trust there is
                    # that user only; TCP on 127.0.0.1 needs a password
                    "--auth-local=trust",
                    "--auth-host=scram-sha-256",
                ]
            )
        )
    log = home / "server.log"
    if not log.exists():
        log.touch()
        ids = _server_uid_gid()
        if ids:
            os.chown(log, *ids)
    if not _running(bins, data):
        options = (
            f"-c listen_addresses=127.0.0.1 -c port={port} -c unix_socket_directories={socket}"
        )
        try:
            _run(
                _as_server_user(
                    [str(bins / "pg_ctl"), "-D", str(data), "-l", str(log), "-o", options, "-w"]
                    + ["-t", "60", "start"]
                )
            )
        except ServerError as exc:
            tail = "".join(log.read_text(errors="replace").splitlines(keepends=True)[-8:])
            raise ServerError(
                f"{exc}\nserver log ({log}):\n{tail}\nIf the port is taken by another "
                f"server, choose another: `make postgres POSTGRES_PORT={port + 1}`."
            ) from None
    env_file = folder / "env"
    previous = read_env_file(env_file)
    pipeline_pw = (
        os.environ.get("TALENT_PG_PASSWORD")
        or previous.get("TALENT_PG_PASSWORD")
        or secrets.token_urlsafe(18)
    )
    analyst_pw = (
        os.environ.get("TALENT_ANALYST_PASSWORD")
        or previous.get("TALENT_ANALYST_PASSWORD")
        or secrets.token_urlsafe(18)
    )
    port_in_use = int(previous.get("TALENT_PG_PORT", port)) if _running(bins, data) else port
    _run(
        _as_server_user(
            [str(bins.parent / "bin" / "psql"), "-X", "-q", "-h", str(socket)]
            + ["-p", str(port_in_use), "-U", "postgres", "-d", "postgres"]
        ),
        stdin=provisioning_sql(pipeline_pw),
    )
    provision_analyst(port_in_use, pipeline_pw, analyst_pw)
    fd = os.open(env_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as fh:
        fh.write("# written by `make postgres`; not part of the repository\n")
        fh.write("\n".join(env_lines(port_in_use, pipeline_pw, analyst_pw)) + "\n")
    return env_file


def _running(bins: Path, data: Path) -> bool:
    if not (data / "PG_VERSION").exists():
        return False
    proc = subprocess.run(
        _as_server_user([str(bins / "pg_ctl"), "-D", str(data), "status"]),
        capture_output=True,
        text=True,
        cwd="/",
    )
    return proc.returncode == 0


def stop(folder: Path) -> bool:
    bins = bin_dir()
    data = server_dir(folder) / "data"
    if not _running(bins, data):
        return False
    _run(_as_server_user([str(bins / "pg_ctl"), "-D", str(data), "-m", "fast", "-w", "stop"]))
    return True


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.postgres_server", description=__doc__)
    parser.add_argument("action", choices=("start", "stop", "status"))
    parser.add_argument("--dir", type=Path, default=DEFAULT_DIR)
    parser.add_argument(
        "--port", type=int, default=int(os.environ.get("POSTGRES_PORT") or DEFAULT_PORT)
    )
    args = parser.parse_args(argv)
    try:
        if args.action == "start":
            env_file = start(args.dir.resolve(), args.port)
            values = read_env_file(env_file)
            print(
                f"PostgreSQL is running on 127.0.0.1:{values['TALENT_PG_PORT']} "
                f"(data in {server_dir(args.dir.resolve()) / 'data'}).\n"
                f"  source {env_file}   # port, passwords and DSNs into this shell\n"
                f"  databases: {SERVING_DB} (published marts), {BUILD_DB} (dbt builds), "
                f"{DAGSTER_DB} (Dagster's storage)\n"
                f"  roles: {PIPELINE_ROLE} (publishes, builds, makes analysts' logins), "
                f"{ANALYST_GROUP} (reads marts) with its login {ANALYST_ROLE}\n"
                "  stop it with `make postgres-stop`"
            )
        elif args.action == "stop":
            print("stopped" if stop(args.dir.resolve()) else "not running")
        else:
            running = _running(bin_dir(), server_dir(args.dir.resolve()) / "data")
            print("running" if running else "not running")
            return 0 if running else 1
    except ServerError as exc:
        print(f"postgres_server: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
