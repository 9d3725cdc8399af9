"""Command line interface: ``bnfisher <command> --help``.

A thin shell: it parses arguments, checks that they make sense together, calls the
public API and prints results.  Every input of a command is encoded with one
:class:`~bnfisher.data.Schema` (learned jointly from all the inputs, or the
network's), every output path is checked before any work and written atomically,
and every option either changes the result or is refused.  A user's mistake is
printed as one line on stderr with exit status 2; a traceback means a bug.
"""

from __future__ import annotations

import io
import os
import sys
import time
import warnings

import numpy as np

from bnfisher._lazy import pandas as pd
from bnfisher._validation import free_name
from bnfisher.cli.parser import UsageError, build_parser


def _structure_options(args) -> tuple[str, dict, float]:
    """Return the structure, its ``learn`` options and the pseudocount; refuses options the structure does not use."""
    structure = args.structure or "chow-liu"
    given = {"--score": args.score, "--class-variable": args.class_variable, "--kdb-k": args.kdb_k,
             "--max-parents": args.max_parents, "--tabu": args.tabu, "--max-time": args.max_time,
             "--max-candidates": args.max_candidates}
    uses = {"hc": {"--score", "--max-parents", "--tabu", "--max-time", "--max-candidates"},
            "exact": {"--score", "--max-parents"},
            "forest": {"--score"},
            "tan": {"--class-variable"}, "naive-bayes": {"--class-variable"},
            "kdb": {"--class-variable", "--kdb-k"}}.get(structure, set())
    unused = [flag for flag, value in given.items() if value is not None and flag not in uses]
    if unused:
        verb = "does" if len(unused) == 1 else "do"
        raise UsageError(f"{', '.join(unused)} {verb} not apply to --structure {structure}.")
    options: dict = {"progress": not getattr(args, "quiet", True)}  # structural EM's rounds, the searches' steps
    if structure in ("hc", "exact", "forest"):
        options["structure_score"] = args.score or "bic"
    if structure == "exact":
        options.update(max_parents=args.max_parents)
    if structure == "hc":
        options.update(max_parents=args.max_parents, tabu=args.tabu or 0, max_time=args.max_time,
                       max_candidates=args.max_candidates or "auto")
    if structure in ("tan", "kdb", "naive-bayes"):
        options["class_variable"] = args.class_variable or "class"
    if structure == "kdb":
        options["k"] = 3 if args.kdb_k is None else args.kdb_k
    return structure, options, 1.0 if args.pseudocount is None else args.pseudocount


def _refuse_learning_options(args) -> None:
    """With --network nothing is learned: every learning option would be ignored, so it is refused."""
    flags = {"--structure": args.structure, "--score": args.score, "--class-variable": args.class_variable,
             "--kdb-k": args.kdb_k, "--max-parents": args.max_parents, "--tabu": args.tabu,
             "--max-time": args.max_time, "--max-candidates": args.max_candidates, "--pseudocount": args.pseudocount,
             "--bins": args.bins, "--na-values": args.na_values}
    given = [flag for flag, value in flags.items() if value is not None]
    if given:
        raise UsageError(f"{', '.join(given)} cannot be used with --network: the network file fixes the "
                         "structure, parameters and schema (bins, missing markers).")


# ------------------------------------------------------------------- steps
def _read_network(args):
    from bnfisher.bn.formats.files import read_network

    network = read_network(args.network)
    print(f"Network {args.network}: {network}")
    return network


def _report_missing(codes: np.ndarray) -> str:
    """Say how many cells are missing and what is done with them; return ``learn``'s ``missing`` option."""
    n_missing = int((codes < 0).sum())
    if not n_missing:
        return "error"
    rows = int((codes < 0).any(axis=1).sum())
    print(f"{n_missing} cells missing ({100 * n_missing / codes.size:.1f}%, in {rows} of {codes.shape[0]} rows): "
          "the CPTs are fitted by EM and the kernel marginalizes them (paper Sec. 8).")
    return "em"


def _kernel(network):
    from bnfisher.kernels.fisher import FisherKernel

    kernel = FisherKernel(network)
    print(f"Fisher kernel: {kernel.n_features_} features; parent marginals by {kernel.inference_}")
    return kernel


def _read_inputs(args, paths: list, *, profiles: bool = False) -> list:
    """Read tables and profiles (.bnfp): a profile as itself with ``profiles`` (compare, drift), else its table."""
    from bnfisher.data.io import read_table
    from bnfisher.data.profile import read_profile

    frames = []
    for path in paths:
        if str(path).endswith(".bnfp"):
            frame = read_profile(path)
            shown = str(frame)
            frame = frame if profiles else frame.to_frame()
        else:
            frame = read_table(path, na_values=args.na_values)
            shown = f"{len(frame)} rows x {frame.shape[1]} columns"
        if not getattr(args, "quiet", False):
            print(f"{path}: {shown}")
        frames.append(frame)
    return frames


def _write_subset(frame: pd.DataFrame, rows, output, meaning: str) -> None:
    """Write the selected rows as the user gave them, with a leading 'row' column, or show the first ten."""
    from bnfisher.data.io import write_table

    out = frame.reset_index(drop=True).copy()
    column = free_name("row", out.columns)
    out.insert(0, column, np.asarray(rows))
    if output:
        write_table(out, output)
        print(f"Wrote {output} (column {column!r} holds {meaning})")
        return
    with pd.option_context("display.width", 160, "display.max_columns", 20):
        print(out.head(10).to_string(index=False))
        if len(out) > 10:
            print(f"... {len(out) - 10} more rows (use -o FILE to write them all)")


# ---------------------------------------------------------------- commands
def _command_demo(args) -> None:
    from bnfisher.bn.structure.learn import learn
    from bnfisher.datasets import load
    from bnfisher.kernels.fisher import FisherKernel

    rng = np.random.default_rng(args.seed)
    started = time.perf_counter()
    data = load(args.dataset)
    print(f"Data set {args.dataset!r}: {data.shape[0]} rows x {data.shape[1]} categorical variables.")
    network = learn(data, structure="chow-liu")
    print(f"\nChow-Liu network learned in {time.perf_counter() - started:.2f} s:")
    print(network.describe())
    kernel = FisherKernel(network)
    print(f"\nFisher kernel: {kernel.n_features_} features; parent marginals by {kernel.inference_}.")
    rows = data.iloc[:5]
    print("\nFisher kernel between the first 5 rows:")
    with pd.option_context("display.width", 120, "display.precision", 3):
        print(pd.DataFrame(kernel.gram(rows), index=rows.index, columns=rows.index))
        print("\nThose rows:")
        print(rows.to_string())
    permutation = rng.permutation(len(data))
    half = len(data) // 2
    first, second = data.iloc[permutation[:half]], data.iloc[permutation[half:]]
    print(f"\nMMD² (eq. 10) between two random halves:        {kernel.mmd(first, second):.5f}")
    if "class" in data.columns:
        classes = data["class"].value_counts().index[:2]
        a, b = (data[data["class"] == c] for c in classes)
        print(f"MMD² between class {classes[0]!r} ({len(a)} rows) and {classes[1]!r} ({len(b)} rows): "
              f"{kernel.mmd(a, b):.5f}")
    print(f"\nDone in {time.perf_counter() - started:.2f} s.")


def _command_mmd(args) -> None:
    from bnfisher.data.profile import tables_of
    from bnfisher.jobs.inputs import prepare, warn
    from bnfisher.kernels.fisher import FisherKernel

    frames = tables_of(_read_inputs(args, [args.first, args.second], profiles=True), bins=args.bins)
    network, encoded, notes, advice = prepare(frames, **_model_options(args))
    warn(advice)
    for note in [] if args.quiet else notes:
        print(note)
    value = FisherKernel(network, normalize=args.normalize).mmd(*encoded)
    print(f"MMD² (eq. 10, biased) between {args.first} ({len(frames[0])} rows) and {args.second} "
          f"({len(frames[1])} rows): {value:.6g}")


def _model_options(args) -> dict:
    """Return the network and learning options of a command as the jobs take them (--network refuses learning ones)."""
    network = None
    if getattr(args, "network", None):
        _refuse_learning_options(args)
        network = _read_network(args)
    structure, options, pseudocount = _structure_options(args)
    return {"network": network, "structure": structure, "bins": args.bins, "na_values": args.na_values or (),
            "learn_options": {**options, "pseudocount": pseudocount}}


def _command_compare(args) -> None:
    from bnfisher.data.io import check_outputs
    from bnfisher.jobs.compare import compare

    check_outputs([args.report, args.json], inputs=[args.first, args.second, args.network])
    frames = _read_inputs(args, [args.first, args.second], profiles=True)
    result = compare(frames[0], frames[1], n_permutations=args.permutations, top=args.top, test=args.test,
                     names=(args.first, args.second), random_state=args.seed, **_model_options(args))
    print(result.to_text(notes=not args.quiet, advice=False))  # warnings went to stderr
    _write_result(result, args)


def _command_drift(args) -> None:
    from bnfisher.data.io import check_outputs
    from bnfisher.jobs.drift import drift

    dask = args.engine == "dask"
    if len(args.data) > 1 and not dask and (args.time_column or args.window or args.rows):
        raise UsageError("With several DATA files each file is a window: leave out --time-column, --window "
                         "and --rows (or give --engine dask: the files are then one data set, cut into windows).")
    if len(args.data) == 1 or dask:
        if args.rows and (args.time_column or args.window):
            raise UsageError("Give either --rows, or --time-column with --window, not both.")
        if bool(args.time_column) != bool(args.window):
            raise UsageError("--time-column and --window go together (e.g. --time-column date --window 1W).")
        if not (args.rows or args.time_column):
            raise UsageError("Say how to cut DATA into windows: --rows N, or --time-column COLUMN --window 1W; or "
                             "give several DATA files, one window each.")
    check_outputs([args.report, args.json, args.plot], inputs=[args.reference, *args.data])
    if dask:  # DATA stays where it lies: one pass cuts it into windows of distinct rows
        from bnfisher.dask import read_dask

        (reference,) = _read_inputs(args, [args.reference], profiles=True)
        data = read_dask(args.data, na_values=args.na_values)
    else:
        reference, *frames = _read_inputs(args, [args.reference, *args.data], profiles=True)
        data = dict(zip(args.data, frames)) if len(frames) > 1 else frames[0]
    structure, options, pseudocount = _structure_options(args)
    result = drift(reference, data, time=args.time_column, window=args.window or args.rows, structure=structure,
                   bins=args.bins, na_values=args.na_values or (), fit_fraction=args.fit_fraction,
                   n_permutations=args.permutations, test=args.test, alpha=args.alpha, top=args.top,
                   random_state=args.seed, learn_options={**options, "pseudocount": pseudocount},
                   n_jobs=args.jobs, progress=not args.quiet)
    print(result.to_text(notes=not args.quiet, advice=False))
    if args.plot:
        from bnfisher.viz.plotting import save_figure

        save_figure(result.plot(), args.plot)
    _write_result(result, args)
    if args.plot:
        print(f"Wrote {args.plot}")


def _command_profile(args) -> None:
    from bnfisher.data.io import check_outputs, read_table
    from bnfisher.data.profile import merge_profiles, profile, read_profile

    if not args.output.endswith(".bnfp"):
        raise UsageError(f"-o {args.output}: a profile is written to a .bnfp file.")
    check_outputs([args.output], inputs=args.inputs)
    tables = [path for path in args.inputs if not path.endswith(".bnfp")]
    parts = [read_profile(path) for path in args.inputs if path.endswith(".bnfp")]
    if tables:  # the tables together: one schema, bin edges over all of them
        if args.engine == "dask":
            from bnfisher.dask import read_dask

            frames = [read_dask(tables, na_values=args.na_values)]
        else:
            frames = [read_table(path, na_values=args.na_values) for path in tables]
        parts.insert(0, profile(*frames, bins=args.bins, na_values=args.na_values or ()))
        if not args.quiet:
            print(f"{', '.join(tables)}: {parts[0]}")
    elif args.bins or args.engine == "dask":
        raise UsageError("--bins and --engine apply to tables; the inputs are all profiles.")
    merged = merge_profiles(parts)
    merged.save(args.output)
    print(f"Wrote {args.output}: {merged}")


def _write_result(result, args) -> None:
    """Write a job's result as --report (HTML) and --json, if asked."""
    if args.report:
        result.to_html(args.report)
    if args.json:
        result.to_json(args.json)
    if args.report or args.json:
        print("Wrote " + " and ".join(p for p in (args.report, args.json) if p))


def _command_learn(args) -> None:
    from bnfisher.bn.formats.files import check_network_file, write_network
    from bnfisher.bn.scores import score
    from bnfisher.bn.structure.learn import learn
    from bnfisher.data.io import check_outputs, read_table
    from bnfisher.data.schema import Schema

    check_outputs([args.output, args.schema], inputs=[args.data])
    frame = read_table(args.data, na_values=args.na_values)
    schema = Schema.from_data(frame, bins=args.bins, na_values=args.na_values or (), missing="allow")
    if args.output:  # the format's names and labels: checked before learning, not after
        check_network_file(args.output, schema.states)
    structure, options, pseudocount = _structure_options(args)
    started = time.perf_counter()
    training = schema.encode(frame, missing="allow")
    missing = _report_missing(training.codes)
    network = learn(training, structure, pseudocount=pseudocount, schema=schema, missing=missing, **options)
    elapsed = time.perf_counter() - started
    print(network.describe())
    if missing == "error":
        encoded = network.encode(frame)
        print(f"Learned in {elapsed:.2f} s; BIC {score(network, encoded, 'bic'):.6g}, "
              f"log-likelihood {score(network, encoded, 'll'):.6g} on {len(frame)} rows.")
    else:
        report = network.learning_
        print(f"Learned in {elapsed:.2f} s; EM: {report['em_iterations']} iterations, converged "
              f"{report['em_converged']}, observed-data log-likelihood (with the prior) {report['objective']:.6g}.")
    if args.output:
        write_network(network, args.output)
        print(f"Wrote {args.output}")
    if args.schema:
        network.schema.to_json(args.schema)
        print(f"Wrote {args.schema}")


def _check_summarize_options(args) -> None:
    dask = args.engine == "dask"
    only_dask = {"--scheduler": args.scheduler, "--workers": args.workers, "--pool-size": args.pool_size,
                 "--scheduler-timeout": args.scheduler_timeout}
    misplaced = [flag for flag, value in only_dask.items() if value is not None and not dask]
    if misplaced:
        raise UsageError(f"{', '.join(misplaced)} apply to --engine dask only.")
    if dask:
        refused = {"--plot": args.plot, "--n-random": args.n_random, "--report": args.report, "--json": args.json,
                   "--criticisms": args.criticisms or None,
                   "--criterion chi2": args.criterion if args.criterion == "chi2" else None}
        given = [flag for flag, value in refused.items() if value is not None]
        if given:
            raise UsageError(f"{', '.join(given)} cannot be used with --engine dask (the full data is not in "
                             "memory); drop them or use --engine numpy.")
        if args.data is None:
            raise UsageError("--engine dask needs a data file (Parquet or CSV).")
    if args.data is not None and args.dataset is not None:
        raise UsageError("Give either a data file or --dataset, not both.")


def _summarize_dask(args):
    """Summarize with Dask on a pool of rows; or return every row when they fit in the pool.

    The rows returned are summarized in memory by the caller: the same search, and the same rows, as
    ``--engine numpy``.
    """
    from bnfisher.bn.structure.learn import learn
    from bnfisher.dask.client import dask_client
    from bnfisher.dask.counts import DaskCounts
    from bnfisher.summary.search import select_representatives

    started = time.perf_counter()
    pool_size = args.pool_size or 100_000
    with dask_client(args.scheduler, n_workers=args.workers or 2,
                     timeout=10.0 if args.scheduler_timeout is None else args.scheduler_timeout) as client:
        network = None
        if args.network:
            _refuse_learning_options(args)
            network = _read_network(args)
            provider = DaskCounts(args.data, network.schema, missing="allow")
        else:
            provider = DaskCounts(args.data, bins=args.bins, na_values=args.na_values or (), missing="allow")
        if provider.n_rows <= pool_size:
            if not args.quiet:
                print(f"{args.data}: {provider.n_rows} rows, at most --pool-size {pool_size}: read whole by Dask "
                      "and summarized in memory (the same search, and rows, as --engine numpy)")
            if os.path.isfile(str(args.data)):  # one file: read as --engine numpy reads it (same types, same rows)
                return _read_inputs(args, [args.data])[0]
            return provider.rows()
        if network is None:
            structure, options, pseudocount = _structure_options(args)
            print(f"{args.data}: {provider.n_rows} rows in {len(provider.frame.to_delayed())} partitions; scheduler "
                  f"{client.scheduler.address}; learning {structure} from distributed counts")
            if provider.schema.bin_edges:
                print(f"Binned {len(provider.schema.bin_edges)} numeric column(s) into at most {args.bins} bins.")
            network = learn(provider, structure, pseudocount=pseudocount, missing="em", **options)
            print(f"Network ({structure}): {network} ({time.perf_counter() - started:.2f} s)")
        kernel = _kernel(network)
        result = select_representatives(kernel, provider, args.k, n_init=args.n_init, random_state=args.seed,
                                         pool_size=pool_size, progress=not args.quiet)
        subset = result.pool.iloc[result.pool_positions]
        print(f"Selected k={args.k} rows among a uniform pool of {len(result.pool)} of the {provider.n_rows} rows "
              f"(more than --pool-size: an approximation of the search over every row): MMD² to the full data "
              f"{result.final_value:.6g} (best random start {result.initial_value:.6g}); "
              f"{time.perf_counter() - started:.2f} s in all")
        _write_subset(subset, subset.index, args.output, "the 0-based row number in the input")
    return None


def _command_summarize(args) -> None:
    from bnfisher.data.io import check_outputs
    from bnfisher.jobs.summarize import summarize

    _check_summarize_options(args)
    check_outputs([args.output, args.plot, args.report, args.json], inputs=[args.data, getattr(args, "network", None)])
    started = time.perf_counter()
    data = _summarize_dask(args) if args.engine == "dask" else None
    if args.engine == "dask" and data is None:
        return None  # summarized on a pool by Dask
    if data is not None:
        source = str(args.data)
    elif args.data is None:
        from bnfisher.datasets import load

        source = args.dataset or "nursery"
        data = load(source)
        print(f"bundled data set {source!r}: {len(data)} rows x {data.shape[1]} variables")
    else:
        source = str(args.data)
        data = _read_inputs(args, [args.data])[0]
    result = summarize(data, args.k, criterion=args.criterion, n_init=args.n_init,
                       n_random=1000 if args.n_random is None else args.n_random, n_criticisms=args.criticisms,
                       source=source, random_state=args.seed, progress=not args.quiet, **_model_options(args))
    print(result.to_text(notes=not args.quiet, advice=False))  # warnings went to stderr
    if not args.quiet:
        print(f"{time.perf_counter() - started:.2f} s in all")
    _write_subset(data.iloc[result.indices], result.indices, args.output, "the 0-based row number in the input")
    if args.plot:
        result.plot(args.plot)
        print(f"Wrote {args.plot}")
    _write_result(result, args)


def _command_experiment(args) -> None:
    from bnfisher.experiments import MODELS, run_experiment
    from bnfisher.experiments.report import summarize_claims

    datasets = list(args.datasets) if args.dataset == "all" else [args.dataset]
    models = list(MODELS) if args.model == "all" else [args.model]
    started = time.perf_counter()
    outcome = run_experiment(args.output, datasets=datasets, models=models, sizes=args.sizes,
                             n_random=args.n_random, seeds=[args.seed + s for s in range(args.n_seeds)],
                             criteria=args.criteria, progress=not args.quiet)
    print(f"{len(datasets) * len(models) * args.n_seeds} runs in {time.perf_counter() - started:.1f} s; wrote "
          f"results.csv, timings.csv, claims.csv, report.md and figure-<model>.png to {args.output}")
    summary = summarize_claims(outcome.results).groupby("method")["beats_random"].mean()
    print("Share of (data set, model, seed, k) where the greedy subset beats the random mean:")
    print(summary.round(3).to_string())


def _command_hmm_kernel(args) -> None:
    from bnfisher.data.io import check_outputs, write_bytes
    from bnfisher.exceptions import DataError
    from bnfisher.hmm.kernel import HMMFisherKernel

    check_outputs([args.output], inputs=[args.sequences])
    try:
        loaded = np.load(args.sequences, allow_pickle=False)
    except (ValueError, OSError, EOFError) as exc:
        raise DataError(f"Cannot read {args.sequences!r} as a .npz archive of sequences: {exc}") from None
    if isinstance(loaded, np.ndarray):
        raise DataError(f"{args.sequences!r} is one array (.npy); give a .npz archive with X and lengths, or one "
                        "array per sequence (numpy.savez).")
    with loaded as archive:
        if "X" in archive and "lengths" in archive:
            sequences, lengths = archive["X"], archive["lengths"]
        else:
            sequences, lengths = [archive[name] for name in archive.files], None
    normalize = None if args.normalize == "none" else args.normalize
    kernel = HMMFisherKernel(n_states=args.n_states, covariance_type=args.covariance_type,
                             information=args.information, normalize=normalize, n_init=args.n_init,
                             check_every=args.check_every, random_state=args.seed,
                             progress=not args.quiet).fit(sequences, lengths=lengths)
    gram = kernel.gram(sequences, lengths_a=lengths)
    buffer = io.BytesIO()
    np.save(buffer, gram)
    write_bytes(args.output, buffer.getvalue())  # exactly the path given (np.save would append .npy)
    print(f"HMM with {args.n_states} states: log-likelihood {kernel.log_likelihood_:.6g} "
          f"(starts: {', '.join(f'{v:.6g}' for v in kernel.init_log_likelihoods_)})")
    print(f"Wrote the {gram.shape[0]} x {gram.shape[1]} Fisher kernel to {args.output} (NumPy .npy format)")


def main(argv=None) -> int:
    """Entry point of the ``bnfisher`` command.

    Parameters
    ----------
    argv : list of str, optional
        Arguments (default: ``sys.argv[1:]``).

    Returns
    -------
    int
        0 on success, 2 for a usage or input error (one line on stderr).
    """
    from bnfisher.exceptions import BnfisherError

    try:
        args = build_parser().parse_args(argv)
    except KeyboardInterrupt:  # pragma: no cover - interactive
        print("bnfisher: interrupted", file=sys.stderr)
        return 130
    try:
        with warnings.catch_warnings():
            warnings.showwarning = _one_line_warning(args.command)
            _COMMANDS[args.command_name](args)
    except BrokenPipeError:  # the reader went away (| head): stop quietly, as Unix tools do
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0
    except (BnfisherError, UsageError, OSError, ImportError) as exc:
        message = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        print(f"bnfisher {args.command}: error: {message}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:  # pragma: no cover - interactive
        print(f"bnfisher {args.command}: interrupted", file=sys.stderr)
        return 130
    return 0


def _one_line_warning(command: str):
    """Warnings as one clean line on stderr (``bnfisher CMD: warning: ...``), without a source path."""

    def show(message, category, filename, lineno, file=None, line=None):
        text = " ".join(str(message).split())
        print(f"bnfisher {command}: warning: {text}", file=sys.stderr)

    return show


#: The function behind each command (the parser names the command; this module runs it).
_COMMANDS = {"demo": _command_demo, "mmd": _command_mmd, "compare": _command_compare, "drift": _command_drift,
             "learn": _command_learn, "profile": _command_profile, "summarize": _command_summarize,
             "experiment": _command_experiment, "hmm_kernel": _command_hmm_kernel}
