"""Examples for each command, shown at the end of its ``--help``, one per line and never wrapped
(``tests/cli/test_cli_examples.py`` parses every one, so an example can never name a flag the
command lacks). Help text wraps between words, never inside a flag (``--retention-rows``)."""

from __future__ import annotations

import argparse

EXAMPLES: dict[str, str | tuple[str, ...]] = {
    "init": "sqliteq init app.sqlite --durability full",
    "topics": "sqliteq topics app.sqlite --json",
    "publish": (
        "sqliteq publish app.sqlite orders '{\"id\": 1}' --key c-7",
        "printf 'c-7:{\"id\": 1}\\n' | sqliteq publish app.sqlite orders --key-separator :",
        "sqliteq publish app.sqlite orders --ndjson orders.ndjson",
    ),
    "consumers": "sqliteq consumers app.sqlite --topic orders",
    "prune": "sqliteq prune app.sqlite --topic orders --retention 7d",
    "housekeeping": (
        "sqliteq housekeeping app.sqlite",
        "sqliteq housekeeping app.sqlite --interval 1m",
        "sqliteq housekeeping app.sqlite --run --json",
    ),
    "backup": "sqliteq backup app.sqlite /backups/app-$(date +%F).sqlite",
    "check": "sqliteq check app.sqlite",
    "topic list": "sqliteq topic list app.sqlite",
    "topic show": "sqliteq topic show app.sqlite orders",
    "topic create": "sqliteq topic create app.sqlite orders --retention 7d --retention-rows 100000",
    "topic config": (
        "sqliteq topic config app.sqlite orders",
        "sqliteq topic config app.sqlite orders --retention 30d",
    ),
    "topic delete": "sqliteq topic delete app.sqlite orders --yes",
    "topic schema set": (
        "sqliteq topic schema set app.sqlite orders 'id BIGINT NOT NULL, total DOUBLE'",
        "sqliteq topic schema set app.sqlite orders 'id BIGINT NOT NULL' --on-invalid "
        "quarantine",
    ),
    "topic schema show": (
        "sqliteq topic schema show app.sqlite orders --history",
        "sqliteq topic schema show app.sqlite orders --json-schema",
    ),
    "topic quarantine list": "sqliteq topic quarantine list app.sqlite orders",
    "topic quarantine show": "sqliteq topic quarantine show app.sqlite orders 1",
    "topic quarantine replay": "sqliteq topic quarantine replay app.sqlite orders --id 1",
    "topic quarantine purge": "sqliteq topic quarantine purge app.sqlite orders",
    "consumer list": "sqliteq consumer list app.sqlite --topic orders",
    "consumer show": "sqliteq consumer show app.sqlite billing",
    "consumer reset": "sqliteq consumer reset app.sqlite billing --topic orders --to-time 1h",
    "consumer delete": "sqliteq consumer delete app.sqlite billing --topic orders",
    "tail": (
        "sqliteq tail app.sqlite orders --group audit -f",
        "sqliteq tail app.sqlite orders --from-beginning --values",
    ),
    "queue add": "sqliteq queue add app.sqlite emails '{\"to\": \"a@example.com\"}' --delay-ms 30s",
    "queue create": "sqliteq queue create app.sqlite emails --max-attempts 8",
    "queue list": "sqliteq queue list app.sqlite",
    "queue show": (
        "sqliteq queue show app.sqlite emails",
        "sqliteq queue show app.sqlite emails 17",
    ),
    "queue config": "sqliteq queue config app.sqlite emails --visibility-timeout-ms 2m "
                    "--max-attempts 8",
    "queue pause": "sqliteq queue pause app.sqlite emails",
    "queue resume": "sqliteq queue resume app.sqlite emails",
    "queue stats": "sqliteq queue stats app.sqlite emails --json",
    "queue workers": "sqliteq queue workers app.sqlite emails",
    "queue peek": "sqliteq queue peek app.sqlite emails --limit 5",
    "queue purge": "sqliteq queue purge app.sqlite emails --expired",
    "queues": "sqliteq queues app.sqlite",
    "dlq list": "sqliteq dlq list app.sqlite emails --limit 20",
    "dlq requeue": "sqliteq dlq requeue app.sqlite emails 17 18",
    "dlq purge": "sqliteq dlq purge app.sqlite emails",
    "job get": "sqliteq job get app.sqlite emails 17",
    "job remove": "sqliteq job remove app.sqlite emails 17",
    "worker": "sqliteq worker app.sqlite myapp.jobs:send_email --queue emails --concurrency 4",
    "metrics": "sqliteq metrics app.sqlite --serve 9464",
    "kafka export": "sqliteq kafka export app.sqlite --bootstrap kafka-1:9092 --follow "
                    "--kafka-config-file /etc/sqliteq/kafka.properties",
    "kafka commit-offsets": "sqliteq kafka commit-offsets app.sqlite billing "
                            "--bootstrap kafka-1:9092",
    "kafka starting-offsets": "sqliteq kafka starting-offsets app.sqlite /chk/orders-job",
    "kafka import": "sqliteq kafka import local.sqlite orders --bootstrap kafka-1:9092 "
                    "--since 1h",
    "demo": "sqliteq demo --events 20000",
    "doctor": "sqliteq doctor --json",
    "checkpoint repair": "sqliteq checkpoint repair /data/checkpoints/orders --dry-run",
    "replicate": "sqliteq replicate app.sqlite --to s3://backups/app",
    "restore": "sqliteq restore app.sqlite --from s3://backups/app --if-missing",
}


def examples(path: str) -> tuple[str, ...]:
    """The examples of the command ``path`` (``queue add``), one command line each."""
    given = EXAMPLES.get(path, ())
    return (given,) if isinstance(given, str) else given


class HelpFormatter(argparse.HelpFormatter):
    """argparse's formatter, except: text wraps between words only (a flag such as
    ``--retention-rows`` never breaks at its hyphen), and the examples epilog keeps one
    example per line, unwrapped, so each can be copied as it stands."""

    def _split_lines(self, text: str, width: int) -> list[str]:
        import textwrap

        text = self._whitespace_matcher.sub(" ", text).strip()
        return textwrap.wrap(text, width, break_on_hyphens=False, break_long_words=False)

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        if text.startswith("example"):
            return "\n".join(indent + line for line in text.splitlines())
        import textwrap

        text = self._whitespace_matcher.sub(" ", text).strip()
        return textwrap.fill(text, width, initial_indent=indent, subsequent_indent=indent,
                             break_on_hyphens=False, break_long_words=False)


def add_examples(parser: argparse.ArgumentParser, path: str = "") -> None:
    """Put each built command's examples in its epilog (a command's own epilog stays)."""
    parser.formatter_class = HelpFormatter
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, command in action.choices.items():
                add_examples(command, f"{path} {name}".strip())
            return
    lines = examples(path)
    if lines and parser.epilog is None:
        heading = "example:" if len(lines) == 1 else "examples:"
        parser.epilog = "\n".join([heading, *("  " + line for line in lines)])
