"""Structure learning: ``learn(data, structure=...)`` returns a fitted BayesianNetwork."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ..encoding import EncodedData, encode
from ..network import BayesianNetwork
from .chow_liu import chow_liu_parents

__all__ = ["learn", "STRUCTURES"]

STRUCTURES = ("chow-liu",)


def _given_structure(structure, variables: Sequence[str]) -> dict:
    if isinstance(structure, BayesianNetwork):
        return {v: tuple(structure.parents[v]) for v in structure.variables}
    if isinstance(structure, Mapping):
        unknown = [v for v in structure if v not in variables] + [
            p for ps in structure.values() for p in ps if p not in variables
        ]
        if unknown:
            raise ValueError(f"The structure names variable(s) {sorted(set(map(str, unknown)))} absent from the data.")
        return {v: tuple(structure.get(v, ())) for v in variables}
    edges = list(structure)
    parents: dict = {v: [] for v in variables}
    for edge in edges:
        if len(edge) != 2:
            raise ValueError(f"An edge must be a (parent, child) pair; got {edge!r}.")
        parent, child = edge
        for name in (parent, child):
            if name not in parents:
                raise ValueError(f"Edge {edge!r} names variable {name!r}, which is absent from the data.")
        parents[child].append(parent)
    return {v: tuple(ps) for v, ps in parents.items()}


def learn(data, structure="chow-liu", pseudocount: float = 1.0, **options) -> BayesianNetwork:
    """Learn a Bayesian network from categorical data.

    Parameters
    ----------
    data : DataFrame, ndarray of int or EncodedData
        Training data (see :func:`bnfisher.encode`).
    structure : str, mapping, sequence of edges or BayesianNetwork, default="chow-liu"
        ``"chow-liu"``: the maximum-weight spanning forest over mutual information
        (Chow & Liu 1968).  A mapping ``{child: parents}``, a list of
        ``(parent, child)`` edges or a BayesianNetwork fixes the structure and only
        fits the parameters.
    pseudocount : float, default=1.0
        Dirichlet pseudocount for the CPTs.
    **options
        Learner-specific options (none for ``"chow-liu"``).

    Returns
    -------
    BayesianNetwork

    Raises
    ------
    ValueError
        For an unknown structure name, a given structure with a cycle or with
        variables absent from the data.

    Examples
    --------
    >>> import pandas as pd
    >>> df = pd.DataFrame({"a": list("xxyy") * 5, "b": list("xxyx") * 5, "c": list("uvuv") * 5})
    >>> learn(df).edges
    [('a', 'b'), ('b', 'c')]
    """
    encoded = data if isinstance(data, EncodedData) else encode(data)
    variables = encoded.variables
    if isinstance(structure, str):
        if structure not in STRUCTURES:
            raise ValueError(f"`structure` must be one of {STRUCTURES} or a given structure; got {structure!r}.")
        if options:
            raise TypeError(f"Unexpected option(s) for structure={structure!r}: {sorted(options)}.")
        parent_index = chow_liu_parents(encoded.codes, encoded.cardinalities)
        parents = {v: tuple(variables[p] for p in parent_index[i]) for i, v in enumerate(variables)}
    else:
        parents = _given_structure(structure, variables)
    return BayesianNetwork.fit(encoded, parents, pseudocount=pseudocount, states=encoded.states)
