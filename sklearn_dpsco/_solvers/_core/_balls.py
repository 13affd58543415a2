"""Projection onto an intersection of Euclidean balls (post-processing of private outputs).

The nested domains of the interpolation epochs (doc/privacy/interpolation.rst)
are intersections of up to three balls: the public domain, the epoch's
localized ball and the inner growth epoch's ball. One and two balls are
projected exactly (:mod:`._geometry`). Three balls by enumerating the KKT
active sets: the projection onto the intersection equals the projection onto
the intersection of its active balls, so it is the closest *feasible* one
among the candidates for every non-empty subset (one or two balls: the exact
projections above; all three: the closest point of the three spheres'
intersection). More balls (or a degenerate case) fall back to a fixed number
of Dykstra sweeps. The result is finally pulled along the segment towards an
*anchor* known to lie in every ball, so it is always feasible. The map is
deterministic given its inputs, so its exactness matters for utility only.
"""

import numpy as np

from itertools import combinations

from ._geometry import project_ball, project_two_balls

__all__ = ["project_balls"]

# Dykstra sweeps for three or more balls (a fixed, public count: no
# data-dependent loop length in a private path).
_DYKSTRA_SWEEPS = 200


def _distinct(balls):
    out = []
    for c, r in balls:
        c = np.asarray(c, dtype=float)
        if not any(r == r2 and np.array_equal(c, c2) for c2, r2 in out):
            out.append((c, float(r)))
    return out


def _pull_into(v, balls, anchor):
    """Largest step from ``anchor`` towards ``v`` that stays in every ball."""
    u = v - anchor
    a = float(np.dot(u, u))
    if a == 0.0:
        return anchor.copy()
    t = 1.0
    for c, r in balls:
        w = anchor - c
        b = 2.0 * float(np.dot(w, u))
        cc = float(np.dot(w, w)) - r * r  # <= 0: the anchor is inside
        disc = max(b * b - 4.0 * a * cc, 0.0)
        t = min(t, max(0.0, (-b + np.sqrt(disc)) / (2.0 * a)))
    return anchor + t * u


def _inside(p, balls, rtol=1e-9):
    return all(np.linalg.norm(p - c) <= r * (1.0 + rtol) + 1e-300 for c, r in balls)


def _closest_on_three_spheres(v, balls):
    """Closest point to ``v`` on the intersection of three spheres, or None if it is empty/degenerate."""
    (c1, r1), (c2, r2), (c3, r3) = balls
    # pairwise differences of the sphere equations: an affine subspace {x : A x = b}
    A = 2.0 * np.array([c2 - c1, c3 - c1])
    b = np.array([c2 @ c2 - c1 @ c1 - r2**2 + r1**2, c3 @ c3 - c1 @ c1 - r3**2 + r1**2])
    A_pinv = np.linalg.pinv(A)
    if np.linalg.matrix_rank(A) < 2:
        return None
    m = c1 - A_pinv @ (A @ c1 - b)  # centre of the intersection sphere inside the subspace
    rho2 = r1**2 - float((m - c1) @ (m - c1))
    if rho2 < 0:
        return None
    v_m = v - A_pinv @ (A @ v - b)
    u = v_m - m
    norm = np.linalg.norm(u)
    if norm == 0.0:
        return None
    return m + np.sqrt(rho2) * u / norm


def project_balls(v, balls, anchor=None):
    """Project ``v`` onto the intersection of ``balls`` = [(centre, radius), ...].

    Parameters
    ----------
    v : ndarray
    balls : list of (ndarray, float)
    anchor : ndarray, optional
        A point in every ball; needed (and used) only for three or more
        distinct balls.
    """
    v = np.asarray(v, dtype=float)
    balls = _distinct(balls)
    if len(balls) == 1:
        return project_ball(v, *balls[0])
    if len(balls) == 2:
        (c1, r1), (c2, r2) = balls
        return project_two_balls(v, c1, r1, c2, r2)
    if anchor is None:
        raise ValueError("projecting onto three or more balls needs an anchor point inside all of them.")
    anchor = np.asarray(anchor, dtype=float)
    if len(balls) == 3:
        best = None
        for size in (1, 2, 3):
            for subset in combinations(balls, size):
                if size == 3:
                    p = _closest_on_three_spheres(v, list(subset))
                else:
                    p = project_balls(v, list(subset))
                if p is not None and _inside(p, balls):
                    dist = float(np.linalg.norm(p - v))
                    if best is None or dist < best[0]:
                        best = (dist, p)
        if best is not None:
            return _pull_into(best[1], balls, anchor)
    x = v.copy()
    increments = [np.zeros_like(v) for _ in balls]
    for _ in range(_DYKSTRA_SWEEPS):
        for j, (c, r) in enumerate(balls):
            y = project_ball(x + increments[j], c, r)
            increments[j] = x + increments[j] - y
            x = y
    return _pull_into(x, balls, anchor)
