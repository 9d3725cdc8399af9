"""Model files: bnfisher's own (JSON, lossless); BIF, XMLBIF, NET and UAI for exchange; pgmpy and pyAgrum objects."""

from bnfisher.bn.formats.bif import check_bif_names, parse_bif, read_bif, write_bif
from bnfisher.bn.formats.files import check_network_file, read_network, write_network
from bnfisher.bn.formats.interop import from_pgmpy, from_pyagrum, to_pgmpy, to_pyagrum
from bnfisher.bn.formats.native import read_model, write_model
from bnfisher.bn.formats.net import read_net, write_net
from bnfisher.bn.formats.uai import read_uai, write_uai
from bnfisher.bn.formats.xmlbif import read_xmlbif, write_xmlbif

__all__ = [
    "read_xmlbif",
    "write_xmlbif",
    "read_net",
    "write_net",
    "read_uai",
    "write_uai",
    "check_network_file",
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
