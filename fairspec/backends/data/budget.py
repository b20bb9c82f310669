"""The data backend's time budget (the option ``timeout``, which its runner resolves and passes in).

The backend's work is loops -- record batches of rows counted, chunks of bootstrap replicates drawn --
and it looks at the property's clock (``Context.remaining``: the property's own work, the files it
loads apart; on a Dask worker the cluster's clock of the job starts at the first look) before each
step. Past the budget the property is ``unknown`` with the reason: counts of part of the rows are no
verdict, so a time-out never gives ``holds`` nor ``violated``."""

from __future__ import annotations

from fairspec.syntax.literals import number  # the timeout as the spec wrote it


class OutOfTime(Exception):
    """The budget ran out at a check point, after ``rows`` rows counted (and ``resamples`` drawn)."""

    def __init__(self, limit: float, rows: int, resamples: int | None = None):
        super().__init__(f"the time budget of {number(limit)}s ran out")
        self.limit, self.rows, self.resamples = limit, rows, resamples

    def reason(self) -> str:
        done = (f"after counting all {self.rows} rows and drawing {self.resamples} bootstrap resamples"
                if self.resamples is not None else f"after counting {self.rows} rows")
        from fairspec.syntax.literals import longer_timeout

        return (f"the time budget of {number(self.limit)}s ran out {done}; counts of part of the data are no "
                f"verdict: raise timeout = ... (e.g. {longer_timeout(self.limit, 60)}) or remove it")


class Budget:
    """``check`` raises :class:`OutOfTime` once the property's time budget ``limit`` (seconds, None: no
    limit) is spent; the first check takes the limit (``Context.remaining``: the clock starts)."""

    def __init__(self, ctx, limit: float | None):
        self.ctx, self.limit = ctx, limit

    def check(self, rows: int, resamples: int | None = None) -> None:
        if self.limit is not None and self.ctx.remaining(self.limit) <= 0:
            raise OutOfTime(self.limit, rows, resamples)


NONE = Budget(None, None)  # no limit: every check passes

# The largest total of a weight column's weights the data backend takes (a DataError past it): weighted sums,
# and bootstrap multiplicities times weights, stay finite (two weights of 1e308 summed to inf, and a rate of
# inf / inf was NaN, reported 0)
WEIGHT_TOTAL = 1e300
