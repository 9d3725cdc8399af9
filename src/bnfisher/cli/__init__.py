"""The ``bnfisher`` command line: ``bnfisher <command> --help``.

A thin shell: :mod:`.parser` declares the commands and options, :mod:`.commands` checks
that they make sense together, calls the public API and prints the results.
"""

from bnfisher.cli.commands import main
from bnfisher.cli.parser import build_parser

__all__ = ["build_parser", "main"]
