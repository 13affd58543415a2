"""Private hyperparameter search: one total budget, private selection, no raw scores released.

Privacy arguments: doc/privacy/model_selection.rst.
"""

import numbers
import warnings

import numpy as np
from joblib import Parallel, delayed
from sklearn.base import BaseEstimator, MetaEstimatorMixin, clone, is_classifier
from sklearn.model_selection import ParameterGrid, ParameterSampler
from sklearn.utils import _safe_indexing, check_array, column_or_1d
from sklearn.utils.metadata_routing import MetadataRouter, MethodMapping
from sklearn.utils.metaestimators import available_if
from sklearn.utils.validation import check_is_fitted

from .._budget import Budget
from .._mechanisms._calibrate import laplace_mechanism_for
from .._param_checks import check_class_labels, check_delta, check_epsilon, check_groups, check_no_missing
from .._refusals import say_nothing_spent
from .._rng import check_random_state, is_cryptographic, noise_source
from ..accounting import BudgetExceededError, FitAllowance
from ..accounting._nested import ledger_keys, mark_accounted
from ..accounting._resolve import AccountantMixin, named_accountants
from ..accounting._composition import profile_of
from ..accounting._shares import basic_share, curve_kind, pipeline_steps
from ..accounting._units import privacy_unit_of
from ..linear_model._base import _CHECKING, DPLinearModelMixin, _Checked, check_fit
from ..preprocessing._pipeline import DPPipeline
from ..preprocessing._steps import classify_step
from ._budget import plan_exponential, plan_random_stopping
from ._fit_params import rows_of_params, search_fit_params
from ._scoring import ScoreGrid, get_scorer
from ._selection import ExponentialMechanism, RandomStopping
from ._splits import check_private_cv, holdout_split, make_splits, row_classes
from ._units import SearchUnits

__all__ = ["DPGridSearchCV", "DPRandomizedSearchCV"]

# Parameters a search owns: the budget, the ledger and the noise seeds of its fits.
_OWNED = ("epsilon", "delta", "accountant", "random_state")
_SEED_BOUND = 2**32  # seeds for splitters, samplers and estimators' random_state (sklearn's int range)


def _param_seeds(rng, n):
    """``n`` random_state values for sub-fits, drawn up front (None: each opens its own CSPRNG)."""
    if is_cryptographic(rng):
        return [None] * n
    return [int(s) for s in rng.integers(_SEED_BOUND, size=n)]


def _numeric(values):
    """Whether labels are numbers an error score can subtract (bool labels are not: numpy refuses ``a - b``)."""
    return np.asarray(values).dtype.kind in "iuf"


def _index(X, idx):
    # rows of an array, a sparse matrix or a DataFrame (whose column names then reach the fits)
    return _safe_indexing(X, idx)


def _configure(estimator, params, share, seed, classes):
    """A clone with the candidate's hyperparameters, its budget share under an allowance, and its seed.

    The parameter values are cloned too (as scikit-learn's searches do): a value that is an estimator (a
    pipeline step to try) is then each candidate's own, never one object fitted, seeded and restored by every
    candidate and split, concurrently under ``n_jobs``, and returned fitted in the user's grid."""
    est = clone(estimator).set_params(**clone(params, safe=False))
    est.set_params(
        epsilon=share.epsilon,
        delta=share.delta,
        accountant=FitAllowance(share.allowance, parent=None, delta=share.delta),
    )
    # every random_state of the candidate (a pipeline's steps too) gets its own seed,
    # derived from the one drawn up front: independent noise in every step
    keys = sorted(k for k in est.get_params(deep=True) if k == "random_state" or k.endswith("__random_state"))
    if keys:
        sub = [None] * len(keys) if seed is None else _param_seeds(np.random.default_rng(seed), len(keys))
        est.set_params(**dict(zip(keys, sub)))
    if classes is not None:
        params = est.get_params(deep=True)
        unset = [k for k, v in params.items() if (k == "classes" or k.endswith("__classes")) and v is None]
        est.set_params(**dict.fromkeys(unset, classes))
    return est


def _check_candidate_budget(est):
    """A candidate's own budget checks (e.g. "needs delta > 0"), before the search reserves anything."""
    steps = [step for _, step in pipeline_steps(est)]
    for step in [est, *steps]:
        if step is not est and hasattr(step, "epsilon"):
            # a pipeline step's share is a part of the pipeline's (epsilon, delta)
            step = clone(step).set_params(epsilon=est.epsilon, delta=est.delta)
        if hasattr(step, "_check_privacy_params"):
            step._check_privacy_params()


def _check_candidate_fit(est, X, y, train, units, params, what):
    """The candidate's own refusals on its training rows (its parameters, the rows, its plan from public
    facts, its event under its allowance), before the search reserves anything: a search never spends its
    budget on a candidate that its fit would refuse (:func:`~sklearn_dpsco.linear_model._base.check_fit`)."""
    if not isinstance(est, (DPLinearModelMixin, DPPipeline)):
        return
    rows = slice(None) if train is None else train
    try:
        check_fit(est, _index(X, rows), y[rows], **units.fit_params(train), **rows_of_params(params, train, X.shape[0]))
    except Exception as exc:
        message = str(exc).rstrip()
        if "Nothing was spent" not in message:
            message += " Nothing was spent."
        if isinstance(exc, BudgetExceededError) and getattr(est, "delta", 0) > 0:
            message += (" (A fit whose privacy loss at delta > 0 is not a zCDP or Gaussian-DP curve, such as the "
                        "group-privacy baseline UserLevelDPLogistic(solver='item_group'), is searched at delta=0.)")
        try:
            wrapped = type(exc)(f"{what} would refuse its fit: {message}")
        except TypeError:  # an exception type with other constructor arguments: the message as a ValueError
            wrapped = ValueError(f"{what} would refuse its fit: {message}")
        raise wrapped from exc


def _check_candidate_fits(fits, refits, candidates, X, y, units, params):
    """:func:`_check_candidate_fit` of every ``(estimator, training rows)`` in ``fits`` and of its refit
    (``refits``, None entries without one) on every row, named by its ``candidates`` parameters."""
    for (est, rows), refit, params_c in zip(fits, refits, candidates):
        _check_candidate_fit(est, X, y, rows, units, params, f"candidate {params_c!r}")
        if refit is not None:
            _check_candidate_fit(refit, X, y, None, units, params, f"the refit of {params_c!r}")


def _after_the_spend(search, plan, exc):
    """``exc`` of a fit that failed after the search's one up-front spend, saying that the spend stands.

    The failing fit's own message may say "nothing was spent": true of its share alone, not of the search,
    whose whole budget was charged before the first fit (a failure part-way through is itself an outcome of
    the data, doc/privacy/accounting.rst).
    """
    message = (
        f"{type(search).__name__}: a fit failed after the search charged its whole budget (epsilon="
        f"{plan.epsilon:.6g}, delta={plan.delta:.3g}) to the ledger in its one up-front spend, and that spend "
        f"stands (doc/privacy/accounting.rst, 'reserve'). The fit's own message (what it says was not spent is its "
        f"share alone): {str(exc).rstrip()}"
    )
    try:
        return type(exc)(message)
    except TypeError:  # an exception type with other constructor arguments: the message as a RuntimeError
        return RuntimeError(message)


def _fit_and_score(est, X, y, train, test, scorer, units, params):
    est.fit(_index(X, train), y[train], **units.fit_params(train), **rows_of_params(params, train, X.shape[0]))
    return units.score(scorer, est, _index(X, test), y[test], test)


def _fit_and_score_sum(est, X, y, train, test, scorer, units, params):
    """The exact integer score sum of a random-stopping run (:meth:`SearchUnits.score_sum`) and its model."""
    est.fit(_index(X, train), y[train], **units.fit_params(train), **rows_of_params(params, train, X.shape[0]))
    _, Q = units.score_sum(scorer, est, _index(X, test), y[test], test)
    return Q, est


def noisy_score_sums(noise, score_grid, sums):
    """The noisy score sums of the runs: ``noise`` (a draw of one Laplace release per run) added to the exact
    centres ``g Q`` (:class:`ScoreGrid`), rounded to the noise grid on the secure path."""
    return noise.release(score_grid.centre(np.asarray(sums, dtype=np.int64))[:, None])[:, 0]


def release_best_score(noise, score_grid, sums):
    """``(best, noisy score)`` of random stopping: the first run of highest noisy sum, and its noisy mean.

    Both are post-processing of the noisy sums (:func:`noisy_score_sums`): the division by the public number
    of validation units comes after the noise (doc/privacy/model_selection.rst, "Exact scores").
    """
    noisy = noisy_score_sums(noise, score_grid, sums)
    best = int(np.argmax(noisy))  # first of ties
    return best, float(noisy[best] / score_grid.n_units)


def selection_mechanism(plan, rows, scorer):
    """The exponential mechanism of a search: its epsilon share, on the mean validation score."""
    # why: a replaced row moves each candidate's mean-over-splits score by at most
    # rows.sensitivity (1 / (S m) for folds of m rows) times the per-row range
    # width; candidates may move in opposite directions, so not monotone.
    return ExponentialMechanism(plan.selection_epsilon, rows.sensitivity * scorer.width, monotone=False)


def _estimator_has(attr):
    def check(self):
        if not self.refit:  # as scikit-learn's searches: the method is absent, and says why
            raise AttributeError(
                f"This {type(self).__name__} instance was initialized with refit=False. {attr} is available only "
                "after refitting on the best parameters: fit the estimator with best_params_ under a budget of "
                "its own."
            )
        if hasattr(self, "best_estimator_"):
            return hasattr(self.best_estimator_, attr)
        return hasattr(self.estimator, attr)

    return check


class _BaseDPSearchCV(AccountantMixin, MetaEstimatorMixin, BaseEstimator):
    """Shared fit logic of :class:`DPGridSearchCV` and :class:`DPRandomizedSearchCV`."""

    #: :func:`~sklearn_dpsco.linear_model._base.check_fit` runs the search's checks and stops it where it would
    #: charge (:meth:`_reserve`): a DPPipeline checks a search as its final step this way before its first spend
    _STOPS_AT_CHECK_FIT = True

    @property
    def privacy_unit(self):
        """The estimator's unit: ``"row"``, or ``"user"`` (splits and scores over users; model_selection.rst)."""
        return privacy_unit_of(self.estimator)

    def get_metadata_routing(self):
        """Metadata routing: ``groups`` is the search's own; fit parameters go to the estimator's fit.

        Returns
        -------
        MetadataRouter
        """
        router = MetadataRouter(owner=type(self).__name__).add_self_request(self)
        return router.add(estimator=self.estimator, method_mapping=MethodMapping().add(caller="fit", callee="fit"))

    # -- candidates -----------------------------------------------------------------------------
    def _candidates(self, rng):
        """The list of candidate parameter dicts (exponential selection), drawn up front."""
        raise NotImplementedError

    def _draw_run_params(self, rng, n_runs):
        """Parameters of each random-stopping run, drawn independently of the data."""
        raise NotImplementedError

    def _possible_run_params(self):
        """Every setting a random-stopping run can draw, when they can be listed (a grid's); checked before the
        reservation whether drawn or not. Sampled distributions: none listed (each drawn run is checked)."""
        return []

    def _expected_runs(self):
        raise NotImplementedError

    # -- checks -------------------------------------------------------------------------------
    def _selection(self):
        """The selection method; "auto": random stopping for pure DP, else the exponential mechanism."""
        if self.selection == "auto":
            # benchmarks/results/tuning.md: at equal total, random stopping (geometric) tuned best;
            # it is proven here for pure DP only
            return "random_stopping" if self.delta == 0 else "exponential"
        return self.selection

    def _check_params(self):
        check_epsilon(self.epsilon)
        check_delta(self.delta)
        if self.selection not in ("auto", "exponential", "random_stopping"):
            raise ValueError(
                f"selection must be 'auto', 'exponential' or 'random_stopping', got {self.selection!r}."
            )
        if classify_step(self.estimator) != "private":
            raise TypeError(
                f"estimator must be a private sklearn_dpsco estimator or DPPipeline (with epsilon, delta and "
                f"accountant parameters), got {type(self.estimator).__name__}. Nothing was spent."
            )
        if not hasattr(self.estimator, "predict"):
            # scikit-learn's searches score a transformer only through its own score method or a given scorer; the
            # private scorers are per-row terms of the predictions against y (a public range), and an unsupervised
            # score (a likelihood...) has none known in advance
            raise TypeError(
                f"{type(self).__name__} scores each candidate's predictions on validation rows (accuracy or a "
                "clipped error, per row in a public range), so its estimator must predict: a private classifier "
                f"or regressor, or a DPPipeline ending in one; {type(self.estimator).__name__} has no predict. To "
                "tune a transformer, search a pipeline of it and a model (e.g. make_dp_pipeline(DPStandardScaler(), "
                "DPHingeClassifier()) with a grid over 'dpstandardscaler__<param>'). Nothing was spent."
            )
        # a DPPipeline mixing units raises here, before the reservation
        privacy_unit_of(self.estimator)
        named = named_accountants(self.estimator)
        if named:
            raise ValueError(
                f"the search's estimator has {', '.join(named)} set: the search charges its own accountant "
                "and gives every candidate fit a share of it, so a ledger named on the estimator would not be "
                "charged. Pass accountant= to the search instead. Nothing was spent."
            )
        if not (isinstance(self.selection_share, numbers.Real) and 0 < self.selection_share < 1):
            raise ValueError(f"selection_share must be in (0, 1), got {self.selection_share!r}.")
        if self.selection == "auto" and self._selection() == "random_stopping":
            ignored = [
                name
                for name, value, default in (("cv", self.cv, 3), ("selection_share", self.selection_share, 0.1))
                if not (isinstance(value, type(default)) and value == default)
            ]
            if ignored:
                warnings.warn(
                    f"selection='auto' chose random stopping (delta=0), which does not use {', '.join(ignored)}: "
                    "it scores each run on one holdout split of validation_fraction. Pass "
                    "selection='exponential' to use them, or selection='random_stopping' to silence this.",
                    UserWarning,
                    stacklevel=3,
                )
        refit_share = self._refit_share()
        if not (0 <= refit_share < 1):
            raise ValueError(f"refit_share must be in [0, 1), got {self.refit_share!r}.")
        if self._selection() == "exponential" and self.selection_share + refit_share >= 1:
            raise ValueError("selection_share + refit_share must be < 1. Nothing was spent.")
        if self._selection() == "exponential" and self.refit and refit_share == 0:
            # exponential selection releases no model of its own: the refit is the model, and it needs a share
            raise ValueError("refit=True with selection='exponential' needs refit_share > 0 (the refit on all rows "
                             "is the released model); pass refit=False to release the selection only. "
                             "Nothing was spent.")
        return refit_share

    def _refit_share(self):
        if not self.refit:
            return 0.0
        if isinstance(self.refit_share, str):
            if self.refit_share != "auto":
                raise ValueError(f"refit_share must be a number or 'auto', got {self.refit_share!r}.")
            # exponential: the candidates saw folds only, so the chosen one is refitted on all rows;
            # random stopping: the winning run's model is part of the private release (no refit)
            return 0.5 if self._selection() == "exponential" else 0.0
        return float(self.refit_share)

    @staticmethod
    def _check_candidate_params(candidates):
        for params in candidates:
            for key in params:
                name = key.rsplit("__", 1)[-1]
                if name in _OWNED:
                    raise ValueError(
                        f"the search owns {name!r} (it splits its one budget and draws every seed up front); "
                        f"remove {key!r} from the grid. Nothing was spent."
                    )

    def _check_data(self, X, y):
        if y is None:
            raise ValueError(
                f"{type(self).__name__} requires y to be passed, but the target y is None: it scores each "
                "candidate's predictions against the labels of its validation rows. Nothing was spent."
            )
        X = check_array(X, accept_sparse="csr", dtype="numeric", ensure_all_finite=True)
        # pd.NA of a nullable column, by name
        check_no_missing(y, what="labels" if is_classifier(self.estimator) else "targets")
        y = column_or_1d(y, warn=True)
        if y.shape[0] != X.shape[0]:
            raise ValueError(f"X has {X.shape[0]} rows but y has {y.shape[0]}.")
        if np.issubdtype(y.dtype, np.number) and not np.all(np.isfinite(y)):
            raise ValueError("y must be finite. Nothing was spent.")
        return X, y

    def _classes(self, y):
        if not is_classifier(self.estimator):
            return None
        check_class_labels(y)
        classes = np.unique(y)
        if classes.size < 2:
            raise ValueError(f"y must contain at least 2 classes; got {classes.size} class. Nothing was spent.")
        return classes

    # -- fit ------------------------------------------------------------------------------------
    def fit(self, X, y=None, groups=None, **params):
        """Search privately; charge the whole search to the ledger before the first fit.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
            Required (None is refused before anything is spent): every
            candidate is scored by its predictions against it.
        groups : array-like of shape (n_samples,), default=None
            User identifier of each row: required when the estimator is
            user-level (``privacy_unit == "user"``), refused otherwise. The
            splits are then made over users and each validation score is a
            mean of per-user mean scores (doc/privacy/model_selection.rst,
            "User-level searches").
        **params : dict
            Parameters of the estimator's fit (e.g. ``sample_weight``, or
            ``<step>__sample_weight`` for a DPPipeline), given to every
            candidate fit (indexed by its training rows) and to the refit; with
            metadata routing enabled, routed by the estimator's
            ``set_fit_request``. Checked before anything is spent. The
            validation scores stay unweighted.

        Returns
        -------
        self
        """
        self._charged = None
        try:
            refit_share = self._check_params()
            checked, y = self._check_data(X, y)
            # a DataFrame reaches the candidate fits as it came (its column names become the models'
            # feature_names_in_, as in scikit-learn's searches); its values were checked above
            X = X if hasattr(X, "iloc") and hasattr(X, "columns") else checked
            units = self._units(groups, X.shape[0])
            scorer = get_scorer(self.scoring, is_classifier(self.estimator), self.loss_bound)
            classes = self._classes(y)
            if scorer.name != "accuracy" and classes is not None and not _numeric(classes):
                # an error score subtracts a prediction from a label: class labels must be numbers for it
                raise ValueError(f"scoring={self.scoring!r} subtracts predicted labels from true ones, but the "
                                 f"classes are not numbers ({np.asarray(classes).dtype}): use scoring='accuracy' "
                                 "(or None). Nothing was spent.")
            rng = check_random_state(self.random_state)
            split_seed = int(rng.integers(_SEED_BOUND))
            units = units.shuffled(split_seed)
            n = units.n_units
            # the splitter is checked in both modes: a data-dependent one is refused, never ignored
            cv = check_private_cv(self.cv, split_seed)
            if self._selection() == "exponential":
                state = self._fit_exponential(X, y, n, rng, cv, refit_share, scorer, classes, units, params)
            else:
                state = self._fit_random_stopping(X, y, n, rng, split_seed, refit_share, scorer, classes, units,
                                                  params)
        except Exception as exc:
            if self._charged is None:  # refused before the reservation: nothing was spent, and the message says so
                say_nothing_spent(exc, "search")
                raise
            raise _after_the_spend(self, self._charged, exc) from exc
        finally:
            del self._charged
        # -- success: store everything at once
        for key, value in state.items():
            setattr(self, key, value)
        self.noise_source_ = noise_source(rng)
        return self

    def _units(self, groups, n_rows):
        """What one split index stands for: a row, or (user-level estimator) a user."""
        if self.privacy_unit == "user":
            return SearchUnits.users(check_groups(groups, n_rows, f"{type(self).__name__}.fit"))
        if groups is not None:
            raise ValueError(
                f"groups was given to {type(self).__name__} over the row-level {type(self.estimator).__name__}: "
                "its candidate fits protect one row, not one user, so the search would be row-level whatever "
                "its splits. Use a user-level estimator (UserLevelDPLogistic, or a DPPipeline of user-level "
                "steps) for a user-level search, or drop groups. Nothing was spent."
            )
        return SearchUnits.rows(n_rows)

    def _reserve(self, plan, what):
        accountant = self._get_accountant()
        if _CHECKING.get() is self:
            # check_fit (a DPPipeline's check of its final step, a search's of its candidates): every refusal
            # up to here has had its chance; the ledger's own check of the event, then nothing runs
            accountant.check(plan.event, privacy_unit=self.privacy_unit)
            raise _Checked(plan.event)
        # one atomic check-and-spend, committed before any candidate touches data:
        # a crash later never loses it (doc/privacy/accounting.rst)
        accountant.spend(plan.event, label=f"{type(self).__name__}: {what}", privacy_unit=self.privacy_unit)
        self._charged = plan
        return accountant

    def _mark_accounted(self, *groups):
        """The candidate and refit fits spend under allowances the search charged up front (:meth:`_reserve`):
        the budget blocks enclosing the search are charged by that reservation, not again by each fit."""
        keys = ledger_keys(self._get_accountant())
        for group in groups:
            for est in group:
                if est is not None:
                    mark_accounted(est.accountant, keys)

    def _refit_kind(self, candidates, refit_share, classes, X, y, units, params):
        """``"basic"`` when some candidate's own plan on all rows at the refit's ``(refit_share * epsilon,
        delta / 2)`` composes a pure part with its curve, else None (:func:`plan_exponential`: the refit then
        gets that approximate-DP share instead of a zCDP one that would read the pure part as ``eps^2 / 2``).

        Public: a plan is a function of the configuration, the budget and the shape of the rows
        (:func:`~sklearn_dpsco.linear_model._base.check_fit` reads no value that a release depends on). A
        candidate whose fit would refuse is skipped here; the candidate checks raise its refusal."""
        if self.delta == 0 or not self.refit or not refit_share > 0:
            return None
        probe = basic_share(refit_share * self.epsilon, self.delta / 2.0)
        for candidate in candidates:
            est = _configure(self.estimator, candidate, probe, None, classes)
            try:
                event = check_fit(est, X, y, **units.fit_params(None), **params)
            except Exception:  # noqa: BLE001 - refused later, with its own message, before anything is spent
                continue
            if profile_of(event).pure_eps > 0:
                return "basic"
        return None

    def _configure_refit(self, candidates, plan, seed, classes):
        """The refit estimator of every candidate, configured up front (None entries without a refit)."""
        if not self.refit or plan.refit is None:
            return [None] * len(candidates)
        return [_configure(self.estimator, params, plan.refit, seed, classes) for params in candidates]

    def _fit_exponential(self, X, y, n, rng, cv, refit_share, scorer, classes, units, params):
        candidates = self._candidates(rng)
        if not candidates:
            raise ValueError("the search has no candidate. Nothing was spent.")
        self._check_candidate_params(candidates)
        # splits over the units (rows, or users); rows: how each unit is touched
        unit_splits = make_splits(cv, n, "users" if units.is_user_level else "rows")
        rows = row_classes(unit_splits, n)
        splits = [units.rows_of(tr, te) for tr, te in unit_splits]
        params = search_fit_params(self, params, X.shape[0])
        kind = curve_kind(self.estimator)
        plan = plan_exponential(
            self.epsilon, self.delta, len(candidates), rows, self.selection_share, refit_share,
            kind=kind, refit_kind=self._refit_kind(candidates, refit_share, classes, X, y, units, params),
        )
        K, S = len(candidates), len(splits)
        fit_states = _param_seeds(rng, K * S)
        mech = selection_mechanism(plan, rows, scorer)
        refit_state = _param_seeds(rng, 1)[0]
        # every candidate is configured (bad parameter names fail here) before the reservation
        fits = [
            (_configure(self.estimator, params, plan.fit, fit_states[c * S + s], classes), tr, te)
            for c, params in enumerate(candidates)
            for s, (tr, te) in enumerate(splits)
        ]
        refit_est = self._configure_refit(candidates, plan, refit_state, classes)
        for est, _, _ in fits:
            _check_candidate_budget(est)
        self._mark_accounted([est for est, _, _ in fits], refit_est)
        # each candidate on its smallest training split
        smallest = min(range(S), key=lambda s: len(splits[s][0]))
        _check_candidate_fits([fits[c * S + smallest][:2] for c in range(K)], refit_est, candidates, X, y, units,
                              params)

        self._reserve(
            plan,
            f"{K} candidates x {S} split{'s' if S > 1 else ''}, exponential selection" + (", refit" if plan.refit else ""),
        )
        jobs = (delayed(_fit_and_score)(est, X, y, tr, te, scorer, units, params) for est, tr, te in fits)
        scores = np.asarray(Parallel(n_jobs=self.n_jobs, prefer="threads")(jobs), dtype=float).reshape(K, S)
        # the exact validation scores never leave this function: only the selected index does
        best = int(mech.select(scores.mean(axis=1), rng))
        state = dict(
            best_index_=best,
            best_params_=dict(candidates[best]),
            best_score_=None,
            cv_results_=self._results(candidates, best),
            n_splits_=S,
            selection_sensitivity_=mech.sensitivity,
            budget_=self._budget_table(plan, K, S, "exponential"),
            privacy_event_=plan.event,
            epsilon_spent_=plan.epsilon,
            delta_spent_=plan.delta,
        )
        if self.refit:
            state["best_estimator_"] = refit_est[best].fit(X, y, **units.fit_params(None), **params)
        return state

    def _fit_random_stopping(self, X, y, n, rng, split_seed, refit_share, scorer, classes, units, params):
        stopping = RandomStopping(self._expected_runs(), self.stopping)
        plan = plan_random_stopping(self.epsilon, self.delta, stopping, refit_share)
        train_units, val_units = holdout_split(n, self.validation_fraction, split_seed,
                                              "n_users" if units.is_user_level else "n_samples")
        train, val = units.rows_of(train_units, val_units)
        params = search_fit_params(self, params, X.shape[0])
        # why: the released centre is g Q, Q the exact integer sum of one grid term per validation unit
        # (rows, or users' rounded means) in [lo, hi]: one replaced unit moves it by <= g W exactly, in any
        # summation order; the mean is formed after the noise (doc/privacy/model_selection.rst, "Exact scores")
        score_grid = ScoreGrid(scorer, val_units.size)
        score_noise = laplace_mechanism_for(score_grid.sensitivity, Budget(plan.fit.epsilon))
        # all randomness of the runs is drawn up front, independently of the data
        n_runs = stopping.sample(rng)
        run_params = self._draw_run_params(rng, n_runs)
        self._check_candidate_params(run_params)
        states = _param_seeds(rng, n_runs)
        noise = score_noise.draw(rng, size=n_runs)  # one release per run, added to its score below
        refit_state = _param_seeds(rng, 1)[0]
        runs_est = [_configure(self.estimator, params, plan.fit, s, classes) for params, s in zip(run_params, states)]
        refit_est = self._configure_refit(run_params, plan, refit_state, classes)
        # every setting a run could have drawn (a grid's), not only the drawn ones: whether a bad value is
        # refused must not depend on the hidden draw (public facts; no randomness is consumed here)
        drawn = {repr(sorted(c.items())) for c in run_params}
        undrawn = [c for c in self._possible_run_params() if repr(sorted(c.items())) not in drawn]
        undrawn_est = [_configure(self.estimator, c, plan.fit, None, classes) for c in undrawn]
        undrawn_refit = self._configure_refit(undrawn, plan, None, classes)
        for est in runs_est + undrawn_est:
            _check_candidate_budget(est)
        self._mark_accounted(runs_est, refit_est, undrawn_est, undrawn_refit)
        _check_candidate_fits([(est, train) for est in runs_est + undrawn_est], refit_est + undrawn_refit,
                              run_params + undrawn, X, y, units, params)

        self._reserve(plan, f"random stopping ({stopping.distribution}), best of a hidden number of runs")
        jobs = (delayed(_fit_and_score_sum)(est, X, y, train, val, scorer, units, params) for est in runs_est)
        runs = Parallel(n_jobs=self.n_jobs, prefer="threads")(jobs)
        # the release rounds each exact centre g Q to the noise grid (doc/privacy/secure_noise.rst); the
        # selection and the division by m are post-processing of the noisy sums
        best, best_score = release_best_score(noise, score_grid, [Q for Q, _ in runs])
        # only the winning run (its parameters, model and noisy score) is released
        state = dict(
            best_index_=0,
            best_params_=dict(run_params[best]),
            best_score_=best_score,
            cv_results_=self._results([run_params[best]], 0, noisy_score=best_score),
            n_splits_=1,
            selection_sensitivity_=score_noise.sensitivity / val_units.size,
            budget_=self._budget_table(plan, None, 1, "random_stopping", stopping=stopping),
            privacy_event_=plan.event,
            epsilon_spent_=plan.epsilon,
            delta_spent_=plan.delta,
        )
        if self.refit:
            if plan.refit is not None:
                state["best_estimator_"] = refit_est[best].fit(X, y, **units.fit_params(None), **params)
            else:
                state["best_estimator_"] = runs[best][1]
        return state

    # -- released summaries ---------------------------------------------------------------------
    @staticmethod
    def _results(candidates, best, noisy_score=None):
        """``cv_results_``: candidate parameters and which was selected; no raw score, rank or time."""
        names = sorted({k for p in candidates for k in p})
        results = {"params": [dict(p) for p in candidates]}
        for name in names:
            values = [p.get(name, None) for p in candidates]
            results[f"param_{name}"] = np.ma.MaskedArray(
                np.array(values, dtype=object), mask=[name not in p for p in candidates]
            )
        results["selected"] = np.arange(len(candidates)) == best
        if noisy_score is not None:
            results["noisy_score"] = np.array([noisy_score])
        return results

    def _budget_table(self, plan, n_candidates, n_splits, selection, stopping=None):
        table = {
            "total": (self.epsilon, self.delta),
            "spent": (plan.epsilon, plan.delta),
            "candidate_fit": (plan.fit.epsilon, plan.fit.delta),
            "selection": plan.selection_epsilon,
            "refit": None if plan.refit is None else (plan.refit.epsilon, plan.refit.delta),
            "selection_method": selection,
        }
        if selection == "exponential":
            table["candidate_fits"] = n_candidates * n_splits
        else:
            table["run_distribution"] = stopping.distribution
            table["expected_runs"] = stopping.expected_runs
        return table

    # -- delegation to the selected estimator -------------------------------------------------
    @property
    def classes_(self):
        check_is_fitted(self, "best_estimator_")
        return self.best_estimator_.classes_

    @property
    def n_features_in_(self):
        check_is_fitted(self, "best_estimator_")
        return self.best_estimator_.n_features_in_

    @property
    def feature_names_in_(self):
        """The column names of a DataFrame the search was fitted on (the selected estimator's)."""
        check_is_fitted(self, "best_estimator_")
        return self.best_estimator_.feature_names_in_

    @available_if(_estimator_has("predict"))
    def predict(self, X):
        """Predict with the selected, refitted estimator."""
        check_is_fitted(self, "best_estimator_")
        return self.best_estimator_.predict(X)

    @available_if(_estimator_has("decision_function"))
    def decision_function(self, X):
        check_is_fitted(self, "best_estimator_")
        return self.best_estimator_.decision_function(X)

    @available_if(_estimator_has("predict_proba"))
    def predict_proba(self, X):
        check_is_fitted(self, "best_estimator_")
        return self.best_estimator_.predict_proba(X)

    @available_if(_estimator_has("transform"))
    def transform(self, X):
        check_is_fitted(self, "best_estimator_")
        return self.best_estimator_.transform(X)

    def score(self, X, y):
        """The selected estimator's ``score`` on (X, y) (on your test data; not private)."""
        check_is_fitted(self, "best_estimator_")
        return self.best_estimator_.score(X, y)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        sub = self.estimator.__sklearn_tags__()
        tags.estimator_type = sub.estimator_type
        tags.classifier_tags = sub.classifier_tags
        tags.regressor_tags = sub.regressor_tags
        tags.input_tags.sparse = sub.input_tags.sparse
        return tags


_COMMON_DOC = """
    epsilon : float, default=1.0
        The TOTAL epsilon of the whole search: candidate fits, selection and
        refit together.
    delta : float, default=0.0
        The total delta (``selection="exponential"`` only when > 0; every
        private step must then release through Gaussian noise).
    selection : {"auto", "exponential", "random_stopping"}, default="auto"
        ``"exponential"``: fit every candidate on every split, select by the
        exponential mechanism on the mean validation score, refit the chosen
        one on all rows. ``"random_stopping"``: Liu-Talwar / Papernot-Steinke
        private selection from private candidates — a random, hidden number of
        runs, each a private fit plus a noisy holdout score; only the best
        run is released. Its cost does not grow with the number of
        candidates. Pure DP only. ``"auto"``: random stopping when
        ``delta == 0`` (it tuned best at equal budget,
        benchmarks/results/tuning.md), else exponential.
    cv : int, KFold, ShuffleSplit, RepeatedKFold, PredefinedSplit or list, default=3
        Validation splits of the exponential selection; must not depend on
        the data (stratified and group splitters are refused, in both
        modes). An int uses ``KFold(cv, shuffle=True)`` with a seed from
        ``random_state``. Random stopping uses one holdout split of
        ``validation_fraction`` instead.
    scoring : {"accuracy", "neg_mean_absolute_error", "neg_mean_squared_error"}, default=None
        None: accuracy (classifiers). Regression scores need ``loss_bound``.
    loss_bound : float, default=None
        Public bound to which each row's regression loss is clipped.
    selection_share : float, default=0.1
        Fraction of epsilon for the exponential selection.
    refit : bool, default=True
        Fit ``best_estimator_``.
    refit_share : float or "auto", default="auto"
        Fraction of epsilon for the refit on all rows. "auto": 0.5 for
        exponential selection; 0 for random stopping (the winning run's
        model, trained on the training rows, is released with it). With
        exponential selection and ``refit=True`` it must be above 0 (the
        refit is the released model).
    validation_fraction : float, default=0.25
        Holdout fraction of the random-stopping runs.
    stopping : {"geometric", "logarithmic"}, default="geometric"
        Distribution of the number of random-stopping runs: ``3 eps_run``
        (geometric) or ``2 eps_run`` (logarithmic) in total. The logarithmic
        law is cheaper but puts much of its mass on a single run; the
        geometric one concentrates around ``expected_runs`` and tuned better
        (benchmarks/results/tuning.md).
    accountant : BudgetAccountant, default=None
        The ledger charged (once, up front). None: the budget block in
        force, else the session default.
    n_jobs : int, default=None
        Parallel fits (joblib, threads preferred). Results do not depend on it.
    random_state : int, Generator or None, default=None
        None: OS entropy for every noise draw and split.
    verbose : int, default=0
        Unused.
"""

_ATTRIBUTES_DOC = """
    Attributes
    ----------
    best_params_ : dict
        The privately selected parameters.
    best_estimator_ : estimator
        Refitted on all rows (exponential), or the winning run (random stopping).
    best_score_ : float or None
        Random stopping: the winning run's NOISY validation score (part of
        the private release). Exponential: None (not released: it would cost
        budget).
    best_index_ : int
    cv_results_ : dict
        ``params``, ``param_<name>`` and ``selected``; random stopping also
        ``noisy_score`` — for the winning run only. No exact validation
        score, rank or fit time is ever released (each is a function of the
        private data).
    budget_ : dict
        The public split of the total: per-fit, selection and refit budgets.
    privacy_event_ : PrivacyEvent
        The event charged to the ledger (once, before the first fit).
    epsilon_spent_, delta_spent_ : float
        Its guarantee; never above (epsilon, delta).
    selection_sensitivity_ : float
        Sensitivity of the score the selection uses (random stopping: of the
        noisy mean, ``g W / m`` for the exact integer score sums; ``width /
        m`` for accuracy and within ``2^-33`` of it for the clipped losses).
    n_splits_ : int
    noise_source_ : str
"""


class DPGridSearchCV(_BaseDPSearchCV):
    __doc__ = (
        """Private exhaustive search over a parameter grid under ONE total (epsilon, delta).

    The search charges its whole budget to the ledger in one atomic spend
    before the first fit, runs every candidate fit under an allowance of its
    share (so none can consume more), selects privately, and releases only
    privatized quantities.

    Parameters
    ----------
    estimator : private estimator or DPPipeline
        Its ``epsilon``, ``delta``, ``accountant`` and ``random_state``
        parameters are set by the search; an ``accountant`` set on it (or
        on a pipeline's step) is refused before anything is spent, since
        it would not be charged (pass ``accountant=`` to the search). It
        must predict (a classifier or regressor, or a DPPipeline ending in
        one): the candidates are scored by their predictions against ``y``,
        and a transformer alone is refused before anything is spent (search
        a pipeline of it and a model instead).
    param_grid : dict or list of dicts
        As in :class:`sklearn.model_selection.GridSearchCV`."""
        + _COMMON_DOC
        + """    expected_runs : float, default=None
        Random stopping: E[number of runs]; None -> twice the grid size.
"""
        + _ATTRIBUTES_DOC
        + """
    See Also
    --------
    DPRandomizedSearchCV, sklearn_dpsco.preprocessing.DPPipeline

    Notes
    -----
    Budget rule, proofs and tests: doc/privacy/model_selection.rst. In short,
    with K candidates, S splits and a row in ``t`` training sets, the row's
    privacy loss composes ``K t`` candidate fits, the selection (if it is in a
    validation set) and the refit; the per-fit share is the largest for which
    every row's composition stays within the total. The selection is the
    exponential mechanism on the mean validation score, whose replace-one
    sensitivity is computed exactly from the split indices (1 / (S m) for
    accuracy with folds of m rows).

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_dpsco.accounting import BudgetAccountant
    >>> from sklearn_dpsco.model_selection import DPGridSearchCV
    >>> from sklearn_dpsco.testing._estimators import TinyDPClassifier
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(600, 2)); y = (X[:, 0] > 0.3).astype(int)
    >>> acc = BudgetAccountant(epsilon=2.0)
    >>> search = DPGridSearchCV(TinyDPClassifier(), {"shift": [-0.3, 0.0, 0.3]},
    ...                         epsilon=2.0, accountant=acc, random_state=0).fit(X, y)
    >>> sorted(search.cv_results_)  # the winning run only, with its noisy score
    ['noisy_score', 'param_shift', 'params', 'selected']
    >>> acc.total()
    (2.0, 0.0)
    """
    )

    def __init__(
        self,
        estimator,
        param_grid,
        *,
        epsilon=1.0,
        delta=0.0,
        selection="auto",
        cv=3,
        scoring=None,
        loss_bound=None,
        selection_share=0.1,
        refit=True,
        refit_share="auto",
        validation_fraction=0.25,
        expected_runs=None,
        stopping="geometric",
        accountant=None,
        n_jobs=None,
        random_state=None,
        verbose=0,
    ):
        self.estimator = estimator
        self.param_grid = param_grid
        self.epsilon = epsilon
        self.delta = delta
        self.selection = selection
        self.cv = cv
        self.scoring = scoring
        self.loss_bound = loss_bound
        self.selection_share = selection_share
        self.refit = refit
        self.refit_share = refit_share
        self.validation_fraction = validation_fraction
        self.expected_runs = expected_runs
        self.stopping = stopping
        self.accountant = accountant
        self.n_jobs = n_jobs
        self.random_state = random_state
        self.verbose = verbose

    def _grid(self):
        return list(ParameterGrid(self.param_grid))

    def _candidates(self, rng):
        return self._grid()

    def _possible_run_params(self):
        return self._grid()

    def _expected_runs(self):
        if self.expected_runs is not None:
            return self.expected_runs
        return max(2.0 * len(self._grid()), 2.0)

    def _draw_run_params(self, rng, n_runs):
        grid = self._grid()
        if not grid:
            raise ValueError("the search has no candidate. Nothing was spent.")
        return [dict(grid[i]) for i in rng.integers(len(grid), size=n_runs)]


class DPRandomizedSearchCV(_BaseDPSearchCV):
    __doc__ = (
        """Private search over sampled parameter settings under ONE total (epsilon, delta).

    Like :class:`DPGridSearchCV`, with candidates drawn from distributions
    (public randomness, drawn before any data is touched).

    Parameters
    ----------
    estimator : private estimator or DPPipeline
        As in :class:`DPGridSearchCV`: it must predict.
    param_distributions : dict or list of dicts
        As in :class:`sklearn.model_selection.RandomizedSearchCV`.
    n_iter : int, default=10
        Exponential selection: the number of candidates sampled. Random
        stopping: the expected number of runs (each samples its own
        setting)."""
        + _COMMON_DOC
        + _ATTRIBUTES_DOC
        + """
    See Also
    --------
    DPGridSearchCV
    """
    )

    def __init__(
        self,
        estimator,
        param_distributions,
        *,
        n_iter=10,
        epsilon=1.0,
        delta=0.0,
        selection="auto",
        cv=3,
        scoring=None,
        loss_bound=None,
        selection_share=0.1,
        refit=True,
        refit_share="auto",
        validation_fraction=0.25,
        stopping="geometric",
        accountant=None,
        n_jobs=None,
        random_state=None,
        verbose=0,
    ):
        self.estimator = estimator
        self.param_distributions = param_distributions
        self.n_iter = n_iter
        self.epsilon = epsilon
        self.delta = delta
        self.selection = selection
        self.cv = cv
        self.scoring = scoring
        self.loss_bound = loss_bound
        self.selection_share = selection_share
        self.refit = refit
        self.refit_share = refit_share
        self.validation_fraction = validation_fraction
        self.stopping = stopping
        self.accountant = accountant
        self.n_jobs = n_jobs
        self.random_state = random_state
        self.verbose = verbose

    def _check_n_iter(self):
        if isinstance(self.n_iter, bool) or not isinstance(self.n_iter, numbers.Integral) or self.n_iter < 1:
            raise ValueError(f"n_iter must be an integer >= 1, got {self.n_iter!r}.")

    def _candidates(self, rng):
        self._check_n_iter()
        sampler = ParameterSampler(self.param_distributions, self.n_iter, random_state=int(rng.integers(_SEED_BOUND)))
        return [dict(p) for p in sampler]

    def _expected_runs(self):
        self._check_n_iter()
        return float(self.n_iter)

    def _draw_run_params(self, rng, n_runs):
        seeds = rng.integers(_SEED_BOUND, size=n_runs)
        return [dict(next(iter(ParameterSampler(self.param_distributions, 1, random_state=int(s))))) for s in seeds]
