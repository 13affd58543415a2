"""Snowball-SGD on the secure noise path: one pass, every batch gradient released exactly.

The float path's privacy (FKT Thm 3.1, amplification by iteration) needs
continuous Gaussian noise on an unreleased state and has no secure form
(doc/privacy/snowball_sgd.rst, "Secure path"). On ``noise="secure"`` the same
one-pass loop -- disjoint consecutive batches in a data-independent order,
the per-row Huber loss on clipped rows (:mod:`.._core._sgd_settings`), JNN
or constant steps capped at ``2 / beta``, projection onto ``B(center,
radius)``, last iterate released -- instead RELEASES every batch's gradient
sum through one :class:`~sklearn_dpsco._mechanisms.GaussianMechanism`
(grid-rounded sum plus exact discrete Gaussian noise, ``NoiseDraw.release``)
and takes the step from the released value. Each row is read in exactly one
step, so the run is as private as one step (parallel composition in zCDP):
the event is the mechanism's ``ZCDPEvent``.

Batches are constant, ``B = ceil(sqrt(d) sigma / C)`` (the last one takes
the remainder): the noise on the batch MEAN then has ``E||xi||^2 = d
sigma^2 / B^2 <= C^2``, the size of a clipped gradient, which minimises the
one-pass SGD bound ``D sqrt(C^2 + d sigma^2 / B^2) sqrt(B / n)`` over B up
to a constant (``B ~ sqrt(2 d / rho)``). Utility only: privacy holds for any B.
"""

import math

import numpy as np
import scipy.sparse as sp

from ..._budget import Budget
from ..._mechanisms._calibrate import clipped_sum_sensitivity, one_pass_step_mechanism
from .._optim._sgd_reference import _project
from ._pnsgd import PNSGDSchedule, _as_runs, _step_segments, run_pnsgd

__all__ = ["clipped_row_gradients", "row_gradient_error", "run_secure_pnsgd", "run_snowball",
           "secure_snowball_schedule"]

_U = 2.0**-53  # unit roundoff of float64


def run_snowball(source, schedule, rng, **kwargs):
    """Run a Snowball-SGD schedule on its own noise path: secure (``schedule.mechanism``) or float."""
    if schedule.mechanism is not None:
        return run_secure_pnsgd(source, schedule, rng, **kwargs)
    return run_pnsgd(source, schedule, rng, **kwargs)


def row_gradient_error(settings, d, iterate_bound):
    """Public bound on the float64 error of one :func:`clipped_row_gradients` vector before its norm clip.

    Against the exact Huber gradient of the exactly clipped row at the same iterate ``w`` with
    ``||w|| <= iterate_bound``: the row scaling and ``||x~||`` err relatively by <= gamma_{2d+8}
    (``||x~|| <= sqrt(beta)``), ``<w, x~>`` by <= gamma_{2d+8} ``||w|| sqrt(beta)``, the subtraction and
    the clip to ``[-K, K]`` by <= 2 u K, ``K`` relatively by <= gamma_{2d+8}, and the products by u
    each; with ``K ||x~|| = C`` that is <= ``2 gamma_{2d+8} (||w|| beta + 2 C)``, doubled for slack.
    """
    k = 2 * int(d) + 8
    gamma = k * _U / (1.0 - k * _U)
    return 4.0 * gamma * (float(iterate_bound) * settings.smoothness + 2.0 * settings.clip)


def secure_snowball_schedule(n, d, *, epsilon, delta, settings, steps="jnn", iterate_bound=None):
    """Public plan of secure Snowball-SGD on ``n`` rows of ``d`` coefficients (intercept column included).

    Parameters
    ----------
    n, d : int
        Rows and coefficients (public).
    epsilon, delta : float
        The run's budget (``delta > 0``): every step is a discrete Gaussian
        release at this budget; the steps are on disjoint rows.
    settings : SGDSettings
        ``C = clip``, row bound, intercept scaling, domain radius (finite).
    steps : {"jnn", "constant"}, default="jnn"
        Step sizes of :func:`~._pnsgd.snowball_schedule` on the secure
        schedule's T steps (``D = 2 radius``, ``L = C``), capped at ``2/beta``.
    iterate_bound : float, optional
        Public bound on the norm of every iterate (the domain ball's centre
        norm plus its radius); default ``settings.radius`` (centre 0). It
        sizes the float error of the per-row gradients.

    Returns
    -------
    PNSGDSchedule
        With ``mechanism`` set; ``event = mechanism.event``.
    """
    n, d = int(n), int(d)
    if steps not in ("jnn", "constant"):
        raise ValueError(f"steps must be 'jnn' or 'constant', got {steps!r}.")
    if n < 1:
        raise ValueError(f"secure Snowball-SGD needs at least one row, got n={n}.")
    L, D = settings.lipschitz, settings.diameter
    if not math.isfinite(D):
        raise ValueError("Snowball-SGD needs a finite domain radius (its step size is D / (L sqrt(2T))).")
    iterate_bound = settings.radius if iterate_bound is None else float(iterate_bound)
    budget = Budget(epsilon, delta, "secure")
    # provisional batch from the exact sensitivity 2C (utility only), then the mechanism for the
    # largest batch actually used (its float bound grows with the number of terms)
    B = _batch_size(one_pass_step_mechanism(2.0 * L, budget, d).sigma, L, d, n)
    T = max(1, n // B)
    largest = n - (T - 1) * B
    # why: a step's release is the float64 sum of at most `largest` per-row gradients, each within
    # row_gradient_error of its exact value at the (common, earlier-released) iterate and norm-clipped
    # to C (exactly a no-op: the Huber gradient has norm <= C); replacing one row moves it by <= 2C plus
    # every rounding (doc/privacy/snowball_sgd.rst, "Secure path").
    sensitivity = clipped_sum_sensitivity(L, largest, d, row_gradient_error(settings, d, iterate_bound))
    mechanism = one_pass_step_mechanism(sensitivity, budget, d)
    etas = np.concatenate([np.full(m, eta) for m, eta in _step_segments(T, steps, D, L, settings.max_step)])
    batches = np.full(T, B, dtype=np.int64)
    batches[-1] = largest  # leftover rows join the last batch
    lengths, run_batches, run_steps = _as_runs(batches, etas)
    for a in (lengths, run_batches, run_steps):
        a.setflags(write=False)
    rho = math.sqrt(2.0 * mechanism.event.rho)  # FKT's convention: (alpha, alpha rho^2 / 2)-RDP
    return PNSGDSchedule(
        run_lengths=lengths, run_batches=run_batches, run_steps=run_steps, sigma=mechanism.sigma / B,
        settings=settings, rho=rho, rho_actual=rho, event=mechanism.event, mechanism=mechanism,
        info={"algorithm": "snowball_sgd", "noise": "secure", "steps": steps, "T": T, "batch": B,
              "max_batch": largest, "sigma": mechanism.sigma / B, "step_sensitivity": sensitivity,
              "iterate_bound": iterate_bound},
    )


def _batch_size(sum_sigma, clip, d, n):
    """``B = ceil(sqrt(d) sigma / C)`` (mean noise no larger than a clipped gradient), at most n."""
    return int(min(n, max(1, math.ceil(math.sqrt(d) * sum_sigma / clip))))


def clipped_row_gradients(X, y, sample_weight, W, settings):
    """Per-row Huber gradients of a batch at ``W``, each norm-clipped to C: shape ``W.shape[:-1] + (b, d)``.

    ``x~ = (min(1, R/||x||) x, s)``, ``g = weight clip(<w, x~> - y, -K, K) x~`` with ``K = C / ||x~||``
    (:func:`~.._optim._sgd_reference.clipped_row` and its gradient), then ``g min(1, C / ||g||)``:
    exactly a no-op, it makes :func:`~sklearn_dpsco._mechanisms._calibrate.clipped_sum_sensitivity`
    cover the float64 sum.
    """
    Xc, K = clipped_rows(X, settings)
    return row_gradients(Xc, K, y, sample_weight, W, settings.clip)


def clipped_rows(X, settings):
    """``(x~, K)`` of :func:`clipped_row_gradients` for every row: the part that does not depend on ``w``.

    Row by row, so computing it once for a block and slicing gives the same floats as computing it on
    each batch (the loop does the former: a step then only does the products with ``w``).
    """
    Xd = X.toarray() if sp.issparse(X) else np.asarray(X, dtype=np.float64)
    R, s, C = settings.row_bound, settings.intercept_scaling, settings.clip
    with np.errstate(over="ignore"):
        sq = np.einsum("ij,ij->i", Xd, Xd)
    # R / max(||x||, R) is exactly 1 for rows within the bound, R / ||x|| above it
    Xc = Xd * (R / np.maximum(np.sqrt(sq), R))[:, None]
    big = ~np.isfinite(sq)
    if big.any():
        Xc[big] = _scaled_huge_rows(Xd[big], R)
    if s > 0:
        Xc = np.concatenate((Xc, np.full((Xc.shape[0], 1), s)), axis=1)
    # a zero row has K = inf and gradient clip(r) * 0 = 0
    xn = np.sqrt(np.einsum("ij,ij->i", Xc, Xc))
    with np.errstate(over="ignore"):
        K = np.divide(C, xn, out=np.full_like(xn, np.inf), where=xn > 0)
    return Xc, K


def _scaled_huge_rows(rows, R):
    """:func:`clipped_rows`' scaling of rows whose sum of squares overflows float64 (norm above ~1.3e154).

    The plain ``R / sqrt(sum x_j^2)`` would be ``R / inf = 0`` and zero the row, about ``C`` away from
    the exact gradient that :func:`row_gradient_error` bounds the computed one against (the step
    sensitivity adds that bound for every other row of a batch, without assuming both neighbours
    compute a row bit for bit). Here the row is divided by ``m = max |x_j|`` first: ``u = x / m`` has
    entries in [-1, 1], and ``u R / ||u||`` is the row scaled to norm R within a few roundings (each
    relative; inside gamma_{2d+8}); a row within a bound ``R`` that large is kept as it is.
    """
    m = np.abs(rows).max(axis=1)
    unit = rows / m[:, None]
    unit_norm = np.sqrt(np.einsum("ij,ij->i", unit, unit))
    inside = unit_norm <= R / m  # ||x|| <= R: only for a bound R above ~1.3e154
    return np.where(inside[:, None], rows, unit * (R / unit_norm)[:, None])


def row_gradients(Xc, K, y, sample_weight, W, C):
    """The gradients of :func:`clipped_row_gradients` from its :func:`clipped_rows` ``(Xc, K)``."""
    a = np.clip(W @ Xc.T - y, -K, K)  # (..., b)
    if sample_weight is not None:
        a = a * sample_weight
    G = a[..., None] * Xc  # (..., b, d)
    # C / max(||g||, C) = min(1, C / ||g||): exactly 1 unless the rounding pushed ||g|| above C
    return G * (C / np.maximum(np.sqrt(np.einsum("...j,...j->...", G, G)), C))[..., None]


#: Largest dense copy of clipped rows held at once (values): 16 MB, whatever the block size and d.
_WINDOW_FLOATS = 1 << 21

#: Steps whose noise is drawn in one call (the sampler is vectorised; fixed so results do not
#: depend on how the rows are cut into blocks).
_DRAW_STEPS = 256


def _step_draws(mechanism, rng, n_steps, runs, shape):
    """One NoiseDraw per step, in step order, drawn ``_DRAW_STEPS`` steps at a time."""
    for start in range(0, n_steps, _DRAW_STEPS):
        k = min(_DRAW_STEPS, n_steps - start)
        yield from mechanism.draw(rng, k * runs).split(k, shape)


def run_secure_pnsgd(source, schedule, rng, *, w0=None, center=None, n_runs=None):
    """Run a secure :class:`~._pnsgd.PNSGDSchedule` over a row source; return the last iterate.

    Step t: the rows of batch t (possibly spanning blocks) give their clipped gradients at the
    current iterate; their sum is released by ``schedule.mechanism`` and ``w <- Pi(w - eta_t
    released / B_t)``. The sum is formed once the batch is complete, over the batch's rows in order.
    The noise is drawn in step order, ``_DRAW_STEPS`` steps at a time (one integer vector per step,
    ``NoiseDraw.split``), fixed by the step index, so the result does not depend on the block size.
    ``n_runs`` runs that many independent copies (audits; shape ``(n_runs, d)``).
    """
    settings, mechanism = schedule.settings, schedule.mechanism
    d = source.n_features + (1 if settings.intercept_scaling > 0 else 0)
    if source.n_samples != schedule.n:
        raise ValueError(f"the schedule was planned for {schedule.n} rows, the data has {source.n_samples}.")
    shape = (d,) if n_runs is None else (n_runs, d)
    start = center if w0 is None else w0
    W = np.array(np.broadcast_to(np.zeros(d) if start is None else start, shape), dtype=np.float64)
    batches, etas = schedule.batch_sizes, schedule.steps
    runs = 1 if n_runs is None else int(n_runs)
    t, terms, filled, seen = 0, [], 0, 0
    draws = _step_draws(mechanism, rng, schedule.n_steps, runs, shape)
    for X, y, sw in source.blocks():
        rows = X.shape[0]
        if seen + rows > schedule.n:
            raise ValueError(f"the data has more rows than the declared n_samples={schedule.n}. Nothing was spent.")
        window = max(1, _WINDOW_FLOATS // d)
        for lo in range(0, rows, window):
            # the w-free part once per window of rows (row by row: the same floats as per batch), dense
            # copies of at most _WINDOW_FLOATS values (a sparse block is densified a window at a time)
            hi = min(rows, lo + window)
            Xc, K = clipped_rows(X[lo:hi], settings)
            yw, sww = y[lo:hi], None if sw is None else sw[lo:hi]
            p = 0
            while p < hi - lo:
                take = min(int(batches[t]) - filled, hi - lo - p)
                terms.append(row_gradients(Xc[p:p + take], K[p:p + take], yw[p:p + take],
                                           None if sww is None else sww[p:p + take], W, settings.clip))
                filled += take
                p += take
                if filled == batches[t]:
                    total = np.concatenate(terms, axis=-2).sum(axis=-2)  # the batch's float64 sum, in row order
                    noisy = next(draws).release(total)  # grid-rounded sum + exact integer noise
                    W = _project(W - etas[t] * (noisy / batches[t]), settings.radius, center)
                    t, terms, filled = t + 1, [], 0
        seen += rows
    if seen != schedule.n:
        raise ValueError(f"the data had fewer rows than the declared n_samples={schedule.n}. Nothing was spent.")
    return W
