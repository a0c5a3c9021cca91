"""Finding what broke: numerics bisection by pass (tc.debug.bisect), the
graph minifier (tc.debug.minify), the repro scripts it writes, and
`TC_REPRO`, which makes them from a user's run; tc.debug.accuracy says when
a result is wrong (docs/Debugging.md)."""

from tc.debug.bisect import Bisection, bisect
from tc.debug.minify import (Failure, falls_back, minify, mismatches,
                             write_repro)
from tc.debug.repro import repro_on_failure

__all__ = ["Bisection", "Failure", "bisect", "falls_back", "minify",
           "mismatches", "repro_on_failure", "write_repro"]
