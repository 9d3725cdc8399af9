"""A reference prepared once for every window compared with it: its schema, rows, counts and network (drift, monitor).

:class:`Reference` owns what :func:`bnfisher.drift` used to assemble in place: the part of the
reference that learns the schema and the structure, the part compared with every window (as
distinct rows, with the labels it holds that the fitting part lacks), the count tables every
window's refit adds to, the learned network, and -- for data beyond memory -- the reference's
rows held by a worker.  :meth:`Reference.compare` tests one window against it.

Why a window's p-value is exact: under no drift the rows of the reference's test part and of
the window are exchangeable, and each window's structure (or, with ``fit_fraction``, its CPTs)
is learned on their pool, so the kernel is the same function of the pooled rows whichever of
them came from the window.
"""

from __future__ import annotations

import weakref

import numpy as np

from bnfisher._utils.lazy import pandas as pd
from bnfisher._utils.text import counted
from bnfisher.bn.network import BayesianNetwork
from bnfisher.bn.structure.learn import learn
from bnfisher.comparison.validity import reference_split
from bnfisher.data.binning import Binning
from bnfisher.data.profile import ReferenceProfile
from bnfisher.data.providers import NumpyCounts
from bnfisher.data.rows import DistinctRows
from bnfisher.data.schema import EncodedData, Schema
from bnfisher.data.summed import KeptCounts, SummedCounts
from bnfisher.data.windows import WindowRows
from bnfisher.exceptions import DataError, SchemaError
from bnfisher.jobs.attribute import SEARCHED_STRUCTURES
from bnfisher.jobs.compare import compare_encoded
from bnfisher.jobs.compare_distributed import compare_held
from bnfisher.jobs.drift_result import MIN_WINDOW_ROWS
from bnfisher.jobs.inputs import binned_note

__all__ = ["Reference"]


class Reference:
    """A reference table prepared once for the windows compared with it.

    Parameters
    ----------
    table : DataFrame
        The reference's rows (labels; numeric columns as read).
    binning : Binning
        How its columns become states (:class:`~bnfisher.data.binning.Binning`).
    binned : ReferenceProfile, optional
        A binned profile the table came from: its bin edges bin every window.
    structure : str, default="chow-liu"
    fit_fraction : float, optional
        As in :func:`bnfisher.drift`: None compares the whole reference and learns each
        window's structure on the pool; a fraction learns one structure on that share.
    learn_options : dict, optional
        Further options of :func:`bnfisher.learn` (``pseudocount`` also applies to the windows' CPTs).
    random_state : Generator
        Draws the fitting part (with ``fit_fraction``); checked by the caller.

    Attributes
    ----------
    schema : Schema
    network : BayesianNetwork
        Learned on the fitting part.
    rows : DistinctRows
        The part compared with every window.
    shared : dict
        The labels the compared part holds that the schema lacks, by column.
    sizes : dict
        ``rows``, ``fit_rows``, ``test_rows``, ``columns`` and ``missing_cells`` of the reference.
    notes : list of str
        What was learned from which rows.
    """

    def __init__(self, table: pd.DataFrame, *, binning: Binning, binned: ReferenceProfile | None = None,
                 structure: str = "chow-liu", fit_fraction: float | None = None, learn_options: dict | None = None,
                 random_state: np.random.Generator):
        fit, rest = _split(table, fit_fraction, random_state)
        self.schema = Schema.from_data(fit, **binning.schema_options(), missing="allow")
        if binned is not None:  # the profile's bins, with their edges: every window's numbers are binned with them
            self.schema = Schema({v: binned.schema.states[v] if v in binned.schema.bin_edges else self.schema.states[v]
                                  for v in self.schema.variables}, bin_edges=dict(binned.schema.bin_edges),
                                 na_values=binning.markers)
        encoded, _, _, unseen, self.shared, _ = encode_window(self.schema, rest, "the reference's test part")
        self.rows = DistinctRows.of(encoded)
        options = dict(learn_options or {})
        self._pseudocount = options.pop("pseudocount", 1.0)
        progress = options.pop("progress", False)
        self._options = options
        self._kept = _kept_counts(self.rows)  # the reference's tables, counted once for every window
        self.network = _learn(self.schema, fit, structure, self._kept if fit_fraction is None else None, options,
                              pseudocount=self._pseudocount, progress=progress)
        # The structure refitted on every pool: the fitting part's parents, or the structure learned anew.
        self._refit = {v: tuple(self.network.parents[v]) for v in self.network.variables} \
            if fit_fraction is not None else structure
        self._searched = isinstance(structure, str) and structure in SEARCHED_STRUCTURES
        self._rest, self._unseen, self._missing = rest, unseen, int(rest.isna().sum().sum())
        self._held = self._backend = None  # set by hold()
        self.sizes = {"rows": len(table), "fit_rows": len(fit), "test_rows": len(rest), "columns": int(table.shape[1]),
                      "missing_cells": int(table.isna().sum().sum())}
        self.notes = [_reference_note(len(table), len(fit), len(rest), fit_fraction, structure, self.network)]
        self.notes += binned_note(self.schema, binning.bins, "edges from the reference's fitting part")
        if unseen:
            self.notes.append(f"{unseen} cells of the reference's test part hold labels its fitting part never "
                              "showed: marginalized, like missing cells.")

    def hold(self, backend) -> None:
        """Send the compared rows to a worker of ``backend`` once: every window's pool is formed there.

        Parameters
        ----------
        backend : Backend
            A backend with ``hold`` (:func:`bnfisher.data.register_provider`).
        """
        self._held = backend.hold(WindowRows(self.schema, self.rows.encoded.codes, self.rows.copies, self._missing,
                                             self._unseen))
        self._backend = backend

    def compare(self, label, window, *, n_permutations: int, test: str, top: int, alpha: float, early_stop,
                random_state: np.random.Generator) -> tuple:
        """Compare one window with the reference (exactly: the window's network is learned on the pool).

        Parameters
        ----------
        label : str
            The window's name.
        window : DataFrame or HeldWindow
            Its rows; or, beyond memory, its distinct rows held by a worker (after :meth:`hold`).
        n_permutations, test, top, alpha, early_stop
            As in :func:`bnfisher.drift` (``alpha``: the mechanisms are searched below it).
        random_state : Generator
            The window's own stream.

        Returns
        -------
        result : ComparisonResult
        missing, unseen : int
            The window's missing cells and its cells with labels the schema lacks.
        """
        options = dict(n_permutations=n_permutations, test=test, top=top, random_state=random_state,
                       attribute_below=alpha, early_stop=early_stop, names=("reference", label), advice=[])
        if self._held is not None:  # a window beyond memory, held by a worker as its distinct rows
            fitted = window.run(_fit_held, self.schema, self._refit, self._pseudocount, self._options, self._held)
            result = compare_held(fitted, self._held, window, pooled_rows=self._backend.pooled_rows,
                                  reference_rows=self.rows, notes=_left_out(window.left_out),
                                  graph=fitted.parent_indices() if self._searched else None, **options)
            return result, window.missing_cells, window.unseen_cells
        encoded, frame, missing, unseen, _, left_out = encode_window(self.schema, window, f"window {label!r}",
                                                                     shared=self.shared)
        window_rows = DistinctRows.of(encoded)
        fitted = _fit_pool(self.schema, self._refit, self._pseudocount, self._options, self.rows, window_rows,
                           kept=self._kept)
        result = compare_encoded(fitted, (self.rows, window_rows), (self._rest, frame), notes=_left_out(left_out),
                                 graph=fitted.parent_indices() if self._searched else None, **options)
        return result, missing, unseen


def _split(reference: pd.DataFrame, fit_fraction: float | None, rng) -> tuple:
    """Return the part of the reference that learns the schema (with ``fit_fraction``: the structure) and the rest."""
    fit, rest = (reference, reference) if fit_fraction is None else \
        reference_split(reference, fraction=fit_fraction, random_state=rng)
    if len(rest) < MIN_WINDOW_ROWS:
        what = (f"{len(fit)} fit the network, leaving {len(rest)} to compare the windows with; give the reference at "
                f"least {2 * MIN_WINDOW_ROWS} rows" if fit_fraction is not None else
                f"give it at least {MIN_WINDOW_ROWS} rows")
        raise DataError(f"The reference has {len(reference)} rows: {what}.")
    return fit, rest


def _reference_note(rows: int, fit: int, rest: int, fit_fraction, structure, network: BayesianNetwork) -> str:
    """Return the note saying which reference rows learn what and which are compared."""
    if fit_fraction is None:
        return (f"Reference: {rows} rows, each compared with every window; each window's structure ({structure}) and "
                "CPTs are learned on it and the reference pooled, so each p-value is exact (on the reference alone: "
                f"{counted(len(network.edges), 'arc')}).")
    return (f"Reference: {rows} rows; {fit} (fraction {fit_fraction:g}, at random) fit the schema and the structure "
            f"({structure}: {counted(len(network.edges), 'arc')}), the other {rest} are compared with every window; "
            "each window's CPTs are refitted on it and those rows pooled, so each p-value is exact.")


def _learn(schema: Schema, fit: pd.DataFrame, structure, kept: KeptCounts | None, options: dict, *,
           pseudocount: float, progress) -> BayesianNetwork:
    """Learn the reference's network: from its kept count tables when they are the fitting part's, else its rows.

    ``kept`` (the whole reference compared, no missing cell) holds the counts every window's refit adds to: the
    same tables as counting ``fit`` again, from its distinct rows, once.  Options that need rows (EM, hidden
    variables) learn from the rows.
    """
    if kept is not None and not {"missing", "hidden"} & set(options):
        return learn(kept, structure, schema=schema, pseudocount=pseudocount, progress=progress, **options)
    return learn(schema.encode(fit, missing="allow"), structure, schema=schema, pseudocount=pseudocount,
                 progress=progress, **options)


def _fit_pool(schema: Schema, how, pseudocount: float, options: dict, *samples: DistinctRows,
              kept: KeptCounts | None = None) -> BayesianNetwork:
    """Learn the window's network on the reference and the window pooled: ``how`` a structure name or parents.

    ``kept``: the first sample's count tables, kept across windows (each window then counts only its own rows).
    """
    pooled = _pooled(schema, *samples, kept=kept)
    if isinstance(how, dict):
        return learn(pooled, how, schema=schema, pseudocount=pseudocount)
    return learn(pooled, how, schema=schema, pseudocount=pseudocount, **options)


def _fit_held(schema: Schema, how, pseudocount: float, options: dict, *pieces: WindowRows) -> BayesianNetwork:
    """:func:`_fit_pool` on a worker, from the distinct rows it holds (the reference's, then the window's)."""
    samples = [DistinctRows(EncodedData(rows.codes, schema.variables, dict(schema.states), schema), rows.counts, None)
               for rows in pieces]
    return _fit_pool(schema, how, pseudocount, options, *samples, kept=_held_counts(pieces[0], samples[0]))


#: The count tables of the references a worker holds, by the reference's id while it lives: every window a worker
#: tests is pooled with the same reference, whose tables are then counted once per worker.
_HELD_COUNTS: dict = {}


def _held_counts(piece: WindowRows, rows: DistinctRows) -> KeptCounts | None:
    """Return the kept count tables of a held reference (made on first use, dropped with the reference)."""
    key = id(piece)
    kept = _HELD_COUNTS.get(key)
    if kept is None and (kept := _kept_counts(rows)) is not None:
        kept = _HELD_COUNTS.setdefault(key, kept)
        weakref.finalize(piece, _HELD_COUNTS.pop, key, None)
    return kept


def _kept_counts(rows: DistinctRows) -> KeptCounts | None:
    """Return a reference's count tables, to be counted once for every window (None: it has missing cells, EM)."""
    if rows.encoded.codes.size and rows.encoded.codes.min() < 0:
        return None
    return KeptCounts(_counts(rows.encoded.schema, rows))


def _pooled(schema: Schema, *samples: DistinctRows, kept: KeptCounts | None = None):
    """Return the pooled rows to refit on: each sample's counts added up, or all rows (EM) if cells are missing."""
    if any(rows.encoded.codes.size and rows.encoded.codes.min() < 0 for rows in samples):
        every = [rows.encoded.codes[rows.inverse] if rows.inverse is not None else
                 np.repeat(rows.encoded.codes, rows.copies, axis=0) for rows in samples]
        return EncodedData(np.asfortranarray(np.vstack(every)), schema.variables, dict(schema.states), schema)
    first = kept if kept is not None else _counts(schema, samples[0])
    return SummedCounts(first, *(_counts(schema, rows) for rows in samples[1:]))


def _counts(schema: Schema, rows: DistinctRows) -> NumpyCounts:
    """Return a sample's distinct rows as a counts provider (each row weighted by its copies)."""
    return NumpyCounts(rows.encoded.codes, schema, weights=rows.copies.astype(np.float64))


def _left_out(rows: int) -> list:
    """Return the note of a window whose rows with a label the reference lacks were left out of its test."""
    return [f"{rows} row(s) with a label the reference lacks left out of this window's test (kept, the test would "
            "not be exact); they are counted in unseen_cells."] if rows else []


def encode_window(schema: Schema, frame: pd.DataFrame, where: str, *, shared: dict | None = None) -> tuple:
    """Encode rows with the reference's schema; a window's rows with a label the reference lacks are left out.

    With ``shared`` (the unseen labels the reference's test part holds, by column) a window's
    row is left out when it holds an unseen label the reference's test part lacks too: such
    rows are all in the window by construction, so marginalising the cell (as a missing one)
    would keep rows of another law on one side only; given that the reference lacks the label,
    the window's other rows and the reference's are exchangeable under no drift, and the test
    on them is exact.  An unseen label the reference's test part holds too is marginalised on
    both sides alike.

    Parameters
    ----------
    schema : Schema
    frame : DataFrame
    where : str
        Names the rows in an error ("window '2024-W03'").
    shared : dict, optional

    Returns
    -------
    tuple
        The encoded rows tested, the frame they come from, the missing cells, the cells with a
        label the schema lacks (unseen), the unseen labels by column, and the rows left out.
    """
    try:
        encoded = schema.encode(frame, missing="allow", handle_unknown="marginalize")
    except SchemaError as exc:
        raise SchemaError(f"In {where}: {exc}") from None
    columns = frame[list(schema.variables)]
    absent = (columns.isna() | columns.isin(list(schema.na_values))).to_numpy()
    column = {v: i for i, v in enumerate(encoded.variables)}
    unseen = (encoded.codes[:, [column[v] for v in schema.variables]] < 0) & ~absent
    labels = {v: set(columns[v].to_numpy()[unseen[:, j]].tolist()) for j, v in enumerate(schema.variables)
              if unseen[:, j].any()}
    rows = np.zeros(len(frame), dtype=bool)
    if shared is not None:
        for j, v in enumerate(schema.variables):
            if v in labels:
                rows |= unseen[:, j] & ~columns[v].isin(list(shared.get(v, ()))).to_numpy()
    if rows.all():  # nothing would be left: the window is tested as it is (its unseen cells marginalised)
        rows[:] = False
    if rows.any():
        frame = frame.loc[~rows]
        encoded = schema.encode(frame, missing="allow", handle_unknown="marginalize")
    return encoded, frame, int(absent.sum()), int(unseen.sum()), labels, int(rows.sum())
