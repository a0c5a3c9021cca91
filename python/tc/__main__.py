"""`python -m tc`: what tc finds here (tc.doctor);
`python -m tc bisect repro.py`: the pass that breaks a repro script's graph
(tc.debug.bisect)."""

import sys

if len(sys.argv) > 1 and sys.argv[1] == "bisect":
    from tc.debug.bisect import main as bisect_main
    sys.exit(bisect_main(sys.argv[2:]))

from tc.doctor import main  # noqa: E402

sys.exit(main())
