"""Click parameter types shared by several commands."""

from __future__ import annotations

import math

import click


class Seconds(click.ParamType):
    """A positive, finite number of seconds.

    ``type=float`` let ``nan`` and ``inf`` through (``--timeout nan`` crashed in
    ``round()`` deep in a transport); this refuses them while the command line is
    parsed, as a one-line usage error.
    """

    name = "seconds"

    def __init__(self, at_least: float | None = None) -> None:
        self.at_least = at_least

    def convert(self, value: object, param: click.Parameter | None, ctx: click.Context | None):
        if isinstance(value, float | int) and not isinstance(value, bool):
            number = float(value)
        else:
            try:
                number = float(str(value))
            except ValueError:
                self.fail(f"{value!r} is not a number of seconds", param, ctx)
        if not 0 < number < math.inf:  # False for NaN as well
            self.fail(f"{value!r} is not a positive, finite number of seconds", param, ctx)
        if self.at_least is not None and number < self.at_least:
            self.fail(f"{value!r}: at least {self.at_least:g} seconds", param, ctx)
        return number


SECONDS = Seconds()
