"""The flags of queue and topic settings (``queue create|config``, ``topic create|config``),
built from the settings' one declaration in :mod:`spark_queue.setting_table`: a setting
added there gets its flag, its ``--no-...`` flag, its bounds and its help here."""

from __future__ import annotations

import argparse
from collections.abc import Callable, Mapping
from typing import Any

from spark_queue.cli import numbers
from spark_queue.errors import OptionError
from spark_queue.setting_table import Setting


def flag_type(setting: Setting) -> Callable[[str], Any]:
    """The argparse ``type=`` that reads the setting within its bounds."""
    if setting.kind is float:
        return numbers.number(setting.low, setting.high)
    if setting.duration:
        return numbers.duration(int(setting.low), int(setting.high))
    return numbers.integer(int(setting.low), int(setting.high))


def add_setting_flags(
    p: argparse.ArgumentParser, settings: tuple[Setting, ...], *, clearable: bool
) -> None:
    """A flag per setting that has one (dest: the setting's name); with ``clearable``, the
    ``--no-...`` flags of the limits too (dest: ``no_`` and the name)."""
    for s in settings:
        if s.flag is None:
            continue
        more = " (30s, 5m, 1h, 7d; a bare number is ms)" if s.duration else ""
        metavar = "DURATION" if s.duration else "R" if s.kind is float else "N"
        p.add_argument(s.flag, dest=s.name, type=flag_type(s), metavar=metavar,
                       help=s.doc + more)
    if clearable:
        for s in settings:
            if s.off_flag is not None:
                p.add_argument(
                    s.off_flag, dest=f"no_{s.name}", action="store_true",
                    help=f"remove the {s.name} limit",
                )


def given_settings(
    flags: Mapping[str, Any], settings: tuple[Setting, ...]
) -> dict[str, Any]:
    """The settings the flags name (argparse's values by dest), None for a ``--no-...``."""
    given = {s.name: flags[s.name] for s in settings if flags.get(s.name) is not None}
    for s in settings:
        if s.off_flag is not None and flags.get(f"no_{s.name}", False):
            if s.name in given:
                raise OptionError(f"give {s.flag} or {s.off_flag}, not both.")
            given[s.name] = None
    return given
