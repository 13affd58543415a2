"""Grid-residue audit: do released floats carry the unrounded centre's low bits?

The secure noise path releases ``scale_back(round_to_grid(c) + n)``: an
integer multiple of a power-of-two grid ``gamma`` (doc/privacy/secure_noise.rst).
A solver that instead releases ``c + noise_on_grid`` with ``c`` the exact,
unrounded centre leaks ``c mod gamma`` in EVERY release: for a grid
``g = 2^j <= gamma`` the residue ``frac(x / g)`` equals ``frac(c / g)`` (up to
float rounding) whatever the noise, and it differs on a neighbouring dataset.
One release then tells ``D`` from ``D'`` with certainty.

:func:`grid_residue_audit` looks for exactly that signature in a handful of
releases per dataset; :func:`collect_releases` produces them by fitting an
estimator repeatedly with OS-entropy noise; :func:`replace_row` and
:func:`replace_user` build worst-case neighbours (doc/privacy/testing.rst,
"Grid-residue audit").
"""

import math
from dataclasses import dataclass, field

import numpy as np

__all__ = [
    "GridResidueResult",
    "grid_residue_audit",
    "collect_releases",
    "released_values",
    "extreme_row",
    "replace_row",
    "replace_user",
]


# --------------------------------------------------------------------------- exact float helpers
def _signed_residues(x, j):
    """``x / 2^j - rint(x / 2^j)`` in [-1/2, 1/2], computed exactly.

    ``ldexp`` by a power of two is exact (no overflow or subnormal results at
    the exponents the audit uses), and ``y - rint(y)`` is exact: for
    ``|y| < 1/2`` it is ``y``; otherwise ``m = rint(y)`` has ``|m| >= 1`` and
    ``|y| in [|m| - 1/2, |m| + 1/2]`` within a factor 2 of ``|m|``
    (Sterbenz). (``y - floor(y)`` is NOT exact for small negative ``y``.)
    """
    y = np.ldexp(x, -j)
    return y - np.rint(y)


def _circular_distance(a, b):
    """Distance of residues on the circle R/Z (``0.9999`` is close to ``0``)."""
    d = np.abs(a - b) % 1.0
    return np.minimum(d, 1.0 - d)


def _lowest_bit_exponent(x):
    """The largest ``e`` with ``x`` an integer multiple of ``2^e`` (``None`` for 0)."""
    if x == 0:
        return None
    mantissa, exponent = math.frexp(abs(float(x)))
    m = int(math.ldexp(mantissa, 53))  # exact: a 53-bit integer
    trailing = (m & -m).bit_length() - 1
    return exponent - 53 + trailing


def _common_grid_exponent(values):
    """The largest ``e`` with every value a multiple of ``2^e`` (the grid the values lie on)."""
    exps = [e for e in (_lowest_bit_exponent(v) for v in values) if e is not None]
    return min(exps) if exps else None


# --------------------------------------------------------------------------- the audit
@dataclass
class GridResidueResult:
    """Outcome of :func:`grid_residue_audit`.

    Attributes
    ----------
    passed : bool
        False when some coordinate's residues are constant and non-zero at a
        tested grid (an unrounded centre shows through), or a value is off
        the claimed ``grid``.
    explanation : str
        Human-readable account: the failures (side, coordinate, grid ``2^j``,
        residues), or what was tested.
    findings : list of dict
        One per (side, coordinate) with a constant non-zero residue: ``side``
        (``"D"`` or ``"D'"``), ``coordinate``, ``exponent`` j (the finest
        failing grid), ``residues`` at that grid (in ``[0, 1)``), the other
        side's residues at that grid, ``chance`` (probability of such a
        coincidence for a correctly rounded release, at most ``alpha_per_test``).
    off_grid : list of dict
        Values that are not exact multiples of the claimed ``grid``.
    coverage : list of dict
        Per (side, coordinate): ``tested`` exponents ``(lo, hi)`` or None,
        ``common_grid`` exponent of the values, ``deterministic`` (all values
        equal: nothing to test), ``detectable_bits`` (how many tested grids lie
        at or below the values' common grid: had the centre not been rounded
        to that grid, the residues would have been constant there).
    alpha_per_test : float
    """

    passed: bool
    explanation: str
    findings: list = field(default_factory=list)
    off_grid: list = field(default_factory=list)
    coverage: list = field(default_factory=list)
    alpha_per_test: float = 0.0

    def __bool__(self):
        return self.passed

    def __str__(self):
        return self.explanation

    @property
    def detectable_bits(self):
        """Smallest ``detectable_bits`` over the non-deterministic coordinates (0 if none).

        ``> 0`` means: a release of ``centre + on-grid noise`` with an
        unrounded centre would have been flagged on every such coordinate.
        ``0`` means the audit had no power against that leak here (the grid
        is below the float spacing of the values, or the release was
        post-processed by a non-power-of-two map).
        """
        bits = [c["detectable_bits"] for c in self.coverage if not c["deterministic"]]
        return min(bits) if bits else 0


def _as_releases(a, name):
    a = np.asarray(a, dtype=float)
    if a.ndim == 1:
        a = a[:, None]
    if a.ndim != 2:
        raise ValueError(f"{name} must have shape (n_fits, k); got {a.shape}.")
    if not np.all(np.isfinite(a)):
        raise ValueError(f"{name} contains non-finite values (a refused release?); audit finite releases only.")
    return a


def _plan_coordinate(x, ulp_factor, spread_fraction):
    """Public-to-the-audit facts of one coordinate: tolerance, spread, common grid, grid range."""
    spread = float(np.max(x) - np.min(x))
    if spread == 0:
        return None
    # why: c + n*gamma is rounded once to the float spacing of the result (<= ulp/2), and
    # power-of-two scalings after it are exact; ulp_factor ulps absorb a few such roundings.
    tol = ulp_factor * float(np.spacing(np.max(np.abs(x))))
    # why: above a fraction of the spread, every release's residue is nearly the same
    # (x/g moves by less than 1 across fits) whatever the centre: no information there.
    hi = math.floor(math.log2(spread_fraction * spread))
    return dict(tol=tol, spread=spread, hi=hi, common=_common_grid_exponent(x))


def _chance(floor_abs, j, n_fits):
    """P(n_fits - 1 residues fall within the first's cell) for near-uniform residues at grid 2^j.

    A correct release's residues at a grid ``g`` finer than the noise spread
    are (nearly) uniform on the circle, on the lattice of its own grid: two
    of them coincide within ``tol`` (or exactly, on a lattice of spacing
    ``2^common``) with probability at most ``max(2 tol, 2^common) / g``.
    """
    return min(1.0, math.ldexp(floor_abs, -j)) ** (n_fits - 1)


def _first_tested(floor_abs, hi, n_fits, alpha_test):
    """The finest exponent j <= hi whose chance of a coincidence is at most alpha_test (None if none)."""
    if floor_abs <= 0:
        return None
    j = math.floor(math.log2(floor_abs))
    while j <= hi and _chance(floor_abs, j, n_fits) > alpha_test:
        j += 1
    return j if j <= hi else None


def _check_grid(releases, side, grid):
    off = []
    rem = np.fmod(releases, grid)  # fmod is exact in IEEE arithmetic
    for i, c in zip(*np.nonzero(rem)):
        off.append(dict(side=side, fit=int(i), coordinate=int(c), value=float(releases[i, c]),
                        remainder=f"remainder {float(rem[i, c])!r}"))
    return off


def _check_coarse_grid(releases, side, min_bits):
    off = []
    for c in range(releases.shape[1]):
        x = releases[:, c]
        common = _common_grid_exponent(x)
        if common is None:
            continue
        bits = common - math.log2(float(np.spacing(np.max(np.abs(x)))))
        if bits < min_bits:
            i = int(np.argmax(np.abs(x)))
            off.append(dict(side=side, fit=i, coordinate=c, value=float(x[i]),
                            remainder=f"common grid 2^{common}, only {bits:.0f} bits above the float spacing"))
    return off


def grid_residue_audit(releases_d, releases_dprime, *, grid=None, alpha=1e-9, ulp_factor=2.0,
                       spread_fraction=0.25, min_fits=4, min_grid_bits=4):
    """Flag releases whose low bits stay constant across noise draws (an unrounded centre).

    Parameters
    ----------
    releases_d, releases_dprime : array-like of shape (n_fits, k)
        Released floats of ``n_fits`` independent fits (fresh noise each) on
        two neighbouring datasets ``D`` and ``D'``; each row one fit's
        released values (e.g. ``coef_`` and ``intercept_`` flattened).
    grid : float or "auto", optional
        A grid the releases claim to lie on; then every value must be an
        exact multiple of it. ``"auto"``: the grid is not known, but every
        coordinate's values must lie on SOME common power-of-two grid at
        least ``2^min_grid_bits`` float spacings coarse (true of an
        un-post-processed secure release; false of ``c + noise`` with an
        unrounded ``c``, even when ``c`` itself varies from fit to fit, as in
        multi-phase solvers whose last centre depends on earlier noise).
        Use it only where the release is not post-processed by a
        non-power-of-two map (projection, averaging, a linear solve).
    alpha : float, default=1e-9
        Family-wise probability that a correctly rounded release is flagged
        by chance (Bonferroni over sides, coordinates and grids).
    ulp_factor : float, default=2.0
        Residues count as equal within ``ulp_factor`` float spacings of the
        largest value of the coordinate (the float rounding of ``c + n``).
    spread_fraction : float, default=0.25
        Grids coarser than this fraction of a coordinate's spread across fits
        are not tested.
    min_fits : int, default=4
    min_grid_bits : int, default=4
        For ``grid="auto"``. An unrounded ``c + noise`` has its lowest set
        bit at about the float spacing in at least one of its fits; 16 fits
        all 4 bits coarser by chance has probability about ``2^-64``.

    Returns
    -------
    GridResidueResult

    Notes
    -----
    *The signature.* A secure release is ``x = (k + n) gamma`` with ``k`` the
    centre rounded to the power-of-two grid ``gamma`` and ``n`` integer
    noise. At a grid ``g = 2^j <= gamma`` its residue ``frac(x / g)`` is
    exactly 0 (data-independent); at coarser grids it is spread by the noise.
    The leaky ``x = fl(c + n gamma)`` has, at every ``g <= gamma``, residue
    ``frac(c / g)`` up to the rounding of the sum, for EVERY draw: constant
    across fits, non-zero, and a function of the data. The audit computes,
    per side (``D``, ``D'``) and coordinate, the residues at every grid
    ``2^j`` in a meaningful range and fails if they are all equal (circular
    distance ``<= tol``, so ``0.9999`` and ``0`` are close) and not 0.
    Residues are computed exactly (``ldexp`` and ``y - rint(y)``); only the
    float rounding of the release itself needs the tolerance
    ``tol = ulp_factor * spacing(max |x|)``.

    *The range.* From the finest grid at which a chance coincidence is
    improbable up to ``spread_fraction`` times the coordinate's spread across
    fits (above it every release's residue is nearly the same). A value set
    with all fits equal (a clipped or deterministic coordinate) carries no
    noise and is not tested.

    *Power and false alarms.* For a correctly rounded release the residues at
    a tested grid ``g`` are near-uniform on the circle (the noise is spread
    over at least ``4 g``), on the lattice of the values' common grid
    ``2^e`` (the largest power of two dividing every value), so all
    ``F = n_fits`` of them coincide with probability at most
    ``(max(2 tol, 2^e) / g)^(F - 1)``. Only grids where this is at most
    ``alpha_per_test = alpha / (number of candidate tests)`` are tested, so
    the audit flags a correct release with probability at most ``alpha``.
    A leaky release is flagged with certainty when the tested range reaches
    below the noise grid ``gamma`` (then ``frac(c / g)`` is constant; it is
    0 only if ``c`` happens to be a multiple of ``g`` at every such grid).
    ``coverage[...]["detectable_bits"]`` and
    :attr:`GridResidueResult.detectable_bits` report, for a passing release,
    how many tested grids lay at or below its own grid: a positive count
    means the unrounded variant of the same release would have been
    flagged. With ``|c| ~ 1``, F = 6 fits and ``k`` of a few coordinates,
    testing starts about 2^11 float spacings above ``|c|``'s (``2^-41``);
    the secure Gaussian's grid ``sigma 2^-30`` is above that for any
    ``sigma > 2^-11``; the coordinate Laplace's ``b 2^-48`` is usually
    below the float spacing, where the leak is invisible to this audit (and
    the bit-level porosity audit is the relevant test). More fits lower the
    starting grid: ``(2 tol / g)^(F - 1) <= alpha_per_test``.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_dpsco._mechanisms import GaussianMechanism
    >>> mech = GaussianMechanism(0.01, 1.0, 1e-5, dimension=2)
    >>> w, w_prime = np.array([0.3, -0.7]), np.array([0.31, -0.69])
    >>> rng = np.random.default_rng(0)
    >>> good = grid_residue_audit(mech.release(w, rng, size=6), mech.release(w_prime, rng, size=6))
    >>> good.passed
    True
    >>> leaky = lambda c: c + mech.release(np.zeros(2), rng, size=6)  # the unrounded-centre idiom
    >>> grid_residue_audit(leaky(w), leaky(w_prime)).passed
    False
    """
    sides = (("D", _as_releases(releases_d, "releases_d")), ("D'", _as_releases(releases_dprime, "releases_dprime")))
    k = sides[0][1].shape[1]
    if sides[1][1].shape[1] != k:
        raise ValueError(f"releases_d and releases_dprime must have the same number of columns; got "
                         f"{k} and {sides[1][1].shape[1]}.")
    for name, r in sides:
        if r.shape[0] < min_fits:
            raise ValueError(f"need at least {min_fits} fits per side; got {r.shape[0]} on {name}.")

    off_grid = _claimed_grid_violations(sides, grid, min_grid_bits)
    plans = {(name, c): _plan_coordinate(r[:, c], ulp_factor, spread_fraction) for name, r in sides for c in range(k)}
    # Bonferroni over every grid between a coordinate's coincidence floor and its top
    alpha_test = alpha / max(1, sum(_candidate_grids(p) for p in plans.values()))

    findings, coverage = [], []
    for name, r in sides:
        other = sides[1][1] if name == "D" else sides[0][1]
        for c in range(k):
            cov, finding = _audit_coordinate(r[:, c], other[:, c], plans[name, c], alpha_test)
            coverage.append(dict(side=name, coordinate=c, **cov))
            if finding is not None:
                findings.append(dict(side=name, coordinate=c, **finding))

    passed = not findings and not off_grid
    return GridResidueResult(passed, _explain(findings, off_grid, coverage, grid, alpha_test), findings, off_grid,
                             coverage, alpha_test)


def _claimed_grid_violations(sides, grid, min_grid_bits):
    """Values off the grid the releases claim (a float), or on no coarse power-of-two grid (``"auto"``)."""
    if grid is None:
        return []
    if isinstance(grid, str) and grid != "auto":
        raise ValueError(f"grid must be a float, 'auto' or None; got {grid!r}.")
    off_grid = []
    for name, r in sides:
        off_grid.extend(_check_coarse_grid(r, name, min_grid_bits) if grid == "auto" else _check_grid(r, name, float(grid)))
    return off_grid


def _candidate_grids(plan):
    """How many grids a coordinate could be tested at (the Bonferroni count); 0 for a noiseless one."""
    if plan is None:
        return 0
    lo0 = math.floor(math.log2(max(2 * plan["tol"], math.ldexp(1.0, plan["common"]))))
    return max(0, plan["hi"] - lo0 + 1)


def _audit_coordinate(x, x_other, plan, alpha_test):
    """Residue test of one coordinate's releases on one side: ``(coverage, finding or None)``."""
    if plan is None:
        return dict(deterministic=True, tested=None, common_grid=None, detectable_bits=0), None
    n_fits = x.shape[0]
    floor_abs = max(2 * plan["tol"], math.ldexp(1.0, plan["common"]))
    lo = _first_tested(floor_abs, plan["hi"], n_fits, alpha_test)
    # where the unrounded variant would be tested (its common grid is float-spacing fine)
    lo_leak = _first_tested(2 * plan["tol"], plan["hi"], n_fits, alpha_test)
    top = min(plan["common"], plan["hi"])
    coverage = dict(deterministic=False, tested=None if lo is None else (lo, plan["hi"]), common_grid=plan["common"],
                    detectable_bits=0 if lo_leak is None else max(0, top - lo_leak + 1))
    if lo is None:
        return coverage, None
    for j in range(lo, plan["hi"] + 1):
        s = _signed_residues(x, j)
        rel_tol = math.ldexp(plan["tol"], -j)
        constant = np.all(_circular_distance(s, s[0]) <= rel_tol)
        if constant and _circular_distance(s[0], 0.0) > rel_tol:
            return coverage, dict(exponent=j, residues=s % 1.0, other_residues=_signed_residues(x_other, j) % 1.0,
                                  chance=_chance(floor_abs, j, n_fits))
    return coverage, None


def _fmt(residues):
    return "[" + ", ".join(f"{v:.6f}" for v in residues) + "]"


def _explain(findings, off_grid, coverage, grid, alpha_test):
    lines = []
    for f in findings:
        other = f["other_residues"]
        lines.append(
            f"FAIL {f['side']} coordinate {f['coordinate']}: residues frac(x / 2^{f['exponent']}) are constant "
            f"and non-zero over {len(f['residues'])} fits, {_fmt(f['residues'])} (other side: {_fmt(other)}); "
            f"chance for a rounded release <= {f['chance']:.1e}. The release carries the unrounded centre's "
            "low bits (centre + on-grid noise instead of round(centre) + noise)."
        )
    if off_grid:
        first = off_grid[0]
        lines.append(f"FAIL {len(off_grid)} value(s)/coordinate(s) off the claimed grid {grid!r}, e.g. {first['side']} fit "
                     f"{first['fit']} coordinate {first['coordinate']}: {first['value']!r} "
                     f"({first['remainder']}).")
    tested = [c for c in coverage if c["tested"] is not None]
    det = [c for c in coverage if c["deterministic"]]
    if not findings and not off_grid:
        lines.append("PASS: no coordinate has constant non-zero residues at any tested grid.")
    if tested:
        los = [c["tested"][0] for c in tested]
        his = [c["tested"][1] for c in tested]
        lines.append(f"Tested {len(tested)} (side, coordinate) pairs at grids 2^{min(los)}..2^{max(his)} "
                     f"(alpha per test {alpha_test:.1e}).")
    untested = [c for c in coverage if not c["deterministic"] and c["tested"] is None]
    if untested:
        lines.append(f"{len(untested)} pair(s) had no grid where a coincidence is improbable (too few fits "
                     "or too little spread).")
    if det:
        lines.append(f"{len(det)} pair(s) are deterministic across fits (no noise reached them): not tested.")
    live = [c for c in coverage if not c["deterministic"]]
    if live:
        bits = min(c["detectable_bits"] for c in live)
        lines.append(f"Power: an unrounded centre would be caught at >= {bits} tested grid(s) on every noisy "
                     "coordinate" + (" (none: the release grid is below what the audit can test)." if bits == 0
                                     else "."))
    return "\n".join(lines)


# --------------------------------------------------------------------------- driver
def released_values(estimator):
    """The released floats of a fitted estimator, flattened into one vector.

    Concatenates whichever of ``coef_``, ``intercept_``, ``mean_``, ``var_``
    and ``best_score_`` are present (and not None).
    """
    parts = []
    for name in ("coef_", "intercept_", "mean_", "var_", "best_score_"):
        value = getattr(estimator, name, None)
        if value is not None:
            parts.append(np.ravel(np.asarray(value, dtype=float)))
    if not parts:
        raise ValueError(f"{type(estimator).__name__} has no released attribute to audit.")
    return np.concatenate(parts)


def collect_releases(estimator, data, data_prime, *, n_fits=6, extract=released_values):
    """Fit clones of ``estimator`` ``n_fits`` times on each dataset with OS-entropy noise.

    Parameters
    ----------
    estimator : estimator
        Cloned for every fit, with ``random_state=None`` (the OS CSPRNG: the
        real default) and, if it has one, a fresh unbounded ``accountant``
        so no ledger is charged or exhausted.
    data, data_prime : tuple
        Positional arguments of ``fit`` on ``D`` and ``D'`` (e.g. ``(X, y)``
        or ``(X, y, groups)``).
    n_fits : int, default=6
    extract : callable, default=released_values
        Maps a fitted estimator to the 1-D array of its released floats.

    Returns
    -------
    releases_d, releases_dprime : ndarray of shape (n_fits, k)
    """
    from sklearn.base import clone

    from ..accounting import BudgetAccountant

    def run(args):
        rows = []
        for _ in range(n_fits):
            est = clone(estimator)
            params = {"random_state": None}
            if "accountant" in est.get_params():
                params["accountant"] = BudgetAccountant(math.inf, 1.0)
            est.set_params(**params)
            rows.append(extract(est.fit(*args)))
        return np.array(rows, dtype=float)

    return run(data), run(data_prime)


# --------------------------------------------------------------------------- worst-case neighbours
def extreme_row(n_features, norm, direction=None):
    """A row of l2 norm ``norm`` (the public bound) along ``direction`` (default ``e_1``)."""
    if direction is None:
        direction = np.zeros(n_features)
        direction[0] = 1.0
    direction = np.asarray(direction, dtype=float)
    return norm * direction / np.linalg.norm(direction)


def replace_row(X, y, row, label, index=-1):
    """Row-level neighbour: ``(X, y)`` with row ``index`` replaced by ``row`` and its label by ``label``."""
    X2 = np.array(X, dtype=float, copy=True)
    y2 = np.array(y, copy=True)
    X2[index] = row
    y2[index] = label
    return X2, y2


def replace_user(X, y, groups, rows, labels, user=None):
    """User-level neighbour: user ``user``'s whole block (default: the first user) replaced.

    The new block ``rows``/``labels`` may have any number of rows; it keeps
    the user's identifier, so the number of users (public) is unchanged.
    Returns ``(X', y', groups')``.
    """
    X, y, groups = np.asarray(X, dtype=float), np.asarray(y), np.asarray(groups)
    user = groups[0] if user is None else user
    keep = groups != user
    rows = np.atleast_2d(np.asarray(rows, dtype=float))
    labels = np.broadcast_to(np.asarray(labels, dtype=y.dtype), (rows.shape[0],))
    return (np.vstack([X[keep], rows]), np.concatenate([y[keep], labels]),
            np.concatenate([groups[keep], np.full(rows.shape[0], user, dtype=groups.dtype)]))
