"""Projections against independent references (Dykstra's alternating
projections, the obtuse-angle characterisation) and Lowy's L-Lemma 2.8."""
import numpy as np
import pytest

from sklearn_dpsco._fast._projections import (DomainData, inexact_project_two_balls,
                                              project_ball, project_two_balls)


def _ball(v, c, r):
    u = v - c
    n = np.linalg.norm(u)
    return v.copy() if n <= r else c + u * (r / n)


def _dykstra(v, c1, r1, c2, r2, n_iter=3000):
    """Independent reference: Dykstra's algorithm converges to the projection
    onto the intersection of two convex sets."""
    x = v.copy()
    p = np.zeros_like(v)
    q = np.zeros_like(v)
    for _ in range(n_iter):
        y = _ball(x + p, c1, r1)
        p = x + p - y
        x = _ball(y + q, c2, r2)
        q = y + q - x
    return x


def _instances(seed, n=60):
    rng = np.random.default_rng(seed)
    for _ in range(n):
        d = int(rng.integers(1, 6))
        c1 = rng.normal(size=d)
        c2 = c1 + rng.normal(size=d) * rng.uniform(0.1, 2.0)
        D = np.linalg.norm(c2 - c1)
        r1 = rng.uniform(0.2, 2.0)
        r2 = max(D - r1 + rng.uniform(0.05, 1.5), 0.1)   # intersecting
        v = c1 + rng.normal(size=d) * rng.uniform(0.1, 5.0)
        yield v, c1, r1, c2, r2


def test_project_ball():
    rng = np.random.default_rng(0)
    for _ in range(50):
        d = int(rng.integers(1, 8))
        v, c = rng.normal(size=d) * 3, rng.normal(size=d)
        r = rng.uniform(0.1, 3)
        np.testing.assert_allclose(project_ball(v, c, r), _ball(v, c, r), rtol=1e-14, atol=1e-15)


def _check_projection(x, v, c1, r1, c2, r2, tol=1e-9):
    # feasibility
    assert np.linalg.norm(x - c1) <= r1 * (1 + 1e-12) + 1e-12
    assert np.linalg.norm(x - c2) <= r2 * (1 + 1e-12) + 1e-12
    # obtuse-angle characterisation: <v - x, y - x> <= 0 for feasible y
    rng = np.random.default_rng(1)
    for _ in range(200):
        y = _ball(_ball(x + rng.normal(size=x.shape) * 2, c1, r1), c2, r2)
        if np.linalg.norm(y - c1) <= r1 and np.linalg.norm(y - c2) <= r2:
            assert np.dot(v - x, y - x) <= tol * (1 + np.linalg.norm(v - x))


def test_two_balls_against_dykstra():
    for v, c1, r1, c2, r2 in _instances(2, n=40):
        x = project_two_balls(v, c1, r1, c2, r2)
        ref = _dykstra(v, c1, r1, c2, r2)
        _check_projection(x, v, c1, r1, c2, r2)
        # the exact projection is never farther than the reference point
        assert np.linalg.norm(x - v) <= np.linalg.norm(ref - v) + 1e-9
        np.testing.assert_allclose(x, ref, atol=1e-5)


def test_two_balls_degenerate_cases():
    c1, c2 = np.zeros(3), np.array([1.0, 0.0, 0.0])
    # point on the axis, both constraints active: any point of the circle
    x = project_two_balls(np.array([-5.0, 0, 0]), c1, 0.8, c2, 0.8)
    _check_projection(x, np.array([-5.0, 0, 0]), c1, 0.8, c2, 0.8)
    # a ball inside the other: projection on the smaller ball
    v = np.array([3.0, 1.0, -2.0])
    np.testing.assert_allclose(project_two_balls(v, c1, 5.0, c2, 0.5), _ball(v, c2, 0.5))
    # concentric
    np.testing.assert_allclose(project_two_balls(v, c1, 2.0, c1, 1.0), _ball(v, c1, 1.0))
    # inside both: unchanged
    np.testing.assert_array_equal(project_two_balls(c2 * 0.5, c1, 1.0, c2, 1.0), c2 * 0.5)
    # nearly tangent balls
    x = project_two_balls(np.array([0.5, 3.0, 0.0]), c1, 0.5 + 1e-9, c2, 0.5)
    np.testing.assert_allclose(x, [0.5, 0, 0], atol=1e-4)
    with pytest.raises(ValueError, match="intersect"):
        project_two_balls(v, c1, 0.3, c2, 0.3)


@pytest.mark.parametrize("xi", [1e-1, 1e-3, 1e-6])
def test_inexact_projection_lemma_2_8(xi):
    for v, cw, rw, c, r in _instances(3, n=40):
        c = _ball(c, cw, rw)   # Lowy's use: the centre is a point of W
        x = inexact_project_two_balls(v, cw, rw, c, r, xi)
        exact = project_two_balls(v, cw, rw, c, r)
        assert np.linalg.norm(x - cw) <= rw * (1 + 1e-12) + 1e-12
        assert np.linalg.norm(x - c) <= r * (1 + 1e-12) + 1e-12
        assert np.linalg.norm(x - exact) <= xi + 1e-9


def test_domain_data():
    d = 4
    rng = np.random.default_rng(5)
    c1, c2 = rng.normal(size=d), rng.normal(size=d)
    v = rng.normal(size=d) * 4
    np.testing.assert_array_equal(DomainData(d).project(v), v)
    np.testing.assert_allclose(DomainData(d, c1, 1.0).project(v), _ball(v, c1, 1.0))
    dom = DomainData(d, c1, 2.0, c2, 2.5)
    np.testing.assert_allclose(dom.project(v), project_two_balls(v, c1, 2.0, c2, 2.5))
    assert dom.diameter == 4.0
    with pytest.raises(ValueError):
        DomainData(d, None, None, c2, 1.0)
    with pytest.raises(ValueError):
        DomainData(d, c1, 0.1, c1 + 10, 0.1)
