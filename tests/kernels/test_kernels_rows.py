"""RowData: dense and CSR rows, the virtual intercept column, against NumPy."""
import pickle

import numpy as np
import pytest
import scipy.sparse as sp

from sklearn_dpsco._fast._rows import RowData


def _data(seed=0, n=30, d=7, density=0.4):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)) * (rng.random((n, d)) < density)
    X[3] = 0.0  # a zero row
    return X


def _variants(X, s):
    csr32 = sp.csr_matrix(X)
    csr32.indices = csr32.indices.astype(np.int32)
    csr32.indptr = csr32.indptr.astype(np.int32)
    csr64 = sp.csr_matrix(X)
    csr64.indices = csr64.indices.astype(np.int64)
    csr64.indptr = csr64.indptr.astype(np.int64)
    return [RowData(X, s), RowData(np.asfortranarray(X), s), RowData(csr32, s),
            RowData(csr64, s), RowData(sp.csr_array(X), s)]


@pytest.mark.parametrize("s", [0.0, 1.0, 2.5])
def test_rows_match_numpy(s):
    X = _data()
    Xa = np.hstack([X, np.full((X.shape[0], 1), s)]) if s > 0 else X
    rng = np.random.default_rng(1)
    w = rng.normal(size=Xa.shape[1])
    a = rng.normal(size=X.shape[0])
    for rows in _variants(X, s):
        assert rows.n_samples == X.shape[0]
        assert rows.n_features == Xa.shape[1]
        np.testing.assert_allclose(rows.matvec(w), Xa @ w, rtol=1e-13, atol=1e-13)
        np.testing.assert_allclose(rows.rmatvec(a), Xa.T @ a, rtol=1e-13, atol=1e-13)
        np.testing.assert_allclose(rows.row_norms(), np.linalg.norm(Xa, axis=1), rtol=1e-14)
        np.testing.assert_allclose(rows.row_norms(squared=True), (Xa ** 2).sum(1), rtol=1e-14)
        np.testing.assert_array_equal(rows.toarray(), Xa)


def test_csr_duplicates_are_summed():
    # row 0 stores column 1 twice: the row is (0, 3), norm 3 (not sqrt(5))
    X = sp.csr_matrix((np.array([1.0, 2.0, 4.0]), np.array([1, 1, 0]), np.array([0, 2, 3])),
                      shape=(2, 2))
    assert not X.has_canonical_format
    rows = RowData(X)
    np.testing.assert_allclose(rows.row_norms(), [3.0, 4.0])
    np.testing.assert_allclose(rows.matvec(np.array([1.0, 1.0])), [3.0, 4.0])


def test_other_sparse_formats_and_dtypes():
    X = _data(2)
    ref = RowData(X, 1.0)
    for Xs in (sp.coo_matrix(X), sp.csc_matrix(X), sp.csr_matrix(X.astype(np.float32))):
        rows = RowData(Xs, 1.0)
        np.testing.assert_allclose(rows.row_norms(), ref.row_norms(), rtol=1e-6)
    rows = RowData(X.astype(np.float32))
    assert rows.n_features == X.shape[1]


def test_pickle_roundtrip():
    X = _data(3)
    for rows in _variants(X, 1.5):
        clone = pickle.loads(pickle.dumps(rows))
        assert clone.is_sparse == rows.is_sparse
        assert clone.intercept_scaling == rows.intercept_scaling
        np.testing.assert_array_equal(clone.row_norms(), rows.row_norms())
        w = np.arange(rows.n_features, dtype=float)
        np.testing.assert_array_equal(clone.matvec(w), rows.matvec(w))


def test_rejects_bad_input():
    X = _data(4)
    X[0, 0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        RowData(X)
    with pytest.raises(ValueError, match="NaN"):
        RowData(sp.csr_matrix(X))
    with pytest.raises(ValueError, match="intercept_scaling"):
        RowData(np.ones((2, 2)), -1.0)
    with pytest.raises(ValueError, match="2-D"):
        RowData(np.ones(3))
    rows = RowData(np.ones((2, 2)))
    with pytest.raises(ValueError, match="shape"):
        rows.matvec(np.ones(3))


def test_empty_matrix():
    rows = RowData(np.zeros((0, 3)), 1.0)
    assert rows.n_samples == 0 and rows.n_features == 4
    assert rows.matvec(np.ones(4)).shape == (0,)
    np.testing.assert_array_equal(rows.rmatvec(np.zeros(0)), np.zeros(4))


@pytest.mark.parametrize("order", ["C", "F"])
def test_column_affine_is_numpys_two_roundings(order):
    # the column map in one compiled pass: bit for bit NumPy's (X - centre) then * factor
    from sklearn_dpsco._fast._rows import column_affine

    rng = np.random.default_rng(7)
    X = np.asarray(rng.standard_cauchy((501, 13)) * np.exp(rng.uniform(-30, 30, size=13)), order=order)
    X[3, 4], X[10, :] = 0.0, -0.0
    centre, factor = rng.normal(size=13) * 1e3, 1.0 / np.exp(rng.uniform(-20, 20, size=13))
    expected = X - centre
    np.multiply(expected, factor, out=expected)
    got = column_affine(X, centre, factor)
    assert got.flags.c_contiguous
    np.testing.assert_array_equal(got.view(np.uint64), expected.view(np.uint64))
    # a row scale in the same pass: the products of NumPy's out *= scale after the map
    for scale in (1.0, 0.37, 3.0e-7):
        scaled = expected * scale
        np.testing.assert_array_equal(column_affine(X, centre, factor, scale).view(np.uint64), scaled.view(np.uint64))
    with pytest.raises(ValueError):
        column_affine(X, centre[:3], factor)


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_rowdata_refuses_non_finite_entries(bad):
    # finiteness is read from the squared norms: a single bad entry anywhere still refuses
    X = np.random.default_rng(0).normal(size=(40, 3))
    X[17, 2] = bad
    with pytest.raises(ValueError, match="NaN or infinity"):
        RowData(X)
    with pytest.raises(ValueError, match="NaN or infinity"):
        RowData(X, intercept_scaling=1.0)
    big = np.full((2, 2), 1e300)  # finite entries whose squared norm overflows: accepted, norms finite
    assert np.all(np.isfinite(RowData(big).row_norms()))


@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("intercept", [0.0, 1.5])
@pytest.mark.parametrize("n", [37, 38, 39, 40])
def test_rmatvec_adds_the_rows_in_order(sparse, intercept, n):
    # dense rows are added four per sweep: each coordinate still gets a_i x_ij added row after row, as a
    # loop of axpy (out + a_i x_i) adds them, zero coefficients skipped: the same floats
    rng = np.random.default_rng(3)
    X = rng.normal(size=(n + 5, 6)) * np.exp(rng.normal(size=(n + 5, 1)) * 3)
    a = rng.normal(size=n)
    a[rng.uniform(size=n) < 0.3] = 0.0
    Xa = np.hstack([X, np.full((n + 5, 1), intercept)]) if intercept > 0 else X
    ref = np.zeros(Xa.shape[1])
    for i in range(n):
        if a[i] != 0.0:
            ref = ref + a[i] * Xa[i + 3]
    rows = RowData(sp.csr_matrix(X) if sparse else X, intercept)
    assert np.array_equal(rows.rmatvec(a, 3, n + 3), ref)


def test_targets_within_widths_is_the_numpy_clip_verdict():
    # condition_rows' fast path: True exactly when its NumPy clip (centre 0) leaves every target equal
    from sklearn_dpsco._fast._rows import targets_within_widths

    rng = np.random.default_rng(11)
    for trial in range(300):
        n = int(rng.integers(0, 40))
        norms = np.exp(rng.normal(size=n) * 3)
        sat = np.where(rng.uniform(size=n) < 0.5, 0.0, np.exp(rng.normal(size=n) * 3))
        slack, size = float(np.exp(rng.normal() * 2)), float(rng.choice([0.0, 1.0, 1e3]))
        t = slack * norms
        width = (1.0 + 2.0**-20) * np.minimum(sat, t) + t + 2.0**-20 * norms * size
        y = rng.normal(size=n) * width * rng.choice([0.5, 1.0, 2.0])
        if n and trial % 3 == 0:  # targets exactly at a width, and just beyond it
            i = rng.integers(n)
            y[i] = rng.choice([-1.0, 1.0]) * width[i] * rng.choice([1.0, 1.0 + 2.0**-52])
        if n and trial % 17 == 0:
            (sat if trial % 2 else y)[rng.integers(n)] = rng.choice([np.nan, np.inf])
        with np.errstate(invalid="ignore"):
            width = (1.0 + 2.0**-20) * np.minimum(sat, t) + t + 2.0**-20 * norms * size
            z0 = np.zeros(n)
            expected = np.array_equal(np.clip(y, z0 - width, z0 + width), y)
        assert targets_within_widths(y, norms, sat, slack, size) == expected


def test_norms_from_squares_is_numpys_sqrt():
    # safe_row_norms' compiled tail: sqrt(sq + s2) bit for bit, and the count of rows its fallback takes
    from sklearn_dpsco._fast._rows import norms_from_squares

    rng = np.random.default_rng(5)
    sq = np.exp(rng.uniform(-2200, 1500, size=400) * np.log(2.0) / 2.0)
    sq[:6] = [0.0, np.inf, np.nan, 2.0**-900, 2.0**-901, 1e308]
    for s2 in (0.0, 1.0, 2.25, 2.0**-905):
        out = np.empty_like(sq)
        with np.errstate(all="ignore"):
            expected = np.sqrt(sq + s2)
            bad = ~(np.isfinite(sq) & (sq + s2 >= 2.0**-900))
        assert norms_from_squares(sq, s2, out) == bad.sum()
        np.testing.assert_array_equal(out.view(np.uint64), expected.view(np.uint64))


@pytest.mark.parametrize("s", [0.0, 1.0])
def test_safe_row_norms_fast_path_is_the_numpy_formula(s):
    from sklearn_dpsco._solvers._core._data import safe_row_norms

    rng = np.random.default_rng(8)
    X = rng.normal(size=(300, 7)) * np.exp(rng.uniform(-40, 40, size=(300, 1)))
    expected = np.sqrt(np.einsum("ij,ij->i", X, X) + s**2)
    np.testing.assert_array_equal(safe_row_norms(X, s), expected)
    X[4] = 1e200  # a row whose sum of squares overflows takes the scaled fallback, as before
    got = safe_row_norms(X, s)
    assert np.isfinite(got[4]) and got[4] == pytest.approx(np.sqrt(7) * 1e200, rel=1e-12)


def test_targets_within_norms_reads_the_rows_own_norms():
    from sklearn_dpsco._fast._rows import targets_within_norms

    rng = np.random.default_rng(9)
    X = rng.normal(size=(50, 4))
    rows = RowData(X, 1.0)
    norms = rows.row_norms()
    y = 0.5 * norms * rng.uniform(-1, 1, size=50)
    assert targets_within_norms(rows, y, 0.5, 0.5, 1e3)
    y[7] = 0.5 * norms[7] * (1 + 2.0**-40)
    assert not targets_within_norms(rows, y, 0.5, 0.5, 1e3)
    y[7] = np.nan
    assert not targets_within_norms(rows, y, 0.5, 0.5, 1e3)
    assert not targets_within_norms(rows, 0.0 * y, 0.5, 2.0 * norms.min(), 1e3)  # a norm below the range
    with pytest.raises(ValueError):
        targets_within_norms(rows, y[:3], 0.5, 0.0, 1e3)


@pytest.mark.parametrize("scale", [1.0, 0.37])
@pytest.mark.parametrize("fortran", [False, True])
def test_column_affine_clip_is_numpys_clip(scale, fortran):
    # the clip in the map's pass gives np.clip's floats: NaN, infinities, signed zeros, infinite bounds, and a
    # zero bound (NumPy's own clip there)
    from sklearn_dpsco._fast._rows import column_affine

    rng = np.random.default_rng(7)
    for t in range(300):
        n, d = int(rng.integers(0, 40)), int(rng.integers(1, 7))
        X = rng.standard_normal((n, d)) * 10 ** rng.uniform(-3, 3, d)
        m = rng.uniform(size=X.shape)
        X[m < 0.05] = np.nan
        X[(m > 0.05) & (m < 0.08)] = np.inf
        X[(m > 0.08) & (m < 0.1)] = -0.0
        X[(m > 0.1) & (m < 0.12)] = -np.inf
        c, f = rng.standard_normal(d), rng.uniform(0.1, 3, d)
        b = rng.uniform(0, 3, d)
        b[rng.uniform(size=d) < 0.3] = np.inf
        if t % 7 == 0:
            b[0] = 0.0
        ref = column_affine(X, c, f, scale)
        np.clip(ref, -b, b, out=ref)
        out = column_affine(np.asfortranarray(X) if fortran else X, c, f, scale, b)
        assert out.flags.c_contiguous and out.tobytes() == ref.tobytes()
    with pytest.raises(ValueError, match="bound"):
        column_affine(np.ones((2, 3)), np.zeros(3), np.ones(3), 1.0, np.ones(2))


@pytest.mark.parametrize("clip", [None, "positive", "zero"])
@pytest.mark.parametrize("fortran", [False, True])
def test_column_affine_row_squares_are_rowdatas(clip, fortran):
    # sq_out: each mapped row's sum of squares as RowData sums it (its own dense_dot pass over the rows), bit for
    # bit, for the fused flat pass, the strided loops and NumPy's clip after a zero bound; RowData built from
    # them (raw_sq_norms) has RowData's own squared norms and norms, with and without the intercept's column
    from sklearn_dpsco._fast._rows import column_affine

    rng = np.random.default_rng(11)
    for t in range(60):
        n, d = int(rng.integers(0, 300)), int(rng.integers(1, 23))
        X = rng.standard_normal((n, d)) * 10 ** rng.uniform(-3, 3, d)
        c, f = rng.standard_normal(d), rng.uniform(0.1, 3, d)
        b = None if clip is None else rng.uniform(0.5, 3, d)
        if clip == "zero":
            b[0] = 0.0
        sq = np.full(n, np.nan)
        out = column_affine(np.asfortranarray(X) if fortran else X, c, f, 0.37 if t % 2 else 1.0, b, sq)
        assert out.tobytes() == column_affine(X, c, f, 0.37 if t % 2 else 1.0, b).tobytes()
        assert sq.tobytes() == RowData(out).row_norms(squared=True).tobytes()
        for s in (0.0, 1.5):
            ref, fused = RowData(out, s), RowData(out, s, raw_sq_norms=sq)
            assert fused.row_norms(squared=True).tobytes() == ref.row_norms(squared=True).tobytes()
            assert fused.row_norms().tobytes() == ref.row_norms().tobytes()
    with pytest.raises(ValueError, match="sq_out"):
        column_affine(np.ones((2, 3)), np.zeros(3), np.ones(3), 1.0, None, np.empty(3))
    with pytest.raises(ValueError, match="raw_sq_norms"):
        RowData(np.ones((2, 3)), raw_sq_norms=np.ones(3))


@pytest.mark.parametrize("s", [0.0, 1.5])
def test_take_reads_the_rows_norms_from_the_cache(s):
    # RowData.take: the gathered rows X[index] and, bit for bit, the norms RowData computes on them itself
    rng = np.random.default_rng(12)
    X = rng.standard_normal((500, 9)) * 10 ** rng.uniform(-200, 200, size=(500, 1))  # fast path and fallback
    rows = RowData(X, s)
    for index in (np.arange(0), rng.choice(500, 37, replace=False), np.arange(500)[::-1]):
        sub_X, sub = rows.take(index)
        ref = RowData(X[index], s)
        assert sub_X.flags.c_contiguous and np.array_equal(sub_X, X[index])
        assert sub.row_norms(squared=True).tobytes() == ref.row_norms(squared=True).tobytes()
        assert sub.row_norms().tobytes() == ref.row_norms().tobytes()
        assert sub.n_features == ref.n_features and sub.intercept_scaling == s
    with pytest.raises(ValueError, match="dense"):
        RowData(sp.csr_matrix(X), s).take([0, 1])
    with pytest.raises(ValueError, match="norms_of"):
        RowData(X[:3], s, norms_of=(np.ones(2), np.ones(3)))
