"""DPPipeline: one privacy budget for a whole pipeline, split across its private steps.

Privacy argument: doc/privacy/preprocessing.rst ("Private pipelines").
"""

import contextlib
import contextvars
import inspect
import math
import numbers
import warnings

import numpy as np
import scipy.sparse as sp
from sklearn.base import clone
from sklearn.pipeline import Pipeline
from sklearn.utils import check_array
from sklearn.utils._available_if import available_if

from .._compat import _name_estimators, _routing_enabled, process_routing
from .._param_checks import SKLEARN_GROUPS_HINT, check_delta, check_epsilon
from .._refusals import RELEASED_UPSTREAM as _RELEASED_UPSTREAM, nothing_spent, say_nothing_spent
from ..accounting import BudgetAccountant, BudgetExceededError, ComposedEvent, FitAllowance, epsilon_delta
from ..accounting._allowance import usage_fits
from ..accounting._nested import EVERY_LEDGER, mark_accounted
from ..accounting._resolve import AccountantMixin, named_accountants
from ..accounting._shares import Share, curve_kind, pipeline_steps, split_by_weights
from ..accounting._units import PrivacyUnitError, privacy_unit_of
from .._solvers import is_dask_collection
from ..linear_model._cluster_inputs import cluster_rows
from ._lazy import LazyRowMapMixin
from ._steps import classify_step, probe_row_wise

__all__ = ["DPPipeline", "HANDED_OVER", "IDLE_WEIGHT", "PREPROCESSING_SHARE", "default_weights", "make_dp_pipeline"]

_PROBE_ROWS = 7

#: ``weights=None``: the private steps before the last one (a ``DPStandardScaler``...) share this
#: fraction of the budget and the last private step (the model) gets the rest. Chosen on the real
#: sets of benchmarks/bench_defaults.py (raw columns, ``DPStandardScaler()`` with its default
#: ``bounds="auto"`` before each estimator's defaults, 3 seeds): on HI (15.6k rows, d = 21) the
#: classifier gains from a scaler share of 0.2 to 0.4 at epsilon <= 1, on Computers (4.4k rows,
#: d = 9) the regressor loses from 0.2 / 0.25 to 0.4; 0.3 sits between (benchmarks/results/defaults.md).
PREPROCESSING_SHARE = 0.3
#: ``weights=None``: the weight of a private step that would release nothing at its share
#: (``DPStandardScaler(bounds="auto")`` on too few rows, ``would_estimate_bounds``): it spends
#: nothing, so almost all of the budget goes to the model.
IDLE_WEIGHT = 1e-3
#: ``weights=None``: the weight of a ``DPStandardScaler(bounds="auto")`` (row level) before a final model that
#: maps its columns itself (``column_scaling="auto"`` and no declared scale: :func:`_hands_over`). The scaler
#: hands its work to the model: it releases nothing, spends nothing and passes the columns through, and the
#: model is fitted with the whole budget and its own column rules, exactly as it would be alone. Measured on
#: raw real sets, 10 seeds paired (benchmarks/results/starpipe.md): the scaler's 0.3 share and its quartile
#: map lost to the model's own map up to 0.30 R^2 (Star eps 1) and 0.06 accuracy (HI eps 0.5), and a few
#: hundredths even where its quartiles are well budgeted (Vocab eps 0.5 -0.012); where it won (BudgetFood,
#: Computers eps 2) by at most +0.02.
HANDED_OVER = 0.0
#: The share of a step that handed its work over: nothing to spend (its allowance is the empty event).
_HANDED_OVER_SHARE = Share(0.0, 0.0, ComposedEvent(()))
#: Set while a pipeline's final step is checked on a stand-in of its input (zeros: ``_check_final``), to
#: ``(Z, released_by, standardized)``: the outer pipeline's synthetic rows for that step and the private step
#: before it that releases (None without one). A nested pipeline then skips its check of real rows
#: (:meth:`DPPipeline._check_rows_before_release`) and starts its dry run from these rows.
_STAND_IN = contextvars.ContextVar("dpsco_pipeline_stand_in", default=None)


def _all_finite(Z):
    """True when every stored value of ``Z`` (dense or sparse) is finite."""
    values = Z.data if sp.issparse(Z) else np.asarray(Z)
    try:
        return bool(np.isfinite(values).all())
    except TypeError:  # not numeric: the next step's own validation says so
        return True


def _standardized(Z, scaler):
    """What a ``DPStandardScaler`` that releases maps the synthetic rows ``Z`` to: ``Z`` centred and scaled
    exactly (public: synthetic rows), values of both signs around 0 as its real output has. A probe fitted on
    seven synthetic rows would release nothing with ``bounds="auto"`` (too few rows) or noise far larger than
    the real fit's."""
    Z = np.asarray(Z.toarray() if sp.issparse(Z) else Z, dtype=float)
    if scaler.with_mean:
        Z = Z - Z.mean(axis=0)
    if scaler.with_std:
        scale = Z.std(axis=0) if scaler.with_mean else np.sqrt((Z**2).mean(axis=0))
        Z = Z / np.where(scale > 0, scale, 1.0)
    return Z


def _not_finite_after(name, step, released_by, standardized):
    what = ("standardized as the private step {!r} before it outputs them (centred and scaled: values of both "
            "signs around 0)" if standardized else "as the private step {!r} before it maps them").format(released_by)
    return ValueError(
        f"Pipeline step {name!r} ({type(step).__name__}) returns NaN or infinite values on synthetic rows {what}, "
        "so the fit would fail on the next step's input after that private step has spent its share. Apply the "
        "function before the private step (e.g. np.log1p on the raw columns, then the scaler), or make it finite "
        "on every real number. Nothing was spent."
    )


def _refusal(name, step):
    return ValueError(
        f"Pipeline step {name!r} ({type(step).__name__}) learns from the data it is fitted on and is not "
        "differentially private: its fitted state, and every later step trained on its output, would expose "
        "the private data without noise. Use a private transformer (e.g. "
        "sklearn_dpsco.preprocessing.DPStandardScaler with public bounds), a data-independent one "
        "(FunctionTransformer, Normalizer, Binarizer, PolynomialFeatures, RowNormClipper), or pass "
        "allow_non_private_steps=True if this data is not private. Nothing was spent."
    )


def _mixed_units(units):
    described = ", ".join(f"{name!r}: {unit}" for name, unit in units.items())
    return PrivacyUnitError(
        f"DPPipeline mixes privacy units ({described}): the pipeline's guarantee can only be as strong as its "
        "weakest step, so a row-level step would silently void a user-level model's guarantee (one user with many "
        "rows moves a row-level statistic far beyond its noise). Make every private step user-level (e.g. "
        "DPStandardScaler(privacy_unit='user', max_items_per_user=m) before UserLevelDPLogistic, and pass "
        "groups= to fit), or every step row-level. Nothing was spent."
    )


def _releases(step, n, d, epsilon):
    """Whether a private step fitted on ``n`` rows of ``d`` features at ``epsilon`` releases anything (public
    facts: its ``would_estimate_bounds``; a step without it always does)."""
    probe = getattr(step, "would_estimate_bounds", None)
    return probe is None or probe(n, d, epsilon)


def _releases_on_rows(name, step, kind, shares, n_rows, widths):
    """True when pipeline step ``name`` is a private step that releases on the rows: it did not hand its work
    over (:data:`HANDED_OVER`) and :func:`_releases` at its share. Public: the configuration, the number of
    rows ``n_rows`` and each step's input width (``widths``, from the dry run)."""
    return (kind == "private" and shares[name] != _HANDED_OVER_SHARE
            and _releases(step, n_rows, widths[name], shares[name].epsilon))


def _hands_over(step, final):
    """True when ``step`` is a ``DPStandardScaler(bounds="auto")`` (row level) and ``final`` a linear model that maps
    its columns itself: ``column_scaling="auto"`` and no declared scale (``clip``, ``row_bound``, ``data_norm``...;
    with one declared, "auto" leaves the model's columns alone and the scaler keeps working). Public: the
    configuration only."""
    from ..linear_model._auto_scales import is_auto
    from ..linear_model._base import DPLinearModelMixin
    from ._scaler import DPStandardScaler

    if not (isinstance(step, DPStandardScaler) and is_auto(step.bounds) and step.privacy_unit == "row"):
        return False
    if not isinstance(final, DPLinearModelMixin):
        return False
    setting = final.get_params(deep=False).get("column_scaling")
    return isinstance(setting, str) and setting == "auto" and not final._declares_scales()


@contextlib.contextmanager
def _handing_over(step, accountant, model):
    """Fit ``step`` (a scaler that hands its work to ``model``) as the identity: nothing released, nothing spent;
    its empty event is recorded through ``accountant``. Its parameters are restored afterwards."""
    old = step.get_params(deep=False)["accountant"]
    step.set_params(accountant=accountant)
    step._handed_over_to = type(model).__name__
    try:
        yield step
    finally:
        step.__dict__.pop("_handed_over_to", None)
        step.set_params(accountant=old)


def _column_settings(step, earlier, n_rows, widths, shares):
    """``{"column_scaling": False, "centering": False}`` (those the model has at ``"auto"``) after a DPStandardScaler
    that releases.

    The scaler already released the columns' location and spread; the model's own
    column quartiles or private centre would spend a second time on the same
    information (linear_model/_column_scaling.py, linear_model/_centering.py).
    A scaler that releases nothing at its share (``would_estimate_bounds`` False:
    ``bounds="auto"`` on too few rows; it leaves the columns as they are) does not
    count: the model keeps its own rules on the raw columns (benchmarks/results/fresh.md,
    proposal A: flchain hinge at epsilon 0.5 0.699 single-class -> 0.774, Computers
    epsilon 0.5 R^2 0.08 -> 0.31); neither does one that handed its work to the model
    (:data:`HANDED_OVER`). Public: the pipeline's configuration, the number of
    rows, each step's input width (``widths``, from the dry run) and its share.
    """
    from ._scaler import DPStandardScaler

    if not any(isinstance(s, DPStandardScaler) and _releases_on_rows(name, s, kind, shares, n_rows, widths)
               for name, s, kind in earlier):
        return {}
    params = step.get_params(deep=False)
    return {name: False for name in ("column_scaling", "centering")
            if isinstance(params.get(name), str) and params[name] == "auto"}


def _check_cluster_steps(classified, unit):
    """Refuse, before anything is spent, a pipeline that would bring dask rows to the client.

    Every step before the last must map dask chunks lazily on the workers (:class:`LazyRowMapMixin`:
    DPStandardScaler, RowNormClipper) or be passthrough; scikit-learn's transformers would compute the
    rows on the client. User-level steps cannot fit row-chunked rows (each user's rows go together).
    """
    if unit == "user":
        raise TypeError(
            "a user-level DPPipeline cannot fit rows held by a Dask cluster: each user's rows must be gathered "
            "and selected together, which a row-chunked dask collection does not provide. Compute the "
            "collection (X.compute()) or group the rows by user first. Nothing was spent.")
    for name, step, kind in classified[:-1]:
        if kind != "passthrough" and not isinstance(step, LazyRowMapMixin):
            raise TypeError(
                f"Pipeline step {name!r} ({type(step).__name__}) cannot transform rows held by a Dask cluster "
                "without computing them on the client. With dask X, the steps before the model must be "
                "DPStandardScaler, RowNormClipper or 'passthrough' (their transform maps each chunk on its "
                "worker); apply other maps to the dask collection first (X.map_blocks(...)). Nothing was spent.")


def _takes_groups(step):
    try:
        return "groups" in inspect.signature(step.fit).parameters
    except (TypeError, ValueError):
        return False


def _warn_overridden_budgets(classified):
    """Warn when a private step's own ``epsilon`` / ``delta`` differ from its class default: the pipeline
    replaces them by the step's share of the pipeline's budget, so a value set on the step is not what it spends."""
    for name, step, kind in classified:
        if kind != "private":
            continue
        params = step.get_params(deep=False)
        defaults = inspect.signature(type(step).__init__).parameters
        changed = [f"{key}={params[key]!r}" for key in ("epsilon", "delta")
                   if key in params and key in defaults and params[key] != defaults[key].default]
        if changed:
            warnings.warn(
                f"DPPipeline: step {name!r} has {', '.join(changed)} set, which the pipeline replaces by the step's "
                "share of the pipeline's own epsilon and delta (the pipeline's epsilon is the total of one fit). "
                "Set epsilon / delta on the pipeline and the split with weights={step name: weight}.",
                UserWarning, stacklevel=4,
            )


@contextlib.contextmanager
def _budgeted(step, share, accountant, **settings):
    """Fit ``step`` with ``share`` under an allowance (and ``settings``); restore its parameters afterwards."""
    keys = ("epsilon", "delta", "accountant", *settings)
    old = {k: v for k, v in step.get_params(deep=False).items() if k in keys}
    step.set_params(epsilon=share.epsilon, delta=share.delta, accountant=accountant, **settings)
    try:
        yield step
    finally:
        step.set_params(**old)


def _accepts(method, param):
    """True when ``method`` takes a keyword ``param`` (or ``**kwargs``)."""
    try:
        parameters = inspect.signature(method).parameters
    except (TypeError, ValueError):
        return True
    return param in parameters or any(p.kind is p.VAR_KEYWORD for p in parameters.values())


def _estimators_within(estimator):
    """``estimator`` and every estimator reachable through its parameters (a nested pipeline's steps...).

    Ledgers are never included: what a step spent before a later step failed stays spent.
    """
    out, stack, seen = [], [estimator], set()
    while stack:
        est = stack.pop()
        if id(est) in seen or isinstance(est, BudgetAccountant) or not hasattr(est, "get_params"):
            continue
        seen.add(id(est))
        out.append(est)
        try:
            params = est.get_params(deep=False)
        except Exception:  # an object that only looks like an estimator: its own __dict__ is still restored
            continue
        for value in params.values():
            items = value if isinstance(value, (list, tuple)) else [value]
            for item in items:
                candidate = item[-1] if isinstance(item, tuple) and item else item
                if not isinstance(candidate, type) and hasattr(candidate, "get_params"):
                    stack.append(candidate)
    return out


def _snapshot(estimator):
    """A restorer of ``estimator`` and its nested estimators to their state now (a failed refit is undone)."""
    saved = [(est, dict(est.__dict__)) for est in _estimators_within(estimator)]

    def restore():
        for est, state in saved:
            est.__dict__.clear()
            est.__dict__.update(state)

    return restore


def _can_fit_transform(pipeline):
    """As scikit-learn's Pipeline: ``fit_transform`` exists when the final step transforms (or is passthrough)."""
    final = pipeline._final_estimator
    return final == "passthrough" or hasattr(final, "transform") or hasattr(final, "fit_transform")


def _final_has(attr):
    def check(pipeline):
        getattr(pipeline._final_estimator, attr)  # the original AttributeError if it is missing
        return True

    return check


class DPPipeline(AccountantMixin, Pipeline):
    """A pipeline with one privacy budget, split across its private steps.

    Every step that touches the data must be *private* (a sklearn_dpsco
    estimator or transformer with a budget) or *stateless* (learns nothing
    from the data and maps each row using that row only). The pipeline's
    ``(epsilon, delta)`` is split across the private steps by ``weights``;
    each step is fitted with its share, under an allowance that refuses any
    step consuming more, and charges the ledger in force. Data-dependent
    non-private transformers (a plain ``StandardScaler``, ``PCA``...) are
    refused with an error naming the step, unless
    ``allow_non_private_steps=True``.

    Parameters
    ----------
    steps : list of (str, estimator) tuples
        As in :class:`sklearn.pipeline.Pipeline`; the last step is the
        (private) final estimator.
    epsilon : float, default=1.0
        Total epsilon of one fit of the whole pipeline.
    delta : float, default=0.0
        Total delta. 0: every private step runs pure DP. > 0: steps that may
        release a pure part (the library's models, ``DPStandardScaler(bounds=
        "auto")``) get ``(epsilon_i, delta_i)`` shares (basic composition;
        each plans as on its own ledger), other steps Gaussian-DP or zCDP
        shares (``split_kinds``; doc/privacy/composition.rst).
    weights : dict of str -> float, default=None
        Relative share of each private step (by name). None: the private
        steps before the last one share ``PREPROCESSING_SHARE = 0.3`` of
        the budget equally and the last private step (the model) gets 0.7
        (a rule chosen on the real sets of benchmarks/bench_defaults.py);
        a single private step gets everything. A ``DPStandardScaler(bounds=
        "auto")`` (row level) before a final model that maps its columns
        itself (``column_scaling="auto"``, no declared ``clip`` /
        ``row_bound`` / ``data_norm``) hands its work to the model
        (``HANDED_OVER``): it releases nothing, spends nothing, passes the
        columns through (``fit_info_["handed_over"]``) and the model gets the
        whole budget and keeps its own column rules, as if alone (on raw real
        sets the model's own map beat the scaler's share and quartiles by up
        to 0.30 R^2; benchmarks/results/starpipe.md). Otherwise, a
        ``DPStandardScaler(bounds="auto")`` that would release nothing at its
        share (too few rows for its quartiles) gets ``IDLE_WEIGHT = 1e-3``
        and the model the rest.
        A final model with ``column_scaling="auto"`` (``centering="auto"``)
        after a ``DPStandardScaler`` that releases is fitted with
        ``column_scaling=False`` (``centering=False``; restored afterwards):
        its input is already scaled and centred per column, and its own
        column quartiles or private centre would spend twice
        (doc/privacy/column_scaling.rst). After an idle scaler the model
        keeps its own rules: its columns arrive as they are.
    accountant : BudgetAccountant, default=None
        The ledger charged by the steps. None: the budget block in force,
        else the session default.
    allow_non_private_steps : bool, default=False
        Accept data-dependent non-private steps. Only for data that is not
        private: the guarantee then no longer holds.
    verbose : bool, default=False
        Unused; kept for API symmetry with Pipeline.

    Attributes
    ----------
    budget_shares_ : dict of str -> (float, float)
        ``(epsilon, delta)`` each private step was fitted with.
    privacy_event_ : PrivacyEvent
        Composition of the private steps' events.
    epsilon_spent_, delta_spent_ : float

    See Also
    --------
    make_dp_pipeline, DPStandardScaler, RowNormClipper

    Notes
    -----
    A private step's own ``epsilon`` / ``delta`` / ``accountant`` parameters
    are set from the pipeline for the duration of its fit and restored
    afterwards (``get_params`` is unchanged by ``fit``); a UserWarning says so
    when a step's ``epsilon`` or ``delta`` differs from its class default (the
    value set there is not what it spends). Its fitted
    attributes (``epsilon_spent_``...) record what it consumed. Shares: pure
    ``epsilon * w_i / sum(w)``; Gaussian ``mu_i = mu sqrt(w_i / sum(w))`` with
    ``mu = gaussian_mu(epsilon, delta)``, so the composition is exactly
    ``(epsilon, delta)`` (doc/privacy/preprocessing.rst). Before any step
    sees the data, the pipeline checks the whole budget against the ledger,
    dry-runs its transformers on synthetic rows (shapes, parameters, and a
    row-independence probe of every ``FunctionTransformer``) and runs the
    final step's own checks of ``y`` and its fit parameters (labels,
    classes, sample weights) on a clone — a private search there also runs
    its candidates' checks and checks its event against its share — and
    checks that the stateless steps return finite values (on the real rows
    up to the first private step that releases; on synthetic standardized
    rows after it, so a ``np.log`` after a centring scaler is refused):
    nothing is spent on an error these can find, and each such refusal says
    "Nothing was spent.". A fit that fails anyway leaves the pipeline and
    every step as they were before the call (what an earlier step spent
    stays spent).

    As in scikit-learn's Pipeline, ``fit_transform`` / ``fit_predict`` exist
    only when the final step has ``transform`` / ``fit_predict``; with
    metadata routing enabled, metadata is routed to the steps that request
    it (``set_fit_request``). A slice ``pipe[i:j]`` is a DPPipeline of the
    same (fitted) steps, the same ``epsilon``, ``delta`` and ``accountant``,
    and ``weights`` restricted to its private steps; fitting it spends its
    own ``(epsilon, delta)``.

    Privacy unit (``privacy_unit``, read-only): the common unit of the
    private steps; stateless steps are unit-neutral. Steps of different
    units are refused before anything is spent (a row-level scaler before a
    user-level model would void the user-level guarantee). A user-level
    pipeline needs ``fit(X, y, groups=groups)`` and routes ``groups`` to
    every private step; a row-level one refuses ``groups``.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_dpsco.accounting import BudgetAccountant
    >>> from sklearn_dpsco.preprocessing import DPPipeline, DPStandardScaler, RowNormClipper
    >>> from sklearn_dpsco.testing._estimators import TinyDPClassifier
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(0, 10, size=(500, 3)); y = (X[:, 0] > 5).astype(int)
    >>> acc = BudgetAccountant(epsilon=2.0)
    >>> pipe = DPPipeline([("scale", DPStandardScaler(bounds=(0, 10))),
    ...                    ("clip", RowNormClipper(1.0)),
    ...                    ("clf", TinyDPClassifier())],
    ...                   epsilon=1.0, weights={"scale": 1, "clf": 3}, accountant=acc,
    ... ).fit(X, y)
    >>> pipe.budget_shares_
    {'scale': (0.25, 0.0), 'clf': (0.75, 0.0)}
    >>> eps, delta = acc.total(); round(eps, 9), delta
    (1.0, 0.0)
    """

    # Pipeline's methods read these; a private pipeline has no cache (a cached
    # step would skip its spend) and no transform_input.
    memory = None
    transform_input = None

    _parameter_constraints = {
        **getattr(Pipeline, "_parameter_constraints", {}),
        "epsilon": [numbers.Real],
        "delta": [numbers.Real],
        "weights": [dict, None],
        "accountant": [BudgetAccountant, None],
        "allow_non_private_steps": ["boolean"],
    }
    _parameter_constraints.pop("memory", None)
    _parameter_constraints.pop("transform_input", None)

    def __init__(
        self,
        steps,
        *,
        epsilon=1.0,
        delta=0.0,
        weights=None,
        accountant=None,
        allow_non_private_steps=False,
        verbose=False,
    ):
        self.steps = steps
        self.epsilon = epsilon
        self.delta = delta
        self.weights = weights
        self.accountant = accountant
        self.allow_non_private_steps = allow_non_private_steps
        self.verbose = verbose

    @property
    def privacy_unit(self):
        """The common unit of the private steps (None without one); raises if they mix units."""
        private = [(name, step) for name, step in self.steps if classify_step(step) == "private"]
        return self._common_unit(private)

    @staticmethod
    def _common_unit(private):
        units = {name: privacy_unit_of(step) for name, step in private}
        distinct = set(units.values()) - {None}
        if len(distinct) > 1:
            raise _mixed_units(units)
        return distinct.pop() if distinct else None

    def _route_groups(self, classified, fit_params, groups, n_rows):
        """Check ``groups`` against the pipeline's unit; give it to every private step (user level)."""
        unit = self._common_unit([(name, step) for name, step, kind in classified if kind == "private"])
        # ``<step>__groups`` (the older spelling) stands for the pipeline's groups: one vector for every step
        given = [(name, fit_params[name].pop("groups")) for name, _, _ in classified if "groups" in fit_params[name]]
        if given:
            if groups is not None or any(not np.array_equal(np.asarray(g), np.asarray(given[0][1])) for _, g in given):
                raise ValueError(
                    "pass groups once, to the pipeline's fit (fit(X, y, groups=...)): it is routed to every "
                    f"user-level step, and {', '.join(f'{n}__groups' for n, _ in given)} would give steps different "
                    "users. Nothing was spent."
                )
            groups = given[0][1]
        if unit != "user":
            if groups is not None:
                raise PrivacyUnitError(
                    "groups was given to a row-level DPPipeline: its guarantee protects one row, not one user. "
                    "Use user-level steps (DPStandardScaler(privacy_unit='user', max_items_per_user=m), "
                    "UserLevelDPLogistic) for a user-level guarantee, or drop groups. Nothing was spent."
                )
            return unit
        if groups is None:
            raise ValueError(
                "this DPPipeline is user-level (its private steps protect one user): fit(X, y, groups=groups) "
                "needs one user identifier per row. Nothing was spent. " + SKLEARN_GROUPS_HINT
            )
        if np.shape(groups) != (n_rows,):
            raise ValueError(f"groups must have shape ({n_rows},), got {np.shape(groups)}. Nothing was spent.")
        for name, step, kind in classified:
            if kind == "private":
                if not _takes_groups(step):
                    raise ValueError(
                        f"user-level step {name!r} ({type(step).__name__}) has no groups parameter in fit. "
                        "Nothing was spent."
                    )
                fit_params[name]["groups"] = groups
        return unit

    # -- validation (public facts only, before anything is spent) -----------------------------
    def _classified_steps(self):
        self._validate_steps()
        out = []
        for name, step in self.steps:
            kind = classify_step(step)
            if kind == "non_private" and not self.allow_non_private_steps:
                raise _refusal(name, step)
            out.append((name, step, kind))
        if not any(kind == "private" for _, _, kind in out):
            raise ValueError(
                "DPPipeline has no private step (a sklearn_dpsco estimator with a budget); use "
                "sklearn.pipeline.Pipeline for data that is not private. Nothing was spent."
            )
        return out

    def _shares(self, private_names, shape, accountant):
        weights = self.weights
        handed = []
        if weights is None:
            weights = default_weights(private_names, dict(self.steps), shape, self.epsilon)
            # HANDED_OVER comes from the defaults only (a declared weight must be > 0)
            handed = [name for name in private_names if weights[name] == HANDED_OVER]
        unknown = set(weights) - set(private_names)
        missing = set(private_names) - set(weights)
        if unknown or missing:
            raise ValueError(
                f"weights must name exactly the private steps {private_names}; unknown: {sorted(unknown)}, "
                f"missing: {sorted(missing)}. Nothing was spent."
            )
        for name, w in weights.items():
            if name in handed:
                continue
            if isinstance(w, bool) or not isinstance(w, numbers.Real) or not (w > 0) or not np.isfinite(w):
                raise ValueError(f"weight of step {name!r} must be a finite number > 0, got {w!r}. Nothing was spent.")
        steps = dict(self.steps)
        # a step that handed its work over takes no part in the split: the others share the whole budget
        working = [n for n in private_names if n not in handed]
        step_weights = [weights[n] for n in working]
        kinds = split_kinds([steps[n] for n in working], self.delta)
        shares = split_by_weights(self.epsilon, self.delta, step_weights, kinds)
        if "basic" in kinds and not _holds_basic(accountant, shares):
            # under a meta-estimator's zCDP allowance (a search over this pipeline) approximate-DP shares
            # would not compose: the steps share its rho, as before
            shares = split_by_weights(self.epsilon, self.delta, step_weights, [curve_kind(steps[n]) for n in working])
        shares = dict(zip(working, shares))
        return {n: shares.get(n, _HANDED_OVER_SHARE) for n in private_names}

    @staticmethod
    def _split_fit_params(params, names):
        out = {name: {} for name in names}
        for key, value in params.items():
            step, sep, param = key.partition("__")
            if not sep or step not in out:
                raise ValueError(
                    f"fit parameter {key!r} must be of the form '<step>__<param>' with a step of this pipeline "
                    "(or, with sklearn.set_config(enable_metadata_routing=True), metadata requested by a step "
                    "through set_fit_request). Nothing was spent."
                )
            out[step][param] = value
        return out

    def _step_params(self, params, classified, method):
        """``({step: fit kwargs}, {step: transform kwargs})`` of one call of ``method``; nothing spent.

        ``<step>__<param>`` always; with metadata routing enabled, any other key is
        metadata routed to the steps that request it (``process_routing``, as
        scikit-learn's Pipeline does).
        """
        names = [name for name, _, _ in classified]
        explicit = {k: v for k, v in params.items() if k.partition("__")[0] in names and "__" in k}
        metadata = {k: v for k, v in params.items() if k not in explicit}
        if metadata and not _routing_enabled():
            self._split_fit_params(metadata, names)  # raises with the expected form
        fit_params = self._split_fit_params(explicit, names)
        transform_params = {name: {} for name in names}
        if metadata:
            routed = process_routing(self, method, **metadata)
            last = len(classified) - 1
            for i, (name, step, kind) in enumerate(classified):
                if kind == "passthrough" or name not in routed:
                    continue
                got = routed[name]
                if i < last or method == "fit_transform":
                    if hasattr(step, "fit_transform"):
                        fit_kw, transform_kw = got.get("fit_transform", {}), {}
                    else:
                        fit_kw, transform_kw = got.get("fit", {}), got.get("transform", {})
                else:
                    fit_kw, transform_kw = got.get(method, {}), {}
                clash = set(fit_kw) & set(fit_params[name])
                if clash:
                    raise ValueError(
                        f"{sorted(clash)} given twice to step {name!r}: as routed metadata and as "
                        f"'{name}__<param>'. Nothing was spent."
                    )
                fit_params[name].update(fit_kw)
                transform_params[name].update(transform_kw)
        for name, step, kind in classified:
            if not fit_params[name]:
                continue
            if kind == "passthrough":
                raise ValueError(
                    f"fit parameters {sorted(fit_params[name])} given to passthrough step {name!r}. Nothing was spent."
                )
            if name == names[-1] and method != "fit_transform":
                method_name = method  # fit, or fit_predict (checked to exist)
            else:
                method_name = "fit_transform" if hasattr(step, "fit_transform") else "fit"
            for param in fit_params[name]:
                if not _accepts(getattr(step, method_name), param):
                    raise TypeError(
                        f"{type(step).__name__}.{method_name} has no parameter {param!r} (step {name!r}). "
                        "Nothing was spent."
                    )
        return fit_params, transform_params

    def _dry_run(self, classified, shares, n_rows, n_features, unit, sparse):
        """Fit clones of the transformers on synthetic rows: shapes, parameters, row-independence.

        A stateless step after a private step that releases (``_releases`` at the real ``n_rows``) must
        return finite values there: the real fit would otherwise fail after that step has spent. A releasing
        ``DPStandardScaler``'s synthetic output is the synthetic rows standardized exactly (:func:`_standardized`).

        Returns the synthetic input of the final step (its width and format), each private step's
        input width (``{name: d}``) and ``(released_by, standardized)``: the latest private step before the
        final one that releases (None) and whether that input is standardized.
        """
        from ._scaler import DPStandardScaler

        released_by = None  # the latest private step before this one that spends on the real rows
        standardized = False
        Z = np.random.default_rng(0).uniform(0.5, 2.0, size=(_PROBE_ROWS, n_features))
        if sparse:
            Z = sp.csr_matrix(Z)
        outer = _STAND_IN.get()
        if outer is not None and outer[0].shape == Z.shape and sp.issparse(outer[0]) == sparse:
            # the final step of an outer pipeline: its synthetic input, after the outer private step that releases
            Z, released_by, standardized = outer[0].copy(), outer[1], outer[2]
        # user level: every synthetic row its own user
        probe_params = {"groups": np.arange(_PROBE_ROWS)} if unit == "user" else {}
        widths = {}
        for name, step, kind in classified[:-1]:
            if kind == "passthrough":
                continue
            widths[name] = Z.shape[1]
            if kind == "stateless" and type(step).__name__ == "FunctionTransformer":
                reason = probe_row_wise(step, Z.shape[1])
                if reason is not None and not self.allow_non_private_steps:
                    raise ValueError(
                        f"Pipeline step {name!r} (FunctionTransformer) is accepted only if its function maps "
                        f"each row using that row only, but {reason}. Rewrite it row-wise or pass "
                        "allow_non_private_steps=True if this data is not private. Nothing was spent."
                    )
            probe = clone(step)
            ctx = contextlib.nullcontext(probe)
            if kind == "private":
                # synthetic rows: nothing private to charge; a ledger without ceiling records the probe
                share = shares[name]
                # (no enclosing budget block is charged for it either)
                ledger = mark_accounted(BudgetAccountant(math.inf, 1.0), EVERY_LEDGER)
                if share == _HANDED_OVER_SHARE:
                    ctx = _handing_over(probe, ledger, classified[-1][1])
                else:
                    probe.set_params(epsilon=share.epsilon, delta=share.delta, accountant=ledger)
            try:
                # what a step warns about the synthetic rows ("7 rows are too few ...") is not about the
                # user's data, and the real fit warns again if it applies there
                with warnings.catch_warnings(), ctx:
                    warnings.simplefilter("ignore")
                    out = probe.fit_transform(Z, **(probe_params if kind == "private" else {}))
                Z_in, Z = Z, (out.tocsr() if sp.issparse(out) else np.asarray(out, dtype=float))
                if Z.ndim != 2 or Z.shape[0] != _PROBE_ROWS:
                    raise ValueError(f"it returned shape {Z.shape} for {_PROBE_ROWS} rows")
            except Exception as exc:
                reason = str(exc).strip()
                reason = reason.removesuffix("Nothing was spent.").strip().rstrip(".")  # said once, below
                raise ValueError(
                    f"Pipeline step {name!r} ({type(step).__name__}) failed on synthetic rows of the input "
                    f"shape before any private data was used: {type(exc).__name__}: {reason}. Nothing was spent."
                ) from exc
            if _releases_on_rows(name, step, kind, shares, n_rows, widths):
                released_by, standardized = name, isinstance(step, DPStandardScaler)
                if standardized:
                    Z = _standardized(Z_in, step)
            elif kind == "stateless" and released_by is not None and not _all_finite(Z):
                raise _not_finite_after(name, step, released_by, standardized)
        return Z, widths, (released_by, standardized)

    def _check_rows_before_release(self, classified, shares, widths, X, n_rows, y, fit_params):
        """The stateless steps before the first private step that releases, run on the real rows: their output
        must be finite. Exact and before anything is spent or recorded.

        Up to that step the real fit is deterministic (stateless maps, and private steps that release nothing:
        handed over or idle, the identity), so a clone of each runs here on ``X`` as the fit will; a private
        step's clone records its empty event in a throwaway ledger. Without such a step nothing runs.
        ``n_rows``: the number of rows of ``X`` (checked by the caller; ``X`` may be a list).
        """
        prefix = []
        for name, step, kind in classified[:-1]:
            if _releases_on_rows(name, step, kind, shares, n_rows, widths):
                break
            if kind != "passthrough":
                prefix.append((name, step, kind))
        if not any(kind == "stateless" for _, _, kind in prefix):
            return
        Xt = X
        for name, step, kind in prefix:
            probe, ctx = clone(step), contextlib.nullcontext()
            if kind == "private":
                ledger = mark_accounted(BudgetAccountant(math.inf, 1.0), EVERY_LEDGER)
                if shares[name] == _HANDED_OVER_SHARE:
                    ctx = _handing_over(probe, ledger, classified[-1][1])
                else:
                    probe.set_params(epsilon=shares[name].epsilon, delta=shares[name].delta, accountant=ledger)
            with warnings.catch_warnings(), np.errstate(all="ignore"), ctx:
                warnings.simplefilter("ignore")  # the real fit warns again where it applies
                Xt = probe.fit_transform(Xt, y, **fit_params[name])
            if kind == "stateless" and not _all_finite(Xt):
                raise ValueError(
                    f"Pipeline step {name!r} ({type(step).__name__}) returns NaN or infinite values on the input "
                    "rows (np.log of a zero, an overflow...), so no later step could fit them. Map the values into "
                    f"its domain first (e.g. np.log1p instead of np.log). {nothing_spent('pipeline')}"
                )

    def _check_final(self, step, share, guard, settings, Z, n_rows, y, params, row_chunks=None,
                     released=(None, False)):
        """The final private step's own pre-spend checks on a clone, with the real ``y`` and fit parameters.

        A linear model runs its validation, plan and budget checks (``check_fit``: labels, classes,
        sample weights, groups, solver requirements); a nested DPPipeline all of its own checks. The rows
        are a stand-in of the final step's input shape and format (zeros): only ``y``, the parameters and
        public facts (n, d, format) can fail here. ``row_chunks``: the rows are on a Dask cluster in chunks
        of these sizes, and so is the stand-in (lazy zeros: the model's cluster checks of ``y`` run on the
        workers).
        """
        from ..linear_model._base import DPLinearModelMixin, check_fit

        # a private search declares that check_fit stops it before it charges (model_selection imports this
        # module, so it is recognised by that flag, not by its class)
        if not (isinstance(step, (DPLinearModelMixin, DPPipeline)) or getattr(step, "_STOPS_AT_CHECK_FIT", False)):
            return
        d = Z.shape[1]
        if row_chunks is not None:
            import dask.array as da  # optional dependency: rows held by a Dask cluster imply dask

            stand_in = da.zeros((n_rows, d), chunks=(row_chunks, d))
        else:
            stand_in = sp.csr_matrix((n_rows, d)) if sp.issparse(Z) else np.zeros((n_rows, d))  # zero pages: no copy
        probe = clone(step)
        probe.set_params(epsilon=share.epsilon, delta=share.delta, accountant=guard, **settings)
        token = _STAND_IN.set((Z, *released))
        try:
            check_fit(probe, stand_in, y, **params)
        except BudgetExceededError as exc:  # the share, not the ledger: say which step and which share
            raise BudgetExceededError(
                f"Pipeline step {self.steps[-1][0]!r} ({type(step).__name__}) would refuse its fit under its share "
                f"(epsilon={share.epsilon:.4g}, delta={share.delta:.3g}) of the pipeline's budget: {exc}",
                requested=exc.requested, spent=exc.spent, ceiling=exc.ceiling) from exc
        finally:
            _STAND_IN.reset(token)

    def _prepare(self, X, y, groups, params, method):
        """Every check the public facts and the inputs allow, before anything is spent.

        Returns the fit's plan: ``(classified, fit_params, transform_params, shares, unit, accountant)``.
        """
        check_epsilon(self.epsilon)
        check_delta(self.delta)
        self._validate_params()  # the other constraints (Pipeline.fit's decorator would; this fit replaces it)
        named = named_accountants(self, own=False)
        if named:
            raise ValueError(
                f"this DPPipeline has {', '.join(named)} set: the pipeline gives every private step a share "
                "of its own accountant, so a ledger named on a step would not be charged. Pass accountant= "
                "to the pipeline instead. Nothing was spent."
            )
        classified = self._classified_steps()
        _warn_overridden_budgets(classified)
        final = classified[-1][1]
        if method == "fit_transform" and not _can_fit_transform(self):
            raise AttributeError(f"{type(final).__name__} has no transform: this DPPipeline has no fit_transform. "
                                 "Nothing was spent.")
        if method == "fit_predict" and not hasattr(final, "fit_predict"):
            raise AttributeError(f"{type(final).__name__} has no fit_predict: neither has this DPPipeline. "
                                 "Nothing was spent.")
        private_names = [name for name, _, kind in classified if kind == "private"]
        fit_params, transform_params = self._step_params(params, classified, method)
        # bad input fails here, before any step has spent
        row_chunks = None
        if is_dask_collection(X):  # rows on a Dask cluster: checked on the workers, only flags and lengths return
            X_checked, _ = cluster_rows(X)
            row_chunks = X_checked.chunks[0]
        else:
            X_checked = check_array(X, accept_sparse=["csr", "csc"], dtype="numeric", ensure_all_finite=True)
        accountant = self._get_accountant()
        shares = self._shares(private_names, X_checked.shape, accountant)
        # mixed units and missing / misplaced groups are refused here, before anything is spent
        unit = self._route_groups(classified, fit_params, groups, X_checked.shape[0])
        if row_chunks is not None:
            _check_cluster_steps(classified, unit)
        Z, widths, released = self._dry_run(classified, shares, X_checked.shape[0], X_checked.shape[1], unit,
                                  sp.issparse(X_checked))
        # the final step's column settings (public: _column_settings), the same for its checks and its fit
        settings = _column_settings(classified[-1][1], classified[:-1], X_checked.shape[0], widths, shares)

        accountant.check(ComposedEvent(tuple(shares[n].allowance for n in private_names)), privacy_unit=unit or "row")
        name, step, kind = classified[-1]
        if kind == "private":
            # the allowance the final step will run under (checks only: nothing is spent through it)
            guard = FitAllowance(shares[name].allowance, parent=accountant,
                                 label_prefix=f"{type(self).__name__}[{name}] ", delta=self.delta)
            self._check_final(step, shares[name], guard, settings, Z, X_checked.shape[0], y, fit_params[name],
                              row_chunks, released)
        if row_chunks is None and _STAND_IN.get() is None:  # real rows (not a stand-in of an outer pipeline's)
            self._check_rows_before_release(classified, shares, widths, X, X_checked.shape[0], y, fit_params)
        return classified, fit_params, transform_params, shares, unit, accountant, settings

    # -- fitting -------------------------------------------------------------------------------
    def _fit_private(self, X, y, groups, params, method):
        """Check everything, then fit the steps in order; on any failure every step is restored."""
        from ..linear_model._base import _CHECKING, _Checked

        restore = _snapshot(self)
        try:
            try:
                classified, fit_params, transform_params, shares, unit, accountant, settings = self._prepare(
                    X, y, groups, params, method)
            except Exception as exc:  # every refusal before the first spend says that nothing was spent
                say_nothing_spent(exc, "pipeline")
                raise
            private_names = [name for name, _, kind in classified if kind == "private"]
            if _CHECKING.get() is self:  # check_fit: every refusal has had its chance; nothing runs
                raise _Checked(ComposedEvent(tuple(shares[n].allowance for n in private_names)))
            Xt = X
            label = type(self).__name__
            released_by = None  # the latest private step that released on these rows (it has spent)
            for i, (name, step, kind) in enumerate(classified):
                is_last = i == len(classified) - 1
                if kind == "passthrough":
                    continue
                guard = None
                if kind == "private":
                    guard = FitAllowance(
                        shares[name].allowance, parent=accountant, label_prefix=f"{label}[{name}] ", delta=self.delta
                    )
                if guard is None:
                    ctx = contextlib.nullcontext(step)
                elif shares[name] == _HANDED_OVER_SHARE:
                    ctx = _handing_over(step, guard, classified[-1][1])
                else:
                    ctx = _budgeted(step, shares[name], guard, **(settings if is_last else {}))
                upstream = _RELEASED_UPSTREAM.set(released_by or _RELEASED_UPSTREAM.get())
                try:
                    with ctx:
                        if is_last and method == "fit":
                            step.fit(Xt, y, **fit_params[name])
                        elif is_last and method == "fit_predict":
                            Xt = step.fit_predict(Xt, y, **fit_params[name])
                        elif hasattr(step, "fit_transform"):
                            Xt = step.fit_transform(Xt, y, **fit_params[name])
                        else:
                            Xt = step.fit(Xt, y, **fit_params[name]).transform(Xt, **transform_params[name])
                finally:
                    _RELEASED_UPSTREAM.reset(upstream)
                if is_last:
                    continue
                if kind == "private" and shares[name] != _HANDED_OVER_SHARE and getattr(step, "epsilon_spent_", 1) != 0:
                    released_by = name
                elif (kind == "stateless" and released_by is not None and not is_dask_collection(Xt)
                      and not _all_finite(Xt)):
                    raise ValueError(
                        f"Pipeline step {name!r} ({type(step).__name__}) returned NaN or infinite values on the "
                        f"output of the private step {released_by!r}, which has released and spent its share: that "
                        "spend stands (a failure after a release is an outcome of the data, "
                        "doc/privacy/accounting.rst). Apply the function before the private step, or make it "
                        "finite on every real number."
                    )

            events = tuple(step.privacy_event_ for _, step, kind in classified if kind == "private")
            self.budget_shares_ = {n: (shares[n].epsilon, shares[n].delta) for n in private_names}
            self.privacy_event_ = ComposedEvent(events)
            self.epsilon_spent_, self.delta_spent_ = epsilon_delta(
                self.privacy_event_, delta=self.delta if self.delta > 0 else None
            )
        except BaseException:
            # a failed (re)fit leaves the pipeline and every step as they were; what a step
            # spent before a later one failed on its data stays in the ledger (a real release)
            restore()
            raise
        return Xt

    def fit(self, X, y=None, groups=None, **params):
        """Fit every step with its share of the budget.

        Every check that public facts and the inputs allow runs before the
        first step spends: the steps, weights, units and ``groups``, ``X``,
        the fit parameters, a dry run of the transformers on synthetic rows,
        the whole budget against the ledger, and the final step's own checks
        of ``y`` and its fit parameters (classes, sample weights...). If a step
        fails anyway, every step and the pipeline are restored to their state
        before the call.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)
        y : array-like of shape (n_samples,), default=None
        groups : array-like of shape (n_samples,), default=None
            User identifier of each row. Required when the private steps
            are user-level (it is passed to each of them), refused when
            they are row-level.
        **params : dict
            Fit parameters ``<step>__<param>`` (e.g. ``clf__sample_weight``);
            with metadata routing enabled, also metadata (``sample_weight=``)
            routed to the steps that request it (``set_fit_request``).

        Returns
        -------
        self
        """
        self._fit_private(X, y, groups, params, method="fit")
        return self

    @available_if(_can_fit_transform)
    def fit_transform(self, X, y=None, groups=None, **params):
        """Fit, then return the last step's transform of ``X`` (only if the last step transforms)."""
        return self._fit_private(X, y, groups, params, method="fit_transform")

    @available_if(_final_has("fit_predict"))
    def fit_predict(self, X, y=None, groups=None, **params):
        """Fit, returning the last step's ``fit_predict`` (only if the last step has one)."""
        return self._fit_private(X, y, groups, params, method="fit_predict")

    def __getitem__(self, ind):
        """A step (by position or name), or a sub-pipeline (a slice).

        A slice is a DPPipeline of the same step objects (shallow, as
        scikit-learn's: fitting a step of the slice fits it in the whole
        pipeline too), with the same ``epsilon``, ``delta``, ``accountant``,
        ``allow_non_private_steps`` and ``weights`` restricted to its private
        steps (None stays None). A slice of a fitted pipeline transforms with
        the fitted steps without spending; fitting a slice is a new fit of
        those steps, which spends the slice's own ``(epsilon, delta)`` from the
        shared ledger.
        """
        if not isinstance(ind, slice):
            return super().__getitem__(ind)
        if ind.step not in (1, None):
            raise ValueError("Pipeline slicing only supports a step of 1")
        steps = self.steps[ind]
        weights = self.weights
        if weights is not None:
            kept = {name for name, _ in steps}
            weights = {name: w for name, w in weights.items() if name in kept}
        return type(self)(
            steps,
            epsilon=self.epsilon,
            delta=self.delta,
            weights=weights,
            accountant=self.accountant,
            allow_non_private_steps=self.allow_non_private_steps,
            verbose=self.verbose,
        )


def split_kinds(steps, delta):
    """How the working private ``steps`` share ``delta > 0``: ``"basic"`` for every one when some step may
    release a pure part, else each step's :func:`~sklearn_dpsco.accounting._shares.curve_kind` (public: the
    steps' configuration).

    Why: a zCDP share ``rho_i`` reads a pure part of epsilon ``e`` as ``e^2 / 2``, while the fit's own plan
    adds it to its Gaussian's curve, where it costs about ``e`` (doc/privacy/composition.rst). At ``delta =
    1e-6`` a pure part of more than about 0.19 of a step's epsilon takes its whole ``rho_i``, and the fit's
    budget fill lowers the solver to make room: a DPPipeline at ``(epsilon, 1e-6)`` scored below the same
    pipeline at ``(epsilon, 0)`` (wine, scaled, epsilon 2: 0.61 against 0.88). An ``(epsilon_i, delta_i)``
    share (``ApproxDPEvent``; basic composition of the steps, exact for one step) holds what the step
    certifies on its own ledger at ``(epsilon_i, delta_i)``: one working step then plans exactly as the bare
    estimator does (benchmarks/results/pipeline_delta.md).
    """
    if delta > 0 and any(_may_release_pure(step) for step in steps):
        return ["basic"] * len(steps)
    return [curve_kind(step) for step in steps]


def _may_release_pure(step):
    """True when ``step``, a pipeline step of it or the estimator it searches over says ``_may_release_pure``."""
    inner = [s for _, s in pipeline_steps(step)]
    if hasattr(step, "estimator") and hasattr(step.estimator, "get_params"):  # a DP search over an estimator
        inner.append(step.estimator)
    return bool(getattr(step, "_may_release_pure", False)) or any(_may_release_pure(s) for s in inner)


def _holds_basic(accountant, shares):
    """True when ``accountant`` can hold the ``"basic"`` ``shares`` composed: any ledger; a meta-estimator's
    :class:`~sklearn_dpsco.accounting.FitAllowance` when its ``usage`` of them is at most 1 (an ``(epsilon,
    delta)`` allowance, not a zCDP one). Public arithmetic on the budgets."""
    if not isinstance(accountant, FitAllowance):
        return True
    return usage_fits(accountant.usage(ComposedEvent(tuple(s.allowance for s in shares))))


def default_weights(private_names, steps, shape, epsilon):
    """``weights=None``: ``PREPROCESSING_SHARE`` split equally over the private steps before the last one.

    A public rule (the steps' configuration, the input's shape and epsilon
    only). One private step gets the whole budget. A
    ``DPStandardScaler(bounds="auto")`` right before a model that maps its columns
    itself (:func:`_hands_over`; no step between them) gets ``HANDED_OVER`` (0: no share; the
    others split the whole budget). A step before the last that would
    release nothing at its share (``would_estimate_bounds(n, d, epsilon)``
    False: ``DPStandardScaler(bounds="auto")`` on too few rows) gets
    ``IDLE_WEIGHT`` instead, so the model keeps the budget.
    """
    *before, last = private_names
    # only a scaler right before the model hands over: a step between them (a row clipper, a transformer) reads
    # the scaled columns, which the model's own map would come too late for
    active = [name for name, step in steps.items() if classify_step(step) != "passthrough"]
    adjacent = active[-2] if len(active) >= 2 else None
    weights = {name: HANDED_OVER for name in before if name == adjacent and _hands_over(steps[name], steps[last])}
    before = [name for name in before if name not in weights]
    if not before:
        return {**weights, last: 1.0}
    n, d = shape
    each = PREPROCESSING_SHARE / len(before)
    for name in before:
        weights[name] = each if _releases(steps[name], n, d, each * epsilon) else IDLE_WEIGHT
    weights[last] = 1.0 - sum(weights.values())
    return {name: weights[name] for name in private_names}


def make_dp_pipeline(*steps, epsilon=1.0, delta=0.0, weights=None, accountant=None, allow_non_private_steps=False):
    """Construct a :class:`DPPipeline` from estimators, naming steps like ``make_pipeline``.

    Returns
    -------
    DPPipeline
    """
    return DPPipeline(
        _name_estimators(steps),
        epsilon=epsilon,
        delta=delta,
        weights=weights,
        accountant=accountant,
        allow_non_private_steps=allow_non_private_steps,
    )
