import warnings

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("sklearn")
from sklearn.base import clone
from sklearn.compose import ColumnTransformer
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GridSearchCV, KFold
from sklearn.pipeline import Pipeline
from sklearn.svm import SVC
from sklearn.utils.estimator_checks import parametrize_with_checks

from bnfisher import BnfisherError, FisherKernel, learn
from bnfisher.datasets import load
from bnfisher.exceptions import DataWarning
from bnfisher.sklearn.embedding import FisherEmbedding


@parametrize_with_checks([FisherEmbedding(), FisherEmbedding(structure="hc", normalize=True)])
def test_sklearn_compatible_transformer(estimator, check):
    check(estimator)


@pytest.fixture(scope="module")
def nursery():
    data = load("nursery").sample(3000, random_state=0)
    return data.drop(columns="class"), data["class"]


def test_transform_is_the_exact_feature_map(nursery):
    X, _ = nursery
    embedding = FisherEmbedding(structure="hc").fit(X)
    reference = FisherKernel(learn(X, "hc"))
    Phi = embedding.transform(X.iloc[:40])
    np.testing.assert_allclose((Phi @ Phi.T).toarray(), reference.gram(X.iloc[:40]), rtol=1e-10)
    np.testing.assert_allclose(embedding.gram(X.iloc[:40]), reference.gram(X.iloc[:40]), rtol=1e-10)
    assert embedding.mmd(X.iloc[:500], X.iloc[500:]) == pytest.approx(reference.mmd(X.iloc[:500], X.iloc[500:]))
    names = embedding.get_feature_names_out()
    assert len(names) == Phi.shape[1] and len(set(names)) == len(names)
    assert sum(n.startswith("health") for n in names) > 0


def test_pipeline_gridsearch_and_column_transformer(nursery):
    X, y = nursery
    pipeline = Pipeline([("fisher", FisherEmbedding()), ("logistic", LogisticRegression(max_iter=2000))])
    search = GridSearchCV(pipeline, {"fisher__structure": ["chow-liu", "hc"], "logistic__C": [0.1, 10.0]},
                          cv=KFold(2, shuffle=True, random_state=0))
    search.fit(X, y)
    assert search.best_score_ > 0.85
    assert clone(pipeline).get_params()["fisher__structure"] == "chow-liu"
    columns = ColumnTransformer([("fisher", FisherEmbedding(), ["parents", "has_nurs", "form", "health"])])
    assert columns.fit_transform(X).shape[0] == len(X)


def test_linear_model_on_embedding_matches_kernel_svm_on_fisher_gram(nursery):
    X, y = nursery
    embedding = FisherEmbedding().fit(X)
    Phi = embedding.transform(X)
    linear = SVC(kernel="linear", C=1.0).fit(Phi, y)
    precomputed = SVC(kernel="precomputed", C=1.0).fit(embedding.gram(X), y)
    agreement = np.mean(linear.predict(Phi[:300]) == precomputed.predict(embedding.gram(X.iloc[:300], X)))
    assert agreement > 0.99  # the same kernel machine, two ways


def test_class_variable_structures_need_the_column(nursery):
    X, y = nursery
    frame = X.assign(label=y.to_numpy())
    assert FisherEmbedding(structure="tan", class_variable="label").fit(frame).transform(frame).shape[0] == len(frame)
    with pytest.raises(ValueError, match="class_variable"):
        FisherEmbedding(structure="tan").fit(X)
    with pytest.raises(ValueError, match="value 'teal'"):
        FisherEmbedding(handle_unknown="error").fit(X).transform(X.iloc[:1].assign(health="teal"))
    with pytest.warns(DataWarning, match=r"unseen in fit .* column 'health' 1 cell\(s\) \(e.g. 'teal'\)"):
        marginalized = FisherEmbedding().fit(X).transform(X.iloc[:1].assign(health="teal"))
    assert np.isfinite(marginalized.toarray()).all()
    fitted = FisherEmbedding().fit(X)
    with pytest.warns(DataWarning, match=r"of \d+ value\(s\) unseen in fit"):  # columns by position, in another order
        fitted.transform(X.to_numpy()[:, ::-1])
    with warnings.catch_warnings():
        warnings.simplefilter("error", DataWarning)
        fitted.transform(X.iloc[:50])


def test_integer_codes_and_arrays(nursery):
    X, _ = nursery
    codes = np.column_stack([X[c].cat.codes.to_numpy() for c in X.columns])
    embedding = FisherEmbedding().fit(codes)
    assert embedding.transform(codes[:3]).shape[0] == 3
    assert not hasattr(embedding, "feature_names_in_")
    assert isinstance(pd.DataFrame(codes).shape, tuple)


def test_transform_never_renames_the_callers_columns():
    import pandas as pd

    from bnfisher.datasets import load

    frame = load("nursery").iloc[:300].drop(columns="class")
    embedding = FisherEmbedding().fit(frame.to_numpy())
    columns = list(frame.columns)
    Phi = embedding.transform(frame)
    assert list(frame.columns) == columns  # the caller's DataFrame is untouched
    np.testing.assert_allclose(Phi.toarray(), embedding.transform(frame.to_numpy()).toarray())
    assert isinstance(frame, pd.DataFrame)


def test_bins_are_learned_in_fit_and_applied_in_transform_inside_a_pipeline():
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import cross_val_score
    from sklearn.pipeline import make_pipeline

    rng = np.random.default_rng(0)
    x = rng.normal(size=400)
    X = pd.DataFrame({"x": x, "z": rng.choice(["a", "b"], 400), "w": x + rng.normal(scale=0.5, size=400)})
    y = (x > 0).astype(int)
    embedding = FisherEmbedding(bins=4).fit(X.iloc[:300])
    assert set(embedding.network_.schema.bin_edges) == {"x", "w"}
    edges = embedding.network_.schema.bin_edges["x"]
    ordered = np.sort(X["x"].iloc[:300])  # 300 distinct training values: bins of 75 rows, edges at row quantiles
    assert edges == pytest.approx(tuple(ordered[[0, 74, 149, 224, 299]]))
    assert embedding.transform(X.iloc[300:]).shape[0] == 100
    scores = cross_val_score(make_pipeline(FisherEmbedding(bins=4), LogisticRegression(max_iter=500)), X, y, cv=3)
    assert scores.mean() > 0.8


@pytest.mark.parametrize("structure", ["naive-bayes", "tan", "kdb"])
def test_supervised_structures_learn_with_y_and_transform_without_it(structure):
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import cross_val_score
    from sklearn.pipeline import make_pipeline

    from bnfisher.datasets import load

    data = load("nursery").sample(1500, random_state=0).reset_index(drop=True)
    X, y = data.drop(columns="class"), data["class"].astype(str)
    embedding = FisherEmbedding(structure=structure).fit(X, y)
    assert "__class__" in embedding.network_.variables
    assert embedding.transform(X.iloc[:10]).shape[0] == 10
    with pytest.raises(BnfisherError, match="pass y"):
        FisherEmbedding(structure=structure).fit(X)
    # Inside a pipeline, y reaches the embedding's fit (a grid search over its parameters: the test above).
    pipeline = make_pipeline(FisherEmbedding(structure=structure), LogisticRegression(max_iter=300))
    assert cross_val_score(pipeline, X, y, cv=2, error_score="raise").mean() > 0.7
