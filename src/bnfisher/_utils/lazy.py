"""Heavy dependencies imported on first use, so that ``import bnfisher`` stays fast (private).

``from bnfisher._utils.lazy import pandas as pd`` gives a stand-in that imports pandas the
first time one of its attributes is read (``pd.DataFrame``, ``pd.isna``, ...) and from
then on forwards to the module.  Type checkers see the real modules.  pandas, the
SciPy submodules and networkx together take about 0.7 s to import on a laptop, more
than the rest of bnfisher; a command that never touches them never pays for them.
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import TYPE_CHECKING, Any

__all__ = ["networkx", "pandas", "sparse", "special"]


class _LazyModule:
    """A module imported on first attribute access."""

    __slots__ = ("_name", "_module")

    def __init__(self, name: str) -> None:
        self._name = name
        self._module: ModuleType | None = None

    def __getattr__(self, attribute: str) -> Any:
        module = self._module
        if module is None:
            module = self._module = importlib.import_module(self._name)
        return getattr(module, attribute)

    def __repr__(self) -> str:
        state = "imported" if self._module is not None else "not imported yet"
        return f"<lazy module {self._name!r} ({state})>"


if TYPE_CHECKING:
    import networkx
    import pandas
    import scipy.sparse as sparse
    import scipy.special as special
else:
    networkx = _LazyModule("networkx")
    pandas = _LazyModule("pandas")
    sparse = _LazyModule("scipy.sparse")
    special = _LazyModule("scipy.special")
