"""The ``bnfisher`` command line's argument parser (every command, option and help text)."""

from __future__ import annotations

import argparse

import numpy as np

from bnfisher._utils.redact import redact
from bnfisher._version import __version__
from bnfisher.datasets import DATASETS
from bnfisher.jobs.experiment import CRITERIA, MODELS
from bnfisher.jobs.learn import DEFAULT_PSEUDOCOUNT, LEARN_OPTIONS, SCORES, STRUCTURES
from bnfisher.jobs.monitor import GUARANTEES


class UsageError(Exception):
    """Options that do not go together (exit status 2, one line)."""

# ----------------------------------------------------------------- options
def _number(kind: type, minimum: float):
    """Return an argparse type: ``kind`` (int or float), finite and at least ``minimum``."""
    def parse(text: str):
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a {'whole ' if kind is int else ''}number, got {text!r}") \
                from None
        if not np.isfinite(value) or value < minimum:
            raise argparse.ArgumentTypeError(f"must be a finite number >= {minimum}, got {text}" if kind is float
                                             else f"must be at least {minimum}, got {value}")
        return value

    return parse


_positive_int, _nonnegative_int, _nonnegative_float = _number(int, 1), _number(int, 0), _number(float, 0)


def _probability(text: str) -> float:
    """Argparse type of a level (``--alpha``) or a share: a number strictly between 0 and 1."""
    value = _number(float, 0)(text)
    if not 0 < value < 1:
        raise argparse.ArgumentTypeError(f"must be a number strictly between 0 and 1, got {text}")
    return value


def _candidates(text: str):
    """Argparse type of ``--max-candidates``: a whole number >= 1, or ``all``."""
    return "all" if text == "all" else _positive_int(text)


def _jobs(text: str) -> int:
    """Argparse type of ``--jobs``: a whole number of threads, or -1 for all cores."""
    value = _number(int, -1)(text)
    if value == 0:
        raise argparse.ArgumentTypeError("must be 1 or more, or -1 for all cores; got 0")
    return value


def _every(text: str) -> int | None:
    """Argparse type of ``--check-every``: a whole number of iterations, or "none"."""
    return None if text.strip().lower() == "none" else _positive_int(text)


class _Parser(argparse.ArgumentParser):
    """argparse, with a usage error in one line (``bnfisher CMD: error: ...``, exit status 2), no usage block."""

    def error(self, message: str):
        # redact: argparse echoes what it did not recognise, a store's URL with its password included
        self.exit(2, f"{self.prog}: error: {redact(' '.join(message.split()))}{_store_hint(message)} "
                     f"(see {self.prog} --help)\n")


def _store_hint(message: str) -> str:
    """Say how a store is given when an unrecognised argument looks like one (``bnfisher history history.db``)."""
    if not message.startswith("unrecognized arguments:"):
        return ""
    words = message.partition(":")[2].split()
    looks = [w.endswith((".db", ".sqlite", ".sqlite3")) or w.startswith(("postgresql:", "postgres:")) for w in words]
    return "; a store is given with --store (or $BNFISHER_STORE)" if any(looks) else ""


def _parser(**kwargs) -> argparse.ArgumentParser:
    # No abbreviations: `--k` must never silently mean `--kdb-k`.
    return _Parser(allow_abbrev=False, **kwargs)


def _binning_choices(group) -> None:
    """Add --bin-columns and --categorical (which columns --bins bins) to a parser or an argument group."""
    group.add_argument("--bin-columns", nargs="+", default=None, metavar="COLUMN",
                       help="with --bins: the numeric columns to bin (default: float columns, and integer columns "
                            "with more than max(BINS, 30) values; fewer values are a nominal variable's codes)")
    group.add_argument("--categorical", nargs="+", default=None, metavar="COLUMN",
                       help="columns never binned: their values are labels, whatever their type")


def _data_options() -> argparse.ArgumentParser:
    parent = _parser(add_help=False)
    group = parent.add_argument_group("data")
    group.add_argument("--bins", type=_positive_int, default=None,
                       help="bin numeric columns into at most this many quantile bins, with edges learned jointly "
                            "from all inputs (default: no binning; a float column is an error). Binned by default: "
                            "float columns, and integer columns with more than max(BINS, 30) values")
    _binning_choices(group)
    group.add_argument("--na-values", nargs="+", default=None, metavar="MARKER",
                       help="cell values that mean 'missing' besides an empty field (e.g. ? or NA; NA, None, NULL... "
                            "are labels in a column of text unless named here)")
    return parent


#: ``learn`` option -> (argparse destination, command-line flag) of the options the command line exposes.
LEARN_FLAGS = {"structure_score": ("score", "--score"), "class_variable": ("class_variable", "--class-variable"),
               "k": ("kdb_k", "--kdb-k"), "max_parents": ("max_parents", "--max-parents"),
               "tabu": ("tabu", "--tabu"), "max_time": ("max_time", "--max-time"),
               "max_candidates": ("max_candidates", "--max-candidates")}


def _takes(option: str) -> str:
    """Name the structures that take ``option``, with its default, as LEARN_OPTIONS declares them."""
    structures = [s for s, options in LEARN_OPTIONS.items() if option in options]
    defaults = {LEARN_OPTIONS[s][option] for s in structures}
    shown = f"; default {defaults.pop()}" if len(defaults) == 1 and None not in defaults else ""
    return f"({', '.join(structures)}{shown})"


def _learning_options(network: bool = True) -> argparse.ArgumentParser:
    parent = _parser(add_help=False)
    group = parent.add_argument_group("network (learned from the data unless --network is given)")
    if network:
        group.add_argument("--network", help="use this model (bnfisher's .json, or .bif) and the schema it carries "
                                             "instead of learning one")
    group.add_argument("--structure", choices=STRUCTURES, default=None, help="structure learner (default: chow-liu)")
    group.add_argument("--score", choices=SCORES, default=None, help=f"structure score {_takes('structure_score')}")
    group.add_argument("--class-variable", default=None, help=f"class column {_takes('class_variable')}")
    group.add_argument("--kdb-k", type=_nonnegative_int, default=None,
                       help=f"feature parents per feature {_takes('k')}")
    group.add_argument("--max-parents", type=_nonnegative_int, default=None,
                       help=f"parent limit {_takes('max_parents')}; default no limit")
    group.add_argument("--max-time", type=_nonnegative_float, default=None, metavar="SECONDS",
                       help="stop the search after this many seconds, with a warning "
                            f"{_takes('max_time')}; default no limit")
    group.add_argument("--max-candidates", type=_candidates, default=None, metavar="K",
                       help="draw each variable's parents from its K best single parents, or 'all' "
                            f"{_takes('max_candidates')}: 'auto' keeps 20 on tables of more than 100 columns, "
                            "all on narrower ones")
    group.add_argument("--tabu", type=_nonnegative_int, default=None, help=f"tabu list length {_takes('tabu')}")
    group.add_argument("--pseudocount", type=_nonnegative_float, default=None,
                       help=f"CPT pseudocount (default {DEFAULT_PSEUDOCOUNT:g})")
    return parent


def _engine_options(engine_help: str) -> argparse.ArgumentParser:
    """``--engine`` and the Dask cluster's options, alike on every command that reads data where it lies."""
    parent = _parser(add_help=False)
    group = parent.add_argument_group("engine")
    group.add_argument("--engine", choices=("numpy", "dask"), default="numpy", help=engine_help)
    group.add_argument("--scheduler", help="dask engine: a running scheduler's address, e.g. tcp://host:8786 "
                                           "(default: a local cluster)")
    group.add_argument("--scheduler-timeout", type=_nonnegative_float, default=None, metavar="SECONDS",
                       help="dask engine: seconds to wait for --scheduler to answer (default 10)")
    group.add_argument("--workers", type=_positive_int, default=None,
                       help="dask engine: local worker processes (default 2)")
    return parent


def _run_options(*, seed: bool = True, quiet: bool = True) -> argparse.ArgumentParser:
    parent = _parser(add_help=False)
    if seed:
        parent.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    if quiet:
        parent.add_argument("--quiet", action="store_true",
                            help="print the verdict only: no progress bars, no notes, no tables")
    return parent


# ------------------------------------------------------------------ parser
def build_parser() -> argparse.ArgumentParser:
    """Return the ``bnfisher`` argument parser (one sub-command per task).

    Returns
    -------
    argparse.ArgumentParser
    """
    data, learning, run = _data_options(), _learning_options(), _run_options()
    parser = _parser(prog="bnfisher", description="Fisher kernel of discrete Bayesian networks for categorical "
                                                  "data.")
    parser.add_argument("--version", action="version", version=f"bnfisher {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    datasets = list(DATASETS)
    _add_demo(sub, datasets=datasets)
    _add_mmd(sub, data=data, learning=learning)
    _add_compare(sub, data=data, learning=learning, run=run)
    _add_drift(sub, data=data, run=run)
    _add_profile(sub)
    _add_learn(sub, data=data)
    _add_summarize(sub, data=data, learning=learning, run=run, datasets=datasets)
    _add_experiment(sub, datasets=datasets)
    _add_hmm(sub)
    _add_monitor(sub, data=data)
    for name, command in sub.choices.items():
        command.epilog = f"example: {EXAMPLES[name]}"
        command.formatter_class = _ExampleFormatter
    return parser


class _ExampleFormatter(argparse.HelpFormatter):
    """Wrap help as usual, but print the example line as it is (a command must not break at a hyphen)."""

    def _fill_text(self, text, width, indent):
        return text if text.startswith("example: ") else super()._fill_text(text, width, indent)


def _stopping_arguments(command) -> None:
    """Add ``--stopping`` (and the deprecated ``--early-stop``) to a command that tests windows."""
    command.add_argument("--stopping", choices=("futility", "anytime", "fixed", "checkpoints"), default="futility",
                         help="futility (default): stop a window's permutations once a rejection is implausible, "
                              "else run them all (exact p-values); anytime: also stop a clear change early "
                              "(anytime-valid p-values, bounds rather than estimates, less power near the level); "
                              "fixed: every permutation; checkpoints: stop at 199 or 999 where the p-value is large")
    command.add_argument("--early-stop", action="store_const", const=True, default=None,
                         help="deprecated: --stopping checkpoints")


def _add_monitor(sub, *, data) -> None:
    """Add the ``monitor`` and ``history`` commands: windows kept in a store, alarms with a stated rate."""
    monitor = sub.add_parser(
        "monitor", parents=[data, _run_options()], allow_abbrev=False,
        help="test the windows a store has not seen, keep them, alarm (exit status 1) when one drifted",
        description="Cut DATA into windows, test those the store has not seen against the reference (drift's exact "
                    "test), append them to the store (an SQLite file, or a postgresql:// URL) and exit 0 when no "
                    "window alarms, 1 when one does, 2 on an error. Each window is tested at alpha / horizon: the "
                    "chance of any false alarm over HORIZON windows without change is at most alpha (with "
                    "--guarantee unbounded: over every window the store will hold).")
    monitor.add_argument("reference", help="the reference table, or its profile (.bnfp)")
    monitor.add_argument("data", nargs="+", help="the table to test: one window (cut it with --rows or --window), or "
                                                 "several tables, one window each")
    monitor.add_argument("--store", default=None,
                         help="the history: an SQLite file, or a postgresql:// URL (default: $BNFISHER_STORE, which "
                              "keeps a password off the command line; so do PGPASSWORD and ~/.pgpass)")
    monitor.add_argument("--time-column", help="column of DATA holding each row's time: with --window, cuts DATA; "
                                               "alone, labels each file's window by its span")
    monitor.add_argument("--window", help="with --time-column: a pandas frequency such as 1D, 1W (ISO weeks, Monday "
                                          "to Sunday), MS")
    monitor.add_argument("--rows", type=_positive_int, default=None, help="windows of this many consecutive rows")
    monitor.add_argument("--alpha", type=_probability, default=0.05,
                         help="the chance of any false alarm over --horizon windows without change (default 0.05)")
    monitor.add_argument("--horizon", type=_positive_int, default=52,
                         help="windows the guarantee spans (default 52: a year of weekly windows); with --guarantee "
                              "unbounded, the store's first HORIZON windows spend half of alpha")
    monitor.add_argument("--guarantee", choices=GUARANTEES, default="horizon",
                         help="horizon (default): alpha over HORIZON windows, each at alpha / horizon; unbounded: "
                              "alpha over every window, ever, the store's k-th window at alpha x horizon / ((k + "
                              "horizon - 1)(k + horizon)), a level that falls as the store grows")
    monitor.add_argument("--min-effect", type=float, default=None,
                         help="alarm only when the window's MMD²_u is at least this, too")
    monitor.add_argument("--permutations", type=_positive_int, default=None,
                         help="per window, at most (default max(2999, 4 / level - 1), twice that with "
                              "--stopping anytime)")
    _stopping_arguments(monitor)
    monitor.add_argument("--structure", choices=STRUCTURES, default="chow-liu", help="the kernel's structure")
    monitor.add_argument("--dashboard", help="write the store's dashboard (one HTML page) here")
    monitor.add_argument("--webhook", help="POST one JSON message to this http:// or https:// URL when the run "
                                           "alarms (redirects are not followed)")
    monitor.add_argument("--webhook-timeout", type=_number(float, 0.001), default=10.0, metavar="SECONDS",
                         help="seconds the whole post may take (default 10)")
    monitor.add_argument("--json", help="write the run as JSON to this file ('-': to standard output)")
    monitor.set_defaults(command_name="monitor")
    history = sub.add_parser("history", parents=[_run_options(seed=False)], allow_abbrev=False,
                             help="list the windows a store holds",
                             description="List every window in a monitoring store, oldest first.")
    history.add_argument("--store", default=None,
                         help="the history: an SQLite file, or a postgresql:// URL (default: $BNFISHER_STORE); only "
                              "read, never created or changed")
    history.add_argument("--dashboard", help="also write the store's dashboard (one HTML page) here")
    history.add_argument("--json", help="write the windows as JSON to this file ('-': to standard output)")
    history.set_defaults(command_name="history")


#: One working example per command, shown at the end of its --help.
EXAMPLES = {
    "demo": "bnfisher demo --dataset nursery",
    "mmd": "bnfisher mmd a.csv b.csv",
    "compare": "bnfisher compare a.csv b.csv --report report.html --json - --exit-code > result.json",
    "drift": "bnfisher drift reference.csv data.csv --time-column date --window 1W --report drift.html --exit-code",
    "profile": "bnfisher profile reference.csv -o reference.bnfp",
    "learn": "bnfisher learn data.csv --structure hc -o model.bif",
    "summarize": "bnfisher summarize data.csv -k 50 -o subset.csv --report subset.html",
    "experiment": "bnfisher experiment summarization --dataset nursery --model hc --sizes 50 -o results",
    "hmm-kernel": "bnfisher hmm-kernel sequences.npz -o kernel.npy --n-states 3",
    "monitor": "bnfisher monitor reference.bnfp week.csv --store history.db --dashboard dashboard.html",
    "history": "bnfisher history --store history.db",
}


def _add_demo(sub, *, datasets) -> None:
    """Add the ``demo`` command: the bundled-data demonstration."""
    demo = sub.add_parser("demo", allow_abbrev=False,
                          help="learn a network on a bundled data set and show the kernel and MMD",
                          description="Learn a Chow-Liu network on a bundled data set, print it, the Fisher "
                                      "kernel between a few rows, and MMDs between random halves and classes.")
    demo.add_argument("--dataset", default="nursery", choices=datasets, help="bundled data set (default nursery)")
    demo.add_argument("--seed", type=int, default=0, help="seed of the random halves (default 0)")
    demo.set_defaults(command_name="demo")


def _add_mmd(sub, *, data, learning) -> None:
    """Add the ``mmd`` command: the MMD between two tables."""
    mmd = sub.add_parser("mmd", parents=[data, learning, _run_options(seed=False)], allow_abbrev=False,
                         help="squared MMD between two CSV/Parquet files",
                         description="Squared MMD (eq. 10) between two tables under the Fisher kernel of a network "
                                     "given as BIF or learned from both tables together. Both tables are encoded "
                                     "and binned with one schema.")
    mmd.add_argument("first", help="first table (.csv, .csv.gz, .tsv or .parquet)")
    mmd.add_argument("second", help="second table")
    mmd.add_argument("--normalize", action="store_true", help="use the cosine-normalised kernel")
    mmd.set_defaults(command_name="mmd")


def _add_compare(sub, *, data, learning, run) -> None:
    """Add the ``compare`` command: the two-sample test."""
    engine = _engine_options("dask: A and B (Parquet or CSV files, folders or globs) stay where they lie; the test, "
                             "the family tests and the witness are computed by the workers")
    compare = sub.add_parser("compare", parents=[data, learning, run, engine], allow_abbrev=False,
                             help="MMD permutation two-sample test between two tables",
                             description="Permutation test (from count tables) of whether two tables come from "
                                         "the same distribution, under the Fisher kernel of a network. Both tables "
                                         "are encoded and binned with one schema.")
    compare.add_argument("first", help="first table, A (.csv, .csv.gz, .tsv, .parquet, a profile .bnfp, or - for "
                                          "standard input)")
    compare.add_argument("second", help="second table, B, compared with A")
    compare.add_argument("--permutations", type=_positive_int, default=1000,
                         help="permutations of the two-sample test (default 1000; the family tests draw their own, "
                              "40 per family and at least 1000)")
    compare.add_argument("--test", choices=("aggregate", "mmd"), default="aggregate",
                         help="aggregate (default): the Fisher MMD, its largest family or column block and "
                              "per-column tests, combined on the same permutations, exact, with power on marginal "
                              "shifts and on changes of dependence; mmd: the Fisher-kernel MMD alone (the paper's "
                              "test)")
    compare.add_argument("--stopping", choices=("fixed", "anytime"), default="fixed",
                         help="fixed (default): every permutation, exact p-values; anytime: the test, family and "
                              "mechanism tests stop once settled at 0.05 (anytime-valid p-values, bounds rather than "
                              "estimates)")
    compare.add_argument("--top", type=_positive_int, default=10, help="families shown (default 10)")
    compare.add_argument("--report", help="write a self-contained HTML report to this file")
    compare.add_argument("--json", help="write the report's content as JSON to this file ('-': to standard output, "
                                        "and nothing else there)")
    compare.add_argument("--exit-code", action="store_true",
                         help="exit with status 1 when the tables differ (p <= --alpha), as git diff --exit-code does")
    compare.add_argument("--alpha", type=_probability, default=None, help="with --exit-code: the level (default 0.05)")
    compare.set_defaults(command_name="compare")


def _add_drift(sub, *, data, run) -> None:
    """Add the ``drift`` command: drift over windows."""
    drift = sub.add_parser(
        "drift", parents=[data, _learning_options(network=False), run, _engine_options(
            "dask: DATA (Parquet or CSV files, one data set) stays where it lies; one pass cuts it into windows, each "
            "kept as its distinct rows with counts")], allow_abbrev=False,
        help="a reference table against each window of later data: which windows drifted, and where",
        description="Cut DATA into windows (by time with --time-column and --window, by --rows, or one window per "
                    "file), and compare each with the reference by compare's exact test; window p-values are "
                    "adjusted by Holm's procedure. The whole reference is compared with every window, each "
                    "window's structure learned on it and the reference pooled (or, with --fit-fraction, one "
                    "structure learned on a random part of the reference, the rest compared with every window).")
    drift.add_argument("reference", help="the reference table (.csv, .csv.gz, .tsv, .parquet) or its profile (.bnfp)")
    drift.add_argument("data", nargs="+", help="the table to cut into windows, or several tables, one window each")
    drift.add_argument("--time-column", help="column of DATA holding each row's date or time (with --window)")
    drift.add_argument("--window", help="with --time-column: a pandas frequency such as 1D, 1W, MS (month start)")
    drift.add_argument("--rows", type=_positive_int, default=None, help="windows of this many consecutive rows")
    drift.add_argument("--fit-fraction", type=_probability, default=None,
                       help="learn one structure on this share of the reference (at random) and compare the rest "
                            "with every window (default: no split; each window's structure learned on the pool)")
    drift.add_argument("--permutations", type=_positive_int, default=None,
                       help="permutations per window, at most (default: max(2999, 4 x windows / alpha - 1), so "
                            "that the adjustment over windows can reach alpha; twice that with --stopping anytime)")
    _stopping_arguments(drift)
    drift.add_argument("--test", choices=("aggregate", "mmd"), default="aggregate",
                       help="the test of each window, as in compare (default aggregate)")
    drift.add_argument("--alpha", type=_probability, default=0.05,
                       help="family-wise error rate over the windows (default 0.05)")
    drift.add_argument("--min-effect", type=float, default=None, metavar="MMD2_U",
                       help="flag a window only when it is significant and its unbiased MMD²_u (the effect size, "
                            "comparable across window sizes) is at least this (default: any size)")
    drift.add_argument("--top", type=_positive_int, default=5, help="families shown per drifted window (default 5)")
    drift.add_argument("--jobs", type=_jobs, default=1,
                       help="windows compared at once, on threads; -1: all cores (default 1; the result is the same)")
    drift.add_argument("--report", help="write a self-contained HTML report to this file")
    drift.add_argument("--json", help="write the result as JSON to this file ('-': to standard output, and nothing "
                                      "else there)")
    drift.add_argument("--exit-code", action="store_true", help="exit with status 1 when a window drifted")
    drift.add_argument("--plot", help="write the timeline as a PNG to this file")
    drift.set_defaults(command_name="drift")


def _add_profile(sub) -> None:
    """Add the ``profile`` command: reference profiles."""
    profile = sub.add_parser(
        "profile", parents=[_run_options(seed=False), _engine_options(
            "dask: profile the tables where they lie (Parquet or CSV, partition by partition) instead of reading "
            "them into memory")], allow_abbrev=False,
        help="store a reference table's schema and distinct rows with counts in one file, for compare and drift",
        description="Profile tables and merge profiles into one versioned, compressed file (.bnfp): the labels "
                    "and each distinct row with its count. The profile of several inputs is the profile of their "
                    "union. compare and drift accept a .bnfp wherever they accept a table.")
    profile.add_argument("inputs", nargs="+", help="tables (.csv, .csv.gz, .tsv, .parquet) and/or profiles (.bnfp)")
    profile.add_argument("-o", "--output", required=True, help="the profile to write (.bnfp)")
    profile.add_argument("--na-values", nargs="+", default=None, metavar="MARKER",
                         help="cell values that mean 'missing' besides an empty field (e.g. ? or NA; NA, None, "
                              "NULL... are labels in a column of text unless named here)")
    profile.add_argument("--bins", type=_positive_int, default=None,
                         help="bin numeric columns into at most this many quantile bins, edges over all the tables; "
                              "the profile keeps the edges and bins later tables with them")
    _binning_choices(profile)
    profile.set_defaults(command_name="profile")


def _add_learn(sub, *, data) -> None:
    """Add the ``learn`` command: learning a network."""
    learn = sub.add_parser("learn", parents=[data, _learning_options(network=False), _run_options(seed=False)],
                           allow_abbrev=False, help="learn a network from a CSV/Parquet file and write it",
                           description="Learn the structure and CPTs of a Bayesian network; print it and its "
                                       "scores, and optionally write it: bnfisher's JSON (.json, the schema inside), "
                                       "or BIF, XMLBIF, NET or UAI for other tools.")
    learn.add_argument("data", help="table (.csv, .csv.gz, .tsv or .parquet)")
    learn.add_argument("-o", "--output", help="write the network to this file, in the format its ending names: "
                                              "bnfisher's own (.json, keeps everything), or .bif, .xml (XMLBIF), "
                                              ".net (Hugin) or .uai for other tools")
    learn.add_argument("--schema", help="also write the schema (states, bin edges, missing markers) as JSON")
    learn.set_defaults(command_name="learn")


def _add_summarize(sub, *, data, learning, run, datasets) -> None:
    """Add the ``summarize`` command: representative rows (the main job)."""
    summarize = sub.add_parser(
        "summarize", parents=[data, learning, run, _engine_options(
            "dask: count tables computed by Dask workers, for data beyond memory")], allow_abbrev=False,
        help="select k representative rows (the main job)",
        description="Learn a network, build its Fisher kernel and select k rows whose MMD to the whole data is "
                    "small (Algorithm 1, started from the best of --n-init random subsets). Prints the subset's "
                    "MMD next to random subsets' mean ± sd; writes the rows as given, with their row numbers.")
    summarize.add_argument("data", nargs="?", help="table (.csv, .csv.gz, .tsv, .parquet); default: a bundled set")
    summarize.add_argument("-k", "--size", dest="k", type=_positive_int, default=200, help="subset size (default 200)")
    summarize.add_argument("--criterion", default="mmd", choices=["mmd", "chi2"], help="greedy criterion")
    summarize.add_argument("--dataset", default=None, choices=datasets,
                           help="bundled data set used when no file is given (default nursery)")
    summarize.add_argument("--n-init", type=_positive_int, default=1000,
                           help="random subsets for the start (default 1000)")
    summarize.add_argument("--n-random", type=_positive_int, default=None,
                           help="random subsets for the baseline (default 1000)")
    summarize.add_argument("-o", "--output", help="write the selected rows (with a 'row' column) to this file")
    summarize.add_argument("--plot", help="write a PNG: objective per sweep and marginals subset vs full")
    summarize.add_argument("--candidates", choices=("auto", "all", "complete"), default=None,
                           help="which rows may be chosen (default auto: on a table with missing cells, complete and "
                                "incomplete rows apart, in the table's proportions; all: every row in one search; "
                                "complete: complete rows only)")
    summarize.add_argument("--refine", choices=("margins", "none"), default=None,
                           help="after Algorithm 1 (default margins): swap rows to bring each column's and each pair "
                                "of columns' labels nearer the table's while the Fisher MMD² stays within 1.45 times "
                                "Algorithm 1's; none: Algorithm 1 alone, the paper's selection")
    summarize.add_argument("--criticisms", type=_nonnegative_int, default=0,
                           help="also pick this many criticisms: rows the subset represents worst (MMD-critic)")
    summarize.add_argument("--report", help="write a self-contained HTML report to this file")
    summarize.add_argument("--json", help="write the report's content as JSON to this file ('-': to standard "
                                          "output, and nothing else there)")
    summarize.add_argument("--pool-size", type=_positive_int, default=None,
                           help="on a larger table, the search chooses among a uniform pool of this many rows, "
                                "against the whole table (default 100000; with the dask engine, the rows sampled "
                                "into memory)")
    summarize.set_defaults(command_name="summarize")


def _add_experiment(sub, *, datasets) -> None:
    """Add the ``experiment`` command: the paper's experiments."""
    experiment = sub.add_parser("experiment", allow_abbrev=False, help="reproduce the paper's experiments",
                                description="Reproduce the paper's experiments.")
    experiment_sub = experiment.add_subparsers(dest="experiment", required=True, metavar="EXPERIMENT")
    summarization = experiment_sub.add_parser(
        "summarization", parents=[_run_options()], allow_abbrev=False,
        epilog=f"example: {EXAMPLES['experiment']}", formatter_class=_ExampleFormatter,
        help="data summarisation (Sec. 7.1, Figures 1-3)",
        description="Learn a network on the training half, select subsets of each size by random sampling and "
                    "by Algorithm 1 under several criteria, re-fit on each subset and evaluate on the test half. "
                    "Writes results.csv, timings.csv, claims.csv and figure-<model>.png.")
    summarization.add_argument("--dataset", default="all", choices=["all", *datasets],
                               help="bundled data set, or all of them (default)")
    summarization.add_argument("--model", default="all", choices=["all", *MODELS],
                               help="network learned on the training half, or all (default)")
    summarization.add_argument("--sizes", type=_positive_int, nargs="+", default=[200, 400, 600, 1000],
                               help="subset sizes (default 200 400 600 1000)")
    summarization.add_argument("--n-random", type=_positive_int, default=1000,
                               help="random subsets per size (default 1000)")
    summarization.add_argument("--n-seeds", type=_positive_int, default=5, help="number of split seeds (default 5)")
    summarization.add_argument("--criteria", nargs="+", default=list(CRITERIA), choices=CRITERIA,
                               help="greedy criteria compared with random subsets (default: all)")
    summarization.add_argument("-o", "--output", required=True, help="output directory")
    summarization.set_defaults(command_name="experiment", datasets=datasets)


def _add_hmm(sub) -> None:
    """Add the ``hmm-kernel`` command: the HMM Fisher kernel."""
    hmm = sub.add_parser("hmm-kernel", parents=[_run_options()], allow_abbrev=False,
                         help="Fisher kernel of a Gaussian HMM between time series",
                         description="Fit a Gaussian HMM to sequences and write their Fisher kernel (.npy). The "
                                     ".npz holds one (T_i, D) array per sequence, or 'X' and 'lengths'.")
    hmm.add_argument("sequences", help=".npz file")
    hmm.add_argument("-o", "--output", required=True, help="output file (NumPy .npy format, written as named)")
    hmm.add_argument("--n-states", type=_positive_int, default=3, help="hidden states of the HMM (default 3)")
    hmm.add_argument("--covariance-type", default="full", choices=["full", "diag"],
                     help="Gaussian emission covariances (default full)")
    hmm.add_argument("--information", default="complete", choices=["complete", "identity", "empirical"],
                     help="information matrix of the kernel (default: complete-data, closed form)")
    hmm.add_argument("--normalize", default="blocks", choices=["blocks", "none", "l2", "standardize"],
                     help="feature scaling (default: every parameter block to equal weight)")
    hmm.add_argument("--n-init", type=_positive_int, default=5, help="EM starts; the best fit is kept (default 5)")
    hmm.add_argument("--check-every", type=_every, default=10, metavar="N|none",
                     help="EM iterations between the checks that abandon hopeless starts; 'none' runs every start "
                          "to the end (default 10)")
    hmm.set_defaults(command_name="hmm_kernel")
