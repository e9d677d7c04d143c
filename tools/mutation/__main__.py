"""``python -m tools.mutation``: the command line of :mod:`tools.mutation.cli`."""

import sys

from tools.mutation.cli import main

sys.exit(main())
