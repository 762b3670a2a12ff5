"""Kafka client settings from a properties file and the environment, secrets kept out of sight.

A password on a command line is in ``ps``, in shell history and in unit files; Kafka's own
tools take a properties file instead (``--command-config``). So the Kafka commands take
their client settings from three places, later ones overriding earlier ones:

1. ``--kafka-config-file PATH``: a Java-style properties file (``key=value``, ``key: value``
   or ``key value``; ``#`` and ``!`` comments; ``\\`` continues a line). A Java client's
   ``sasl.jaas.config`` for the PLAIN or SCRAM login module becomes librdkafka's
   ``sasl.username`` and ``sasl.password``. A file that holds a secret and that every user of
   the machine may read is refused (``chmod 600`` it).
2. The environment: ``SQLITEQ_KAFKA_CONFIG_<NAME>`` sets the setting ``<name>`` with ``_`` read
   as ``.`` and ``__`` as ``_`` (``SQLITEQ_KAFKA_CONFIG_SASL_PASSWORD`` is ``sasl.password``),
   as Confluent's images read ``KAFKA_*``; systemd's ``EnvironmentFile=`` fits it.
3. ``--kafka-config KEY=VALUE``: settings that are not secrets.

Secret values (any setting whose name says password, secret, jaas or a private key) never
appear in an error or a progress line: :func:`redact` takes them out of any text.

:class:`KafkaSettings` holds the result with where Kafka is and how long to wait for it;
:class:`~spark_queue.kafka.link.KafkaLink` builds its clients from it.
"""

from __future__ import annotations

import logging
import os
import re
import stat
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from spark_queue.defaults import KAFKA_TIMEOUT_MAX_MS, KAFKA_TIMEOUT_MS
from spark_queue.errors import OptionError

ENV_PREFIX = "SQLITEQ_KAFKA_CONFIG_"
REDACTED = "[redacted]"
_SECRET_NAME = re.compile(r"password|secret|jaas|key\.pem|oauthbearer\.config", re.I)
_JAAS = re.compile(
    r"^\s*org\.apache\.kafka\.common\.security\.(plain\.PlainLoginModule|"
    r"scram\.ScramLoginModule)\s+required\b(?P<options>.*?);?\s*$",
    re.S,
)
_JAAS_OPTION = re.compile(r'(\w+)\s*=\s*"((?:[^"\\]|\\.)*)"')
# A record's delivery may wait longer than an answer to a request: a broker busy on a loaded
# machine acknowledges late, and a record that times out ends the export (a rerun resumes).
MIN_DELIVERY_TIMEOUT_S = 60.0


def is_secret(name: str) -> bool:
    """Whether setting ``name`` holds a secret (a password, a key, a JAAS line)."""
    return bool(_SECRET_NAME.search(name))


def secret_names(config: Mapping[str, str]) -> list[str]:
    return sorted(name for name in config if is_secret(name))


def redact(text: str, config: Mapping[str, str]) -> str:
    """``text`` with the value of every secret setting of ``config`` replaced."""
    for name in secret_names(config):
        value = str(config[name])
        if len(value) >= 3:  # a shorter value would blank out ordinary words
            text = text.replace(value, REDACTED)
    return text


def _logical_lines(text: str) -> Iterable[tuple[int, str]]:
    """Lines of a properties file with continuations joined, and each one's first line."""
    pending, first = "", 0
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.lstrip() if pending else raw.strip()
        if not pending:
            first = number
            if not line or line[0] in "#!":
                continue
        trailing = len(line) - len(line.rstrip("\\"))
        if trailing % 2:  # an odd number of backslashes: the line goes on
            pending += line[:-1]
            continue
        yield first, pending + line
        pending = ""
    if pending:
        yield first, pending


_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}


def _unescape(text: str) -> str:
    out, i = [], 0
    while i < len(text):
        char = text[i]
        if char == "\\" and i + 1 < len(text):
            following = text[i + 1]
            if following == "u" and re.fullmatch(r"[0-9a-fA-F]{4}", text[i + 2:i + 6]):
                out.append(chr(int(text[i + 2:i + 6], 16)))
                i += 6
                continue
            out.append(_ESCAPES.get(following, following))
            i += 2
            continue
        out.append(char)
        i += 1
    return "".join(out)


def parse_properties(text: str, source: str) -> dict[str, str]:
    """The settings of a Java properties file's ``text`` (``source`` names it in errors).
    Errors name the line, never its content: it may hold a secret."""
    found: dict[str, str] = {}
    for number, line in _logical_lines(text):
        match = re.match(r"((?:[^\s:=\\]|\\.)+)\s*[:=]?\s*(.*)$", line, re.S)
        if match is None:
            raise OptionError(f"{source} line {number} holds no setting name; a properties "
                              "file has lines KEY=VALUE (KEY: VALUE, KEY VALUE).")
        found[_unescape(match.group(1))] = _unescape(match.group(2))
    return _from_jaas(found, source)


def _from_jaas(config: dict[str, str], source: str) -> dict[str, str]:
    """A Java client's ``sasl.jaas.config`` as librdkafka's ``sasl.username/password``."""
    jaas = config.pop("sasl.jaas.config", None)
    if jaas is None:
        return config
    match = _JAAS.match(jaas)
    options = dict(_JAAS_OPTION.findall(match.group("options"))) if match else {}
    if "username" not in options or "password" not in options:
        raise OptionError(
            f"{source}: sasl.jaas.config is a Java client's setting; only the PLAIN and SCRAM "
            "login modules with a username and a password are read from it (as sasl.username "
            "and sasl.password). Give those two settings instead."
        )
    for name in ("username", "password"):
        config.setdefault(f"sasl.{name}", options[name].replace('\\"', '"'))
    return config


def read_file(path: str | os.PathLike[str]) -> dict[str, str]:
    """The settings of the properties file at ``path``; refuses a file every user of the
    machine may read when it holds a secret, naming the setting, never its value."""
    name = os.fspath(path)
    try:
        with open(name, "rb") as handle:
            mode = os.fstat(handle.fileno()).st_mode
            data = handle.read()
    except OSError as exc:
        raise OptionError(f"--kafka-config-file {name!r} cannot be read: {exc.strerror}.") from exc
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise OptionError(f"--kafka-config-file {name!r} is not UTF-8 text.") from exc
    config = parse_properties(text, f"--kafka-config-file {name!r}")
    secrets = secret_names(config)
    if secrets and mode & stat.S_IROTH:
        raise OptionError(
            f"--kafka-config-file {name!r} holds a secret ({', '.join(secrets)}) and every user "
            f"of this machine may read it (mode {stat.S_IMODE(mode):04o}): run chmod 600 {name} "
            "(or 640 for a service's group), then again."
        )
    return config


def from_environment(environ: Mapping[str, str]) -> dict[str, str]:
    """Settings from ``SQLITEQ_KAFKA_CONFIG_<NAME>`` variables (see the module doc)."""
    found = {}
    for variable, value in environ.items():
        if variable.startswith(ENV_PREFIX) and len(variable) > len(ENV_PREFIX):
            words = variable[len(ENV_PREFIX):].lower().split("__")
            found["_".join(word.replace("_", ".") for word in words)] = value
    return found


def from_pairs(pairs: Iterable[str], flag: str = "--kafka-config") -> dict[str, str]:
    """``KEY=VALUE`` strings (given to ``flag``) as settings."""
    found = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or not name:
            raise OptionError(f"{flag} takes KEY=VALUE; got {pair!r}.")
        found[name] = value
    return found


def client_settings(
    pairs: Iterable[str] = (),
    file: str | os.PathLike[str] | None = None,
    environ: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """The file's settings, then the environment's, then ``pairs`` (each overriding)."""
    config = read_file(file) if file is not None else {}
    config.update(from_environment(os.environ if environ is None else environ))
    config.update(from_pairs(pairs))
    return config


class _QuietLog:
    """librdkafka's own log lines (a refused connection, a retry) as INFO records of
    ``spark_queue.kafka.librdkafka``: seen with ``-v``, never beside a one-line error."""

    def log(self, level: int, fmt: str, *args: object) -> None:
        logging.getLogger("spark_queue.kafka.librdkafka").info(fmt, *args)


#: The ``logger`` setting of every client.
LIBRDKAFKA_LOG = _QuietLog()


@dataclass(frozen=True, repr=False)
class KafkaSettings:
    """Where Kafka is and how long to wait for it.

    ``config`` holds further librdkafka settings passed to every client (security:
    ``security.protocol``, ``sasl.*``, ``ssl.*``; :func:`client_settings` reads them from a
    properties file or the environment). Secret values never show in this object's repr or
    in an error.
    """

    bootstrap: str
    timeout_s: float = KAFKA_TIMEOUT_MS / 1000
    config: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not isinstance(self.bootstrap, str) or not self.bootstrap.strip():
            raise OptionError(
                f"Kafka's bootstrap servers must be HOST:PORT[,...]; got {self.bootstrap!r}."
            )
        cap_s = KAFKA_TIMEOUT_MAX_MS // 1000
        if not 0 < self.timeout_s <= cap_s:
            raise OptionError(
                f"timeout_s must be more than 0 and at most {cap_s} seconds; "
                f"got {self.timeout_s!r}."
            )

    def __repr__(self) -> str:
        return (f"KafkaSettings(bootstrap={self.bootstrap!r}, timeout_s={self.timeout_s!r}, "
                f"config={redact(repr(dict(self.config)), self.config)})")

    @property
    def delivery_timeout_s(self) -> float:
        """How long a produced record may wait for its acknowledgement: librdkafka's
        ``message.timeout.ms`` (alias ``delivery.timeout.ms``) when ``config`` sets it."""
        for name in ("message.timeout.ms", "delivery.timeout.ms"):
            if name in self.config:
                try:
                    return int(self.config[name]) / 1000
                except ValueError as exc:
                    raise OptionError(
                        f"the Kafka client setting {name} must be milliseconds (an integer); "
                        f"got {self.config[name]!r}."
                    ) from exc
        return max(self.timeout_s, MIN_DELIVERY_TIMEOUT_S)

    def redact(self, text: str) -> str:
        """``text`` without the values of this client's secret settings."""
        return redact(text, self.config)


def as_kafka_settings(kafka: KafkaSettings | str) -> KafkaSettings:
    """``kafka`` as settings: a bootstrap string (``"host:9092"``) gets the defaults."""
    return KafkaSettings(kafka) if isinstance(kafka, str) else kafka
