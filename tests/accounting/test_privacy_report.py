"""privacy_report: the table is the ledger, totals compose like the ledger, the guarantee names its unit.

* ledger reports: one row per entry (label, event type, unit), each spend's
  (epsilon, delta) and the running totals equal ``epsilon_delta`` of the
  entries composed so far, the last total is ``accountant.total()``;
* nothing is spent: the report of a ledger whose ``spend`` and ``check``
  raise is the same, and the entries are unchanged;
* estimators, DPPipeline, scikit-learn Pipeline, searches: rows, totals and
  ceilings from their fitted privacy record, public parameters, and the
  unit sentence (user-level models say "replace-one-user");
* rendering: the text table and the HTML table carry every row; the HTML
  is escaped; without pandas the table is a list of dicts.
"""

import math
import sys

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.exceptions import NotFittedError
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import StandardScaler

from sklearn_dpsco import (
    BudgetAccountant,
    DPGridSearchCV,
    DPHingeClassifier,
    DPLinearRegressor,
    DPPipeline,
    DPRandomizedSearchCV,
    DPStandardScaler,
    RowNormClipper,
    UserLevelDPLogistic,
    make_dp_pipeline,
    privacy_report,
)
from sklearn_dpsco.accounting import (
    ComposedEvent,
    GaussianEvent,
    LaplaceEvent,
    ParallelComposedEvent,
    PrivacyReport,
    PureDPEvent,
    SelfComposedEvent,
    ZCDPEvent,
    epsilon_delta,
)
from sklearn_dpsco.accounting._report import COLUMNS, describe_event
from sklearn_dpsco.testing._estimators import TinyDPClassifier


@pytest.fixture
def data():
    rng = np.random.default_rng(0)
    X = rng.uniform(-1, 1, size=(600, 3))
    y = (X[:, 0] + 0.5 * X[:, 1] > 0).astype(int)
    return X, y


@pytest.fixture
def user_data():
    rng = np.random.default_rng(1)
    n_users, m = 300, 4
    X = rng.standard_normal((n_users * m, 3)) / 2
    y = (X[:, 0] > 0).astype(int)
    return X, y, np.repeat(np.arange(n_users), m)


def _mixed_ledger():
    acc = BudgetAccountant(epsilon=10.0, delta=1e-5)
    acc.spend(PureDPEvent(0.5), label="pure")
    acc.spend(GaussianEvent(1.0, 4.0), label="gauss", privacy_unit="user")
    acc.spend(ComposedEvent((LaplaceEvent(1.0, 2.0), ZCDPEvent(0.01))), label="mixed")
    acc.spend(PureDPEvent(0.25), label="pure again")
    return acc


# -- ledgers -------------------------------------------------------------------------------------
def test_ledger_rows_are_the_entries_and_totals_compose_like_the_ledger():
    acc = _mixed_ledger()
    report = privacy_report(acc)
    entries = acc.ledger
    assert isinstance(report, PrivacyReport)
    assert [r["label"] for r in report.rows] == [e.label for e in entries]
    assert [r["event"] for r in report.rows] == [type(e.event).__name__ for e in entries]
    assert [r["unit"] for r in report.rows] == [e.privacy_unit for e in entries]
    assert [r["spend"] for r in report.rows] == [1, 2, 3, 4]
    for i, (row, entry) in enumerate(zip(report.rows, entries)):
        own = epsilon_delta(entry.event, delta=acc.delta if row["event"] != "PureDPEvent" else None)
        assert (row["epsilon"], row["delta"]) == pytest.approx(own, rel=1e-12)
        so_far = ComposedEvent(tuple(e.event for e in entries[: i + 1]))
        needs = i >= 1  # a Gaussian part from the second spend on
        total = epsilon_delta(so_far, delta=acc.delta if needs else None)
        assert (row["total_epsilon"], row["total_delta"]) == pytest.approx(total, rel=1e-12)
        assert row["of_ceiling"] == pytest.approx(row["total_epsilon"] / acc.epsilon)
    assert report.total == pytest.approx(acc.total(), rel=1e-12)
    assert report.ceiling == (acc.epsilon, acc.delta)
    totals = [r["total_epsilon"] for r in report.rows]
    assert totals == sorted(totals)
    # a Gaussian spend alone is read at the ledger's delta
    assert report.rows[1]["epsilon"] == pytest.approx(epsilon_delta(GaussianEvent(1.0, 4.0), delta=1e-5)[0])
    assert report.rows[1]["delta"] == 1e-5
    assert report.privacy_unit == acc.unit_of_total == "row"
    assert "replace-one-row" in report.guarantee


def test_report_never_spends(monkeypatch):
    acc = _mixed_ledger()
    before = acc.ledger
    expected = privacy_report(acc).to_dict()

    def refuse(*args, **kwargs):
        raise AssertionError("a report must not spend or check")

    monkeypatch.setattr(BudgetAccountant, "spend", refuse)
    monkeypatch.setattr(BudgetAccountant, "check", refuse)
    assert privacy_report(acc).to_dict() == expected
    assert acc.ledger == before


def test_ledger_without_delta_ceiling_needs_a_report_delta():
    acc = BudgetAccountant()  # records without limit: delta ceiling 0
    acc.spend(PureDPEvent(0.3))
    assert privacy_report(acc).total == (0.3, 0.0)
    open_acc = BudgetAccountant(math.inf, 1.0)
    open_acc.spend(GaussianEvent(1.0, 2.0))
    with pytest.raises(ValueError, match="delta="):
        privacy_report(open_acc)
    report = privacy_report(open_acc, delta=1e-6)
    assert report.total == pytest.approx(open_acc.total(delta=1e-6))
    assert report.rows[0]["of_ceiling"] is None  # infinite ceiling


def test_empty_ledger_report():
    report = privacy_report(BudgetAccountant(epsilon=1.0))
    assert report.rows == [] and report.total == (0.0, 0.0)
    assert "nothing was recorded" in report.guarantee
    assert "(no spends recorded)" in repr(report)


def test_sqlite_ledger_report_names_its_file(tmp_path):
    acc = BudgetAccountant(epsilon=1.0, path=tmp_path / "ledger.sqlite")
    acc.spend(PureDPEvent(0.2), label="persisted")
    report = privacy_report(acc)
    assert [r["label"] for r in report.rows] == ["persisted"]
    assert "ledger.sqlite" in report.guarantee


# -- estimators, pipelines, searches -------------------------------------------------------------
def test_estimator_report(data):
    X, y = data
    X = X / 2
    acc = BudgetAccountant(epsilon=1.0, delta=1e-5)
    reg = DPLinearRegressor(epsilon=0.7, delta=1e-6, random_state=0, accountant=acc).fit(X, X @ [0.3, -0.2, 0.1])
    report = privacy_report(reg)
    (row,) = report.rows
    assert row["label"] == f"DPLinearRegressor ({reg.solver_})"
    assert (row["epsilon"], row["delta"]) == pytest.approx((reg.epsilon_spent_, reg.delta_spent_))
    assert report.ceiling == (0.7, 1e-6)
    params = report.public_parameters["DPLinearRegressor"]
    # row_bound / label_bound default to "auto": the report shows the released private estimates
    assert params["row_bound"] == reg.row_bound_ and params["label_bound"] == reg.label_bound_
    assert params["noise"] == "secure"
    assert params["solver"] == reg.solver_
    assert "unit of privacy: row" in report.guarantee and "secure noise path" in report.guarantee


def test_unfitted_and_non_private_objects_are_refused(data):
    with pytest.raises(NotFittedError):
        privacy_report(DPLinearRegressor())
    with pytest.raises(TypeError, match="got LogisticRegression"):
        privacy_report(LogisticRegression())
    with pytest.raises(TypeError, match="no private step"):
        privacy_report(Pipeline([("clf", LogisticRegression())]))


def test_user_level_model_states_the_user_unit(user_data):
    X, y, groups = user_data
    acc = BudgetAccountant(epsilon=10.0, delta=1e-5, privacy_unit="user", max_items_per_user=4)
    clf = UserLevelDPLogistic(
        epsilon=2.0, delta=1e-6, max_items_per_user=4, solver="user_clip", random_state=0, accountant=acc
    ).fit(X, y, groups)
    report = privacy_report(clf)
    assert report.privacy_unit == "user" and report.rows[0]["unit"] == "user"
    assert "unit of privacy: user" in report.guarantee and "replace-one-user" in report.guarantee
    assert report.public_parameters["UserLevelDPLogistic"]["max_items_per_user"] == 4
    # a row-level spend on the user ledger is recorded converted; the report says how
    DPStandardScaler(epsilon=0.5, bounds=(-2, 2), accountant=acc, random_state=0).fit(X)
    ledger = privacy_report(acc)
    assert [r["unit"] for r in ledger.rows] == ["user", "user"]
    assert ledger.rows[1]["epsilon"] == pytest.approx(4 * 0.5)  # group privacy over m = 4 rows
    assert "replace-one-user" in ledger.guarantee
    assert any("group privacy over m=4" in note for note in ledger.notes)


def test_user_level_dp_pipeline(user_data):
    X, y, groups = user_data
    pipe = DPPipeline(
        [
            ("scale", DPStandardScaler(bounds=(-2, 2), privacy_unit="user", max_items_per_user=4)),
            ("clf", UserLevelDPLogistic(max_items_per_user=4, solver="user_clip", random_state=0)),
        ],
        epsilon=2.0,
        delta=1e-6,
        accountant=BudgetAccountant(epsilon=5.0, delta=1e-5),
    ).fit(X, y, groups=groups)
    report = privacy_report(pipe)
    assert report.privacy_unit == "user" and [r["unit"] for r in report.rows] == ["user", "user"]
    assert "replace-one-user" in report.guarantee


def test_dp_pipeline_rows_are_its_private_steps(data):
    X, y = data
    acc = BudgetAccountant(epsilon=3.0)
    pipe = DPPipeline(
        [("scale", DPStandardScaler(bounds=(-1, 1))), ("clip", RowNormClipper(1.5)), ("clf", TinyDPClassifier())],
        epsilon=1.0,
        weights={"scale": 1, "clf": 3},
        accountant=acc,
    ).fit(X, y)
    report = privacy_report(pipe)
    assert [r["label"] for r in report.rows] == ["scale: DPStandardScaler", "clf: TinyDPClassifier"]
    assert [r["epsilon"] for r in report.rows] == pytest.approx([0.25, 0.75])
    assert report.total[0] == pytest.approx(pipe.epsilon_spent_)
    assert report.rows[-1]["of_ceiling"] == pytest.approx(1.0)
    params = report.public_parameters
    assert params["scale (DPStandardScaler)"]["bounds"] == (-1, 1)
    assert params["scale (DPStandardScaler)"]["budget share"] == pytest.approx((0.25, 0.0))
    assert params["clip (RowNormClipper)"] == {"max_norm": 1.5, "norm": "l2"}
    # the pipeline's spends are the ledger's entries
    ledger = privacy_report(acc)
    assert [r["epsilon"] for r in ledger.rows] == pytest.approx([0.25, 0.75])
    assert ledger.rows[-1]["total_epsilon"] == pytest.approx(1.0)


def test_sklearn_pipeline(data):
    X, y = data
    private = Pipeline([("clip", RowNormClipper(1.0)), ("clf", TinyDPClassifier(accountant=BudgetAccountant()))])
    report = privacy_report(private.fit(X, y))
    assert [r["label"] for r in report.rows] == ["clf: TinyDPClassifier"]
    assert report.ceiling is None and report.total == pytest.approx((1.0, 0.0))
    assert "differentially private (unit of privacy: row)" in report.guarantee
    leaky = Pipeline([("scale", StandardScaler()), ("clf", TinyDPClassifier(accountant=BudgetAccountant()))])
    report = privacy_report(leaky.fit(X, y))
    assert report.guarantee.startswith("The fitted Pipeline is NOT differentially private")
    assert "'scale' (StandardScaler)" in report.guarantee


@pytest.mark.parametrize("search", ["grid", "random"])
def test_search_report_is_one_spend_with_its_breakdown(data, search):
    X, y = data
    acc = BudgetAccountant(epsilon=5.0)
    if search == "grid":
        est = DPGridSearchCV(
            TinyDPClassifier(), {"shift": [0.0, 0.1]}, epsilon=2.0, selection="exponential", accountant=acc,
            random_state=0,
        )
    else:
        est = DPRandomizedSearchCV(
            TinyDPClassifier(), {"shift": [0.0, 0.1]}, n_iter=3, epsilon=2.0, accountant=acc, random_state=0
        )
    est.fit(X, y)
    report = privacy_report(est)
    (row,) = report.rows
    assert row["epsilon"] == pytest.approx(est.epsilon_spent_)
    assert report.total[0] == pytest.approx(est.epsilon_spent_)
    assert report.ceiling == (2.0, 0.0)
    budget = est.budget_
    assert report.parts[0]["epsilon"] == pytest.approx(budget["candidate_fit"][0])
    assert report.parts[1]["epsilon"] == pytest.approx(budget["selection"])
    last = "refit on all rows" if budget["refit"] else "release of the best run"
    assert report.parts[-1]["part"] == last
    assert report.public_parameters[f"search ({type(est).__name__})"]["selection"] == budget["selection_method"]
    # the ledger holds the one reservation the report shows
    assert [r["epsilon"] for r in privacy_report(acc).rows][:1] == pytest.approx([est.epsilon_spent_])


# -- rendering -----------------------------------------------------------------------------------
def test_text_and_html_reprs_carry_the_table():
    acc = BudgetAccountant(epsilon=2.0)
    acc.spend(PureDPEvent(0.5), label="first <fit>")
    acc.spend(PureDPEvent(0.25), label="second & last")
    report = privacy_report(acc)
    text = repr(report)
    assert text.splitlines()[0] == "Privacy report: ledger"
    assert all(column in text for column in COLUMNS)
    assert "first <fit>" in text and "37.5%" in text
    html = report._repr_html_()
    assert html.count("<tr>") == 1 + len(report.rows)  # header and one row per spend
    assert "<th>total_epsilon</th>" in html
    assert "first &lt;fit&gt;" in html and "second &amp; last" in html and "<fit>" not in html
    assert "Guarantee:" in html


def test_table_is_a_dataframe_with_pandas():
    pd = pytest.importorskip("pandas")
    report = privacy_report(_mixed_ledger())
    table = report.table
    assert isinstance(table, pd.DataFrame)
    assert list(table.columns) == list(COLUMNS)
    assert table.to_dict("records") == report.rows


def test_report_works_without_pandas(monkeypatch):
    monkeypatch.setitem(sys.modules, "pandas", None)  # import pandas now raises ImportError
    report = privacy_report(_mixed_ledger())
    assert report.table == report.rows
    assert isinstance(report.table, list) and set(report.table[0]) == set(COLUMNS)
    assert "total_epsilon" in repr(report) and "<table>" in report._repr_html_()


def test_describe_event():
    assert describe_event(PureDPEvent(1.0)) == "pure DP"
    assert describe_event(ComposedEvent((LaplaceEvent(1, 1), LaplaceEvent(1, 2)))) == "Laplace (l1) x2"
    assert describe_event(SelfComposedEvent(GaussianEvent(1, 1), 3)) == "Gaussian x3"
    assert describe_event(ParallelComposedEvent((ZCDPEvent(0.1), ZCDPEvent(0.2)))) == "parallel: zCDP"


def test_user_level_search_report_states_the_user_unit(user_data):
    X, y, groups = user_data
    search = DPGridSearchCV(
        UserLevelDPLogistic(max_items_per_user=4, solver="user_clip"),
        {"alpha": [0.01, 0.1]},
        epsilon=4.0,
        delta=1e-6,
        cv=2,
        accountant=BudgetAccountant(epsilon=5.0, delta=1e-5),
        random_state=0,
    ).fit(X, y, groups)
    report = privacy_report(search)
    assert report.privacy_unit == "user" and report.rows[0]["unit"] == "user"
    assert "replace-one-user" in report.guarantee
    assert report.public_parameters["selected (UserLevelDPLogistic)"]["max_items_per_user"] == 4


def test_auto_scales_are_reported_as_private_estimates_not_as_declared(data):
    # found by a bug hunt: the report listed the "auto" row_bound / label_bound (released from the data) among
    # "public parameters ... fixed without looking at the data"
    X, y = data
    auto = DPLinearRegressor(random_state=0).fit(X, X @ [0.3, -0.2, 0.1])
    report = privacy_report(auto)
    assert "fixed without looking at the data" not in report.guarantee
    assert "private estimate" in report.guarantee
    (note,) = [n for n in report.notes if "private estimates" in n]
    assert "label_bound, row_bound left to \"auto\"" in note
    declared = DPLinearRegressor(row_bound=1.0, label_bound=1.0, random_state=0).fit(X, X @ [0.3, -0.2, 0.1])
    assert not [n for n in privacy_report(declared).notes if "private estimates" in n]
    big = np.random.default_rng(1).uniform(-1, 1, size=(6000, 3))  # rows enough for the scaler's quartiles
    # explicit weights keep the scaler working (with weights=None it hands its work to the model: DPPipeline)
    pipe = make_dp_pipeline(DPStandardScaler(random_state=0), DPHingeClassifier(random_state=0),
                            weights={"dpstandardscaler": 0.3, "dphingeclassifier": 0.7}).fit(big, big[:, 0] > 0)
    notes = privacy_report(pipe).notes
    assert any(n.startswith("dpstandardscaler (DPStandardScaler): bounds left to") for n in notes)
    declared_pipe = make_dp_pipeline(DPStandardScaler(bounds=(-2, 2)), DPHingeClassifier(clip=1.0, random_state=0))
    assert not privacy_report(declared_pipe.fit(X, X[:, 0] > 0)).notes


def test_sklearn_pipeline_counts_private_steps_inside_column_transformers_and_nested_pipelines(data):
    """Found by the bug hunt: a DPStandardScaler inside a ColumnTransformer (or a nested Pipeline) charged its
    ledger, but the report left its spend out of the total and called the Pipeline NOT differentially private."""
    from sklearn.compose import make_column_transformer
    from sklearn.pipeline import make_union

    X, y = data
    acc = BudgetAccountant()
    scaler = DPStandardScaler(bounds=(-1.0, 1.0), epsilon=0.5, accountant=acc, random_state=0)
    columns = make_column_transformer((scaler, [0, 1]), ("passthrough", [2]))
    pipe = Pipeline([("cols", columns), ("clf", TinyDPClassifier(accountant=acc))]).fit(X, y)
    report = privacy_report(pipe)
    assert [r["label"] for r in report.rows] == ["cols/dpstandardscaler: DPStandardScaler", "clf: TinyDPClassifier"]
    assert report.total == pytest.approx((1.5, 0.0)) and acc.total() == pytest.approx((1.5, 0.0))
    assert "NOT" not in report.guarantee and "differentially private (unit of privacy: row)" in report.guarantee
    assert "cols/dpstandardscaler (DPStandardScaler)" in report.public_parameters
    nested = Pipeline([("inner", Pipeline([("clip", RowNormClipper(1.0)), ("sc", clone(scaler))])),
                       ("clf", TinyDPClassifier(accountant=acc))]).fit(X, y)
    report = privacy_report(nested)
    assert [r["label"] for r in report.rows] == ["inner/sc: DPStandardScaler", "clf: TinyDPClassifier"]
    assert "NOT" not in report.guarantee
    # a non-private transformer inside a union or a column transformer is still named
    leaky = Pipeline([("u", make_union(StandardScaler(), clone(scaler))), ("clf", TinyDPClassifier(accountant=acc))])
    report = privacy_report(leaky.fit(X, y))
    assert report.guarantee.startswith("The fitted Pipeline is NOT differentially private")
    assert "'u/standardscaler' (StandardScaler)" in report.guarantee
    assert [r["label"] for r in report.rows] == ["u/dpstandardscaler: DPStandardScaler", "clf: TinyDPClassifier"]


def test_private_column_maps_are_noted(data):
    """Found by the bug hunt: the notes named an "auto" clip but not the column quartiles / centre that the same
    fit released privately (column_center_, column_scale_), which then read as if declared."""
    X, _ = data
    Xb = np.random.default_rng(0).normal(size=(3000, 3))
    bare = DPHingeClassifier(random_state=0).fit(Xb, Xb[:, 0] > 0)
    assert bare.fit_info_[0]["column_scaling"]["share"] > 0
    (note,) = [n for n in privacy_report(bare).notes if "per-column" in n]
    assert note.startswith("DPHingeClassifier: column_center_ / column_scale_ come from private per-column releases")
    declared = DPHingeClassifier(clip=1.0, column_scaling=False, centering=False, random_state=0).fit(X, X[:, 0] > 0)
    assert not privacy_report(declared).notes
    user = UserLevelDPLogistic(random_state=0).fit(Xb, Xb[:, 0] > 0, groups=np.arange(3000) // 5)
    (note,) = [n for n in privacy_report(user).notes if "per-column" in n]
    assert "centring" in note
