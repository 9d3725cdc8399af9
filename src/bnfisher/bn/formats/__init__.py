"""Model files: bnfisher's own (JSON, lossless), BIF for exchange, and conversion to and from pgmpy and pyAgrum."""

from bnfisher.bn.formats.bif import check_bif_names, parse_bif, read_bif, write_bif
from bnfisher.bn.formats.exchange import read_net, read_uai, read_xmlbif, write_net, write_uai, write_xmlbif
from bnfisher.bn.formats.files import read_network, write_network
from bnfisher.bn.formats.interop import from_pgmpy, from_pyagrum, to_pgmpy, to_pyagrum
from bnfisher.bn.formats.native import read_model, write_model

__all__ = [
    "read_xmlbif",
    "write_xmlbif",
    "read_net",
    "write_net",
    "read_uai",
    "write_uai",
    "read_network",
    "write_network",
    "read_model",
    "write_model",
    "read_bif",
    "parse_bif",
    "write_bif",
    "check_bif_names",
    "to_pgmpy",
    "from_pgmpy",
    "to_pyagrum",
    "from_pyagrum",
]
