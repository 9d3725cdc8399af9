"""Family kernels: the Fisher kernel (Theorem 1), the overlap kernel and the O(N n) column engine they share."""

from bnfisher.kernels.base import FamilyKernel
from bnfisher.kernels.columns import KernelColumns
from bnfisher.kernels.fisher import FisherKernel
from bnfisher.kernels.mmd import family_mmd2
from bnfisher.kernels.overlap import OverlapKernel

__all__ = [
    "FamilyKernel",
    "KernelColumns",
    "FisherKernel",
    "OverlapKernel",
    "family_mmd2",
]
