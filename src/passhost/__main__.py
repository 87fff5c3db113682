"""``python -m passhost`` runs the ``passhost`` command."""

import sys

from passhost.cli import main

sys.exit(main())
