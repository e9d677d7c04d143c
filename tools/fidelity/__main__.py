"""``python -m tools.fidelity``: the command line of :mod:`tools.fidelity.cli`."""

import sys

from tools.fidelity.cli import main

sys.exit(main())
