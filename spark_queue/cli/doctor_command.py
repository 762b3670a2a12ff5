"""``sqliteq doctor``: which read path this install runs on this machine, and why."""

from __future__ import annotations

import argparse
import sys

from spark_queue.defaults import PYTHON_READ_SLOWER

EXIT_PYTHON_READ = 1


def add_commands(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "doctor",
        help="say which read path (compiled or Python) runs on this machine, and why",
        description="Report the versions and the read path of this install on this machine: "
        "the compiled Arrow reader loaded, missing for this platform, or failed to load, "
        "with the reason. Exit 0 when the compiled reader loads, 1 when reads build Arrow "
        f"in Python ({PYTHON_READ_SLOWER}).",
    )
    p.add_argument("--json", action="store_true", help="print JSON for scripts")
    p.set_defaults(func=cmd_doctor)


def cmd_doctor(args: argparse.Namespace) -> int:
    return doctor(as_json=args.json)


def doctor(*, as_json: bool) -> int:
    # Imported when the command runs: `sqliteq --help` loads none of these.
    import dataclasses
    import json
    import platform

    import apsw
    import pyarrow

    from spark_queue import __version__
    from spark_queue.store import read_path

    path = read_path()
    if as_json:
        print(json.dumps(dataclasses.asdict(path)))
    else:
        print(f"spark-queue {__version__} on Python {platform.python_version()}, apsw "
              f"{apsw.apsw_version()} (SQLite {apsw.sqlite_lib_version()}), pyarrow "
              f"{pyarrow.__version__}")
        print(path)
        print(f"builds in this install: {', '.join(path.builds) or 'none'}")
    if not path.compiled:
        print(f"sqliteq doctor: reads build Arrow in Python on this machine, {PYTHON_READ_SLOWER}: "
              f"{path.reason}", file=sys.stderr)
        return EXIT_PYTHON_READ
    return 0
