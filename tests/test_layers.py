"""The rules the code keeps about its own shape, checked from the source (nothing is imported).

- Layers: ``errors`` <- ``store`` <- ``worker``, ``cli``, ``connector``. Nothing
  under ``store/`` imports pyspark, the connector, the CLI or the worker, not
  even inside a function.
- Inside ``store/``: the file layer (``store/file/``) imports nothing of the store
  outside itself; the two wings, ``store/streams/`` and ``store/queues/``, import
  only the file layer and themselves (never each other, never the door above them);
  the floor (``store/floor/``), where features that span both wings live, imports the
  file layer, the wings and itself, never the face above it (``store.py``,
  ``maintenance.py``, the package ``__init__``); the file layer and the wings never
  import the floor.
- Inside ``connector/``: ``source/`` and ``sink/`` never import each other.
- The connector, the CLI, the worker, the demo, the metrics, the benchmarks and ``kafka/`` use
  the store through the public names of ``spark_queue.store`` only.
- No module imports another module's ``_private`` name.
- No two modules import each other, directly or around a circle (imports
  under ``TYPE_CHECKING`` count: a circle of types is still a circle), in the package
  and in ``benchmarks/`` alike.
- Every import is absolute, so the checks above see all of them.
- The tests mirror the package: a module's tests sit in the folder whose path under
  ``tests/`` is its package's path under ``spark_queue/``.
"""

from __future__ import annotations

import ast
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "spark_queue"


def module_name(path: pathlib.Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


# The benchmarks live beside the package (not in the wheel) but keep its rules: they use the
# store through its public face like any other caller.
MODULES = {module_name(p): p for p in [*sorted(PACKAGE.rglob("*.py")),
                                       *sorted((ROOT / "benchmarks").rglob("*.py"))]}


def imports(path: pathlib.Path) -> list[tuple[str, str | None]]:
    """(module, name) for every import in the file, at any depth; name None for ``import m``."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.extend((alias.name, None) for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.extend((node.module, alias.name) for alias in node.names)
    return found


def resolve(module: str, name: str | None) -> str:
    """The spark_queue module an import loads: ``from pkg import mod`` names a module too."""
    if name is not None and f"{module}.{name}" in MODULES:
        return f"{module}.{name}"
    return module


def store_public_names() -> set[str]:
    """The names of ``spark_queue.store`` other layers may import: the user's face
    (``__all__``) and the plumbing it lists for the project's own layers (``_PROJECT_NAMES``)."""
    tree = ast.parse((PACKAGE / "store" / "__init__.py").read_text(encoding="utf-8"))
    names: dict[str, set[str]] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name):
            target = node.targets[0].id
            if target == "__all__":
                names[target] = set(ast.literal_eval(node.value))
            elif target == "_PROJECT_NAMES" and isinstance(node.value, ast.Tuple):
                names[target] = {n.id for n in node.value.elts if isinstance(n, ast.Name)}
    if set(names) != {"__all__", "_PROJECT_NAMES"}:
        raise AssertionError("spark_queue/store/__init__.py has no __all__ or _PROJECT_NAMES")
    return names["__all__"] | names["_PROJECT_NAMES"]


def violations_of_layers() -> list[str]:
    bad = []
    forbidden = ("pyspark", "py4j", "spark_queue.connector", "spark_queue.cli",
                 "spark_queue.worker", "spark_queue.demo", "spark_queue.kafka", "confluent_kafka")
    for name, path in MODULES.items():
        if not name.startswith("spark_queue.store"):
            continue
        for module, _ in imports(path):
            if module.startswith(forbidden):
                bad.append(f"{name} imports {module}")
    return bad


def imports_outside(importers: str, allowed: tuple[str, ...], watched: str) -> list[str]:
    """Imports of ``watched`` modules, by modules under ``importers``, outside ``allowed``."""
    bad = []
    for name, path in MODULES.items():
        if not within(name, importers):
            continue
        for module, imported in imports(path):
            target = resolve(module, imported)
            if within(target, watched) and not any(within(target, a) for a in allowed):
                bad.append(f"{name} imports {target}")
    return bad


def within(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


STORE = "spark_queue.store"
FILE_LAYER = f"{STORE}.file"
WINGS = (f"{STORE}.streams", f"{STORE}.queues")
FLOOR = f"{STORE}.floor"
CONNECTOR_SIDES = ("spark_queue.connector.source", "spark_queue.connector.sink")


def violations_of_the_store_wings() -> list[str]:
    bad = imports_outside(FILE_LAYER, (FILE_LAYER,), STORE)
    for wing in WINGS:
        bad += imports_outside(wing, (FILE_LAYER, wing), STORE)
    return bad


def violations_of_the_floor() -> list[str]:
    """The floor stands on the file layer and both wings, and carries the face: an import
    of the face from the floor would be an arrow up (a circle in waiting), and a wing that
    imported the floor would reach the other wing through it."""
    return imports_outside(FLOOR, (FILE_LAYER, *WINGS, FLOOR), STORE)


def violations_of_the_connector_sides() -> list[str]:
    source, sink = CONNECTOR_SIDES
    return imports_outside(source, (), sink) + imports_outside(sink, (), source)


def violations_of_absolute_imports() -> list[str]:
    return [
        f"{name} line {node.lineno}: relative import"
        for name, path in MODULES.items()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.ImportFrom) and node.level > 0
    ]


def violations_of_public_store_use() -> list[str]:
    public = store_public_names()
    bad = []
    users = ("spark_queue.connector", "spark_queue.cli", "spark_queue.worker",
             "spark_queue.demo", "spark_queue.metrics", "benchmarks", "spark_queue.kafka")
    for name, path in MODULES.items():
        if not name.startswith(users):
            continue
        for module, imported in imports(path):
            if module.startswith("spark_queue.store.") or (
                module == "spark_queue.store" and imported not in public
            ):
                bad.append(f"{name} imports {imported or module} from {module}")
    return bad


def violations_of_privacy() -> list[str]:
    bad = []
    for name, path in MODULES.items():
        for module, imported in imports(path):
            private = imported is not None and imported.startswith("_")
            if module.startswith("spark_queue") and private and imported != "__version__":
                bad.append(f"{name} imports {imported} from {module}")
    return bad


def import_graph() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {}
    for name, path in MODULES.items():
        targets = {resolve(m, n) for m, n in imports(path)
                   if m.startswith(("spark_queue", "benchmarks"))}
        graph[name] = {t for t in targets if t in MODULES and t != name}
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Every strongly connected group of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in graph[node]:
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def package_edges(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    """Package-level view: a package __init__ that re-exports is not a circle with its parts."""
    return {
        node: {t for t in targets if not node.startswith(t + ".") and not t.startswith(node + ".")}
        for node, targets in graph.items()
    }


@pytest.mark.parametrize(
    "rule",
    [
        violations_of_layers,
        violations_of_the_store_wings,
        violations_of_the_floor,
        violations_of_the_connector_sides,
        violations_of_public_store_use,
        violations_of_privacy,
        violations_of_absolute_imports,
    ],
)
def test_the_code_keeps_its_import_rules(rule):
    assert rule() == []


def test_planning_never_imports_the_executors_read():
    """As pyspark keeps plan_data_source_read apart from the executor's read: what both
    need lives in connector/source/read_shape.py, and the planner carries it in the
    partition."""
    planner = "spark_queue.connector.source.partition_planner"
    reader = "spark_queue.connector.source.partition_reader"
    found = [f"{a} imports {b}" for a, b in ((planner, reader), (reader, planner))
             if any(resolve(m, n) == b for m, n in imports(MODULES[a]))]
    assert found == []


def test_no_two_modules_import_each_other():
    assert circles(package_edges(import_graph())) == []


def test_the_rule_checks_see_a_violation():
    # The checks themselves must bite: a made-up circle and a made-up layer break.
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": set()}) == [["a", "b", "c"]]
    assert imports(PACKAGE / "store" / "store.py"), "imports() found nothing to check"


def test_the_tree_has_the_packages_the_rules_name():
    # A rule about a package that is gone (renamed, moved) would pass by checking nothing.
    for package in (FILE_LAYER, *WINGS, FLOOR, *CONNECTOR_SIDES):
        members = [name for name in MODULES if name.startswith(package + ".")]
        assert package in MODULES and members, f"{package} has no modules"


def test_the_store_holds_at_most_eight_modules_beside_its_wings():
    # A feature that spans both wings goes to the floor (store/floor/), not beside it.
    assert len(list((PACKAGE / "store").glob("*.py"))) <= 8


def test_the_defaults_module_imports_nothing_of_spark_queue():
    """Every layer imports spark_queue.defaults, so it may import none of them."""
    found = [m for m, _ in imports(MODULES["spark_queue.defaults"]) if within(m, "spark_queue")]
    assert found == []


def test_only_the_cli_entry_functions_take_the_argparse_namespace():
    """Below a command's entry function (cmd_*) the CLI passes values, not the Namespace,
    so what a flag means is read in one place; main()'s command_name reads it too."""
    takers = []
    for name, path in MODULES.items():
        if not within(name, "spark_queue.cli"):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef) and not node.name.startswith("cmd_"):
                for arg in node.args.args + node.args.kwonlyargs:
                    if arg.annotation is not None and "Namespace" in ast.unparse(arg.annotation):
                        takers.append(f"{name}.{node.name}")
    assert takers == ["spark_queue.cli.command_name"]


def test_no_module_passes_500_lines():
    """A module owns one concept; past 500 lines it has started owning a second."""
    long = {name: n for name, path in MODULES.items()
            if (n := len(path.read_text(encoding="utf-8").splitlines())) > 500}
    assert long == {}


#: What the package face (spark_queue/__init__.py) loads: the store, the worker and, in
#: register(), the connector, with what they stand on.
BELOW_THE_FACE = ("spark_queue.store", "spark_queue.worker", "spark_queue.connector",
                  "spark_queue.errors", "spark_queue.defaults", "spark_queue.times")


def test_nothing_below_the_package_face_imports_it():
    """A module the face loads that imported the face back would be an arrow up and a
    circle in waiting; constants the layers share live in spark_queue.defaults."""
    found = [
        (name, f"from spark_queue import {imported}")
        for name, path in MODULES.items()
        if any(within(name, below) for below in BELOW_THE_FACE)
        for module, imported in imports(path)
        if module == "spark_queue" and resolve(module, imported) == "spark_queue"
    ]
    assert found == []


#: The tests mirror the package: a module's unit tests sit in the folder whose path under
#: tests/ is its package's path under spark_queue/ (tests/store/streams <-> spark_queue/store/
#: streams). These trees hold only such folders.
MIRRORED_TEST_TREES = ("store", "connector", "worker", "cli", "kafka", "demo", "spark",
                       "replication", "testing")
#: Test folders that mirror no package, each for a reason: whole pipelines through a real
#: Spark (end_to_end), what users run on every pyspark (smoke), the standalone cluster
#: (cluster), stored files the tests open (fixtures), pipelines tested with the test kit as a
#: user writes them (kit_examples).
UNMIRRORED_TEST_TREES = frozenset({"end_to_end", "smoke", "cluster", "fixtures", "kit_examples"})
#: Test modules of the tests root that belong to no one package: the shape, the docs, the
#: security promises and the import promises of the whole tree. A root test_<name>.py may
#: otherwise only test a top-level module, spark_queue/<name>.py.
CROSS_CUTTING_TESTS = frozenset({
    "test_layers.py", "test_docs.py", "test_docs_bench.py", "test_docs_install.py",
    "test_docs_links.py", "test_docs_snippets.py", "test_docs_walkthrough.py",
    "test_security.py", "test_imports.py", "test_naming.py",
})


def violations_of_the_test_mirror(tests: pathlib.Path, package: pathlib.Path) -> list[str]:
    """Files (tests and their helpers) whose folder names no package folder, and package
    tests left in the tests root."""
    found = [f"tests/{folder.name}/: neither mirrors a package nor is named in "
             "UNMIRRORED_TEST_TREES"
             for folder in sorted(tests.iterdir())
             if folder.is_dir() and folder.name not in ("__pycache__", *MIRRORED_TEST_TREES)
             and folder.name not in UNMIRRORED_TEST_TREES and any(folder.rglob("*.py"))]
    for tree in MIRRORED_TEST_TREES:
        for path in sorted((tests / tree).rglob("*.py")):
            folder = path.parent.relative_to(tests)
            if "__pycache__" in folder.parts:
                continue
            if not (package / folder / "__init__.py").is_file():
                found.append(f"tests/{path.relative_to(tests)}: no package spark_queue/{folder}")
    for path in sorted(tests.glob("test_*.py")):
        if path.name not in CROSS_CUTTING_TESTS and not (
                package / path.name.removeprefix("test_")).is_file():
            found.append(f"tests/{path.name}: tests no top-level module; move it to the "
                         "folder mirroring its package")
    return found


def test_the_tests_mirror_the_package():
    """A maintainer finds a module's tests from its path (spark_queue/store/queues/queue.py
    -> tests/store/queues/)."""
    assert violations_of_the_test_mirror(ROOT / "tests", PACKAGE) == []


def test_the_mirror_check_sees_a_test_moved_wrongly(tmp_path):
    # The check must bite: a wing folder that is not a package, and a worker test left in
    # the tests root, are both found; the real tree's folders are all there to check.
    tests = tmp_path / "tests"
    for name in ("store/streams/test_topics.py", "store/stream/test_topics.py",
                 "test_worker.py", "test_times.py", "test_layers.py", "sparks/test_x.py"):
        (tests / name).parent.mkdir(parents=True, exist_ok=True)
        (tests / name).write_text("", encoding="utf-8")
    assert violations_of_the_test_mirror(tests, PACKAGE) == [
        "tests/sparks/: neither mirrors a package nor is named in UNMIRRORED_TEST_TREES",
        "tests/store/stream/test_topics.py: no package spark_queue/store/stream",
        "tests/test_worker.py: tests no top-level module; move it to the folder mirroring "
        "its package",
    ]
    for tree in MIRRORED_TEST_TREES:
        assert (ROOT / "tests" / tree).is_dir(), f"tests/{tree} is gone: the check sees nothing"
