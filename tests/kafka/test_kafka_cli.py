"""``sqliteq kafka export`` as a person and a service manager see it: progress on a
terminal only, and ``--follow`` mirroring until SIGTERM, then the verified summary."""

from __future__ import annotations

import io
import json
import signal
import subprocess
import sys
import time

from spark_queue.cli import main
from spark_queue.kafka.link import KafkaLink
from spark_queue.store import Store


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_is_shown_on_a_terminal_and_never_with_json(monkeypatch, capsys, kafka, prefix,
                                                            store, store_path):
    store.publish_many("t", range(12_000))
    terminal = Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    assert main(["kafka", "export", store_path, "--bootstrap", kafka.bootstrap,
                 "--prefix", prefix]) == 0, terminal.getvalue()
    lines = terminal.getvalue().split("\r")
    assert "sqliteq kafka export: t 5,000 of 12,000 events (41%)" in lines
    assert lines[-1] == "sqliteq kafka export: t 12,000 of 12,000 events (100%)\n"
    assert "12000" in capsys.readouterr().out  # the summary: records

    terminal.seek(0)
    terminal.truncate()
    store.publish_many("t", range(10))
    assert main(["kafka", "export", store_path, "--bootstrap", kafka.bootstrap,
                 "--prefix", prefix, "--json"]) == 0, terminal.getvalue()
    assert terminal.getvalue() == ""


def kafka_end(link: KafkaLink, topic: str) -> int:
    if link.partitions(topic) is None:
        return 0
    return link.watermarks(topic).high


def test_follow_mirrors_until_sigterm_then_prints_the_verified_summary(kafka, prefix, store,
                                                                       store_path):
    store.publish_many("t", ["a", "b"])
    process = subprocess.Popen(
        [sys.executable, "-m", "spark_queue", "kafka", "export", store_path, "--follow",
         "--poll-ms", "50ms", "--bootstrap", kafka.bootstrap, "--prefix", prefix, "--json"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    reader = KafkaLink(kafka)
    try:
        with Store(store_path) as writer:
            writer.publish_many("t", ["c", "d", "e"])
        deadline = time.monotonic() + 60
        while kafka_end(reader, prefix + "t") < 5:
            assert process.poll() is None, process.communicate()
            assert time.monotonic() < deadline, "--follow did not mirror the new events"
            time.sleep(0.05)
    finally:
        reader.close()
        process.send_signal(signal.SIGTERM)
        out, err = process.communicate(timeout=60)
    assert process.returncode == 0, err
    [row] = json.loads(out)
    assert (row["topic"], row["kafka_first"], row["kafka_end"], row["records"]) == ("t", 0, 5, 5)
    assert "following new events until interrupted" in err


def test_the_service_unit_and_the_alert_rules_name_real_flags_and_metrics():
    """docs/outgrowing.md's systemd unit runs a command the CLI parser accepts (a follow of the
    store), and its alert rules name metrics `sqliteq metrics` exports."""
    import configparser
    import re
    import shlex

    from spark_queue.cli import build_parser
    from spark_queue.metric_table import METRICS
    from tests.docs_pages import blocks

    [unit] = blocks("docs/outgrowing.md", "ini")
    parsed = configparser.ConfigParser(interpolation=None)
    parsed.optionxform = str  # systemd's keys are case-sensitive
    parsed.read_string(unit.code)
    assert parsed["Service"]["Restart"] == "always"
    program, *argv = shlex.split(parsed["Service"]["ExecStart"])
    assert program.endswith("/sqliteq")
    args = build_parser().parse_args(argv)
    assert (args.kafka_command, args.follow, args.json) == ("export", True, True)
    assert args.kafka_config_file and not args.kafka_config  # the secret stays in the file

    [rules] = blocks("docs/outgrowing.md", "yaml")
    named = set(re.findall(r"\b(sqliteq_\w+)", rules.code))
    shown = {metric.name for metric in METRICS}
    assert named and named <= shown, named - shown
