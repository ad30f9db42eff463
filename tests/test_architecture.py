"""The layering rules of docs/architecture.md, read from the code's own imports and syntax."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PIPELINES = ROOT / "pipelines"


def _modules(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*.py") if "__pycache__" not in p.parts)


def _imports(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


def _environ_writes(path: Path) -> list[int]:
    """Lines that assign to, update or delete from os.environ."""
    lines = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        target = None
        if isinstance(node, ast.Assign | ast.AugAssign | ast.Delete):
            targets = node.targets if hasattr(node, "targets") else [node.target]
            target = next((t for t in targets if isinstance(t, ast.Subscript)), None)
            target = target.value if target is not None else None
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in {"update", "setdefault", "pop", "clear", "putenv"}
        ):
            target = node.func.value
        if target is not None and ast.unparse(target) in {"os.environ", "environ"}:
            lines.append(node.lineno)
    return lines


@pytest.mark.parametrize("path", _modules(PIPELINES / "lib"), ids=lambda p: p.name)
def test_the_library_never_imports_dagster_or_the_wiring(path):
    bad = {
        m
        for m in _imports(path)
        if m.split(".")[0] in {"dagster", "dagster_dbt", "tools"}
        or m.startswith(("pipelines.defs", "pipelines.execution", "pipelines.commands"))
    }
    assert not bad, f"{path.relative_to(ROOT)} imports {sorted(bad)}"


def test_the_product_never_imports_the_development_tools():
    for path in _modules(PIPELINES):
        assert not {m for m in _imports(path) if m.split(".")[0] == "tools"}, path


def test_os_environ_is_written_only_at_the_dbt_boundary():
    writers = {
        str(p.relative_to(ROOT)): lines
        for p in _modules(PIPELINES)
        if (lines := _environ_writes(p))
    }
    # dbt's profile variables around its subprocess; NumPy's huge-page switch before NumPy is
    # imported (docs/architecture.md names both)
    assert set(writers) == {"pipelines/defs/dbt_cli.py", "pipelines/lib/memory.py"}, writers


def test_the_environment_check_sees_a_write():
    # the detector itself: it must see the kinds of write it is there to forbid
    probe = ROOT / "tests" / "fixtures" / "environ_writes.py"
    assert _environ_writes(probe) == [4, 5, 6]


def test_definitions_module_is_small():
    lines = (PIPELINES / "definitions.py").read_text().splitlines()
    assert len(lines) < 20


def test_no_function_over_100_lines():
    long = []
    for path in _modules(PIPELINES) + _modules(ROOT / "tools"):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                length = node.end_lineno - node.lineno + 1
                if length > 100:
                    long.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.name} ({length})")
    assert not long, long


def test_the_dbt_plugin_loads_without_dagster():
    """dbt's subprocess imports the pseudonym plugin: it must not pull Dagster in."""
    code = (
        "import sys, pipelines.lib.duckdb_plugin, pipelines.lib.settings\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('dagster', 'dagster_dbt')))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT
    )
    assert out.stdout.strip() == "[]"


FOREIGN = {"dagster", "dagster_dbt", "dbt", "great_expectations"}


def _private_uses(path: Path) -> list[tuple[int, str]]:
    """Where a module uses a private (`_`-prefixed) name of Dagster, dagster-dbt, dbt-core or
    Great Expectations, as (line, name): an import from a private module (the module's name),
    a private attribute of an object other than `self` and `cls`, a private method defined in
    a subclass of one of their classes (an override of an internal, or a name an internal may
    take), and, inside such a subclass, a private attribute of `self` or `cls` that the class
    neither assigns nor defines: one it inherits from the other project."""
    tree = ast.parse(path.read_text(), str(path))
    foreign_names: set[str] = set()
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            parts = node.module.split(".")
            if parts[0] in FOREIGN:
                foreign_names |= {a.asname or a.name for a in node.names}
                if any(p.startswith("_") for p in parts[1:]):
                    found.append((node.lineno, node.module))
        elif isinstance(node, ast.Import):
            for alias in node.names:
                parts = alias.name.split(".")
                if parts[0] in FOREIGN:
                    foreign_names.add(alias.asname or parts[0])
                    if any(p.startswith("_") for p in parts[1:]):
                        found.append((node.lineno, alias.name))
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and _private(node.attr):
            if ast.unparse(node.value) not in {"self", "cls"}:
                found.append((node.lineno, node.attr))
        elif isinstance(node, ast.ClassDef) and (
            {ast.unparse(b).split(".")[0] for b in node.bases} & foreign_names
        ):
            found += _foreign_subclass_uses(node)
    return sorted(set(found))


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def _foreign_subclass_uses(cls: ast.ClassDef) -> list[tuple[int, str]]:
    """A subclass of another project's class: its private methods, and the private attributes of
    `self`/`cls` it uses without assigning or defining them (inherited internals)."""
    methods = [i for i in cls.body if isinstance(i, ast.FunctionDef | ast.AsyncFunctionDef)]
    own = {m.name for m in methods}
    for node in ast.walk(cls):
        targets = node.targets if isinstance(node, ast.Assign) else []
        if isinstance(node, ast.AnnAssign | ast.AugAssign):
            targets = [node.target]
        own |= {
            t.attr
            for t in targets
            if isinstance(t, ast.Attribute) and ast.unparse(t.value) in {"self", "cls"}
        }
    found = [(m.lineno, m.name) for m in methods if _private(m.name)]
    for node in ast.walk(cls):
        if (
            isinstance(node, ast.Attribute)
            and _private(node.attr)
            and ast.unparse(node.value) in {"self", "cls"}
            and node.attr not in own
        ):
            found.append((node.lineno, node.attr))
    return found


# The one module allowed private names: docs/architecture.md ("Other projects' internals") gives
# its measured gain, the public API that would replace it and the tests that notice an upgrade.
PRIVATE_ALLOWED = {"pipelines/instance_storage.py"}


def test_no_private_names_of_dagster_dbt_or_great_expectations():
    """Private names are internals an upgrade changes without notice (docs/architecture.md:
    "Other projects' internals")."""
    uses = {
        str(p.relative_to(ROOT)): found for p in _modules(PIPELINES) if (found := _private_uses(p))
    }
    assert set(uses) == PRIVATE_ALLOWED, uses
    # each private name the allowed module uses is named where the document gives its case
    documented = (ROOT / "docs" / "architecture.md").read_text()
    section = documented.split("## Other projects' internals", 1)[1].split("\n## ", 1)[0]
    for path, found in uses.items():
        assert path in section
        missing = sorted({name for _, name in found if f"`{name}`" not in section})
        assert not missing, f"{path} uses {missing}: list them in docs/architecture.md"


def test_the_private_name_check_sees_each_kind_of_use():
    probe = ROOT / "tests" / "fixtures" / "private_names.py"
    assert _private_uses(probe) == [
        (4, "dagster._core.log_manager"),
        (5, "dagster._core.storage.sql"),
        (10, "_metric_cache"),
        (14, "_cli_version"),
        (18, "_inherited_lock"),
    ]
