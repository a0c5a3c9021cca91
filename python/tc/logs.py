"""tc's log channels, in the spirit of TORCH_LOGS.

Channels (each a child of the `tc` logger, logging at INFO):

* `graph_code`: the fx-dialect IR of every graph handed to the compiler;
* `output_code`: what the compiler produced, stage by stage;
* `fallbacks`: every op left to eager PyTorch, and why;
* `memory`: the arena each compiled graph uses;
* `compile_time`: where each graph's compile went, phase by phase.

Enable them with the environment variable `TC_LOGS=graph_code,fallbacks`
(`all` enables every channel) or with `tc.set_logs("graph_code",
fallbacks=True)`. Warnings (a compile error, an unsupported `mode`) are
printed even with no channel enabled.
"""

from __future__ import annotations

import logging
import os
import sys

__all__ = ["CHANNELS", "channel_logger", "enabled", "set_logs"]

#: The channels that `TC_LOGS` and `set_logs` know.
CHANNELS = ("graph_code", "output_code", "fallbacks", "memory",
            "compile_time", "kernels", "recompiles")

logger = logging.getLogger("tc")
if logger.level == logging.NOTSET:
    # Channels log at INFO: keep them quiet under a root logger configured
    # for INFO unless they are enabled (a channel's own level wins).
    logger.setLevel(logging.WARNING)
_enabled: set[str] = set()


class _StderrHandler(logging.StreamHandler):
    """Writes to the current `sys.stderr` (which tests may swap)."""

    def __init__(self) -> None:
        super().__init__(sys.stderr)

    @property  # type: ignore[override]
    def stream(self):  # noqa: D102
        return sys.stderr

    @stream.setter
    def stream(self, value) -> None:  # noqa: D102
        pass


_handler = _StderrHandler()
_handler.setFormatter(logging.Formatter("[tc:%(channel)s] %(message)s"))


class _ChannelFilter(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        name = record.name
        record.channel = name[3:] if name.startswith("tc.") else "tc"
        return True


_handler.addFilter(_ChannelFilter())


def channel_logger(channel: str) -> logging.Logger:
    """The logger of one channel (`tc.<channel>`)."""
    if channel not in CHANNELS:
        raise ValueError(f"unknown tc log channel '{channel}'; known: "
                         f"{', '.join(CHANNELS)}")
    return logging.getLogger(f"tc.{channel}")


def enabled(channel: str) -> bool:
    """Whether messages of `channel` are emitted."""
    return channel_logger(channel).isEnabledFor(logging.INFO)


def set_logs(*channels: str, **flags: bool) -> None:
    """Sets the enabled channels, like `torch._logging.set_logs`.

    `set_logs("graph_code", "fallbacks")`, `set_logs(memory=True)` or
    `set_logs("all")`; `set_logs()` turns every channel off. Channels may
    also be given as one comma-separated string, as in `TC_LOGS`.
    """
    wanted: set[str] = set()
    for item in channels:
        for name in item.split(","):
            name = name.strip()
            if not name:
                continue
            if name == "all":
                wanted.update(CHANNELS)
            elif name in CHANNELS:
                wanted.add(name)
            else:
                logger.warning("unknown tc log channel '%s' (known: %s)",
                               name, ", ".join(CHANNELS))
    for name, on in flags.items():
        if name not in CHANNELS:
            raise ValueError(f"unknown tc log channel '{name}'")
        (wanted.add if on else wanted.discard)(name)

    _enabled.clear()
    _enabled.update(wanted)
    for name in CHANNELS:
        channel_logger(name).setLevel(logging.INFO if name in wanted
                                      else logging.NOTSET)
    if wanted:
        if _handler not in logger.handlers:
            logger.addHandler(_handler)
        logger.propagate = False
    else:
        if _handler in logger.handlers:
            logger.removeHandler(_handler)
        logger.propagate = True


def init_from_env() -> None:
    """Enables the channels TC_LOGS names (tc's import calls this)."""
    value = os.environ.get("TC_LOGS", "")
    if value.strip():
        set_logs(value)
