"""``privacy_report``: what a fitted estimator, pipeline, search or ledger spent, and what it guarantees.

One function, :func:`privacy_report`, reads (never spends) the privacy
record of

* a ledger (:class:`~sklearn_dpsco.BudgetAccountant`): every entry, with
  running totals against the ceiling (:func:`~sklearn_dpsco.accounting._report.ledger_report`);
* a fitted private estimator: its ``privacy_event_`` against its own
  ``(epsilon, delta)``;
* a fitted :class:`~sklearn_dpsco.DPPipeline`: one row per private step,
  against the pipeline's budget;
* a fitted :class:`sklearn.pipeline.Pipeline` with private steps: one row
  per private step (each charged its own ledger), with a note when a step
  learns from the data without noise (the pipeline is then not private);
* a fitted private search (:class:`~sklearn_dpsco.DPGridSearchCV`,
  :class:`~sklearn_dpsco.DPRandomizedSearchCV`): its one up-front spend,
  with the split of that spend into candidate fits, selection and refit.

Besides the table, the report states the guarantee: the unit of privacy
and its neighbouring relation (doc/privacy/accounting.rst, "Privacy
units"), and the public parameters it rests on: declared bounds, clip
levels, the parameter domain, the noise path (doc/privacy/secure_noise.rst).
The table and rendering live in :mod:`sklearn_dpsco.accounting._report`.
"""

import math

from sklearn.compose import ColumnTransformer
from sklearn.pipeline import FeatureUnion, Pipeline
from sklearn.utils.validation import check_is_fitted

from .accounting import BudgetAccountant
from .accounting._report import PrivacyReport, ledger_report, neighbouring_relation, spend_rows
from .accounting._report import format_value, read_total
from .accounting._units import privacy_unit_of
from .linear_model._auto_scales import CONSTANT_SOLVER
from .model_selection._search import _BaseDPSearchCV
from .preprocessing._pipeline import DPPipeline
from .preprocessing._steps import classify_step

__all__ = ["privacy_report"]

#: Parameters a guarantee rests on, as estimators name them, with what they are. A fitted
#: attribute ``<name>_`` (the resolved value of a default, e.g. DPHingeClassifier.clip_)
#: is shown instead of the parameter when the estimator has one.
PUBLIC_PARAMETERS = {
    "bounds": "declared per-feature range (lower, upper); values are clipped to it",
    "row_bound": "declared bound on a row's l2 norm; longer rows are scaled down to it",
    "label_bound": "declared bound on |y|; labels are clipped to it",
    "data_norm": "declared bound on a row's l2 norm",
    "max_norm": "clip level of each row's norm",
    "norm": "the norm of max_norm",
    "clip": "clip level (Lipschitz constant) of each row's loss gradient",
    "user_clip": "clip level of each user's contribution",
    "sgd_clip": "clip level of each user's gradient in user-level DP-SGD",
    "max_items_per_user": "rows kept per user",
    "alpha": "regularization strength (strong convexity of the objective)",
    "radius": "radius of the public parameter domain",
    "tolerance": "certified solver accuracy, as a fraction of the sensitivity",
    "intercept_scaling": "value of the virtual intercept column",
    "noise": "noise path",
}

#: Parameters of a private search its guarantee rests on (doc/privacy/model_selection.rst).
SEARCH_PARAMETERS = ("selection", "scoring", "loss_bound", "cv", "selection_share", "refit_share", "stopping")

_NOISE_PATHS = {
    "secure": (
        "secure noise path: every release is a centre rounded to a public grid plus exact integer noise, so the "
        "proof covers the floats released (doc/privacy/secure_noise.rst)"
    ),
    "float": (
        "float noise path: textbook floating-point samplers; the proof is for real-valued noise and does not cover "
        "floating-point artefacts of the released numbers (doc/privacy/secure_noise.rst)"
    ),
}


def privacy_report(obj, *, delta=None):
    """A read-only report of what ``obj`` spent and what its total guarantees.

    Parameters
    ----------
    obj : BudgetAccountant, fitted private estimator, DPPipeline, Pipeline or private search
        What to report on. Estimators, pipelines and searches must be
        fitted. Nothing is spent and nothing is written.
    delta : float, optional
        The total delta at which the epsilon of Gaussian / zCDP spends is
        read. Defaults to the ledger's delta ceiling (ledgers) or the
        ``delta`` budget of the estimator, pipeline or search; spends
        without such parts are read at their own delta.

    Returns
    -------
    report : PrivacyReport
        ``report.table`` (a :class:`pandas.DataFrame` when pandas is
        installed, else a list of dicts) has one row per spend: label,
        event type, mechanism, privacy unit, its (epsilon, delta), and the
        running total with its fraction of the ceiling.
        ``report.guarantee`` states the unit of privacy, the neighbouring
        relation and the public parameters the guarantee rests on
        (``report.public_parameters``). ``repr(report)`` is a plain-text
        table; notebooks render ``report._repr_html_()``.

    Raises
    ------
    TypeError
        ``obj`` is none of the above.
    sklearn.exceptions.NotFittedError
        An estimator, pipeline or search that has not been fitted.
    ValueError
        Gaussian / zCDP spends and no delta to read them at (a ledger
        without delta ceiling): pass ``delta``.

    See Also
    --------
    sklearn_dpsco.BudgetAccountant.total : the total of a ledger.
    sklearn_dpsco.accounting.privacy_unit_of : the unit of an estimator.

    Notes
    -----
    Totals compose by the rules of doc/privacy/composition.rst, the same
    code as :meth:`BudgetAccountant.total`, so a ledger report's last
    running total is ``accountant.total()``. A ledger records events only;
    the public parameters behind each spend are in the report of the
    estimator that made it.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_dpsco import BudgetAccountant, DPLinearRegressor, privacy_report
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(-1, 1, (2000, 3)) / 2; y = X @ [0.5, -0.5, 0.2]
    >>> acc = BudgetAccountant(epsilon=2.0)
    >>> reg = DPLinearRegressor(epsilon=0.5, random_state=0, accountant=acc).fit(X, y)
    >>> report = privacy_report(acc)
    >>> report.total == acc.total()
    True
    >>> row = report.rows[0]
    >>> row["label"], round(row["epsilon"], 12), round(row["of_ceiling"], 12)
    ('DPLinearRegressor', 0.5, 0.25)
    >>> privacy_report(reg).privacy_unit
    'row'
    """
    if isinstance(obj, BudgetAccountant):
        return ledger_report(obj, delta)
    if isinstance(obj, _BaseDPSearchCV):
        return _search_report(obj, delta)
    if isinstance(obj, DPPipeline):
        return _dp_pipeline_report(obj, delta)
    if isinstance(obj, Pipeline):
        return _pipeline_report(obj, delta)
    if classify_step(obj) == "private":
        return _estimator_report(obj, delta)
    raise TypeError(
        f"privacy_report reads a BudgetAccountant, a fitted private estimator, a DPPipeline, a Pipeline with "
        f"private steps or a private search; got {type(obj).__name__}."
    )


# -- public parameters ---------------------------------------------------------------------------
def _value(est, name, params):
    """The declared value; for a default (None or "auto") the fitted ``<name>_`` it resolved to."""
    value = params[name]
    if value is not None and not (isinstance(value, str) and value == "auto"):
        return value
    resolved = getattr(est, name + "_", None)
    if resolved is not None and not callable(resolved):
        return resolved
    return "auto"


def public_parameters(est):
    """``{parameter: value}`` of the guarantee-bearing parameters of one step (see :data:`PUBLIC_PARAMETERS`)."""
    if not hasattr(est, "get_params"):
        return {}
    params = est.get_params(deep=False)
    out = {}
    for name in PUBLIC_PARAMETERS:
        if name not in params:
            continue
        if name == "clip" and isinstance(params[name], bool):
            continue  # DPStandardScaler.clip: whether transform clips too, not a privacy parameter
        if name == "intercept_scaling" and not params.get("fit_intercept", True):
            continue
        if name == "max_items_per_user" and params[name] is None and params.get("privacy_unit", "user") == "row":
            continue
        out[name] = _value(est, name, params)
    if getattr(est, "solver_", None) == CONSTANT_SOLVER:
        # The constant release reads no bound, clip, radius or alpha: at most a label median on a public
        # grid (doc/privacy/quantiles.rst, "Budgets too small for the estimates"), so listing them would
        # claim the guarantee rests on parameters the fit never used.
        out = {k: v for k, v in out.items() if k == "noise"}
    if getattr(est, "solver_", None) is not None:
        out["solver"] = est.solver_
    return out


def private_estimates(est):
    """Names among :data:`PUBLIC_PARAMETERS` whose shown value is a private estimate of this fit, not a declared one.

    A scale left to "auto" (``clip``, ``row_bound``, ``label_bound``, ``data_norm``: ``fit_info_["scale_estimates"]``;
    a scaler's ``bounds="auto"``: ``fit_info_["estimated"]``) is released by a DP mechanism inside the fit's own
    budget: the guarantee covers it, but it was read off the data (with noise), not fixed in advance.
    """
    info = getattr(est, "fit_info_", None)
    infos = info if isinstance(info, list) else [info]
    names = set()
    for item in infos:
        if isinstance(item, dict):
            names.update(item.get("scale_estimates") or {})
            if item.get("estimated") and item.get("bounds") == "auto":
                names.add("bounds")
    return sorted(names & set(PUBLIC_PARAMETERS))


#: ``fit_info_`` keys of the per-column maps a model releases privately before its solver (column scaling,
#: user-level column magnitudes, centring): ``column_center_`` / ``column_scale_`` come from them.
_COLUMN_RELEASES = {"column_scaling": "column scaling", "column_magnitudes": "column magnitudes",
                    "centering": "centring"}


def _column_releases(est):
    """Names of the private per-column releases of this fit (:data:`_COLUMN_RELEASES` with a positive share)."""
    info = getattr(est, "fit_info_", None)
    found = []
    for item in info if isinstance(info, list) else [info]:
        if isinstance(item, dict):
            for key, name in _COLUMN_RELEASES.items():
                entry = item.get(key)
                if isinstance(entry, dict) and entry.get("share", 0) > 0 and name not in found:
                    found.append(name)
    return found


def _estimate_notes(items):
    """One note per ``(label, estimator)`` whose shown scales are private estimates (:func:`private_estimates`),
    and one per estimator that released per-column maps (:func:`_column_releases`)."""
    notes = []
    for label, est in items:
        names = private_estimates(est)
        if names:
            notes.append(
                f"{label}: {', '.join(names)} left to \"auto\": private estimates released inside the budget above "
                "(fit_info_), not declared values; a radius or intercept_scaling set from them follows them."
            )
        columns = _column_releases(est)
        if columns:
            notes.append(
                f"{label}: column_center_ / column_scale_ come from private per-column releases ({', '.join(columns)}) "
                "inside the budget above (fit_info_), read off the data with noise, not declared."
            )
    return notes


def _children(step):
    """``[(name, child)]`` of a container that is not itself private: a Pipeline, a ColumnTransformer (its fitted
    ``transformers_``, remainder included) or a FeatureUnion; None for any other step."""
    if classify_step(step) == "private":
        return None
    if isinstance(step, Pipeline):
        return list(step.steps)
    if isinstance(step, ColumnTransformer):
        fitted = getattr(step, "transformers_", None)
        return [(name, child) for name, child, _ in (fitted if fitted is not None else step.transformers)]
    if isinstance(step, FeatureUnion):
        return list(step.transformer_list)
    return None


def _leaf_steps(steps, prefix=""):
    """``[(name, step)]`` of the steps of ``steps`` with containers (:func:`_children`) opened, their names
    prefixed by the container's (``"cols/scaler"``); ``"drop"`` and passthrough leaves are left out."""
    out = []
    for name, step in steps:
        children = _children(step)
        if children is not None:
            out += _leaf_steps(children, prefix=f"{prefix}{name}/")
        elif not (isinstance(step, str) and step == "drop") and classify_step(step) != "passthrough":
            out.append((f"{prefix}{name}", step))
    return out


def _steps_estimators(steps, prefix=""):
    """``[(label, step)]`` of every private step, nested pipelines and searches' selected estimators included."""
    out = []
    for name, step in steps:
        if (children := _children(step)) is not None:
            out += _steps_estimators(children, prefix=f"{prefix}{name}/")
        elif isinstance(step, Pipeline):
            out += _steps_estimators(step.steps, prefix=f"{prefix}{name}/")
        elif isinstance(step, _BaseDPSearchCV):
            out += _search_estimators(step, prefix=f"{prefix}{name}/")
        elif classify_step(step) == "private":
            out.append((f"{prefix}{name} ({type(step).__name__})", step))
    return out


def _search_estimators(search, prefix=""):
    chosen = getattr(search, "best_estimator_", None)
    if chosen is None:
        return []
    if isinstance(chosen, Pipeline):
        return _steps_estimators(chosen.steps, prefix=f"{prefix}selected/")
    return [(f"{prefix}selected ({type(chosen).__name__})", chosen)]


def _steps_parameters(steps, prefix=""):
    out = {}
    for name, step in steps:
        kind = classify_step(step)
        if kind == "passthrough":
            continue
        label = f"{prefix}{name} ({type(step).__name__})"
        if (children := _children(step)) is not None:
            out.update(_steps_parameters(children, prefix=f"{prefix}{name}/"))
        elif isinstance(step, (str, type(None))):  # a ColumnTransformer's "drop"
            continue
        elif isinstance(step, Pipeline):
            out.update(_steps_parameters(step.steps, prefix=f"{prefix}{name}/"))
        elif isinstance(step, _BaseDPSearchCV):
            out.update(_search_parameters(step, prefix=f"{prefix}{name}/"))
        else:
            out[label] = public_parameters(step)
    return out


def _search_parameters(search, prefix=""):
    params = search.get_params(deep=False)
    own = {k: params[k] for k in SEARCH_PARAMETERS if k in params}
    if hasattr(search, "budget_"):
        own["selection"] = search.budget_["selection_method"]  # "auto" resolved
    out = {f"{prefix}search ({type(search).__name__})": own}
    chosen = getattr(search, "best_estimator_", None)
    if chosen is None:
        chosen = search.estimator
    if isinstance(chosen, Pipeline):
        out.update(_steps_parameters(chosen.steps, prefix=f"{prefix}selected/"))
    else:
        out[f"{prefix}selected ({type(chosen).__name__})"] = public_parameters(chosen)
    return out


def _noise_paths(parameters):
    return sorted({p["noise"] for p in parameters.values() if "noise" in p})


def _guarantee(name, eps, dlt, unit, parameters, extra=""):
    noises = _noise_paths(parameters)
    noise = "; ".join(_NOISE_PATHS[n] for n in noises) if noises else "no noise path recorded"
    return (
        f"{name} is (epsilon={format_value(eps)}, delta={format_value(dlt)})-differentially private "
        f"(unit of privacy: {unit}) "
        f"with respect to {neighbouring_relation(unit)}, for every dataset, given the public parameters listed "
        f"(declared bounds, clip levels, domain): each was declared without looking at the data, is a public "
        f"function of n, d and the budget, or, where a scale was left to \"auto\", is a private estimate released "
        f"inside this budget (see the notes). {extra}"
        f"Noise: {noise}."
    )


def _default_delta(budget_delta, delta):
    if delta is not None:
        return delta
    return budget_delta if budget_delta > 0 else None


def _label(step, name=None):
    text = type(step).__name__ if name is None else f"{name}: {type(step).__name__}"
    solver = getattr(step, "solver_", None)
    return f"{text} ({solver})" if solver is not None else text


# -- estimators, pipelines, searches -------------------------------------------------------------
def _estimator_report(est, delta):
    check_is_fitted(est, "privacy_event_")
    unit = privacy_unit_of(est)
    read_at = _default_delta(est.delta, delta)
    rows, total = spend_rows([(_label(est), est.privacy_event_, unit)], read_at, est.epsilon)
    eps, dlt = read_total(total, read_at)
    parameters = {type(est).__name__: public_parameters(est)}
    return PrivacyReport(
        type(est).__name__,
        rows,
        (eps, dlt),
        (est.epsilon, est.delta),
        unit,
        _guarantee(f"The fitted {type(est).__name__}", eps, dlt, unit, parameters),
        public_parameters=parameters,
        notes=_estimate_notes([(type(est).__name__, est)]),
    )


def _dp_pipeline_report(pipe, delta):
    check_is_fitted(pipe, "privacy_event_")
    private = [(name, step) for name, step in pipe.steps if classify_step(step) == "private"]
    unit = pipe.privacy_unit
    read_at = _default_delta(pipe.delta, delta)
    rows, total = spend_rows(
        [(_label(step, name), step.privacy_event_, privacy_unit_of(step)) for name, step in private],
        read_at,
        pipe.epsilon,
    )
    eps, dlt = read_total(total, read_at)
    parameters = _steps_parameters(pipe.steps)
    for name, step in private:
        parameters[f"{name} ({type(step).__name__})"]["budget share"] = pipe.budget_shares_[name]
    notes = [
        f"step {name!r} ({type(step).__name__}) learns from the data without noise (allow_non_private_steps=True): "
        "the guarantee does not hold for this pipeline."
        for name, step in pipe.steps
        if classify_step(step) == "non_private"
    ]
    notes += _estimate_notes(_steps_estimators(pipe.steps))
    extra = (
        "Each private step was fitted with its budget share and charged the ledger in force; stateless steps map "
        "each row using that row only. "
    )
    return PrivacyReport(
        "DPPipeline",
        rows,
        (eps, dlt),
        (pipe.epsilon, pipe.delta),
        unit,
        _guarantee("The fitted DPPipeline", eps, dlt, unit, parameters, extra),
        public_parameters=parameters,
        notes=notes,
    )


def _pipeline_report(pipe, delta):
    # private steps inside ColumnTransformers, FeatureUnions and nested Pipelines read every row too: their
    # spends compose with the others' (sequential composition), and a non-private one inside is named
    leaves = _leaf_steps(pipe.steps)
    private = [(name, step) for name, step in leaves if classify_step(step) == "private"]
    if not private:
        raise TypeError("this Pipeline has no private step (a sklearn_dpsco estimator with a budget).")
    for _, step in private:
        check_is_fitted(step, "privacy_event_")
    units = {privacy_unit_of(step) for _, step in private} - {None}
    # the total holds for the weakest unit among the steps (user-level implies row-level)
    unit = "user" if units == {"user"} else "row"
    read_at = delta
    if read_at is None:
        budgets = [step.delta for _, step in private]
        read_at = math.fsum(budgets) if any(b > 0 for b in budgets) else None
    rows, total = spend_rows(
        [(_label(step, name), step.privacy_event_, privacy_unit_of(step)) for name, step in private], read_at
    )
    eps, dlt = read_total(total, read_at)
    parameters = _steps_parameters(pipe.steps)
    notes = []
    if len(units) > 1:
        notes.append("the private steps mix privacy units: the total holds for the weaker, row-level unit only.")
    notes += _estimate_notes(_steps_estimators(pipe.steps))
    leaky = [(name, step) for name, step in leaves if classify_step(step) == "non_private"]
    if leaky:
        named = ", ".join(f"{name!r} ({type(step).__name__})" for name, step in leaky)
        guarantee = (
            f"The fitted Pipeline is NOT differentially private: step {named} learns from the data without noise, "
            "so its fitted state, and everything fitted on its output, expose the data. The totals count only the "
            "private steps. Use DPPipeline, which refuses such steps."
        )
    else:
        extra = (
            "The steps were fitted with their own budgets, each charged to its own ledger; a plain Pipeline has no "
            "ceiling of its own. "
        )
        guarantee = _guarantee("The fitted Pipeline", eps, dlt, unit, parameters, extra)
    return PrivacyReport(
        "Pipeline",
        rows,
        (eps, dlt),
        None,
        unit,
        guarantee,
        public_parameters=parameters,
        notes=notes,
    )


def _search_parts(budget):
    fit_eps, fit_delta = budget["candidate_fit"]
    if budget["selection_method"] == "exponential":
        parts = [
            {"part": "candidate fits", "count": budget["candidate_fits"], "epsilon": fit_eps, "delta": fit_delta},
            {"part": "selection (exponential mechanism)", "count": 1, "epsilon": budget["selection"], "delta": 0.0},
        ]
    else:
        runs = f"random ({budget['run_distribution']}, mean {budget['expected_runs']:.3g})"
        parts = [
            {"part": "runs (fit + noisy holdout score)", "count": runs, "epsilon": fit_eps, "delta": fit_delta},
            {"part": "release of the best run", "count": 1, "epsilon": budget["selection"], "delta": 0.0},
        ]
    if budget["refit"] is not None:
        eps, delta = budget["refit"]
        parts.append({"part": "refit on all rows", "count": 1, "epsilon": eps, "delta": delta})
    return parts


def _search_report(search, delta):
    check_is_fitted(search, "privacy_event_")
    unit = privacy_unit_of(search)
    read_at = _default_delta(search.delta, delta)
    method = search.budget_["selection_method"]
    rows, total = spend_rows(
        [(f"{type(search).__name__} ({method} selection)", search.privacy_event_, unit)], read_at, search.epsilon
    )
    eps, dlt = read_total(total, read_at)
    parameters = _search_parameters(search)
    extra = (
        "The whole search was charged once, before its first fit; every candidate fit ran under an allowance of "
        "its share, and only the selected candidate is released (doc/privacy/model_selection.rst). "
    )
    return PrivacyReport(
        type(search).__name__,
        rows,
        (eps, dlt),
        (search.epsilon, search.delta),
        unit,
        _guarantee(f"The fitted {type(search).__name__}", eps, dlt, unit, parameters, extra),
        public_parameters=parameters,
        parts=_search_parts(search.budget_),
        notes=[
            "the breakdown is how the one spend was split: candidate fits on disjoint folds compose per row, so the "
            "spend is not the sum of its parts."
        ] + _estimate_notes(_search_estimators(search)),
    )
