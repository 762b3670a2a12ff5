"""``sqliteq metrics``: Prometheus text for queues, topics and consumer lag (``--serve``: HTTP)."""

from __future__ import annotations

import argparse
import sys

from spark_queue.cli.store_access import common, open_store
from spark_queue.errors import OptionError


def add_commands(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("metrics", help="print Prometheus metrics, or serve them with --serve PORT")
    common(p, json_flag=False)
    p.add_argument(
        "--serve",
        type=int,
        metavar="PORT",
        help="serve GET /metrics on this port until interrupted",
    )
    p.add_argument(
        "--host",
        default="127.0.0.1",
        help="address to listen on with --serve (default 127.0.0.1: this machine only)",
    )
    p.set_defaults(func=cmd_metrics)


def cmd_metrics(args: argparse.Namespace) -> int:
    from spark_queue.metrics import MetricsServer, render

    with open_store(args.path, readonly=True) as store:  # fails early on a missing or foreign file
        text = render(store)
    if args.serve is None:
        sys.stdout.write(text)
        return 0
    if not 0 <= args.serve <= 65535:
        raise OptionError(f"--serve must be a port from 0 to 65535; got {args.serve}.")
    try:
        server = MetricsServer(args.path, args.host, args.serve)
    except OSError as exc:
        raise OptionError(f"cannot listen on {args.host}:{args.serve}: {exc.strerror}.") from exc
    print(
        f"serving metrics of {args.path} at http://{args.host}:{server.port}/metrics",
        file=sys.stderr,
        flush=True,
    )
    from spark_queue.store import Housekeeper

    # A long-running process on the store: it applies housekeeping too (when it may write).
    keeper = Housekeeper(args.path)
    try:
        keeper.start()
        server.serve_forever()
    finally:
        keeper.stop()
        server.server_close()
    return 0
