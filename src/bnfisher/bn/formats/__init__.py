"""Model files: BIF (read and write) and conversion to and from pgmpy and pyAgrum."""

from bnfisher.bn.formats.bif import check_bif_names, parse_bif, read_bif, write_bif
from bnfisher.bn.formats.interop import from_pgmpy, from_pyagrum, to_pgmpy, to_pyagrum

__all__ = [
    "read_bif",
    "parse_bif",
    "write_bif",
    "check_bif_names",
    "to_pgmpy",
    "from_pgmpy",
    "to_pyagrum",
    "from_pyagrum",
]
