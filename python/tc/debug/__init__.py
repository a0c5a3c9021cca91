"""Finding what broke: the graph minifier (tc.debug.minify) and the repro
scripts it writes (docs/Debugging.md)."""

from tc.debug.minify import (Failure, falls_back, minify, mismatches,
                             write_repro)

__all__ = ["Failure", "falls_back", "minify", "mismatches", "write_repro"]
