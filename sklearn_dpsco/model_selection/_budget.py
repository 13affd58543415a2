"""How a private search splits its one total (epsilon, delta) (doc/privacy/model_selection.rst).

Everything here is computed from public facts only — the total budget, the
shares, the number of candidates and the split indices — before the search
touches any data. The returned :class:`SearchBudget` carries the exact
event the search consumes; the search charges it to the ledger in one
atomic spend before its first fit, and runs every fit under a
:class:`~sklearn_dpsco.accounting.FitAllowance` of its share.
"""

import math
from dataclasses import dataclass

from ..accounting import (
    ComposedEvent,
    ParallelComposedEvent,
    PrivacyEvent,
    PureDPEvent,
    SelfComposedEvent,
    epsilon_delta,
)
from ..accounting._calibration import gaussian_mu, zcdp_rho
from ..accounting._composition import PrivacyProfile, profile_epsilon, profile_of
from ..accounting._shares import Share, basic_share, curve_share, pure_share

__all__ = ["SearchBudget", "plan_exponential", "plan_random_stopping"]

_BISECTION_STEPS = 200  # on log(mu): far below float resolution


@dataclass(frozen=True)
class SearchBudget:
    """The public plan of a private search.

    Attributes
    ----------
    fit : Share
        Parameters and allowance of each candidate fit.
    selection_epsilon : float
        Epsilon of the selection step (exponential mechanism), or of the
        whole random-stopping release (which covers the candidate fits).
    refit : Share or None
        Parameters and allowance of the final refit on all rows.
    event : PrivacyEvent
        What the whole search consumes.
    epsilon, delta : float
        Its guarantee: ``epsilon_delta(event, delta)``, <= the total given.
    """

    fit: Share
    selection_epsilon: float
    refit: object
    event: PrivacyEvent
    epsilon: float
    delta: float


def _class_event(fit, n_fits, selection, refit):
    parts = []
    if n_fits:
        parts.append(SelfComposedEvent(fit.allowance, n_fits))
    if selection is not None:
        parts.append(selection)
    if refit is not None:
        parts.append(refit.allowance)
    return ComposedEvent(tuple(parts))


def _largest_mu(feasible, hi=64.0):
    """Largest mu with ``feasible(mu)`` (monotone: true then false), by bisection on log(mu)."""
    lo_log, hi_log = math.log(1e-12), math.log(hi)
    if not feasible(math.exp(lo_log)):
        return 0.0
    if feasible(math.exp(hi_log)):
        return math.exp(hi_log)
    for _ in range(_BISECTION_STEPS):
        mid = 0.5 * (lo_log + hi_log)
        if feasible(math.exp(mid)):
            lo_log = mid
        else:
            hi_log = mid
    return math.exp(lo_log)


def plan_exponential(epsilon, delta, n_candidates, rows, selection_share, refit_share, kind="zcdp", refit_kind=None):
    """Budget of a search that fits every candidate on every split and selects by the exponential mechanism.

    Rule (per row class ``(t, v)``: ``K t`` candidate fits, the selection if
    ``v``, the refit): every class's composition must be within
    ``(epsilon, delta)``. The selection gets ``selection_share * epsilon``;
    the refit gets ``refit_share * epsilon`` (pure) or the curve share worth
    ``(refit_share * epsilon, delta)`` on its own; each candidate fit gets
    the largest share for which the worst class still fits.

    Parameters
    ----------
    rows : RowClasses
    kind : {"gaussian", "zcdp"}
        How fits with ``delta > 0`` are calibrated (:func:`~sklearn_dpsco.accounting._shares.curve_kind`):
        Gaussian-DP shares compose in ``gauss_mu2``, zCDP shares in ``rho``.
    refit_kind : {"basic"} or None, default=None
        ``"basic"`` (``delta > 0``): the refit gets the approximate-DP share ``(refit_share * epsilon,
        delta / 2)`` (allowance ``ApproxDPEvent``), the budget a fit of its own at that epsilon would have,
        and the candidate fits' curve is converted at the other ``delta / 2``. Why: a refit whose plan
        composes pure parts (its "auto" scales, column quartiles, intercept refit) with a curve reads them
        as ``epsilon_i^2 / 2`` under a zCDP share, which can leave its solver a small part of the share
        (doc/privacy/model_selection.rst, "The refit's share"). None: the refit's share is of ``kind``.
    """
    K = int(n_candidates)
    eps_sel = selection_share * epsilon
    selection = PureDPEvent(eps_sel)
    if delta == 0:
        refit = pure_share(refit_share * epsilon) if refit_share > 0 else None
        eps_ref = refit.epsilon if refit else 0.0
        budgets = [
            (epsilon - eps_ref - v * eps_sel) / (K * t) for t, v in rows.classes if t > 0
        ]
        eps_fit = min(budgets)
        if not eps_fit > 0:
            raise ValueError(
                "selection_share and refit_share leave no budget for the candidate fits. Nothing was spent."
            )
        fit = pure_share(eps_fit)
    else:
        value_of = (lambda e: gaussian_mu(e, delta)) if kind == "gaussian" else (lambda e: zcdp_rho(e, delta))
        if not refit_share > 0:
            refit = None
        elif refit_kind == "basic":
            refit = basic_share(refit_share * epsilon, delta / 2.0)
        else:
            refit = curve_share(value_of(refit_share * epsilon), delta, kind)
        ref_part = profile_of(refit.allowance) if refit else PrivacyProfile()

        def class_profile(x, t, v):
            # x is the fit's Gaussian-DP mu or its rho, by kind
            pure = v * eps_sel
            fits = PrivacyProfile(gauss_mu2=K * t * x * x) if kind == "gaussian" else PrivacyProfile(rho=K * t * x)
            return PrivacyProfile(pure_eps=pure, pure_rho=pure * pure / 2.0) + fits + ref_part

        def feasible(mu):
            return all(profile_epsilon(class_profile(mu, t, v), delta) <= epsilon for t, v in rows.classes)

        mu = _largest_mu(feasible)
        if not mu > 0:
            raise ValueError(
                "selection_share and refit_share leave no budget for the candidate fits. Nothing was spent."
            )
        fit = curve_share(mu, delta, kind)

    events = tuple(_class_event(fit, K * t, selection if v else None, refit) for t, v in rows.classes)
    event = events[0] if len(events) == 1 else ParallelComposedEvent(events)
    return _finish(fit, eps_sel, refit, event, epsilon, delta)


def plan_random_stopping(epsilon, delta, stopping, refit_share):
    """Budget of a random-stopping search: ``factor * eps_run`` (+ the refit) <= epsilon.

    Each run (fit on the training rows, noisy score on the disjoint
    validation rows) is ``eps_run``-DP by parallel composition; releasing
    the best of T runs is ``stopping.factor * eps_run``-DP; a refit on all
    rows composes basically.
    """
    if delta != 0:
        raise ValueError(
            "selection='random_stopping' is proven here for pure DP only (delta=0); use "
            "selection='exponential' for delta > 0. Nothing was spent."
        )
    refit = pure_share(refit_share * epsilon) if refit_share > 0 else None
    eps_run = (epsilon - (refit.epsilon if refit else 0.0)) / stopping.factor
    if not eps_run > 0:
        raise ValueError("refit_share leaves no budget for the candidate runs. Nothing was spent.")
    fit = pure_share(eps_run)
    parts = [stopping.event(eps_run)] + ([refit.allowance] if refit else [])
    return _finish(fit, stopping.factor * eps_run, refit, ComposedEvent(tuple(parts)), epsilon, delta)


def _finish(fit, eps_sel, refit, event, epsilon, delta):
    spent, spent_delta = epsilon_delta(event, delta=delta if profile_of(event).needs_delta else None)
    # the plan's own proof obligation, checked on the numbers (never on data)
    if spent > epsilon * (1 + 1e-9) or spent_delta > delta * (1 + 1e-9) + 1e-300:
        raise AssertionError(f"search budget plan exceeds its total: {spent}, {spent_delta} > {epsilon}, {delta}")
    return SearchBudget(fit, eps_sel, refit, event, spent, max(spent_delta, 0.0) if delta == 0 else delta)
