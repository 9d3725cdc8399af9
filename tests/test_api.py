"""The API contract: keyword-only options, layering, one kernel interface, no private reads across modules."""

import ast
import inspect
import pathlib

import numpy as np
import pytest

import bnfisher
from bnfisher import FisherKernel, OverlapKernel
from bnfisher.classifier import BayesianNetworkClassifier
from bnfisher.embedding import FisherEmbedding
from bnfisher.hmm import HMMFisherKernel
from bnfisher.selection import mmd_test, random_baseline, random_mmd_baseline, select_representatives

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


def test_only_the_dask_shell_knows_about_dask():
    for path in _modules():
        if path.name == "scale.py":
            continue
        text = path.read_text()
        assert "__module__" not in text or "dask" not in text, path
        tree = ast.parse(text)
        for node in ast.walk(tree):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                names = [a.name for a in node.names] + ([node.module] if isinstance(node, ast.ImportFrom)
                                                        and node.module else [])
                assert not any(n and n.split(".")[0] in ("dask", "distributed") for n in names), path


def test_core_imports_no_shell_at_module_level():
    core = ["encoding", "counts", "network", "inference", "scores", "kernel", "selection", "bif", "io",
            "structure/__init__", "structure/chow_liu", "structure/classifiers", "structure/hill_climb"]
    shells = {"sklearn", "matplotlib", "dask", "distributed", "embedding", "classifier", "plotting", "cli",
              "scale", "experiments"}
    for name in core:
        tree = ast.parse((PACKAGE / f"{name}.py").read_text())
        for node in tree.body:  # module level only
            if isinstance(node, ast.ImportFrom):
                module = (node.module or "").split(".")
                assert not shells & set(module), (name, node.module)
            if isinstance(node, ast.Import):
                assert not shells & {a.name.split(".")[0] for a in node.names}, name


def test_no_module_reads_another_modules_private_names():
    for path in _modules():
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.level and path.name != "scale.py":
                private = [a.name for a in node.names if a.name.startswith("_") and not a.name.startswith("__")]
                # scale.py is the Dask side of encoding and reuses its binning helpers on purpose.
                allowed = {"_frames": None, "_validation": None, "_sklearn": None}
                if node.module in allowed:
                    continue
                assert not private, (path.name, node.module, private)
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
                if node.attr.startswith("_") and not node.attr.startswith("__") and node.value.id not in (
                        "self", "cls", "np", "pd", "os", "sys", "type", "args", "schema", "other", "data", "frame"):
                    pytest.fail(f"{path.name}: {node.value.id}.{node.attr}")


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
