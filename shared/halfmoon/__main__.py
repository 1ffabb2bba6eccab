"""``python -m halfmoon`` is the ``halfmoon`` command."""

import sys

from halfmoon.cli import main

sys.exit(main())
