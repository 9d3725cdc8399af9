"""Command line interface: ``bnfisher <command> --help``.

A thin shell: it parses arguments, checks that they make sense together, calls a job
(:mod:`bnfisher.jobs`) and prints its result.  Every input of a command is encoded with
one :class:`~bnfisher.data.Schema` (learned jointly from all the inputs, or the
network's), every output path is checked before any work and written atomically, and
every option either changes the result or is refused.  A user's mistake is printed as
one line on stderr with exit status 2; a traceback means a bug.
"""

from __future__ import annotations

import os
import sys
import time
import warnings

import numpy as np

from bnfisher._utils.lazy import pandas as pd
from bnfisher._utils.redact import redact
from bnfisher._utils.validation import free_name
from bnfisher.bn.formats.files import read_network
from bnfisher.cli.parser import LEARN_FLAGS, UsageError, build_parser
from bnfisher.data.io import check_outputs, write_table
from bnfisher.datasets import load
from bnfisher.exceptions import BnfisherError
from bnfisher.jobs import compare, drift, summarize
from bnfisher.jobs.compare_distributed import compare_distributed
from bnfisher.jobs.demo import demo
from bnfisher.jobs.experiment import MODELS, experiment
from bnfisher.jobs.hmm import hmm_gram_file
from bnfisher.jobs.inputs import dask_engine, read_distributed, read_inputs
from bnfisher.jobs.learn import learn_network, structure_options
from bnfisher.jobs.monitor import acknowledge, history, monitor, resolve_store
from bnfisher.jobs.profile import mmd_between, profile_inputs
from bnfisher.jobs.summarize import POOL_SIZE, summarize_distributed


def _learning(args) -> tuple[str, dict]:
    """Return the structure and the ``learn`` options the user gave (the rest default in ``LEARN_OPTIONS``)."""
    given = {option: getattr(args, dest) for option, (dest, _) in LEARN_FLAGS.items()}
    flags = {option: flag for option, (_, flag) in LEARN_FLAGS.items()} | {"structure": "--structure"}
    structure, options = structure_options(args.structure, given, flags=flags)
    options["progress"] = not getattr(args, "quiet", True)  # structural EM's rounds, the searches' steps
    if args.pseudocount is not None:
        options["pseudocount"] = args.pseudocount
    return structure, options


def _refuse_learning_options(args) -> None:
    """With --network nothing is learned: every learning option would be ignored, so it is refused."""
    flags = {flag: getattr(args, dest) for dest, flag in LEARN_FLAGS.values()}
    flags.update({"--structure": args.structure, "--pseudocount": args.pseudocount, "--bins": args.bins,
                  "--bin-columns": args.bin_columns, "--categorical": args.categorical, "--na-values": args.na_values})
    given = [flag for flag, value in flags.items() if value is not None]
    if given:
        raise UsageError(f"{', '.join(given)} cannot be used with --network: the network file fixes the "
                         "structure, parameters and schema (bins, missing markers).")


def _network(args):
    """Return the --network model (refusing learning options beside it), or None."""
    if not getattr(args, "network", None):
        return None
    _refuse_learning_options(args)
    network = read_network(args.network)
    _say(args, f"Network {args.network}: {network}")
    return network


def _model_options(args) -> dict:
    """Return the network and learning options of a command as the jobs take them (--network refuses learning ones)."""
    network = _network(args)
    structure, options = _learning(args)
    return {"network": network, "structure": structure, **_binning(args), "na_values": args.na_values or (),
            "learn_options": options}


def _binning(args) -> dict:
    """Return the jobs' binning options; --bin-columns needs --bins (--categorical alone changes nothing: refused)."""
    if args.bins is None and (args.bin_columns or args.categorical):
        given = "--bin-columns" if args.bin_columns else "--categorical"
        raise UsageError(f"{given} chooses among the columns --bins bins; give --bins too.")
    return {"bins": args.bins, "bin_columns": args.bin_columns, "categorical": args.categorical}


def _read(args, paths: list, *, profiles: bool = False) -> list:
    """Read the inputs (profiles as themselves with ``profiles``), saying what each holds unless --quiet."""
    inputs, shown = read_inputs(paths, na_values=args.na_values, profiles=profiles)
    _say(args, "\n".join(shown))
    return inputs


def _write_subset(frame: pd.DataFrame, rows, output, meaning: str, *, quiet: bool = False) -> None:
    """Write the selected rows as the user gave them, with a leading 'row' column, or show the first ten."""
    out = frame.reset_index(drop=True).copy()
    column = free_name("row", out.columns)
    out.insert(0, column, np.asarray(rows))
    if output:
        write_table(out, output)
        if not quiet:
            print(f"Wrote {output} (column {column!r} holds {meaning})")
        return
    if quiet:
        return
    with pd.option_context("display.width", 160, "display.max_columns", 20):
        print(out.head(10).to_string(index=False))
        if len(out) > 10:
            print(f"... {len(out) - 10} more rows (use -o FILE to write them all)")


#: ``--json -``: the JSON goes to standard output, and nothing else does.
STDOUT = "-"


def _show(result, args) -> None:
    """Print the result: the JSON alone (``--json -``), the verdict alone (``--quiet``), or the text."""
    if getattr(args, "json", None) == STDOUT:
        print(result.to_json())
    elif args.quiet:
        print(result.verdict())
    else:
        print(result.to_text(advice=False))  # warnings went to stderr


def _say(args, text: str) -> None:
    """Print a line about what was done, unless standard output carries the JSON or --quiet asked for the verdict."""
    if getattr(args, "json", None) != STDOUT and not getattr(args, "quiet", False):
        print(text)


def _write_result(result, args) -> None:
    """Write a job's result as --report (HTML) and --json (a file; ``-``: already on standard output), if asked."""
    written = []
    if args.report:
        result.to_html(args.report)
        written.append(args.report)
    if args.json and args.json != STDOUT:
        result.to_json(args.json)
        written.append(args.json)
    if written:
        _say(args, "Wrote " + " and ".join(written))


def _outputs(*paths) -> list:
    """Return the output paths to check before any work (``-`` is standard output, not a file)."""
    return [p for p in paths if p != STDOUT]


# ---------------------------------------------------------------- commands
def _command_demo(args) -> None:
    for block in demo(args.dataset, random_state=args.seed):
        print(block)


def _command_mmd(args) -> None:
    first, second = _read(args, [args.first, args.second], profiles=True)
    result = mmd_between(first, second, names=(args.first, args.second), normalize=args.normalize,
                         **_model_options(args))
    print(result.verdict() if args.quiet else result.to_text())


def _check_engine(args) -> None:
    """Refuse the Dask cluster's options without ``--engine dask`` (they would be ignored)."""
    only_dask = {"--scheduler": args.scheduler, "--workers": args.workers,
                 "--scheduler-timeout": args.scheduler_timeout}
    misplaced = [flag for flag, value in only_dask.items() if value is not None and args.engine != "dask"]
    if misplaced:
        raise UsageError(f"{', '.join(misplaced)} apply to --engine dask only.")


def _cluster(args):
    """Return the context a command runs in: a Dask client with ``--engine dask``, else nothing."""
    return dask_engine(args.engine, scheduler=args.scheduler, n_workers=args.workers, timeout=args.scheduler_timeout)


def _command_compare(args) -> int:
    if args.alpha is not None and not args.exit_code:
        raise UsageError("--alpha sets the level of --exit-code; give --exit-code too, or drop --alpha.")
    _check_engine(args)
    check_outputs(_outputs(args.report, args.json), inputs=[args.first, args.second, args.network])
    if args.engine == "dask":
        profiles = [path for path in (args.first, args.second) if str(path).endswith(".bnfp")]
        if profiles:
            raise UsageError(f"{profiles[0]}: --engine dask compares data files (Parquet or CSV) where they lie; "
                             "a profile is in memory already: leave out --engine dask.")
        if args.stopping != "fixed":
            raise UsageError("--stopping anytime is not available with --engine dask (its permutations run as a "
                             "fixed budget where the rows lie); leave out one of them.")
        result = compare_distributed(args.first, args.second, scheduler=args.scheduler, n_workers=args.workers or 2,
                                     timeout=10.0 if args.scheduler_timeout is None else args.scheduler_timeout,
                                     n_permutations=args.permutations, top=args.top, test=args.test,
                                     names=(args.first, args.second), random_state=args.seed,
                                     **_model_options(args))
    else:
        frames = _read(args, [args.first, args.second], profiles=True)
        result = compare(frames[0], frames[1], n_permutations=args.permutations, top=args.top, test=args.test,
                         stopping=args.stopping,
                         names=(args.first, args.second), random_state=args.seed, **_model_options(args))
    _show(result, args)
    _write_result(result, args)
    return int(args.exit_code and result.test.p_value <= (0.05 if args.alpha is None else args.alpha))


def _check_window_options(args, *, dask: bool) -> None:
    """Refuse window options that contradict each other, or data on Dask that no option cuts into windows."""
    if args.rows and (args.time_column or args.window):
        raise UsageError("Give either --rows, or --time-column with --window, not both.")
    if args.window and not args.time_column:
        raise UsageError("--window needs --time-column (the column of each row's time), e.g. --time-column "
                         "date --window 1W.")
    if dask and not (args.rows or args.window):
        raise UsageError("With --engine dask, say how to cut DATA into windows: --rows N, or --time-column "
                         "COLUMN --window 1W.")


def _check_drift_options(args) -> None:
    dask = args.engine == "dask"
    if len(args.data) > 1 and not dask and (args.window or args.rows):
        raise UsageError("With several DATA files each file is a window: leave out --window and --rows (or give "
                         "--engine dask: the files are then one data set, cut into windows).")
    if len(args.data) == 1 or dask:
        _check_window_options(args, dask=dask)


def _command_drift(args) -> int:
    _check_drift_options(args)
    _check_engine(args)
    check_outputs(_outputs(args.report, args.json, args.plot), inputs=[args.reference, *args.data])
    with _cluster(args):
        if args.engine == "dask":  # DATA stays where it lies: one pass cuts it into windows of distinct rows
            (reference,) = _read(args, [args.reference], profiles=True)
            data = read_distributed(args.data, na_values=args.na_values)
        else:
            reference, *frames = _read(args, [args.reference, *args.data], profiles=True)
            data = frames[0] if args.window or args.rows else dict(zip(args.data, frames))  # a file alone: a window
        structure, options = _learning(args)
        result = drift(reference, data, time=args.time_column, window=args.window or args.rows, structure=structure,
                       **_binning(args), na_values=args.na_values or (), fit_fraction=args.fit_fraction,
                       n_permutations=args.permutations, stopping=args.stopping, early_stop=args.early_stop,
                       test=args.test,
                       alpha=args.alpha, min_effect=args.min_effect, top=args.top, random_state=args.seed,
                       learn_options=options, n_jobs=args.jobs, progress=not args.quiet)
    _show(result, args)
    if args.plot:
        result.plot(args.plot)
    _write_result(result, args)
    if args.plot:
        _say(args, f"Wrote {args.plot}")
    return int(args.exit_code and bool(result.windows["drift"].any()))


def _command_profile(args) -> None:
    if not args.output.endswith(".bnfp"):
        raise UsageError(f"-o {args.output}: a profile is written to a .bnfp file.")
    check_outputs([args.output], inputs=args.inputs)
    if all(path.endswith(".bnfp") for path in args.inputs) and (args.bins or args.engine == "dask"):
        raise UsageError("--bins and --engine apply to tables; the inputs are all profiles.")
    _check_engine(args)
    with _cluster(args):
        merged, notes = profile_inputs(args.inputs, **_binning(args), na_values=args.na_values, engine=args.engine)
    if not args.quiet:
        print("\n".join(notes))
    merged.save(args.output)
    print(f"Wrote {args.output}: {merged}")


def _command_learn(args) -> None:
    check_outputs([args.output, args.schema], inputs=[args.data])
    (frame,) = _read(args, [args.data])
    structure, options = _learning(args)
    result = learn_network(frame, structure, **_binning(args), na_values=args.na_values or (),
                           learn_options=options, output=args.output, schema_output=args.schema)
    print(result.verdict() if args.quiet else result.to_text())


def _check_summarize_options(args) -> None:
    _check_engine(args)
    if args.engine == "dask":
        refused = {"--criticisms": args.criticisms or None, "--candidates": args.candidates, "--refine": args.refine,
                   "--criterion chi2": args.criterion if args.criterion == "chi2" else None}
        given = [flag for flag, value in refused.items() if value is not None]
        if given:
            raise UsageError(f"{', '.join(given)} cannot be used with --engine dask (the search beyond memory "
                             "measures MMD² against the whole data); drop them or use --engine numpy.")
        if args.data is None:
            raise UsageError("--engine dask needs a data file (Parquet or CSV).")
    if args.data is not None and args.dataset is not None:
        raise UsageError("Give either a data file or --dataset, not both.")


def _command_summarize(args) -> None:
    _check_summarize_options(args)
    check_outputs(_outputs(args.output, args.plot, args.report, args.json),
                  inputs=[args.data, getattr(args, "network", None)])
    started = time.perf_counter()
    n_random = 1000 if args.n_random is None else args.n_random
    if args.engine == "dask":
        result = summarize_distributed(
            args.data, args.k, scheduler=args.scheduler, n_workers=args.workers or 2,
            timeout=10.0 if args.scheduler_timeout is None else args.scheduler_timeout,
            pool_size=args.pool_size or POOL_SIZE, n_init=args.n_init, n_random=n_random, random_state=args.seed,
            progress=not args.quiet, **_model_options(args))
    else:
        if args.data is None:
            source = args.dataset or "nursery"
            data = load(source)
            _say(args, f"bundled data set {source!r}: {len(data)} rows x {data.shape[1]} variables")
        else:
            source = str(args.data)
            (data,) = _read(args, [args.data])
        result = summarize(data, args.k, criterion=args.criterion, n_init=args.n_init, n_random=n_random,
                           n_criticisms=args.criticisms, source=source, random_state=args.seed,
                           progress=not args.quiet, candidates=args.candidates or "auto", pool_size=args.pool_size,
                           refine=None if args.refine == "none" else "margins", **_model_options(args))
    _show(result, args)
    analysis = time.perf_counter() - started
    _write_subset(result.data.iloc[result.positions], result.indices, args.output,
                  "the 0-based row number in the input", quiet=args.quiet or args.json == STDOUT)
    if args.plot:
        result.plot(args.plot)
        _say(args, f"Wrote {args.plot}")
    _write_result(result, args)
    _say(args, f"{time.perf_counter() - started:.2f} s in all ({analysis:.2f} s the analysis)")


def _command_experiment(args) -> None:
    datasets = list(args.datasets) if args.dataset == "all" else [args.dataset]
    models = list(MODELS) if args.model == "all" else [args.model]
    print(experiment(args.output, datasets=datasets, models=models, sizes=args.sizes, n_random=args.n_random,
                     seeds=[args.seed + s for s in range(args.n_seeds)], criteria=args.criteria,
                     progress=not args.quiet))


def _command_hmm_kernel(args) -> None:
    check_outputs([args.output], inputs=[args.sequences])
    print(hmm_gram_file(args.sequences, args.output, n_states=args.n_states, covariance_type=args.covariance_type,
                        information=args.information, normalize=None if args.normalize == "none" else args.normalize,
                        n_init=args.n_init, check_every=args.check_every, random_state=args.seed,
                        progress=not args.quiet))


def main(argv=None) -> int:
    """Entry point of the ``bnfisher`` command.

    Parameters
    ----------
    argv : list of str, optional
        Arguments (default: ``sys.argv[1:]``).

    Returns
    -------
    int
        The exit status, one meaning each whatever failed underneath: 0 done and nothing
        found; 1 done, and something found (``monitor``: an alarm, stored and signalled;
        ``compare --exit-code``: the tables differ; ``drift --exit-code``: a window drifted);
        2 any error, said in one line on stderr (a store, a driver, the network, a file, an
        encoding, or a bug: ``BNFISHER_TRACEBACK=1`` shows its traceback); 130 interrupted.
    """
    timers: list = []
    hook = sys.unraisablehook
    sys.unraisablehook = _interrupt_again(hook, timers)
    try:
        try:
            return _run(argv)
        finally:
            sys.unraisablehook = hook
            for timer in timers:  # a delivery not yet made is not made; one being made is raised here
                timer.cancel()
                timer.join()
    except KeyboardInterrupt:  # pragma: no cover - a delivery as the command ended
        print("bnfisher: interrupted", file=sys.stderr)
        return 130


def _interrupt_again(hook, timers: list):
    """Return an unraisable-exception hook that delivers a swallowed Ctrl-C to the main thread again.

    An interrupt that lands in a callback Python cannot raise from (a weak reference's, as
    the import system's module locks have) is printed as "Exception ignored ... Traceback"
    and the program goes on; delivered again, it is raised in ordinary code, where the
    command says "interrupted" and exits 130.  The delivery comes from another thread 10 ms
    later (from the main thread itself, or while it waits for a thread to start, it would be
    raised in this hook and ignored again); its timer is appended to ``timers``.
    """

    def again(unraisable) -> None:
        if not isinstance(unraisable.exc_value, KeyboardInterrupt):
            hook(unraisable)
            return
        import _thread
        import signal
        import threading

        main_thread = int(threading.main_thread().ident or 0)
        # A signal to the main thread wakes a blocking call (a sleep, a socket); interrupt_main only sets the flag.
        deliver = ((lambda: signal.pthread_kill(main_thread, signal.SIGINT)) if hasattr(signal, "pthread_kill")
                   else _thread.interrupt_main)
        timer = threading.Timer(0.01, deliver)
        timer.daemon = True
        timers.append(timer)
        timer.start()

    return again


def _run(argv) -> int:
    """:func:`main`'s work: parse, run the command, turn its failure into one line and a status."""
    try:
        args = build_parser().parse_args(argv)
    except KeyboardInterrupt:  # pragma: no cover - interactive
        print("bnfisher: interrupted", file=sys.stderr)
        return 130
    try:
        with warnings.catch_warnings():
            warnings.showwarning = _one_line_warning(args.command)
            code = _COMMANDS[args.command_name](args)
    except BrokenPipeError:  # the reader went away (| head): stop quietly, as Unix tools do
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0
    except KeyboardInterrupt:  # pragma: no cover - interactive
        print(f"bnfisher {args.command}: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # every failure is exit status 2, in one line: never the alarm code 1
        print(f"bnfisher {args.command}: error: {_one_line(exc)}", file=sys.stderr)
        if os.environ.get("BNFISHER_TRACEBACK"):
            import traceback

            traceback.print_exc()
        return 2
    return int(code or 0)


#: Errors a user's input, a store, a server, a file or an encoding can cause: said as they are. Anything else is a
#: bug, said as one too.
_EXPECTED = (BnfisherError, UsageError, OSError, ImportError, UnicodeError, ValueError)


def _expected() -> tuple:
    """:data:`_EXPECTED`, and the error classes of the database drivers and of HTTP (those imported)."""
    import http.client
    import sqlite3

    psycopg = sys.modules.get("psycopg")
    return _EXPECTED + (sqlite3.Error, http.client.HTTPException) + ((psycopg.Error,) if psycopg else ())


def _one_line(exc: BaseException) -> str:
    """Return an error as one line, any password hidden; a bug says that it is one."""
    text = " ".join(str(exc).split())
    if isinstance(exc, _expected()) and text:
        line = text if isinstance(exc, (BnfisherError, UsageError)) else f"{text} ({type(exc).__name__})"
    else:
        line = (f"internal error {type(exc).__name__}: {text or 'no detail'} -- a bug; please report it, with the "
                "traceback BNFISHER_TRACEBACK=1 shows")
    return redact(line)


def _one_line_warning(command: str):
    """Warnings as one clean line on stderr (``bnfisher CMD: warning: ...``), without a source path or a password."""

    def show(message, category, filename, lineno, file=None, line=None):
        text = redact(" ".join(str(message).split()))
        print(f"bnfisher {command}: warning: {text}", file=sys.stderr)

    return show


#: The function behind each command (the parser names the command; this module runs it).
def _check_monitor_paths(args, store) -> None:
    """Refuse a run whose windows are cut two ways, or whose store or outputs are among its inputs."""
    if args.time_column and args.rows:
        raise UsageError("Give either --rows, or --time-column (with --window), not both.")
    if args.window and not args.time_column:
        raise UsageError("--window needs --time-column (the column of each row's time).")
    if len(args.data) > 1 and (args.window or args.rows):
        raise UsageError("With several DATA files each file is a window: leave out --window and --rows (or "
                         "concatenate the files first).")
    inputs = [args.reference, *args.data] + ([] if store.postgres else [store.target])
    check_outputs(_outputs(args.json, args.dashboard), inputs=inputs)
    if not store.postgres and os.path.abspath(store.target) in {os.path.abspath(p) for p in inputs[:-1]}:
        raise UsageError(f"--store {store.target} is one of the inputs; give the store its own file.")


def _command_monitor(args) -> int:
    store = resolve_store(args.store)
    _check_monitor_paths(args, store)
    reference, *frames = _read(args, [args.reference, *args.data], profiles=True)
    cut = args.window or args.rows
    data = frames[0] if cut else dict(zip(args.data, frames))
    result = monitor(reference, data, store=store, time=args.time_column, window=cut, alpha=args.alpha,
                     horizon=args.horizon, guarantee=args.guarantee, min_effect=args.min_effect,
                     n_permutations=args.permutations,
                     stopping=args.stopping, early_stop=args.early_stop, structure=args.structure, **_binning(args),
                     na_values=args.na_values or (), webhook=args.webhook, webhook_timeout=args.webhook_timeout,
                     dashboard=args.dashboard, acknowledge=False, random_state=args.seed)
    _show(result, args)
    if args.json and args.json != STDOUT:
        result.to_json(args.json)
    written = [p for p in (args.dashboard, args.json) if p and p != STDOUT]
    if written:
        _say(args, "Wrote " + " and ".join(written))
    sys.stdout.flush()
    acknowledge(store, result)  # the alarms are signalled once every output is out (a failure before: the next run)
    return int(not result.alarms.empty)


def _command_history(args) -> None:
    store = resolve_store(args.store, must_exist=True)
    check_outputs(_outputs(args.json, args.dashboard), inputs=[] if store.postgres else [store.target])
    result = history(store, dashboard=args.dashboard)
    _show(result, args)
    if args.json and args.json != STDOUT:
        result.to_json(args.json)


_COMMANDS = {"demo": _command_demo, "mmd": _command_mmd, "compare": _command_compare, "drift": _command_drift,
             "learn": _command_learn, "profile": _command_profile, "summarize": _command_summarize,
             "experiment": _command_experiment, "hmm_kernel": _command_hmm_kernel, "monitor": _command_monitor,
             "history": _command_history}
