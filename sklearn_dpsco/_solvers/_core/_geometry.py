"""Euclidean projections used as post-processing of private outputs (NumPy)."""

import numpy as np

__all__ = ["project_ball", "project_two_balls"]


def project_ball(v, center, radius):
    """Projection of ``v`` onto the closed ball ``B(center, radius)``."""
    v = np.asarray(v, dtype=float)
    diff = v - center
    norm = np.linalg.norm(diff)
    if norm <= radius:
        return v.copy()
    return center + diff * (radius / norm)


def project_two_balls(v, c1, r1, c2, r2):
    """Exact projection of ``v`` onto ``B(c1, r1) ∩ B(c2, r2)`` (assumed non-empty).

    KKT: if projecting on one ball lands in the other, that is the answer;
    otherwise both constraints are active and the projection is the point of
    the intersection of the two spheres (a (d-2)-sphere in the hyperplane
    orthogonal to ``c2 - c1``) closest to ``v``.
    """
    v = np.asarray(v, dtype=float)
    c1 = np.asarray(c1, dtype=float)
    c2 = np.asarray(c2, dtype=float)
    if np.linalg.norm(v - c1) <= r1 and np.linalg.norm(v - c2) <= r2:
        return v.copy()
    p1 = project_ball(v, c1, r1)
    if np.linalg.norm(p1 - c2) <= r2 * (1 + 1e-12):
        return p1
    p2 = project_ball(v, c2, r2)
    if np.linalg.norm(p2 - c1) <= r1 * (1 + 1e-12):
        return p2
    axis = c2 - c1
    dist = np.linalg.norm(axis)
    if dist == 0:
        return project_ball(v, c1, min(r1, r2))
    e = axis / dist
    # position t of the spheres' intersection plane along the axis from c1
    t = (dist**2 + r1**2 - r2**2) / (2 * dist)
    rho = np.sqrt(max(r1**2 - t**2, 0.0))
    centre = c1 + t * e
    ortho = (v - centre) - np.dot(v - centre, e) * e
    norm = np.linalg.norm(ortho)
    if norm == 0:  # v on the axis: every point of the circle is closest; pick one
        ortho = np.zeros_like(v)
        j = int(np.argmin(np.abs(e)))
        ortho[j] = 1.0
        ortho -= np.dot(ortho, e) * e
        norm = np.linalg.norm(ortho)
    return centre + rho * ortho / norm
