"""DPPipeline: one privacy budget for a whole pipeline, split across its private steps.

Privacy argument: doc/privacy/preprocessing.rst ("Private pipelines").
"""

import contextlib
import inspect
import math
import numbers

import numpy as np
from sklearn.base import clone
from sklearn.pipeline import Pipeline
from sklearn.utils import check_array

from .._compat import _name_estimators
from .._param_checks import check_delta, check_epsilon
from ..accounting import BudgetAccountant, ComposedEvent, FitAllowance, epsilon_delta
from ..accounting._resolve import AccountantMixin
from ..accounting._shares import curve_kind, split_by_weights
from ..accounting._units import PrivacyUnitError, privacy_unit_of
from ._steps import classify_step, probe_row_wise

__all__ = ["DPPipeline", "IDLE_WEIGHT", "PREPROCESSING_SHARE", "default_weights", "make_dp_pipeline"]

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


def _column_settings(step, earlier):
    """``{"column_scaling": False, "centering": False}`` (those the model has at ``"auto"``) after a DPStandardScaler.

    The scaler already released the columns' location and spread; the model's own
    column quartiles or private centre would spend a second time on the same
    information (linear_model/_column_scaling.py, linear_model/_centering.py).
    Public: the pipeline's configuration only.
    """
    from ._scaler import DPStandardScaler

    if not any(isinstance(s, DPStandardScaler) for s in earlier):
        return {}
    params = step.get_params(deep=False)
    return {name: False for name in ("column_scaling", "centering")
            if isinstance(params.get(name), str) and params[name] == "auto"}


def _takes_groups(step):
    try:
        return "groups" in inspect.signature(step.fit).parameters
    except (TypeError, ValueError):
        return False


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
        Total delta. 0: every private step runs pure DP. > 0: every private
        step must release through Gaussian noise (all of ours do); shares
        compose exactly in Gaussian DP.
    weights : dict of str -> float, default=None
        Relative share of each private step (by name). None: the private
        steps before the last one share ``PREPROCESSING_SHARE = 0.3`` of
        the budget equally and the last private step (the model) gets 0.7
        (a rule chosen on the real sets of benchmarks/bench_defaults.py);
        a single private step gets everything. A ``DPStandardScaler(bounds=
        "auto")`` that would release nothing at its share (too few rows for
        its quartiles) gets ``IDLE_WEIGHT = 1e-3`` and the model the rest.
        A final model with ``column_scaling="auto"`` (``centering="auto"``)
        after a ``DPStandardScaler`` is fitted with ``column_scaling=False``
        (``centering=False``; restored afterwards): its input is already
        scaled and centred per column, and its own column quartiles or
        private centre would spend twice (doc/privacy/column_scaling.rst).
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
    afterwards (``get_params`` is unchanged by ``fit``); its fitted
    attributes (``epsilon_spent_``...) record what it consumed. Shares: pure
    ``epsilon * w_i / sum(w)``; Gaussian ``mu_i = mu sqrt(w_i / sum(w))`` with
    ``mu = gaussian_mu(epsilon, delta)``, so the composition is exactly
    ``(epsilon, delta)`` (doc/privacy/preprocessing.rst). Before any step
    sees the data, the pipeline checks the whole budget against the ledger
    and dry-runs its transformers on synthetic rows (shapes, parameters,
    and a row-independence probe of every ``FunctionTransformer``).

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
    # step would skip its spend) and does not route metadata.
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
                "needs one user identifier per row. Nothing was spent."
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
        self.steps = list(self.steps)
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

    def _shares(self, private_names, shape):
        weights = self.weights
        if weights is None:
            weights = default_weights(private_names, dict(self.steps), shape, self.epsilon)
        unknown = set(weights) - set(private_names)
        missing = set(private_names) - set(weights)
        if unknown or missing:
            raise ValueError(
                f"weights must name exactly the private steps {private_names}; unknown: {sorted(unknown)}, "
                f"missing: {sorted(missing)}. Nothing was spent."
            )
        for name, w in weights.items():
            if isinstance(w, bool) or not isinstance(w, numbers.Real) or not (w > 0) or not np.isfinite(w):
                raise ValueError(f"weight of step {name!r} must be a finite number > 0, got {w!r}.")
        steps = dict(self.steps)
        kinds = [curve_kind(steps[n]) for n in private_names]
        shares = split_by_weights(self.epsilon, self.delta, [weights[n] for n in private_names], kinds)
        return dict(zip(private_names, shares))

    @staticmethod
    def _split_fit_params(params, names):
        out = {name: {} for name in names}
        for key, value in params.items():
            step, sep, param = key.partition("__")
            if not sep or step not in out:
                raise ValueError(
                    f"fit parameter {key!r} must be of the form '<step>__<param>' with a step of this pipeline."
                )
            out[step][param] = value
        return out

    def _dry_run(self, classified, shares, n_features, unit):
        """Fit clones of the transformers on synthetic rows: shapes, parameters, row-independence."""
        Z = np.random.default_rng(0).uniform(0.5, 2.0, size=(_PROBE_ROWS, n_features))
        # user level: every synthetic row its own user
        probe_params = {"groups": np.arange(_PROBE_ROWS)} if unit == "user" else {}
        for name, step, kind in classified[:-1]:
            if kind == "passthrough":
                continue
            if kind == "stateless" and type(step).__name__ == "FunctionTransformer":
                reason = probe_row_wise(step, Z.shape[1])
                if reason is not None and not self.allow_non_private_steps:
                    raise ValueError(
                        f"Pipeline step {name!r} (FunctionTransformer) is accepted only if its function maps "
                        f"each row using that row only, but {reason}. Rewrite it row-wise or pass "
                        "allow_non_private_steps=True if this data is not private. Nothing was spent."
                    )
            probe = clone(step)
            if kind == "private":
                # synthetic rows: nothing private to charge; a ledger without ceiling records the probe
                share = shares[name]
                probe.set_params(epsilon=share.epsilon, delta=share.delta, accountant=BudgetAccountant(math.inf, 1.0))
            try:
                Z = np.asarray(probe.fit_transform(Z, **(probe_params if kind == "private" else {})), dtype=float)
            except Exception as exc:
                raise ValueError(
                    f"Pipeline step {name!r} ({type(step).__name__}) failed on synthetic rows of the input "
                    f"shape before any private data was used: {type(exc).__name__}: {exc}. Nothing was spent."
                ) from exc

    # -- fitting -------------------------------------------------------------------------------
    def _fit_private(self, X, y, groups, params, last):
        check_epsilon(self.epsilon)
        check_delta(self.delta)
        classified = self._classified_steps()
        private_names = [name for name, _, kind in classified if kind == "private"]
        fit_params = self._split_fit_params(params, [name for name, _, _ in classified])
        # bad input fails here, before any step has spent
        X_checked = check_array(X, accept_sparse=["csr", "csc"], dtype="numeric", ensure_all_finite=True)
        shares = self._shares(private_names, X_checked.shape)
        # mixed units and missing / misplaced groups are refused here, before anything is spent
        unit = self._route_groups(classified, fit_params, groups, X_checked.shape[0])
        self._dry_run(classified, shares, X_checked.shape[1], unit)

        accountant = self._get_accountant()
        accountant.check(ComposedEvent(tuple(shares[n].allowance for n in private_names)), privacy_unit=unit or "row")

        Xt = X
        label = type(self).__name__
        for i, (name, step, kind) in enumerate(classified):
            is_last = i == len(classified) - 1
            if kind == "passthrough":
                continue
            guard = None
            if kind == "private":
                guard = FitAllowance(
                    shares[name].allowance, parent=accountant, label_prefix=f"{label}[{name}] ", delta=self.delta
                )
            settings = _column_settings(step, [s for _, s, _ in classified[:i]]) if is_last else {}
            ctx = (_budgeted(step, shares[name], guard, **settings) if guard is not None
                   else contextlib.nullcontext(step))
            with ctx:
                if not is_last:
                    if hasattr(step, "fit_transform"):
                        Xt = step.fit_transform(Xt, y, **fit_params[name])
                    else:
                        Xt = step.fit(Xt, y, **fit_params[name]).transform(Xt)
                elif last == "fit_transform":
                    if hasattr(step, "fit_transform"):
                        Xt = step.fit_transform(Xt, y, **fit_params[name])
                    else:
                        Xt = step.fit(Xt, y, **fit_params[name]).transform(Xt)
                else:
                    step.fit(Xt, y, **fit_params[name])

        events = tuple(step.privacy_event_ for _, step, kind in classified if kind == "private")
        self.budget_shares_ = {n: (shares[n].epsilon, shares[n].delta) for n in private_names}
        self.privacy_event_ = ComposedEvent(events)
        self.epsilon_spent_, self.delta_spent_ = epsilon_delta(
            self.privacy_event_, delta=self.delta if self.delta > 0 else None
        )
        return Xt

    def fit(self, X, y=None, groups=None, **params):
        """Fit every step with its share of the budget.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)
        y : array-like of shape (n_samples,), default=None
        groups : array-like of shape (n_samples,), default=None
            User identifier of each row. Required when the private steps
            are user-level (it is passed to each of them), refused when
            they are row-level.
        **params : dict
            Fit parameters ``<step>__<param>`` (e.g. ``clf__sample_weight``).

        Returns
        -------
        self
        """
        self._fit_private(X, y, groups, params, last="fit")
        return self

    def fit_transform(self, X, y=None, groups=None, **params):
        """Fit, then return the last step's transform of ``X``."""
        return self._fit_private(X, y, groups, params, last="fit_transform")

    def fit_predict(self, X, y=None, groups=None, **params):
        """Fit, then predict ``X``."""
        self._fit_private(X, y, groups, params, last="fit")
        return self.predict(X)


def default_weights(private_names, steps, shape, epsilon):
    """``weights=None``: ``PREPROCESSING_SHARE`` split equally over the private steps before the last one.

    A public rule (step names, the input's shape and epsilon only). One
    private step gets the whole budget. A step before the last that would
    release nothing at its share (``would_estimate_bounds(n, d, epsilon)``
    False: ``DPStandardScaler(bounds="auto")`` on too few rows) gets
    ``IDLE_WEIGHT`` instead, so the model keeps the budget.
    """
    *before, last = private_names
    if not before:
        return {last: 1.0}
    n, d = shape
    each = PREPROCESSING_SHARE / len(before)
    weights = {}
    for name in before:
        probe = getattr(steps[name], "would_estimate_bounds", None)
        idle = probe is not None and not probe(n, d, each * epsilon)
        weights[name] = IDLE_WEIGHT if idle else each
    weights[last] = 1.0 - sum(weights.values())
    return weights


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
