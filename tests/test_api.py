"""The API contract: keyword-only options, layering, one kernel interface, no private reads across modules."""

import inspect
import pathlib

import numpy as np
import pytest

import bnfisher
from bnfisher import FisherKernel, OverlapKernel
from bnfisher.comparison import mmd_test
from bnfisher.sklearn import HMMFisherKernel
from bnfisher.sklearn.classifier import BayesianNetworkClassifier
from bnfisher.sklearn.embedding import FisherEmbedding
from bnfisher.summary import random_baseline, random_mmd_baseline, select_representatives

from _helpers import random_network

PACKAGE = pathlib.Path(bnfisher.__file__).parent


@pytest.mark.parametrize("function, positional", [
    (select_representatives, 3), (mmd_test, 3), (random_baseline, 3), (random_mmd_baseline, 3),
    (bnfisher.learn, 2), (bnfisher.FisherKernel, 1), (bnfisher.BayesianNetwork.from_data, 2),
    (BayesianNetworkClassifier, 0), (FisherEmbedding, 0), (HMMFisherKernel, 0),
])
def test_options_are_keyword_only(function, positional):
    """Every parameter after the data arguments is keyword-only: a positional call is refused."""
    parameters = [p for p in inspect.signature(function).parameters.values() if p.name not in ("self", "cls")]
    plain = [p for p in parameters if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    assert len(plain) == positional, [p.name for p in plain]
    with pytest.raises(TypeError):
        function(*([None] * (positional + 1)))


def test_random_state_defaults_to_none_everywhere():
    for function in (select_representatives, mmd_test, random_baseline, random_mmd_baseline, FisherKernel,
                     FisherEmbedding, HMMFisherKernel, bnfisher.BayesianNetwork.sample):
        parameter = inspect.signature(function).parameters.get("random_state")
        assert parameter is not None and parameter.default is None, function


def _modules():
    return sorted(p for p in PACKAGE.rglob("*.py"))


@pytest.mark.parametrize("kernel_class", [FisherKernel, OverlapKernel])
def test_both_kernels_serve_the_two_sample_test_and_the_selection(kernel_class):
    network = random_network(np.random.default_rng(7), n_vars=4)
    kernel = kernel_class(network)
    X = network.sample(300, random_state=1)
    Y = network.sample(200, random_state=2)
    result = mmd_test(kernel, X, Y, n_permutations=50, random_state=0)
    assert result.statistic == pytest.approx(kernel.mmd(X, Y), rel=1e-12)
    # The unbiased estimate equals its definition from the Gram matrix.
    kxx, kyy, kxy = kernel.gram(X), kernel.gram(Y), kernel.gram(X, Y)
    n, m = len(X), len(Y)
    unbiased = ((kxx.sum() - np.trace(kxx)) / (n * (n - 1)) + (kyy.sum() - np.trace(kyy)) / (m * (m - 1))
                - 2 * kxy.mean())
    assert result.unbiased == pytest.approx(unbiased, rel=1e-9, abs=1e-12)
    selection = select_representatives(kernel, X, 15, n_init=30, random_state=0)
    assert selection.final_value == pytest.approx(kernel.mmd(X.iloc[selection.indices], X), rel=1e-9, abs=1e-12)
    assert selection.final_value <= selection.initial_value


def test_overlap_kernel_is_the_number_of_agreeing_variables():
    network = random_network(np.random.default_rng(8), n_vars=5)
    X = network.sample(20, random_state=0)
    gram = OverlapKernel(network).gram(X)
    values = X.to_numpy()
    np.testing.assert_array_equal(gram, (values[:, None, :] == values[None, :, :]).sum(axis=2))


def test_public_calls_never_modify_their_inputs():
    """Deep-compare every input before and after the public calls a user makes on it."""
    import copy

    import pandas as pd

    from bnfisher.datasets import load

    frame = load("nursery").iloc[::50].reset_index(drop=True)
    numeric = pd.DataFrame({"x": np.linspace(0, 1, len(frame)), "c": frame["class"].astype(str)})
    codes = bnfisher.learn(frame).schema.encode(frame).codes.copy()
    inputs = {"frame": frame, "numeric": numeric, "codes": codes}
    before = copy.deepcopy(inputs)
    schema = bnfisher.Schema.from_data(numeric, bins=3)
    schema.encode(numeric)
    schema.discretize(numeric)
    bnfisher.discretize(numeric, bins=3)
    network = bnfisher.learn(frame, "hc")
    kernel = FisherKernel(network)
    for data in (frame, codes):
        kernel.gram(data[:20]); kernel.embed(data); kernel.diag(data); kernel.mmd(data, data[:30])  # noqa: E702
        network.log_likelihood(data); bnfisher.score(network, data)  # noqa: E702
        select_representatives(kernel, data, 5, n_init=5, random_state=0)
        mmd_test(kernel, data, data[:40], n_permutations=5, random_state=0)
        bnfisher.as_provider(data, network.schema).counts([(0,)])
    X, y = frame.drop(columns="class"), frame["class"]
    embedding = FisherEmbedding().fit(X)
    embedding.transform(X)
    embedding.transform(X.to_numpy())
    BayesianNetworkClassifier(structure="tan").fit(X, y).predict_proba(X)
    for name, value in inputs.items():
        if isinstance(value, pd.DataFrame):
            pd.testing.assert_frame_equal(value, before[name], check_exact=True)
        else:
            np.testing.assert_array_equal(value, before[name])
    pd.testing.assert_series_equal(y, before["frame"]["class"])


@pytest.mark.slow
def test_the_command_lines_help_loads_no_heavy_library():
    """``bnfisher --help`` (and a mistyped command) answers without importing pandas, SciPy, numba, Dask or matplotlib:
    each costs a fraction of a second to a second, which every call of the command line would pay."""
    import subprocess
    import sys

    code = ("import sys; from bnfisher.cli import main\n"
            "try:\n    main(['--help'])\nexcept SystemExit:\n    pass\n"
            "heavy = ('pandas', 'scipy', 'numba', 'dask', 'distributed', 'matplotlib', 'sklearn', 'networkx')\n"
            "print(sorted(m for m in heavy if m in sys.modules), file=sys.stderr)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stderr.strip().splitlines()[-1] == "[]"


@pytest.mark.slow
def test_bnfisher_and_its_command_line_import_without_scikit_learn():
    """scikit-learn is an extra: ``import bnfisher`` and the command line work without it (its stand-ins)."""
    import subprocess
    import sys

    code = ("import sys; sys.modules['sklearn'] = None; import bnfisher, bnfisher.cli; "
            "import pandas as pd; from bnfisher.sklearn import BayesianNetworkClassifier, FisherEmbedding\n"
            "X = pd.DataFrame({'a': list('xyxy'), 'b': list('uuvv')})\n"
            "for estimator in (BayesianNetworkClassifier(), FisherEmbedding()):\n"
            "    try:\n        estimator.fit(X, [0, 1, 0, 1])\n"
            "    except ImportError as e:\n        print('refused:', e)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("refused: bnfisher's estimators need scikit-learn: pip install") == 2


def test_the_statistics_a_job_passes_on_are_built_whole_and_cannot_be_changed():
    """Narrow results: the permutation statistics (with their witness) and a subset's fidelity (with its pairs and
    CPTs) are complete when returned and refuse assignment (they are frozen dataclasses)."""
    import dataclasses

    from bnfisher.comparison import permutation_statistics

    network = random_network(np.random.default_rng(3), 4)
    data = network.sample(200, random_state=0)
    kernel = FisherKernel(network)
    outcome = permutation_statistics(kernel, data.iloc[:90], data.iloc[90:], n_permutations=19, witness=True,
                                     random_state=0)
    assert outcome.x.witness is not None and outcome.y.witness is not None
    summary = bnfisher.summarize(data, 10, n_random=5, random_state=0)
    assert summary.fidelity.pair_tv is not None and summary.fidelity.cpt_tv is not None
    for frozen, name in ((outcome, "unbiased"), (outcome.x, "witness"), (summary.fidelity, "pair_tv")):
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(frozen, name, None)


def test_a_job_resolves_the_seed_once_and_each_function_it_enters_checks_it_at_most_once(monkeypatch):
    """One resolution per public call: ``drift`` turns the user's seed into a Generator once; the public functions
    it enters (the permutation test, the family and mechanism tests, the hill climb) each receive that Generator
    and check it once, and nothing checks it again inside them (the null's buckets drew through ``split_draws``,
    a check each, 18 times in one drift of two windows)."""
    import sys

    from bnfisher._utils import validation

    original, calls = validation.check_random_state, []

    def counted(random_state):
        caller = inspect.currentframe().f_back.f_code.co_name  # (co_qualname is Python 3.11's)
        calls.append((caller, isinstance(random_state, np.random.Generator)))
        return original(random_state)

    for name, module in list(sys.modules.items()):
        if name.startswith("bnfisher") and getattr(module, "check_random_state", None) is original:
            monkeypatch.setattr(module, "check_random_state", counted)
    data = bnfisher.datasets.load("nursery").sample(3000, random_state=0)
    changed = data.iloc[1500:].copy()
    changed["health"] = changed["health"].sample(frac=1.0, random_state=1).to_numpy()  # its dependence broken
    bnfisher.drift(data.iloc[:1500], {"same": data.iloc[1500:], "changed": changed}, n_permutations=99,
                   random_state=0)
    assert [generator for _, generator in calls].count(False) == 1  # the user's seed, resolved once
    assert calls[0] == ("drift", False)
    callers = [caller for caller, _ in calls]
    per_window = [c for c in callers if c != "drift"]
    assert "mechanism_tests" in callers and "permutation_statistics" in callers
    assert per_window.count("permutation_statistics") == 2  # once per window, however many buckets and rounds
    assert max(callers.count(c) for c in set(callers)) <= 2  # nothing more than once a window
    assert not [c for c in callers if c.startswith("_")]  # no private step re-checks
