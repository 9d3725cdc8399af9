"""The learn job: a network from a table, its scores, and the files it is written to.

The command line's ``learn`` parses its options and calls :func:`learn_network`;
the options and their defaults are :data:`LEARN_OPTIONS` (the table ``learn``
itself fills its options from), so the two cannot disagree.
"""

from __future__ import annotations

import inspect
import os
import time
from dataclasses import dataclass, field

import numpy as np

from bnfisher.bn.formats.files import check_network_file, write_network
from bnfisher.bn.network import BayesianNetwork
from bnfisher.bn.scores import score
from bnfisher.bn.scores.formulas import SCORES
from bnfisher.bn.structure.learn import LEARN_OPTIONS, STRUCTURES, learn
from bnfisher.data.binning import Binning
from bnfisher.data.guardrails import check_tables
from bnfisher.data.schema import Schema
from bnfisher.exceptions import OptionError
from bnfisher.jobs.inputs import binned_note, warn
from bnfisher.jobs.result import TextResult

__all__ = ["DEFAULT_PSEUDOCOUNT", "LEARN_OPTIONS", "SCORES", "STRUCTURES", "LearnResult", "learn_network",
           "structure_options"]

#: The CPTs' Dirichlet pseudocount when none is given (``learn``'s default).
DEFAULT_PSEUDOCOUNT: float = inspect.signature(learn).parameters["pseudocount"].default


@dataclass(repr=False)
class LearnResult(TextResult):
    """A learned network and what learning it did; ``print`` shows the network and its scores.

    Attributes
    ----------
    network : BayesianNetwork
    seconds : float
        Time to learn it (structure and CPTs).
    n_rows : int
    scores : dict
        ``{"bic": ..., "ll": ...}`` on the rows for complete data; empty with missing cells (see
        ``network.learning_`` for EM's objective).
    notes : list of str
        What was done on the way (missing cells, files written).

    Examples
    --------
    >>> result = learn_network(load("nursery").iloc[::20], "chow-liu")
    >>> print(result.to_text().splitlines()[-1].split(";")[0])
    Learned in ... s
    """

    network: BayesianNetwork
    seconds: float
    n_rows: int
    scores: dict = field(default_factory=dict)
    notes: list = field(default_factory=list)

    def verdict(self) -> str:
        """Return the network learned, in one line.

        Returns
        -------
        str
        """
        return repr(self.network)

    def to_text(self, *, notes: bool = True) -> str:
        """Return the network, how long it took and its scores (and the steps' notes, unless ``notes=False``).

        Parameters
        ----------
        notes : bool, default=True

        Returns
        -------
        str
        """
        if self.scores:
            fit = (f"Learned in {self.seconds:.2f} s; BIC {self.scores['bic']:.6g}, log-likelihood "
                   f"{self.scores['ll']:.6g} on {self.n_rows} rows.")
        else:
            report = self.network.learning_
            fit = (f"Learned in {self.seconds:.2f} s; EM: {report['em_iterations']} iterations, converged "
                   f"{report['em_converged']}, observed-data log-likelihood (with the prior) "
                   f"{report['objective']:.6g}.")
        steps = [n for n in self.notes if not n.startswith("Wrote ")] if notes else []
        written = [n for n in self.notes if n.startswith("Wrote ")]
        return "\n".join([*steps, self.network.describe(), fit, *written])


def structure_options(structure: str | None, given: dict, *, flags: dict | None = None) -> tuple[str, dict]:
    """Return the structure (default ``"chow-liu"``) and its ``learn`` options; refuse options it does not take.

    Parameters
    ----------
    structure : str or None
    given : dict
        Option name -> value; None means "not given" (the default in :data:`LEARN_OPTIONS` applies).
    flags : dict, optional
        Option name -> how the caller spells it (e.g. ``{"tabu": "--tabu", "structure": "--structure"}``),
        for the error message.

    Returns
    -------
    structure : str
    options : dict
        The given options the structure takes.

    Raises
    ------
    OptionError
        Naming every given option the structure does not take.

    Examples
    --------
    >>> structure_options("hc", {"tabu": 10, "class_variable": None})
    ('hc', {'tabu': 10})
    """
    structure = structure or "chow-liu"
    takes = LEARN_OPTIONS.get(structure, {})
    flags = flags or {}
    unused = [flags.get(name, name) for name, value in given.items() if value is not None and name not in takes]
    if unused:
        verb = "does" if len(unused) == 1 else "do"
        raise OptionError(f"{', '.join(unused)} {verb} not apply to {flags.get('structure', 'structure')} {structure}.")
    return structure, {name: value for name, value in given.items() if value is not None}


def learn_network(frame, structure: str = "chow-liu", *, bins: int | None = None, bin_columns=None,
                  categorical=None, na_values=(),
                  learn_options: dict | None = None,
                  output: str | os.PathLike | None = None, schema_output: str | os.PathLike | None = None
                  ) -> LearnResult:
    """Learn a network from a table (EM when cells are missing) and write it where asked.

    Parameters
    ----------
    frame : DataFrame
        The table as read.
    structure : str, default="chow-liu"
        A named learner of :func:`bnfisher.learn`.
    bins, bin_columns, categorical, na_values
        As :class:`~bnfisher.Binning` documents them. Bin numeric columns into at most this many quantile bins.
    learn_options : dict, optional
        The structure's options (:data:`LEARN_OPTIONS`) and ``pseudocount``.
    output : str or path-like, optional
        A network file (.json, .bif, .xmlbif, .net, .uai); its names and labels are checked
        against the format before learning.
    schema_output : str or path-like, optional
        The schema as JSON.

    Returns
    -------
    LearnResult

    Examples
    --------
    >>> result = learn_network(load("nursery").iloc[::20])
    >>> len(result.network.variables), result.n_rows
    (9, 648)
    """
    binning = Binning(bins, bin_columns, categorical, na_values)
    warn(check_tables([frame], na_values=binning.markers, binned=bins is not None))  # as every job checks its tables
    schema = Schema.from_data(frame, **binning.schema_options(), missing="allow")
    if output:  # the format's names and labels: checked before learning, not after
        check_network_file(output, schema.states)
    started = time.perf_counter()
    training = schema.encode(frame, missing="allow")
    notes = binned_note(schema, bins, "with quantile edges") + _missing_notes(training.codes)
    network = learn(training, structure, schema=schema,
                    missing="em" if (training.codes < 0).any() else "error", **(learn_options or {}))
    seconds = time.perf_counter() - started
    scores = {}
    if not (training.codes < 0).any():
        encoded = network.encode(frame)
        scores = {"bic": score(network, encoded, "bic"), "ll": score(network, encoded, "ll")}
    if output:
        write_network(network, output)
        notes.append(f"Wrote {output}")
    if schema_output:
        network.schema.to_json(schema_output)
        notes.append(f"Wrote {schema_output}")
    return LearnResult(network, seconds, training.n_rows, scores, notes)


def _missing_notes(codes: np.ndarray) -> list:
    """Say how many cells are missing and what is done with them (empty when none is)."""
    n_missing = int((codes < 0).sum())
    if not n_missing:
        return []
    rows = int((codes < 0).any(axis=1).sum())
    return [f"{n_missing} cells missing ({100 * n_missing / codes.size:.1f}%, in {rows} of {codes.shape[0]} rows): "
            "the CPTs are fitted by EM and the kernel marginalizes them (paper Sec. 8)."]
