"""`python -m tc`: see tc.doctor."""

import sys

from tc.doctor import main

sys.exit(main())
