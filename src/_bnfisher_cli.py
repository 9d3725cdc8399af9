"""The ``bnfisher`` command's entry point: Ctrl-C is one line and exit 130 from the first instruction.

Importing bnfisher (NumPy, pandas, SciPy) takes a second or more; an interrupt during it
would print Python's traceback.  This module, outside the package so that nothing heavy is
imported before it runs, answers an interrupt with one line until the command's own
handling takes over.
"""

import os
import signal
import sys


def _interrupted(signum, frame):  # pragma: no cover - exercised in a subprocess
    sys.stderr.write("bnfisher: interrupted\n")
    sys.stderr.flush()
    os._exit(130)


def main() -> int:
    """Run the ``bnfisher`` command (see :func:`bnfisher.cli.main`)."""
    previous = signal.signal(signal.SIGINT, _interrupted)
    from bnfisher.cli.commands import main as run

    signal.signal(signal.SIGINT, previous)  # from here on, the command cleans up and says "interrupted"
    return run()
