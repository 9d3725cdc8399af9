"""Drift over windows, measured: false alarms, a dependence-only drift, a marginal drift, peers side by side, real data.

Writes docs/drift.md (and docs/drift/*.png).  Generator: the *alarm* network (tests/fixtures/bif), whose truth
is known.  Each repetition draws a reference of 4,000 rows and 20 windows of 500 rows; in the drift
scenarios window 12 is changed:
  dependence: 30% of the window's HR values permuted among those rows (every marginal in expectation
    unchanged; HR's dependence on CATECHOL and on its four children weakened);
  marginal: the window drawn from alarm with P(HYPOVOLEMIA = TRUE) 0.2 -> 0.4.
bnfisher: `bnfisher.drift` with its defaults (Chow-Liu structure on half the reference, the aggregate
test, Holm over windows).  "Right family": the window's clearest changed family has the changed
variable as child or parent.
(a) False alarms over --repetitions runs without drift: bnfisher's family-wise rate (any of 20 windows
flagged), beside the construction the drift issue measured: a network learned on the whole reference,
tested against that same reference (mmd_test, 999 permutations), per-window rate at p <= 0.05.
(b-c) The peers (benchmarks/drift_peers.py: alibi-detect, Evidently, NannyML), with --peers-python, on
the same windows in the same run, over --peer-repetitions runs per scenario.
(d) Real data: the US Census ACS employment table for Massachusetts that NannyML ships (folktables;
2015 as reference, 2016-2018 as yearly windows), found with --peers-python.

Run:  python benchmarks/drift.py --peers-python PEERS/bin/python [--repetitions 100] [--peer-repetitions 5]
"""

from __future__ import annotations

import argparse
import datetime
import json
import subprocess
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

import bnfisher as bf
from bnfisher.comparison.attribution import holm

ROOT = Path(__file__).resolve().parent.parent
ALARM = ROOT / "tests" / "fixtures" / "bif" / "alarm.bif.gz"
N_REFERENCE, N_WINDOWS, WINDOW, PLANTED = 4000, 20, 500, 11  # window 12, 0-based 11
CHANGED = {"none": None, "dependence": "HR", "marginal": "HYPOVOLEMIA"}


def draw(network: bf.BayesianNetwork, scenario: str, seed: int) -> tuple:
    """Return the reference and the windows of one repetition."""
    rng = np.random.default_rng(seed)
    data = network.sample(N_REFERENCE + N_WINDOWS * WINDOW, random_state=rng)
    reference = data.iloc[:N_REFERENCE].reset_index(drop=True)
    windows = [data.iloc[N_REFERENCE + k * WINDOW: N_REFERENCE + (k + 1) * WINDOW].reset_index(drop=True)
               for k in range(N_WINDOWS)]
    if scenario == "dependence":
        window = windows[PLANTED].copy()
        rows = rng.choice(WINDOW, size=int(0.3 * WINDOW), replace=False)
        window.loc[rows, "HR"] = window.loc[rng.permutation(rows), "HR"].to_numpy()
        windows[PLANTED] = window
    elif scenario == "marginal":
        cpts = dict(network.cpts)
        cpts["HYPOVOLEMIA"] = np.array([0.4, 0.6])
        changed = bf.BayesianNetwork(dict(network.parents), cpts, dict(network.states))
        windows[PLANTED] = changed.sample(WINDOW, random_state=rng)
    return reference, windows


def right_family(result, variable: str) -> bool:
    row = result.windows.iloc[PLANTED]
    return bool(row["drift"]) and (row["family"] == variable or variable in row["parents"].split(", "))


def false_alarms(network: bf.BayesianNetwork, repetitions: int) -> list:
    started = time.perf_counter()
    any_alarm, window_alarms, naive_window, naive_any = 0, 0, 0, 0
    for seed in range(repetitions):
        reference, windows = draw(network, "none", 10_000 + seed)
        result = bf.drift(reference, windows, random_state=seed)
        any_alarm += bool(result.windows["drift"].any())
        window_alarms += int(result.windows["p_value"].le(0.05).sum())
        kernel = bf.FisherKernel(bf.learn(reference))  # the construction that is not exact
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            p = np.array([bf.mmd_test(kernel, reference, w, n_permutations=999, random_state=seed).p_value
                          for w in windows])
        naive_window += int((p <= 0.05).sum())
        naive_any += bool((holm(p) <= 0.05).any())
    seconds = time.perf_counter() - started
    r, w = repetitions, repetitions * N_WINDOWS

    def rate(k, n):
        p = k / n
        return f"{k}/{n} = {p:.3f} ± {np.sqrt(p * (1 - p) / n):.3f}"

    return ["| construction | windows with p ≤ 0.05 (per window) | runs with any window flagged after Holm |",
            "|---|---|---|",
            f"| bnfisher.drift: structure on half the reference, CPTs on each pool | {rate(window_alarms, w)} | "
            f"{rate(any_alarm, r)} |",
            f"| network learned on the whole reference, tested against it | {rate(naive_window, w)} | "
            f"{rate(naive_any, r)} |",
            "", f"{r} runs × {N_WINDOWS} windows of {WINDOW} rows, reference {N_REFERENCE} rows; {seconds:.0f} s."]


def detection(network: bf.BayesianNetwork, repetitions: int, peers_python: str | None) -> tuple[list, list]:
    counts: dict = {}
    seconds: dict = {}
    for scenario, variable in CHANGED.items():
        for seed in range(repetitions):
            reference, windows = draw(network, scenario, 20_000 + 1000 * list(CHANGED).index(scenario) + seed)
            started = time.perf_counter()
            result = bf.drift(reference, windows, random_state=seed)
            flags = {"bnfisher.drift": list(result.windows["drift"])}
            seconds.setdefault("bnfisher.drift", []).append(time.perf_counter() - started)
            found = right_family(result, variable) if variable else None
            if peers_python:
                with tempfile.TemporaryDirectory() as folder:
                    reference.to_csv(Path(folder) / "reference.csv", index=False)
                    for k, window in enumerate(windows):
                        window.to_csv(Path(folder) / f"window_{k:03d}.csv", index=False)
                    run = subprocess.run([peers_python, str(ROOT / "benchmarks" / "drift_peers.py"), folder],
                                         capture_output=True, text=True, check=True)
                for name, answer in json.loads(run.stdout.strip().splitlines()[-1]).items():
                    flags[name] = answer["flags"]
                    seconds.setdefault(name, []).append(answer["seconds"])
            for name, flagged in flags.items():
                entry = counts.setdefault((scenario, name), {"planted": 0, "other": 0, "family": 0, "runs": 0})
                entry["runs"] += 1
                entry["planted"] += bool(flagged[PLANTED])
                entry["other"] += any(f for k, f in enumerate(flagged) if k != PLANTED)
                entry["family"] += bool(found) if name == "bnfisher.drift" else 0
    table = ["| scenario | method | window 12 flagged | any other window flagged | right family |",
             "|---|---|---|---|---|"]
    for (scenario, name), entry in counts.items():
        runs = entry["runs"]
        family = f"{entry['family']}/{runs}" if name == "bnfisher.drift" and scenario != "none" else "—"
        planted = f"{entry['planted']}/{runs}" + (" (no drift planted)" if scenario == "none" else "")
        table.append(f"| {scenario} | {name} | {planted} | {entry['other']}/{runs} | {family} |")
    timing = ["| method | seconds per run of 20 windows (mean) |", "|---|---|"]
    timing += [f"| {name} | {np.mean(values):.1f} |" for name, values in seconds.items()]
    return table, timing


#: What the census run finds, in words (its figures are in the table the run writes above it).
INTERPRETATION = ('What it found makes sense for a survey of a changing population, and it grows with the distance in y'
'ears (MMD² rising from 2016 to 2018, more families changed each year). The clearest change every yea'
'r is in ANC (the ancestry recode: 1 single, 2 multiple, 3 unclassified, 4 not reported) given RELP ('
"the relation to the household's reference person): fewer people report a single ancestry, among refe"
'rence persons (RELP = 0) and their children most. Next come citizenship given ancestry, educational '
"attainment (SCHL = 21, a bachelor's degree, rising among people who never served, MIL = 4), moves in"
' the last year given the household relation, and by 2018 the age distribution itself. Per-column tes'
'ts would list these columns one by one; the family table says which dependence moved. Whether the an'
'cestry change is one of the population or of how the question was answered, the data cannot say.')


def census(peers_python: str | None, out: Path) -> list:
    if not peers_python:
        return ["Not run: give --peers-python (the table ships with NannyML)."]
    folder = subprocess.run([peers_python, "-c", "import nannyml, os; print(os.path.dirname(nannyml.__file__))"],
                            capture_output=True, text=True, check=True).stdout.strip().splitlines()[-1]
    data = Path(folder) / "datasets" / "data"
    reference = pd.read_parquet(data / "employment_MA_reference.pq")
    analysis = pd.read_parquet(data / "employment_MA_analysis.pq")
    features = ["AGEP", "SCHL", "MAR", "RELP", "DIS", "ESP", "CIT", "MIG", "MIL", "ANC", "NATIVITY", "DEAR", "DEYE",
                "DREM", "SEX", "RAC1P"]

    def labels(frame):
        out_ = frame[features].copy()
        for column in features[1:]:
            out_[column] = out_[column].astype("int64").astype(str)
        return out_

    windows = {str(year): labels(group) for year, group in analysis.groupby("year")}
    started = time.perf_counter()
    result = bf.drift(labels(reference), windows, bins=4, random_state=0)
    seconds = time.perf_counter() - started
    from bnfisher.viz.plotting import save_figure

    save_figure(result.plot(), out / "census-timeline.png")
    sizes = ", ".join(f"{k}: {len(v)} rows" for k, v in windows.items())
    lines = [f"{len(reference)} reference rows (2015), windows {sizes}; "
             f"{len(features)} columns (AGEP binned into 4 quantile bins); {seconds:.0f} s.", "",
             "**" + result.verdict() + "**", "",
             "| window | MMD² | p | adjusted p | clearest family | share |", "|---|---|---|---|---|---|"]
    for _, row in result.windows.iterrows():
        family = row["family"] + (f" given {row['parents']}" if row["parents"] else "")
        lines.append(f"| {row['window']} | {row['mmd2']:.4g} | {row['p_value']:.3g} | {row['p_adjusted']:.3g} | "
                     f"{family or '—'} | {100 * row['share']:.0f}% |")
    for label in result.flagged["window"]:
        comparison = result.comparison(label)
        changed = comparison.families[comparison.families["p_adjusted"] <= 0.05]
        lines += ["", f"{label}: {len(changed)} of {len(comparison.families)} families changed (Holm); the first "
                      "five, and the largest cells:", ""]
        lines += [f"- {r['variable']} given {r['parents'] if r['parents'] not in ('', '-') else '(no parents)'}: "
                  f"share {100 * r['share']:.0f}%, "
                  f"adjusted p {r['p_adjusted']:.3g}" for _, r in changed.head(5).iterrows()]
        lines += [f"- cell: {text}" for text in comparison.cells["text"].head(3)]
    lines += ["", INTERPRETATION, "", "![census timeline](drift/census-timeline.png)"]
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repetitions", type=int, default=100)
    parser.add_argument("--peer-repetitions", type=int, default=5)
    parser.add_argument("--peers-python", default=None)
    parser.add_argument("--out", default=str(ROOT / "docs" / "drift.md"))
    args = parser.parse_args()
    out = Path(args.out)
    (out.parent / "drift").mkdir(parents=True, exist_ok=True)
    network = bf.read_network(ALARM)
    started = time.perf_counter()
    command = "python benchmarks/drift.py" + (" --peers-python PEERS/bin/python" if args.peers_python else "") + (
        f" --repetitions {args.repetitions} --peer-repetitions {args.peer_repetitions}")
    alarms = false_alarms(network, args.repetitions)
    table, timing = detection(network, args.peer_repetitions, args.peers_python)
    real = census(args.peers_python, out.parent / "drift")
    text = "\n".join([
        "# Drift over time, measured",
        "",
        f"Made by `{command}` ({datetime.date.today()}, bnfisher {bf.__version__}); every figure below is from "
        f"that run ({time.perf_counter() - started:.0f} s in all). The script's docstring states the scenarios.",
        "",
        "## (a) False alarms: exact p-values per window, Holm over windows",
        "",
        "A network fitted on the very reference rows it is then tested against favours them, so unchanged "
        "windows look different. `bnfisher.drift` learns the schema and structure on a random half of the "
        "reference and refits the CPTs on each pool of the other half and one window: the kernel is then the "
        "same function of the pooled rows whichever came from the window, and each window's permutation p-value "
        "is exact. Holm's procedure over the windows bounds the probability of flagging any window without "
        "drift by α = 0.05, whatever the dependence between the windows' tests (they share the reference).",
        "",
        *alarms,
        "",
        "## (b, c) A dependence-only drift and a marginal drift, beside the peers",
        "",
        "Window 12 of 20 is changed (the docstring of `benchmarks/drift.py` says how); each method's own "
        "default decision rule says whether a window drifted. *Any other window flagged*: a false alarm among "
        "the 19 unchanged windows of the run; *right family*: bnfisher's clearest changed family of window 12 "
        "has the changed variable as child or parent.",
        "",
        *table,
        "",
        "Reading the table: the peers decide window by window, and most of them column by column, without "
        "adjusting over the windows, so a run of 20 windows without drift already raises alarms (NannyML's "
        "univariate chi-square alerts on any column at its own level, over 37 columns and 20 windows). Their "
        "per-column tests cannot see the dependence-only drift, whose marginals are unchanged; MMDDrift's "
        "Gaussian kernel on one-hot rows is dominated by the other 36 columns. Evidently flags a window only when "
        "half of its columns drift, which a change in one or two columns never reaches. bnfisher's test of each "
        "window is exact and Holm's adjustment holds the family-wise rate, so its false alarms stay at the nominal "
        "rate of (a). In the marginal scenario the changed variable, HYPOVOLEMIA, is a root of the true network; "
        "in the learned Chow-Liu tree it usually hangs as a leaf under LVEDVOLUME (its child in the true network), "
        "so the change shows as a change of both LVEDVOLUME given its parent and HYPOVOLEMIA given LVEDVOLUME, and "
        "the clearest family is often LVEDVOLUME's: the drift is placed in the right neighbourhood, and the "
        "window's family table lists HYPOVOLEMIA among the changed families.",
        "",
        *timing,
        "",
        "## (d) Real data: the US Census employment table of NannyML",
        "",
        "NannyML ships an extract of the American Community Survey for Massachusetts (from folktables): "
        "person records of 2015 (its reference) and of 2016-2018 (its analysis period). Each later year is a "
        "window against 2015.",
        "",
        *real,
        "",
    ])
    out.write_text(text)
    print(text)


if __name__ == "__main__":
    main()
