
import numpy as np
import pandas as pd
import pytest

from bnfisher import read_bif
from bnfisher.cli import build_parser, main
from bnfisher.datasets import load

from _helpers import BIF_DIR


@pytest.fixture(scope="module")
def tables(tmp_path_factory):
    folder = tmp_path_factory.mktemp("cli")
    data = load("nursery")
    first, second = folder / "a.csv", folder / "b.csv"
    data.iloc[::7].to_csv(first, index=False)
    data[data["class"] == "priority"].iloc[:800].to_csv(second, index=False)
    return folder, first, second


@pytest.fixture(scope="module")
def numeric(tmp_path_factory):
    """Two random halves of one numeric table (waveform's raw features), for joint binning."""
    folder = tmp_path_factory.mktemp("numeric")
    rng = np.random.default_rng(0)
    latent = rng.normal(size=(1200, 1))
    frame = pd.DataFrame(latent + rng.normal(size=(1200, 4)), columns=list("abcd"))
    frame["e"] = np.where(rng.random(1200) < 0.6, 0.0, rng.exponential(size=1200))  # zero-inflated
    order = rng.permutation(len(frame))
    first, second = folder / "h1.csv", folder / "h2.csv"
    frame.iloc[order[:600]].to_csv(first, index=False)
    frame.iloc[order[600:]].to_csv(second, index=False)
    return folder, first, second, frame


def test_every_command_has_help(capsys):
    for command in ["demo", "mmd", "learn", "summarize", "compare", "hmm-kernel"]:
        with pytest.raises(SystemExit) as exit_info:
            main([command, "--help"])
        assert exit_info.value.code == 0
        assert "usage: bnfisher " + command in capsys.readouterr().out


def test_demo_runs(capsys):
    assert main(["demo"]) == 0
    out = capsys.readouterr().out
    assert "Chow-Liu network" in out and "MMD² (eq. 10) between two random halves" in out


def test_summarize_bundled_and_user_csv(tables, capsys):
    folder, first, _ = tables
    assert main(["summarize", "-k", "20", "--n-init", "20", "--n-random", "20"]) == 0
    assert "MMD² of 20 random subsets" in capsys.readouterr().out
    assert main(["summarize", "-k", "20", "--n-init", "20", "--n-random", "20", "--quiet"]) == 0
    quiet = capsys.readouterr().out.strip().splitlines()
    assert len(quiet) == 1 and quiet[0].startswith("Column by column, the 20 rows chosen")  # --quiet: the verdict only
    output = folder / "subset.csv"
    plot = folder / "summary.png"
    assert main(["summarize", str(first), "-k", "30", "--structure", "tan", "--n-init", "30", "--n-random", "30",
                 "--quiet", "-o", str(output), "--plot", str(plot)]) == 0
    subset = pd.read_csv(output)
    assert len(subset) == 30 and subset.columns[0] == "row"
    original = pd.read_csv(first)
    for _, row in subset.head(5).iterrows():  # the row numbers point at the very rows written
        assert original.iloc[int(row["row"])].astype(str).tolist() == row.iloc[1:].astype(str).tolist()
    assert plot.stat().st_size > 10_000


def test_learn_writes_bif_and_mmd_compare_use_it(tables, capsys):
    folder, first, second = tables
    model = folder / "model.bif"
    assert main(["learn", str(first), "--structure", "hc", "--quiet", "-o", str(model)]) == 0
    assert len(read_bif(model).variables) == 9
    assert main(["mmd", str(first), str(second), "--network", str(model)]) == 0
    assert "MMD² (eq. 10, biased)" in capsys.readouterr().out
    assert main(["compare", str(first), str(second), "--permutations", "50"]) == 0
    out = capsys.readouterr().out
    assert "MMD² (eq. 10, biased) =" in out
    p_value = float(out.split("p-value (aggregate test, 50 permutations) = ")[1].split()[0])
    assert p_value <= 3 / 51 + 1e-4  # the classes differ: at most the observed and one split per other component
    assert main(["compare", str(first), str(second), "--permutations", "50", "--test", "mmd"]) == 0
    assert "p-value (mmd test, 50 permutations) = 0.01961" in capsys.readouterr().out  # 1 / 51


def test_errors_exit_2_with_a_message(tables, capsys):
    folder, first, _ = tables
    with pytest.raises(SystemExit) as exit_info:
        main(["summarize", str(first), "-k", "0", "--quiet"])
    assert exit_info.value.code == 2 and "must be at least 1" in capsys.readouterr().err
    assert main(["summarize", str(first), "-k", "5000", "--quiet"]) == 2
    assert "`k` must satisfy" in capsys.readouterr().err
    assert main(["learn", str(folder / "missing.csv")]) == 2
    assert "No such file" in capsys.readouterr().err
    assert main(["learn", str(first), "--structure", "tan", "--class-variable", "nope"]) == 2
    assert "'nope' is not a column" in capsys.readouterr().err


@pytest.mark.parametrize("command", ["summarize", "learn"])
def test_output_onto_an_input_is_refused_before_any_work(tables, capsys, command):
    folder, first, _ = tables
    before = first.read_bytes()
    argv = [command, str(first), "-o", str(first), "--quiet"] + (["-k", "5"] if command == "summarize" else [])
    assert main(argv) == 2
    assert "refusing to overwrite an input" in capsys.readouterr().err
    assert first.read_bytes() == before


def test_output_into_a_missing_folder_or_onto_a_folder_is_refused(tables, capsys):
    folder, first, _ = tables
    assert main(["learn", str(first), "-o", str(folder / "nowhere" / "m.bif")]) == 2
    assert "does not exist" in capsys.readouterr().err
    assert main(["summarize", str(first), "-k", "5", "-o", str(folder)]) == 2
    assert "is a folder" in capsys.readouterr().err


def test_subset_size_and_kdb_parents_are_separate_options(tables, capsys):
    folder, first, _ = tables
    model = folder / "kdb.bif"
    assert main(["learn", str(first), "--structure", "kdb", "--kdb-k", "1", "-o", str(model)]) == 0
    assert max(len(ps) for ps in read_bif(model).parents.values()) <= 2  # class + 1 feature parent
    # `--k` is no abbreviation of anything: it is refused, never silently taken as the subset size.
    with pytest.raises(SystemExit):
        main(["summarize", str(first), "--k", "5"])
    capsys.readouterr()


def test_pseudocount_changes_the_result(tables, capsys):
    _, first, _ = tables
    outputs = []
    for pseudocount in ["0.5", "50"]:
        assert main(["summarize", str(first), "-k", "10", "--n-init", "10", "--n-random", "10", "--quiet",
                     "--pseudocount", pseudocount]) == 0
        outputs.append(capsys.readouterr().out)
    assert outputs[0] != outputs[1]
    with pytest.raises(SystemExit):
        main(["summarize", str(first), "--pseudocount", "-7"])
    assert "must be a finite number >= 0" in capsys.readouterr().err


@pytest.mark.parametrize("argv, message", [
    (["--max-parents", "2"], "--max-parents does not apply to --structure chow-liu"),
    (["--structure", "tan", "--tabu", "3"], "--tabu does not apply to --structure tan"),
    (["--structure", "exact", "--max-candidates", "5"], "--max-candidates does not apply to --structure exact"),
    (["--kdb-k", "2"], "--kdb-k does not apply"),
    (["--score", "bdeu"], "--score does not apply"),
    (["--workers", "2"], "apply to --engine dask only"),
    (["--pool-size", "5"], "is not below pool_size"),
    (["--engine", "dask", "--criticisms", "3"], "cannot be used with --engine dask"),
    (["--engine", "dask", "--criterion", "chi2"], "cannot be used with --engine dask"),
])
def test_options_that_would_be_ignored_are_refused(tables, capsys, argv, message):
    _, first, _ = tables
    assert main(["summarize", str(first), "-k", "5", "--quiet", *argv]) == 2
    assert message in capsys.readouterr().err


@pytest.mark.parametrize("command", ["compare", "drift", "profile"])
def test_the_cluster_options_go_with_the_dask_engine_on_every_command(tables, tmp_path, capsys, command):
    _, first, second = tables
    argv = {"compare": ["compare", str(first), str(second)],
            "drift": ["drift", str(first), str(second), "--rows", "50"],
            "profile": ["profile", str(first), "-o", str(tmp_path / "p.bnfp")]}[command]
    assert main([*argv, "--scheduler", "tcp://127.0.0.1:8786"]) == 2
    assert "--scheduler apply to --engine dask only" in capsys.readouterr().err
    assert not (tmp_path / "p.bnfp").exists()


def test_compare_on_the_dask_engine_refuses_a_profile(tables, tmp_path, capsys):
    _, first, second = tables
    profile = tmp_path / "a.bnfp"
    assert main(["profile", str(first), "-o", str(profile), "--quiet"]) == 0
    capsys.readouterr()
    assert main(["compare", str(profile), str(second), "--engine", "dask"]) == 2
    assert "a profile is in memory already" in capsys.readouterr().err


def test_every_summarize_option_is_either_used_or_refused():
    """Enumerate the options: each one is consumed by a code path or checked by a refusal."""
    import inspect

    from bnfisher.cli import commands
    from bnfisher.cli.parser import LEARN_FLAGS

    read_by_table = {dest for dest, _ in LEARN_FLAGS.values()}  # read through LEARN_FLAGS (getattr)
    parser = build_parser()
    summarize = parser._subparsers._group_actions[0].choices["summarize"]  # noqa: SLF001 - argparse internals
    source = inspect.getsource(commands)
    for action in summarize._actions:  # noqa: SLF001
        if action.dest in ("help", "command_name"):
            continue
        assert f"args.{action.dest}" in source or action.dest in read_by_table, \
            f"option {action.option_strings or action.dest} is never read"


def test_learning_options_with_a_network_are_refused(tables, capsys):
    folder, first, second = tables
    model = folder / "cl.bif"
    assert main(["learn", str(first), "-o", str(model)]) == 0
    assert main(["compare", str(first), str(second), "--network", str(model), "--structure", "hc"]) == 2
    assert "cannot be used with --network" in capsys.readouterr().err
    for flags in (["--max-time", "5"], ["--max-candidates", "all"]):  # hc's bounds would be ignored too
        assert main(["compare", str(first), str(second), "--network", str(model), *flags]) == 2
        assert f"{flags[0]} cannot be used with --network" in capsys.readouterr().err


def test_bin_columns_and_categorical_choose_what_bins_and_every_output_names_it(tmp_path, capsys):
    rng = np.random.default_rng(3)
    frame = pd.DataFrame({"age": rng.integers(18, 90, 400), "relp": rng.integers(0, 18, 400),
                          "sex": rng.choice(["f", "m"], 400)})
    frame.to_csv(tmp_path / "t.csv", index=False)
    first, second = str(tmp_path / "t.csv"), str(tmp_path / "t.csv")
    assert main(["compare", first, second, "--bins", "4", "--permutations", "20"]) == 0
    assert "Binned 1 numeric column(s) into at most 4 bins, with the same edges for every input: age" in \
        capsys.readouterr().out
    assert main(["compare", first, second, "--bins", "4", "--categorical", "age", "--permutations", "20",
                 "--json", str(tmp_path / "r.json")]) == 0
    assert "Binned" not in capsys.readouterr().out
    assert main(["compare", first, second, "--bins", "4", "--bin-columns", "age", "relp", "--permutations", "20",
                 "--json", str(tmp_path / "s.json")]) == 0
    captured = capsys.readouterr()
    assert "'relp' holds whole numbers with only 18 distinct values" in captured.err
    assert "Binned 2 numeric column(s)" in (tmp_path / "s.json").read_text()
    assert main(["compare", first, second, "--categorical", "age"]) == 2
    assert "--categorical chooses among the columns --bins bins; give --bins too" in capsys.readouterr().err


def test_compare_bins_both_files_with_the_same_edges(numeric, capsys):
    """Two random halves of one numeric table are not 'different' because of their binning."""
    folder, first, second, frame = numeric
    assert main(["compare", str(first), str(second), "--bins", "4", "--permutations", "200", "--seed", "1"]) == 0
    out = capsys.readouterr().out
    p_value = float(out.split("p-value (aggregate test, 200 permutations) = ")[1].split()[0])
    assert p_value > 0.01
    from bnfisher import Schema
    from bnfisher.data.io import read_table

    halves = [read_table(first), read_table(second)]
    schema = Schema.from_data(*halves, bins=4)
    assert len(schema.states["e"]) >= 2  # the zero-inflated column keeps more than one bin
    joint_codes = [schema.encode(h).codes for h in halves]
    assert all(c.max() <= 3 for c in joint_codes)


def test_wrong_network_files_are_refused(tables, capsys):
    folder, first, second = tables
    for name, content in [("t.csv.bif", "a,b\n1,2\n"), ("empty.bif", ""), ("brace.bif", "{}"),
                          ("truncated.bif", "network x {\n}\nvariable a {\n  type discrete [ 2 ] { y, n };\n")]:
        path = folder / name
        path.write_text(content)
        assert main(["mmd", str(first), str(second), "--network", str(path)]) == 2
        err = capsys.readouterr().err
        assert str(path) in err and "line" in err, err


def test_hmm_kernel_writes_exactly_the_named_file(tmp_path, capsys):
    rng = np.random.default_rng(0)
    archive = tmp_path / "seq.npz"
    np.savez(archive, *[rng.normal(size=(60, 2)) for _ in range(6)])
    output = tmp_path / "K.npz"
    assert main(["hmm-kernel", str(archive), "-o", str(output), "--n-states", "2", "--n-init", "1"]) == 0
    assert output.exists() and not (tmp_path / "K.npz.npy").exists()
    assert np.load(output).shape == (6, 6)
    capsys.readouterr()
    # Every start run to the end: the same options as the estimator's check_every=None.
    assert main(["hmm-kernel", str(archive), "-o", str(tmp_path / "all.npy"), "--n-states", "2", "--n-init", "3",
                 "--check-every", "none", "--quiet"]) == 0
    from bnfisher.sklearn import HMMFisherKernel

    kernel = HMMFisherKernel(n_states=2, n_init=3, check_every=None, random_state=0).fit(
        [np.load(archive)[name] for name in np.load(archive).files])
    assert f"log-likelihood {kernel.log_likelihood_:.6g}" in capsys.readouterr().out
    with pytest.raises(SystemExit) as exit_info:
        main(["hmm-kernel", str(archive), "-o", str(tmp_path / "x.npy"), "--check-every", "0"])
    assert exit_info.value.code == 2 and "--check-every" in capsys.readouterr().err


def test_semicolon_csv_is_read_as_columns(tmp_path, capsys):
    path = tmp_path / "semi.csv"
    pd.DataFrame({"a": list("xyxyxyxy"), "b": list("uuvvuuvv")}).to_csv(path, index=False, sep=";")
    assert main(["learn", str(path)]) == 0
    assert "(2 states)" in capsys.readouterr().out


def test_zero_dask_workers_is_refused_at_once(tables, capsys):
    _, first, _ = tables
    with pytest.raises(SystemExit) as exit_info:
        main(["summarize", str(first), "--engine", "dask", "--workers", "0"])
    assert exit_info.value.code == 2 and "must be at least 1" in capsys.readouterr().err


def test_binned_summary_writes_the_users_values_not_bin_labels(numeric, capsys):
    folder, first, _, _ = numeric
    output = folder / "subset.csv"
    assert main(["summarize", str(first), "-k", "10", "--bins", "3", "--n-init", "10", "--n-random", "10",
                 "--quiet", "-o", str(output)]) == 0
    written = pd.read_csv(output)
    original = pd.read_csv(first)
    assert "~" not in "".join(written.astype(str).to_numpy().ravel())
    np.testing.assert_allclose(written.drop(columns="row").to_numpy(), original.iloc[written["row"]].to_numpy())
    capsys.readouterr()


def test_tables_with_question_mark_markers_run_as_they_are(tmp_path, capsys):
    data = load("nursery").iloc[::5].astype(str).reset_index(drop=True)
    data = data.mask(np.random.default_rng(0).random(data.shape) < 0.07, "?")
    path = tmp_path / "q.csv"
    data.to_csv(path, index=False)
    output = tmp_path / "subset.csv"
    assert main(["summarize", str(path), "--na-values", "?", "-k", "20", "--n-init", "20", "--n-random", "20",
                 "-o", str(output), "--plot", str(tmp_path / "q.png")]) == 0
    out = capsys.readouterr().out
    n_missing = int((data == "?").sum().sum())
    assert f"{n_missing} cells missing" in out and "EM" in out
    share = 100 * (data == "?").any(axis=1).mean()
    assert f"% of the subset, {share:.1f}% of the data" in out  # shown with or without --quiet
    assert pd.read_csv(output, keep_default_na=False).shape[0] == 20
    model = tmp_path / "m.bif"
    assert main(["learn", str(path), "--na-values", "?", "--structure", "hc", "-o", str(model)]) == 0
    assert "converged True" in capsys.readouterr().out
    assert main(["compare", str(path), str(path), "--na-values", "?", "--permutations", "20"]) == 0
    assert main(["mmd", str(path), str(path), "--network", str(model)]) == 0
    assert "MMD²" in capsys.readouterr().out


@pytest.mark.parametrize("command", [["summarize", "-k", "5", "--n-init", "5", "--n-random", "5"],
                                     ["compare", "SECOND", "--permutations", "9"], ["learn"]])
def test_a_question_mark_read_from_a_file_is_named_as_a_possible_missing_marker(tmp_path, capsys, command):
    """A table read from a CSV holds categoricals: the hint that '?' may mark a missing value applies to them too."""
    data = load("nursery").iloc[:300].astype(str).reset_index(drop=True)
    data.loc[::7, "health"] = "?"
    path = tmp_path / "q.csv"
    data.to_csv(path, index=False)
    args = [command[0], str(path), *[str(path) if a == "SECOND" else a for a in command[1:]]]
    assert main(args) == 0
    err = capsys.readouterr().err
    times = 2 if command[0] == "compare" else 1  # compare checks the two tables pooled (here the same file twice)
    assert f"Column 'health' holds '?' in {times * int((data['health'] == '?').sum())} rows" in err
    assert "--na-values" in err


def test_pipelines_json_to_standard_output_exit_codes_and_quiet(tables, capsys, tmp_path):
    import json

    _, first, second = tables
    args = ["compare", str(first), str(second), "--permutations", "99"]
    assert main(args + ["--json", "-"]) == 0
    content = json.loads(capsys.readouterr().out)  # the JSON and nothing else on standard output
    assert content["kind"] == "comparison" and not (tmp_path / "-").exists()
    differ = content["test"]["p_value"] <= 0.05
    assert main(args + ["--exit-code"]) == int(differ)
    capsys.readouterr()
    same = ["compare", str(first), str(first), "--permutations", "99", "--exit-code"]
    assert main(same + ["--quiet"]) == 0
    assert capsys.readouterr().out.count("\n") == 1  # the verdict only
    assert main(same + ["--alpha", "0.999"]) == 0  # a table against itself: every split ties, p = 1
    capsys.readouterr()
    with pytest.raises(SystemExit) as exit_info:
        main(same + ["--alpha", "1.0"])  # a level that every p-value reaches: refused, in one line
    assert exit_info.value.code == 2 and "strictly between 0 and 1" in capsys.readouterr().err
    assert main(["compare", str(first), str(first), "--alpha", "0.1"]) == 2
    assert "--alpha sets the level of --exit-code" in capsys.readouterr().err
    windows = ["drift", str(first), str(second), str(first), "--permutations", "99", "--json", "-", "--exit-code"]
    code = main(windows)
    drifted = json.loads(capsys.readouterr().out)
    assert code == int(any(w["drift"] for w in drifted["windows"]))


def test_compare_names_what_differs(tmp_path, capsys):
    from bnfisher import BayesianNetwork

    network = read_bif(BIF_DIR / "asia.bif.gz")
    cpts = dict(network.cpts)
    cpts["dysp"] = np.asarray(cpts["dysp"]).copy()
    cpts["dysp"][1, 0] = [0.1, 0.9]
    changed = BayesianNetwork(dict(network.parents), cpts, dict(network.states))
    first, second = tmp_path / "a.csv", tmp_path / "b.csv"
    network.sample(3000, random_state=0).to_csv(first, index=False)
    changed.sample(3000, random_state=1).to_csv(second, index=False)
    assert main(["compare", str(first), str(second), "--permutations", "400", "--top", "3"]) == 0
    out = capsys.readouterr().out
    assert "the mechanism that changed is dysp's" in out and "Largest change: dysp = " in out
    families = out.split("Which conditional distributions of the kernel's network changed")[1].split("Largest cells")[0]
    assert families.splitlines()[2].split()[0] == "dysp"  # ranked first
    assert f"% of {first}" in out and "Rows most typical of" in out and "95% CI" in out


def test_max_candidates_reaches_hill_climbing_and_bad_values_are_refused(tables, capsys, tmp_path):
    _, first, _ = tables
    assert main(["learn", str(first), "--structure", "hc", "--max-candidates", "1", "-o",
                 str(tmp_path / "one.json")]) == 0
    assert "its 1 best single parents" in capsys.readouterr().err  # the estimate names the screening
    with pytest.raises(SystemExit):
        main(["learn", str(first), "--structure", "hc", "--max-candidates", "0"])
    assert "must be at least 1" in capsys.readouterr().err
