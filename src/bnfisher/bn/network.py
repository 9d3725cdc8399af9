"""Discrete Bayesian networks.

Structure, conditional probability tables, fitting, likelihood and ancestral sampling.
"""

from __future__ import annotations

import copy
import heapq
from collections.abc import Mapping, Sequence
from types import MappingProxyType

import numpy as np

from bnfisher._utils.lazy import pandas as pd
from bnfisher._utils.validation import check_nonnegative_float, check_positive_int, check_random_state
from bnfisher.data.counts import configuration_index
from bnfisher.data.providers import as_provider
from bnfisher.data.schema import EncodedData, Schema
from bnfisher.exceptions import DataError, OptionError, OptionTypeError, SchemaError

__all__ = ["BayesianNetwork", "topological_order"]

_ROW_SUM_TOLERANCE = 1e-4


def topological_order(parents: Mapping[str, Sequence[str]], order: Sequence[str]) -> tuple:
    """Return a stable topological order.

    Among the nodes whose parents are placed, the one earliest in ``order`` comes
    first.  Raises an OptionError naming a cycle.

    Parameters
    ----------
    parents : mapping
        ``{node: parents}``.
    order : sequence
        Every node, in the preferred order.

    Returns
    -------
    tuple

    Examples
    --------
    >>> from bnfisher.bn import topological_order
    >>> topological_order({"a": (), "b": ("c",), "c": ("a",)}, ["a", "b", "c"])
    ('a', 'c', 'b')
    """
    position = {v: i for i, v in enumerate(order)}
    children: dict = {v: [] for v in order}
    indegree = {v: len(parents[v]) for v in order}
    for v in order:
        for p in parents[v]:
            children[p].append(v)
    ready = [position[v] for v in order if indegree[v] == 0]
    heapq.heapify(ready)
    result = []
    while ready:
        v = order[heapq.heappop(ready)]
        result.append(v)
        for c in children[v]:
            indegree[c] -= 1
            if indegree[c] == 0:
                heapq.heappush(ready, position[c])
    if len(result) != len(order):
        raise OptionError(f"The structure has a directed cycle: {_find_cycle(parents, set(order) - set(result))}.")
    return tuple(result)


def _find_cycle(parents: Mapping[str, Sequence[str]], candidates: set) -> str:
    # Walk parent links inside the unplaced nodes until a node repeats.
    node = next(iter(sorted(candidates, key=str)))
    path: list = []
    seen: dict = {}
    while node not in seen:
        seen[node] = len(path)
        path.append(node)
        node = next(p for p in parents[node] if p in candidates)
    cycle = path[seen[node] :] + [node]
    return " <- ".join(repr(v) for v in cycle)


def _normalise_parents(parents: Mapping[str, Sequence[str]], variables: Sequence[str]) -> dict:
    known = set(variables)
    result = {}
    for v in variables:
        ps = parents.get(v, ())
        if isinstance(ps, str):
            raise OptionTypeError(f"parents[{v!r}] must be a sequence of variable names, not the string {ps!r}.")
        ps = tuple(ps)
        for p in ps:
            if p not in known:
                raise OptionError(f"Variable {v!r} has parent {p!r}, which is not a variable of the network.")
            if p == v:
                raise OptionError(f"Variable {v!r} is listed as its own parent.")
        if len(set(ps)) != len(ps):
            raise OptionError(f"Variable {v!r} lists a parent twice: {ps}.")
        result[v] = ps
    unknown = [v for v in parents if v not in known]
    if unknown:
        raise OptionError(f"`parents` names variable(s) {unknown} that have no states.")
    return result


def _frozen(cpt) -> np.ndarray:
    """Return ``cpt`` as a read-only float64 array (a copy only when the caller could still change it)."""
    table = np.asarray(cpt, dtype=np.float64)
    if table.flags.writeable:
        table = table.copy()
        table.setflags(write=False)
    return table


def _clean_cpt(v, cpt, parents: tuple, states: Mapping) -> np.ndarray:
    """Return ``cpt`` as a read-only float array, checked (shape, finite, >= 0, rows summing to 1) and normalised."""
    expected = tuple(len(states[p]) for p in parents) + (len(states[v]),)
    try:
        table = np.array(cpt, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise OptionError(f"CPT of {v!r} is not a numeric array: {exc}") from None
    if table.shape != expected:
        raise OptionError(f"CPT of {v!r} has shape {table.shape}; expected {expected} (parents {parents} then "
                          f"{v!r} itself).")
    if not np.all(np.isfinite(table)):
        raise OptionError(f"CPT of {v!r} has non-finite entries.")
    if np.any(table < 0):
        raise OptionError(f"CPT of {v!r} has negative entries (min {table.min():.3g}).")
    sums = table.sum(axis=-1)
    bad = np.abs(sums - 1.0) > _ROW_SUM_TOLERANCE
    if np.any(bad):
        where = np.unravel_index(int(np.argmax(bad)), sums.shape)
        config = {p: states[p][k] for p, k in zip(parents, where)}
        raise OptionError(f"CPT of {v!r}: the row for parent configuration {config} sums to "
                          f"{float(sums[where]):.6g}, not 1.")
    # Remove rounding in a file's numbers; rows already normalised to a few ulps are left alone, so that
    # normalising is idempotent and a model file round-trips bit for bit.
    off = np.abs(sums - 1.0) > 4 * np.finfo(np.float64).eps
    table[off] /= sums[off][..., None]
    table.setflags(write=False)
    return table


def _clean_labels(v, labels) -> tuple:
    """Return a variable's labels as a tuple: a non-empty sequence without duplicates."""
    if isinstance(labels, str):
        raise OptionTypeError(f"states[{v!r}] must be a sequence of labels, not the string {labels!r}.")
    labels = tuple(labels)
    if len(labels) == 0:
        raise OptionError(f"Variable {v!r} has no states.")
    if len(set(labels)) != len(labels):
        raise OptionError(f"Variable {v!r} has duplicate state labels: {labels}.")
    return labels


def _network_schema(schema, states: dict, order: list, variables: tuple) -> Schema:
    """Return the network's schema: the given one checked against ``states``, or one in the declared order."""
    if schema is None:
        return Schema({v: states[v] for v in order})  # declared order: the order of `states`
    if not isinstance(schema, Schema):
        raise OptionTypeError(f"`schema` must be a Schema; got {type(schema).__name__}.")
    absent = [v for v in order if v not in schema.states]
    if absent:
        raise SchemaError(f"The schema lacks variable(s) {absent} of the network.")
    schema = schema.select([v for v in schema.variables if v in states])
    for v in variables:
        if tuple(schema.states[v]) != states[v]:
            raise SchemaError(f"The schema's states of {v!r} {schema.states[v]} differ from the network's "
                              f"{states[v]}.")
    return schema


class BayesianNetwork:
    """A discrete Bayesian network: a DAG and one CPT per variable.

    Parameters
    ----------
    parents : mapping
        ``parents[v]`` is the sequence of parent names of ``v`` (missing keys mean
        no parents).
    cpts : mapping
        ``cpts[v]`` is an array of shape ``(*[len(states[p]) for p in parents[v]],
        len(states[v]))``: parents in the listed order, the variable itself last;
        each row sums to 1.
    states : mapping
        ``states[v]`` is the ordered sequence of state labels of ``v``.
    schema : Schema, optional
        How data is encoded for this network: bin edges of numeric variables and
        missing-value markers (its states must equal ``states``).  Default: a
        schema of the states alone.

    Attributes
    ----------
    variables : tuple of str
        A topological order (stable: ties keep the order of ``states``).
    parents, states, cpts : read-only mappings
        As given (CPT rows renormalised to sum to exactly 1; arrays read-only).
    schema : Schema
        The data boundary, in ``variables`` order; every input is encoded with it.

    Raises
    ------
    ValueError
        For a cycle, a CPT of the wrong shape, negative or non-finite entries, rows
        not summing to 1, unknown or duplicated parents, or empty/duplicated states.

    Examples
    --------
    >>> net = BayesianNetwork(
    ...     parents={"rain": [], "wet": ["rain"]},
    ...     cpts={"rain": [0.2, 0.8], "wet": [[0.9, 0.1], [0.1, 0.9]]},
    ...     states={"rain": ["yes", "no"], "wet": ["yes", "no"]},
    ... )
    >>> net.variables
    ('rain', 'wet')
    >>> round(float(net.log_likelihood(pd.DataFrame({"rain": ["yes"], "wet": ["yes"]}))[0]), 4)
    -1.7148
    """

    def __init__(self, parents: Mapping, cpts: Mapping, states: Mapping, *, schema: Schema | None = None):
        if not isinstance(states, Mapping) or not isinstance(parents, Mapping) or not isinstance(cpts, Mapping):
            raise OptionTypeError("`parents`, `cpts` and `states` must be mappings keyed by variable name.")
        order = list(states)
        clean_states = {v: _clean_labels(v, states[v]) for v in order}
        clean_parents = _normalise_parents(parents, order)
        variables = topological_order(clean_parents, order)
        clean_cpts = {}
        for v in order:
            if v not in cpts:
                raise OptionError(f"No CPT given for variable {v!r}.")
            clean_cpts[v] = _clean_cpt(v, cpts[v], clean_parents[v], clean_states)
        self._states = clean_states
        self._parents = clean_parents
        self._cpts = clean_cpts
        self._variables = variables
        index = {v: i for i, v in enumerate(variables)}
        self._parent_index = tuple(tuple(index[p] for p in clean_parents[v]) for v in variables)
        self._cardinalities = np.array([len(clean_states[v]) for v in variables], dtype=np.intp)
        self._cardinalities.setflags(write=False)
        schema = _network_schema(schema, clean_states, order, variables)
        self._schema = schema
        #: What learning did (set by :func:`bnfisher.learn`: missing-value strategy, EM iterations, ...).
        self.learning_: dict = {}
        # Arrays of codes in and out follow the declared order; internally columns are topological.
        self._declared = tuple(index[v] for v in schema.variables)

    # ------------------------------------------------------------------ structure
    @property
    def variables(self) -> tuple:
        """Variable names in a topological order."""
        return self._variables

    @property
    def schema(self) -> Schema:
        """The :class:`~bnfisher.data.Schema` every input is encoded with.

        Its variable order is the network's *declared* order (the order of
        ``states``, i.e. of the training data's columns): an array of codes given
        to any method has its columns in this order, and arrays returned (e.g. by
        :meth:`sample`) use it too.
        """
        return self._schema

    @property
    def parents(self) -> Mapping:
        """Read-only ``{variable: tuple of parents}``."""
        return MappingProxyType({v: self._parents[v] for v in self._variables})

    @property
    def states(self) -> Mapping:
        """Read-only ``{variable: tuple of state labels}``."""
        return MappingProxyType({v: self._states[v] for v in self._variables})

    @property
    def cpts(self) -> Mapping:
        """Read-only ``{variable: CPT array}`` (parents' axes first, the variable last)."""
        return MappingProxyType({v: self._cpts[v] for v in self._variables})

    def with_cpts(self, cpts: Mapping, *, validate: bool = True) -> BayesianNetwork:
        """Return a network with this structure, states and schema, and new CPTs.

        The CPTs are checked as the constructor checks them; the structure is not
        checked again, so this is much cheaper than building a new network (EM builds
        one per iteration).

        Parameters
        ----------
        cpts : mapping
            ``{variable: CPT array}`` for every variable, shaped as :attr:`cpts`.
        validate : bool, default=True
            False skips the checks: for tables made by code that guarantees them
            (normalised counts, as in EM).

        Returns
        -------
        BayesianNetwork

        Raises
        ------
        OptionError
            When a CPT is missing or is not a valid table.

        Examples
        --------
        >>> net = BayesianNetwork({"b": ["a"]}, {"a": [0.5, 0.5], "b": [[0.9, 0.1], [0.2, 0.8]]},
        ...                       {"a": [0, 1], "b": [0, 1]})
        >>> net.with_cpts({"a": [0.1, 0.9], "b": net.cpts["b"]}).cpts["a"].tolist()
        [0.1, 0.9]
        """
        missing = [v for v in self._variables if v not in cpts]
        if missing:
            raise OptionError(f"No CPT given for variable {missing[0]!r}.")
        network = copy.copy(self)
        network._cpts = ({v: _clean_cpt(v, cpts[v], self._parents[v], self._states)  # noqa: SLF001 - a copy of self
                          for v in self._states} if validate else {v: _frozen(cpts[v]) for v in self._states})
        network.learning_ = {}
        return network

    @property
    def edges(self) -> list:
        """Arcs ``(parent, child)`` in topological order of the children."""
        return [(p, v) for v in self._variables for p in self._parents[v]]

    @property
    def cardinalities(self) -> np.ndarray:
        """Number of states of each variable, in ``variables`` order (read-only)."""
        return self._cardinalities

    @property
    def n_parameters(self) -> int:
        """Number of free parameters, sum over variables of ``q_i (r_i - 1)``."""
        return int(sum(table.size // table.shape[-1] * (table.shape[-1] - 1) for table in self._cpts.values()))

    def parent_indices(self) -> list:
        """``parent_indices()[i]`` is the tuple of column indices of the parents of ``variables[i]``.

        Returns
        -------
        list of tuple of int
        """
        return list(self._parent_index)

    def to_networkx(self):
        """Return the DAG as a ``networkx.DiGraph`` (nodes carry ``states``)."""
        import networkx as nx

        graph = nx.DiGraph()
        for v in self._variables:
            graph.add_node(v, states=self._states[v])
        graph.add_edges_from(self.edges)
        return graph

    def __repr__(self) -> str:
        return (
            f"BayesianNetwork(n_variables={len(self._variables)}, n_edges={len(self.edges)}, "
            f"n_parameters={self.n_parameters})"
        )

    def _repr_html_(self) -> str:
        import html

        rows = "".join(f"<tr><td>{html.escape(str(v))}</td><td>{len(self._states[v])}</td>"
                       f"<td>{html.escape(', '.join(map(str, self._parents[v])) or '-')}</td></tr>"
                       for v in self._variables)
        return (f"<table><caption>{html.escape(repr(self))}</caption><tr><th>variable</th><th>states</th>"
                f"<th>parents</th></tr>{rows}</table>")

    def describe(self) -> str:
        """Return a multi-line text summary: one line per variable with its parents.

        Returns
        -------
        str
        """
        lines = [repr(self)]
        for v in self._variables:
            ps = ", ".join(self._parents[v]) or "-"
            lines.append(f"  {v} ({len(self._states[v])} states) <- {ps}")
        return "\n".join(lines)

    # ------------------------------------------------------------------- data
    def encode(self, data, *, missing: str = "error", handle_unknown: str = "error") -> EncodedData:
        """Encode ``data`` with this network's schema, columns in ``variables`` (topological) order.

        Parameters
        ----------
        data : DataFrame, ndarray of int or EncodedData
            A DataFrame holds labels (extra columns are ignored; numeric values of
            binned variables are binned with the schema's edges); an integer array
            holds codes with its columns in the declared order ``schema.variables``.
        missing : {"error", "allow"}, default="error"
            ``"allow"``: missing values become -1 (see :meth:`Schema.encode`).
        handle_unknown : {"error", "marginalize"}, default="error"
            ``"marginalize"``: values that are not states become missing too.

        Returns
        -------
        EncodedData
            Columns in ``variables`` order.

        Raises
        ------
        SchemaError
            An absent column, an unknown value, a code out of range.
        """
        options = {"missing": missing, "handle_unknown": handle_unknown}
        if isinstance(data, (pd.DataFrame, pd.Series, EncodedData)):
            return self._schema.encode(data, variables=self._variables, **options)
        encoded = self._schema.encode(data, **options)
        return encoded if encoded.variables == self._variables else encoded.select(self._variables)

    @classmethod
    def from_data(cls, data, parents: Mapping, *, pseudocount: float = 1.0,
                  schema: Schema | None = None) -> BayesianNetwork:
        """Fit the CPTs of a given structure by smoothed maximum likelihood.

        Parameters
        ----------
        data : DataFrame, ndarray of int, EncodedData or counts provider
            Categorical data (see :func:`bnfisher.data.providers.as_provider`).
        parents : mapping
            ``{variable: sequence of parents}``; every key is a variable of the model,
            and so is every parent.
        pseudocount : float, default=1.0
            Dirichlet pseudocount alpha: ``theta_ijk = (N_ijk + alpha) / (N_ij + r_i alpha)``.
            With ``alpha = 0`` unseen parent configurations get uniform rows.
        schema : Schema, optional
            How to encode ``data`` (default: learned from it; categorical columns
            keep unused categories).

        Returns
        -------
        BayesianNetwork

        Raises
        ------
        DataError
            When the structure names a variable absent from the data.
        """
        alpha = check_nonnegative_float(pseudocount, "pseudocount")
        if not isinstance(parents, Mapping):
            raise OptionTypeError(f"`parents` must be a mapping {{variable: parents}}; got {type(parents).__name__}.")
        needed = set(parents) | {p for ps in parents.values() for p in ps}
        if schema is None and isinstance(data, pd.DataFrame):
            # Only the structure's columns: other columns (e.g. floats) are none of this model's business.
            schema = Schema.from_data(data, variables=[c for c in data.columns if c in needed])
        provider = as_provider(data, schema)
        order, families = _structure_families(list(provider.variables), parents, needed)
        tables = provider.counts(families)
        cpts = {v: cpt_from_counts(np.asarray(t), alpha) for v, t in zip(order, tables)}
        return cls({v: tuple(parents.get(v, ())) for v in order}, cpts, {v: provider.states[v] for v in order},
                   schema=provider.schema.select(order))

    def log_likelihood(self, data) -> np.ndarray:
        """Per-row log-likelihood ``log P(x) = sum_i log theta_{i, pi_i(x), x_i}`` (eq. 1).

        Parameters
        ----------
        data : DataFrame or ndarray of int

        Returns
        -------
        ndarray of shape (n_rows,)
            Natural log; ``-inf`` for rows the network deems impossible.
        """
        encoded = self.encode(data)
        codes, cardinalities = encoded.codes, encoded.cardinalities
        total = np.zeros(codes.shape[0])
        with np.errstate(divide="ignore"):  # log 0 = -inf is the right answer for impossible rows
            for i, (v, parent_index) in enumerate(zip(self._variables, self.parent_indices())):
                flat = configuration_index(codes, parent_index + (i,), cardinalities)
                total += np.log(self._cpts[v].reshape(-1)[flat])
        return total

    def sample(self, n: int, *, random_state=None, as_frame: bool = True):
        """Draw ``n`` rows by vectorised ancestral (forward) sampling.

        Parameters
        ----------
        n : int
            Number of rows.
        random_state : None, int or numpy Generator
            Seed for reproducibility.
        as_frame : bool, default=True
            Return a DataFrame of categorical columns (every state kept as a
            category); otherwise an ``(n, n_variables)`` array of codes in the
            declared order ``schema.variables``.

        Returns
        -------
        DataFrame or ndarray
        """
        n = check_positive_int(n, "n", minimum=0)
        rng = check_random_state(random_state)
        cardinalities = self.cardinalities
        codes = np.empty((n, len(self._variables)), dtype=np.intp, order="F")
        for i, (v, parent_index) in enumerate(zip(self._variables, self.parent_indices())):
            r = int(cardinalities[i])
            table = self._cpts[v].reshape(-1, r)
            config = configuration_index(codes, parent_index, cardinalities)
            # Inverse-CDF sampling for every row at once: row j's CDF is shifted to
            # [j, j + 1], so one searchsorted over the concatenated CDFs finds
            # state k of configuration j at position j * r + k.
            cdf = np.cumsum(table, axis=1)
            cdf[:, -1] = 1.0
            shifted = (cdf + np.arange(table.shape[0])[:, None]).reshape(-1)
            u = rng.random(n) + config
            position = np.searchsorted(shifted, u, side="right")
            codes[:, i] = np.minimum(position - config * r, r - 1)
        if not as_frame:
            return np.asfortranarray(codes[:, list(self._declared)])
        return self._frame(codes)

    def decode(self, codes: np.ndarray) -> pd.DataFrame:
        """Turn an array of codes (columns in the declared order ``schema.variables``) into a categorical DataFrame.

        Parameters
        ----------
        codes : ndarray of shape (n_rows, n_variables)

        Returns
        -------
        DataFrame
            Columns in the declared order, every state kept as a category.
        """
        return self._frame(self.encode(codes).codes)

    def _frame(self, codes: np.ndarray) -> pd.DataFrame:
        """Categorical DataFrame, columns in declared order, from codes in ``variables`` order."""
        return pd.DataFrame({
            self._variables[i]: pd.Categorical.from_codes(
                codes[:, i], categories=pd.Index(list(self._states[self._variables[i]]), dtype=object))
            for i in self._declared
        })


def cpt_from_counts(counts: np.ndarray, pseudocount: float) -> np.ndarray:
    """Smoothed CPT ``(N_ijk + alpha) / (N_ij + r alpha)`` from a family count table.

    Rows with ``N_ij + r alpha = 0`` (unseen configuration, no smoothing) are uniform.
    """
    smoothed = counts.astype(np.float64) + pseudocount
    totals = smoothed.sum(axis=-1, keepdims=True)
    r = counts.shape[-1]
    with np.errstate(invalid="ignore", divide="ignore"):  # 0/0 rows are replaced just below
        table = np.where(totals > 0, smoothed / totals, 1.0 / r)
    return table


def _structure_families(variables: list, parents: Mapping, needed: set) -> tuple:
    """Return the structure's variables in the data's order, and their families (parents first) as indices."""
    index = {v: i for i, v in enumerate(variables)}
    unknown = sorted(str(v) for v in needed if v not in index)
    if unknown:
        raise DataError(f"The structure names variable(s) {unknown} absent from the data (it has {variables}).")
    order = [v for v in variables if v in needed]
    return order, [tuple(index[p] for p in parents.get(v, ())) + (index[v],) for v in order]
