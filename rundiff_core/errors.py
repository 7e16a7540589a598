"""Typed errors: every user-facing failure is a RundiffError with a one-line message and a hint."""

from __future__ import annotations


class RundiffError(Exception):
    """Root of every error rundiff raises on purpose; the CLI prints it without a traceback."""

    exit_code = 2

    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return self.message if not self.hint else f"{self.message}\n  hint: {self.hint}"


class UsageError(RundiffError):
    """The command line asks for something that cannot be done as asked."""


class AddressError(RundiffError):
    """An address cannot be parsed or names an unknown scheme."""


class AmbiguousSourceError(AddressError):
    """Two adapters claim the same path with the same priority."""


class UnrecognizedSourceError(AddressError):
    """No adapter recognises a path."""


class MissingDependencyError(RundiffError):
    """An adapter needs an optional package that is not installed."""


class InputError(RundiffError):
    """A run's files are missing, unreadable or malformed beyond what can be skipped."""


class RunNotFoundError(InputError):
    """An address names a run that does not exist."""


class MetricNotFoundError(UsageError):
    """A requested metric is not logged by a run."""


class PluginError(RundiffError):
    """A plugin is broken: bad hook name, taken scheme, import failure."""
