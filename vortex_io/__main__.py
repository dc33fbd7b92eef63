"""``python -m vortex_io``: the ``vortex-ipc`` command (``vortex_io.cli``)."""

import sys

from vortex_io.cli import main

sys.exit(main())
