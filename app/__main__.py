"""``python -m app``: Sotto's entry point, above everything else (the same as the ``sotto`` command)."""

import sys

from app.cli import main

sys.exit(main())
