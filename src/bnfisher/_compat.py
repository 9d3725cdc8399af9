"""Import paths of bnfisher 0.1 that moved in 0.2: each still works for one release, with a DeprecationWarning.

One table, :data:`MOVED`, maps each old module to the modules that now hold its
names; a meta-path finder serves the old name as a thin module that forwards
attribute look-ups there.  Delete this module (and its line in ``__init__``) in 0.3.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys
import warnings

__all__ = ["MOVED", "install"]

#: Old module -> the modules that hold its names now (searched in order).
MOVED: dict[str, tuple[str, ...]] = {
    "bnfisher.encoding": ("bnfisher.data", "bnfisher.data.labels", "bnfisher.data.binning"),
    "bnfisher.counts": ("bnfisher.data.providers", "bnfisher.data.counts"),
    "bnfisher.io": ("bnfisher.data.io",),
    "bnfisher.network": ("bnfisher.bn.network",),
    "bnfisher.bif": ("bnfisher.bn.formats.bif",),
    "bnfisher.interop": ("bnfisher.bn.formats.interop",),
    "bnfisher.scores": ("bnfisher.bn.scores",),
    "bnfisher.em": ("bnfisher.bn.em",),
    "bnfisher.inference": ("bnfisher.bn.inference",),
    "bnfisher.structure": ("bnfisher.bn.structure",),
    "bnfisher.structure.chow_liu": ("bnfisher.bn.structure.chow_liu",),
    "bnfisher.structure.classifiers": ("bnfisher.bn.structure.classifiers",),
    "bnfisher.structure.exact": ("bnfisher.bn.structure.exact",),
    "bnfisher.structure.hill_climb": ("bnfisher.bn.structure.hill_climb",),
    "bnfisher.structure.ordering": ("bnfisher.bn.structure.ordering",),
    "bnfisher.kernel": ("bnfisher.kernels",),
    "bnfisher.selection": ("bnfisher.summary", "bnfisher.comparison"),
    "bnfisher.explain": ("bnfisher.comparison.explain",),
    "bnfisher.embedding": ("bnfisher.sklearn.embedding",),
    "bnfisher.classifier": ("bnfisher.sklearn.classifier",),
    "bnfisher.scale": ("bnfisher.dask",),
    "bnfisher.plotting": ("bnfisher.viz.plotting",),
    "bnfisher.report": ("bnfisher.viz.report",),
}


class _MovedFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Serves each old module name of :data:`MOVED` as a module forwarding to the new homes."""

    def find_spec(self, fullname, path=None, target=None):  # noqa: D102 - importlib protocol
        if fullname not in MOVED:
            return None
        return importlib.util.spec_from_loader(fullname, self, is_package=True)

    def create_module(self, spec):  # noqa: D102 - importlib protocol
        return None

    def exec_module(self, module):  # noqa: D102 - importlib protocol
        targets = MOVED[module.__name__]
        warnings.warn(f"`{module.__name__}` moved to `{'`, `'.join(targets)}` in bnfisher 0.2; import from there "
                      "(or from `bnfisher`). The old path will be removed in 0.3.", DeprecationWarning,
                      stacklevel=2)  # warnings skips importlib's frames
        module.__path__ = []

        def forward(name):
            for target in targets:
                new = importlib.import_module(target)
                if hasattr(new, name):
                    return getattr(new, name)
            raise AttributeError(f"module {module.__name__!r} has no attribute {name!r} (it moved to "
                                 f"{', '.join(targets)} in bnfisher 0.2)")

        module.__getattr__ = forward


def install() -> None:
    """Put the finder for the moved modules on ``sys.meta_path`` (once)."""
    if not any(isinstance(finder, _MovedFinder) for finder in sys.meta_path):
        sys.meta_path.append(_MovedFinder())
