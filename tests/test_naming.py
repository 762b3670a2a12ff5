"""The naming rule, checked from the source (nothing is imported).

A name found in a traceback, an import line or a grep points at one thing:

- No two modules share a stem anywhere in the tree (``spark_queue/``, ``benchmarks/``,
  ``pyspark_sqliteq.py``), and no module shares its stem with a package: a benchmark
  module named ``kafka.py`` beside ``spark_queue/kafka/`` had to be imported under an
  alias wherever both were needed, which is what the rule exists to spare.
- A public top-level name (function, class, constant) is defined in one package only,
  unless :data:`ALLOWED_REPEATS` names it with the reason it must repeat.
- A parameter that holds a duration says its unit (``timeout_ms``, ``wait_s``): a bare
  ``timeout`` is read as seconds by one caller and milliseconds by the next.
"""

from __future__ import annotations

import ast
import collections
import functools
import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parents[1]
SOURCES = [*sorted((ROOT / "spark_queue").rglob("*.py")),
           *sorted((ROOT / "benchmarks").rglob("*.py")), ROOT / "pyspark_sqliteq.py"]
#: Files that name no concept of their own: a package's face and its ``python -m`` entry.
PACKAGE_FILES = ("__init__.py", "__main__.py")

#: Modules allowed to share their stem with a package, and why.
ALLOWED_STEMS = {
    "spark_queue/store/store.py": "Store's module inside the store package (CONTRIBUTING: "
                                  "`Store` lives in store/store.py); it is its package's "
                                  "namesake, not another package's",
}

#: Public top-level names allowed in more than one package, and why.
ALLOWED_REPEATS = {
    "log": "each package's module logger (logging.getLogger), never imported across modules",
    "configure": "each store wing's admin (queues/queue_admin, streams/topic_admin), called "
                 "module-qualified by Store; the wings never import each other",
    "now_ms": "the benchmarks' own wall clock: they use the store through its public face "
              "only, and the store exports no clock",
    "connect": "outbox.connect opens a stdlib sqlite3 connection for a user's service, "
               "benchmarks/kafka_broker.connect a Kafka client: each called module-qualified",
}

#: Words that make a parameter a duration, and the suffixes that give its unit.
DURATION = re.compile(r"(^|_)(timeout|interval|wait|delay|period|ttl|backoff|grace|deadline|"
                      r"linger|heartbeat|lease|retention)$")
UNIT = re.compile(r"_(ns|us|ms|s|seconds|minutes)$")
#: Parameters whose name is fixed by a protocol the callers already know.
ALLOWED_PARAMETERS = {
    ("spark_queue/store/producers/producer_replies.py", "result", "timeout"):
        "concurrent.futures.Future.result(timeout): seconds, the stdlib's signature",
    ("spark_queue/store/producers/producer_replies.py", "exception", "timeout"):
        "concurrent.futures.Future.exception(timeout): seconds, the stdlib's signature",
    ("spark_queue/store/producers/producer_replies.py", "_wait", "timeout"):
        "the Future methods' timeout, passed through as the stdlib names it",
}


@functools.cache
def parsed(path: pathlib.Path) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"))


def relative(path: pathlib.Path, root: pathlib.Path = ROOT) -> str:
    return path.relative_to(root).as_posix()


def modules(sources: list[pathlib.Path]) -> list[pathlib.Path]:
    return [p for p in sources if p.name not in PACKAGE_FILES]


def packages(sources: list[pathlib.Path], root: pathlib.Path) -> dict[str, list[str]]:
    found = collections.defaultdict(list)
    for path in sources:
        if path.name == "__init__.py":
            found[path.parent.name].append(relative(path.parent, root) + "/")
    return found


def shared_stems(sources: list[pathlib.Path], root: pathlib.Path = ROOT) -> list[str]:
    by_stem = collections.defaultdict(list)
    for path in modules(sources):
        by_stem[path.stem].append(relative(path, root))
    package_dirs = packages(sources, root)
    found = []
    for stem, paths in sorted(by_stem.items()):
        if len(paths) > 1:
            found.append(f"{' and '.join(paths)} share the stem {stem!r}")
        for path in paths:
            if stem in package_dirs and path not in ALLOWED_STEMS:
                found.append(f"{path} shares its stem with {', '.join(package_dirs[stem])}")
    return found


def public_top_level_names(path: pathlib.Path) -> set[str]:
    names = set()
    for node in parsed(path).body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
    return {n for n in names if not n.startswith("_")}


def repeated_names(sources: list[pathlib.Path], root: pathlib.Path = ROOT) -> dict[str, list[str]]:
    """{name: [packages defining it]} for public names defined in more than one package."""
    where = collections.defaultdict(set)
    for path in modules(sources):
        for name in public_top_level_names(path):
            where[name].add(relative(path.parent, root))
    return {name: sorted(dirs) for name, dirs in sorted(where.items()) if len(dirs) > 1}


def unitless_durations(sources: list[pathlib.Path], root: pathlib.Path = ROOT) -> list[str]:
    found = []
    for path in sources:
        for node in ast.walk(parsed(path)):
            if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            args = node.args
            for arg in [*args.posonlyargs, *args.args, *args.kwonlyargs]:
                annotation = ast.unparse(arg.annotation) if arg.annotation else ""
                if ("Callable" in annotation or not DURATION.search(arg.arg)
                        or UNIT.search(arg.arg)
                        or (relative(path, root), node.name, arg.arg) in ALLOWED_PARAMETERS):
                    continue
                found.append(f"{relative(path, root)}:{node.lineno} {node.name}({arg.arg}): "
                             "name its unit (_ms, _s)")
    return found


def test_no_two_modules_share_a_stem_nor_a_module_a_package_name():
    assert shared_stems(SOURCES) == []


def test_a_public_name_is_defined_in_one_package_unless_listed_with_its_reason():
    found = {n: dirs for n, dirs in repeated_names(SOURCES).items()
             if n not in ALLOWED_REPEATS}
    assert found == {}


def test_every_allowed_repeat_still_repeats():
    # An entry whose reason is gone (one of the pair renamed) would hide the next repeat.
    repeated = repeated_names(SOURCES)
    assert [n for n in ALLOWED_REPEATS if n not in repeated] == []
    assert all(reason for reason in [*ALLOWED_REPEATS.values(), *ALLOWED_STEMS.values(),
                                     *ALLOWED_PARAMETERS.values()])


def test_a_parameter_holding_a_duration_names_its_unit():
    assert unitless_durations(SOURCES) == []


def test_the_naming_checks_see_a_violation(tmp_path):
    # The checks must bite: a module named like a package, two modules sharing a stem,
    # a public name in two packages and a bare timeout are all found.
    files = {
        "spark_queue/kafka/__init__.py": "",
        "spark_queue/kafka/client.py": "def read_range(): ...\n",
        "spark_queue/connector/__init__.py": "",
        "spark_queue/connector/client.py": "def read_range(timeout: float): ...\n"
                                           "def wait(timeout_ms: int, on_wait: 'Callable'): ...\n",
        "benchmarks/kafka.py": "_private = 1\n",
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text, encoding="utf-8")
    sources = sorted(tmp_path.rglob("*.py"))
    assert shared_stems(sources, tmp_path) == [
        "spark_queue/connector/client.py and spark_queue/kafka/client.py share the stem "
        "'client'",
        "benchmarks/kafka.py shares its stem with spark_queue/kafka/",
    ]
    assert repeated_names(sources, tmp_path) == {
        "read_range": ["spark_queue/connector", "spark_queue/kafka"]}
    assert unitless_durations(sources, tmp_path) == [
        "spark_queue/connector/client.py:1 read_range(timeout): name its unit (_ms, _s)"]
