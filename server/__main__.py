"""`python -m server serve …` is the same as the `pocketd` console script."""

import sys

from server.cli import main

sys.exit(main())
