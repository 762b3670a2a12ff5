"""Kafka client settings come from a properties file and the environment, so secrets stay off
the command line; a secret value never appears in an error, a repr or ``ps``."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from spark_queue.cli import main
from spark_queue.errors import OptionError
from spark_queue.kafka.client_config import (
    KafkaSettings,
    client_settings,
    from_environment,
    parse_properties,
    read_file,
    redact,
)

SECRET = "s3cr3t-pa55word-do-not-print"
JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required '
        f'username="mirror" password="{SECRET}";')


def secret_file(tmp_path, mode: int = 0o600, text: str | None = None) -> str:
    path = tmp_path / "client.properties"
    path.write_text(text if text is not None else (
        "# as Kafka's tools take it (--command-config)\n"
        "security.protocol=SASL_PLAINTEXT\n"
        "sasl.mechanism: PLAIN\n"
        f"sasl.jaas.config={JAAS[:60]}\\\n    {JAAS[60:]}\n"
        "client.id spark\\u0051\n"))
    os.chmod(path, mode)
    return str(path)


def test_a_java_properties_file_is_read_and_its_plain_jaas_line_becomes_username_and_password(
        tmp_path):
    config = read_file(secret_file(tmp_path))
    assert config == {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN",
                      "sasl.username": "mirror", "sasl.password": SECRET,
                      "client.id": "sparkQ"}


def test_a_world_readable_file_holding_a_secret_is_refused_naming_the_setting_not_its_value(
        tmp_path):
    path = secret_file(tmp_path, mode=0o644)
    with pytest.raises(OptionError, match=r"sasl\.password.*mode 0644.*chmod 600") as caught:
        read_file(path)
    assert SECRET not in str(caught.value)
    os.chmod(path, 0o640)  # a service's group may read it
    assert read_file(path)["sasl.password"] == SECRET
    harmless = secret_file(tmp_path, mode=0o644, text="security.protocol=SSL\n")
    assert read_file(harmless) == {"security.protocol": "SSL"}


def test_a_jaas_line_of_another_login_module_is_refused_without_echoing_it(tmp_path):
    text = ('sasl.jaas.config=com.example.Vault required token="' + SECRET + '";\n')
    with pytest.raises(OptionError, match="PLAIN and SCRAM") as caught:
        parse_properties(text, "f")
    assert SECRET not in str(caught.value)


def test_the_environment_sets_client_settings_and_the_command_line_overrides_both(tmp_path):
    environ = {"SQLITEQ_KAFKA_CONFIG_SASL_PASSWORD": "from-env",
               "SQLITEQ_KAFKA_CONFIG_SSL__KEY__PASSWORD": "x",  # __ is _ (none such, a test)
               "OTHER": "ignored"}
    assert from_environment(environ) == {"sasl.password": "from-env", "ssl_key_password": "x"}
    config = client_settings(["sasl.mechanism=SCRAM-SHA-256"], secret_file(tmp_path), environ)
    assert (config["sasl.password"], config["sasl.username"], config["sasl.mechanism"]) == (
        "from-env", "mirror", "SCRAM-SHA-256")


def test_secret_values_never_show_in_a_repr_or_an_error(tmp_path):
    settings = KafkaSettings("127.0.0.1:1", config={"sasl.password": SECRET,
                                                    "sasl.username": "mirror"})
    assert SECRET not in repr(settings) and "mirror" in repr(settings)
    assert redact(f"auth failed for {SECRET}", settings.config) == "auth failed for [redacted]"
    pytest.importorskip("confluent_kafka")
    from spark_queue.kafka.link import KafkaLink

    with KafkaLink(settings) as link:
        assert SECRET not in str(link.unavailable("connecting", f"refused {SECRET}"))


def test_a_setting_in_the_file_reaches_the_client_and_never_the_process_list(tmp_path, store,
                                                                            store_path):
    """The CLI's settings come from the file (asserted on the client's configuration), and a
    process given the file shows no secret in ``ps`` or in its error."""
    pytest.importorskip("confluent_kafka")
    from spark_queue.cli import kafka_commands

    store.publish("t", "x")
    path = secret_file(tmp_path)
    seen = {}
    real = kafka_commands.settings_from_flags

    def spy(*values):
        seen["settings"] = real(*values)
        raise SystemExit(0)

    try:
        kafka_commands.settings_from_flags = spy
        with pytest.raises(SystemExit):
            main(["kafka", "export", store_path, "--bootstrap", "127.0.0.1:1",
                  "--kafka-config-file", path])
    finally:
        kafka_commands.settings_from_flags = real
    from spark_queue.kafka.link import KafkaLink

    client_config = KafkaLink(seen["settings"]).client_config()
    assert (client_config["sasl.password"], client_config["security.protocol"]) == (
        SECRET, "SASL_PLAINTEXT")

    # A real process: no broker answers, so it fails; neither ps nor its error shows the secret.
    process = subprocess.Popen(
        [sys.executable, "-m", "spark_queue", "kafka", "export", store_path, "--bootstrap",
         "127.0.0.1:1", "--timeout", "2s", "--kafka-config-file", path],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    listed = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout
    _, err = process.communicate(timeout=60)
    assert process.returncode == 1 and "no Kafka broker at 127.0.0.1:1" in err, err
    assert SECRET not in listed and SECRET not in err


def test_an_export_through_sasl_plain_takes_the_password_from_the_file_and_never_shows_it(
        kafka_sasl, prefix, store, store_path, tmp_path, capsys):
    bootstrap, user, password = kafka_sasl
    store.publish_many("t", ["a", "b"])
    path = secret_file(tmp_path, text=(
        "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\n"
        "sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required "
        f'username="{user}" password="{password}";\n'))
    assert main(["kafka", "export", store_path, "--bootstrap", bootstrap, "--prefix", prefix,
                 "--kafka-config-file", path, "--json"]) == 0
    out, err = capsys.readouterr()
    assert json.loads(out)[0]["records"] == 2 and password not in out + err

    os.chmod(path, 0o600)
    with open(path, "a") as more:  # a later line wins: a wrong password
        more.write("sasl.password=wrong-" + password + "\n")
    assert main(["kafka", "export", store_path, "--bootstrap", bootstrap, "--prefix", prefix,
                 "--kafka-config-file", path, "--timeout", "3s"]) == 1
    out, err = capsys.readouterr()
    assert "no Kafka broker" in err and password not in out + err
    assert "authentication" in err.lower()  # the client's last error says why
