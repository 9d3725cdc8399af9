"""``python -m bnfisher.cli``: the command line."""

import sys

from bnfisher.cli.commands import main

sys.exit(main())
