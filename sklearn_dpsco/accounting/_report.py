"""A read-only privacy report: spends, running totals against a ceiling, and the guarantee in words.

:class:`PrivacyReport` holds a table of spends (one row per recorded spend:
its label, event type, mechanism, privacy unit, its own (epsilon, delta) and
the running total) and the sentence stating what the total guarantees.
:func:`spend_rows` builds the table from events, composing them through
:mod:`._composition` exactly as :meth:`BudgetAccountant.total` does, so the
last running total of a ledger's report equals ``accountant.total()``;
:func:`ledger_report` is the report of a ledger. Nothing here spends or
writes: a report only reads events and ledger entries.

The reports of estimators, pipelines and searches (which know the public
parameters a guarantee rests on) are built by
:func:`sklearn_dpsco.privacy_report` on top of these. Units and
neighbouring relations: doc/privacy/accounting.rst, "Privacy units".
"""

import html
import math

from .._param_checks import check_delta
from ._composition import PrivacyProfile, profile_epsilon, profile_of
from ._describe import describe_event

__all__ = [
    "COLUMNS",
    "PrivacyReport",
    "describe_event",
    "format_value",
    "ledger_report",
    "neighbouring_relation",
    "read_total",
    "spend_rows",
]

#: The columns of a report's table, in order.
COLUMNS = (
    "spend",
    "label",
    "event",
    "mechanism",
    "unit",
    "epsilon",
    "delta",
    "total_epsilon",
    "total_delta",
    "of_ceiling",
)

_RELATIONS = {
    "row": "replace-one-row neighbours (datasets of the same public size n that differ in one row, features and label)",
    "user": (
        "replace-one-user neighbours (datasets with the same public number of users that differ in all rows of "
        "one user, users identified by groups)"
    ),
}


def neighbouring_relation(unit):
    """The neighbouring relation of a privacy unit, in words (``None``: no private spend yet)."""
    if unit is None:
        return "no neighbouring relation yet (nothing private was recorded)"
    return _RELATIONS[unit]


# -- the table -----------------------------------------------------------------------------------
def read_total(profile, delta):
    """(epsilon, delta) of ``profile``: at ``delta`` when it has Gaussian / zCDP parts, else its own delta."""
    if profile.needs_delta:
        if delta is None:
            raise ValueError(
                "these spends have Gaussian or zCDP parts and there is no delta to report them at (no delta "
                "ceiling): pass delta=, e.g. privacy_report(obj, delta=1e-6)."
            )
        return profile_epsilon(profile, delta), float(delta)
    return profile_epsilon(profile, profile.approx_delta), profile.approx_delta


def spend_rows(spends, delta, ceiling_epsilon=math.inf):
    """The report's rows for ``spends``, oldest first, with running totals.

    Parameters
    ----------
    spends : iterable of (label, event, unit)
        One triple per spend: its label, its :class:`PrivacyEvent` and its
        privacy unit (``"row"``, ``"user"`` or None).
    delta : float or None
        The total delta at which epsilons of Gaussian / zCDP parts are read
        (the ledger's delta ceiling). Spends without such parts are read at
        their own delta, as :meth:`BudgetAccountant.total` does.
    ceiling_epsilon : float, default=inf
        The epsilon ceiling the running total is compared with.

    Returns
    -------
    rows : list of dict
        Keys :data:`COLUMNS`. ``of_ceiling`` is the running total epsilon as
        a fraction of ``ceiling_epsilon`` (None for an infinite ceiling).
    total : PrivacyProfile
        The composition of all spends.
    """
    rows = []
    total = PrivacyProfile()
    for i, (label, event, unit) in enumerate(spends, start=1):
        own = profile_of(event)
        total = total + own
        eps, dlt = read_total(own, delta)
        tot_eps, tot_dlt = read_total(total, delta)
        of_ceiling = None if math.isinf(ceiling_epsilon) or ceiling_epsilon <= 0 else tot_eps / ceiling_epsilon
        rows.append(
            {
                "spend": i,
                "label": str(label),
                "event": type(event).__name__,
                "mechanism": describe_event(event),
                "unit": unit,
                "epsilon": eps,
                "delta": dlt,
                "total_epsilon": tot_eps,
                "total_delta": tot_dlt,
                "of_ceiling": of_ceiling,
            }
        )
    return rows, total


# -- the report ----------------------------------------------------------------------------------
def format_value(value):
    if value is None:
        return ""
    if isinstance(value, float):
        if value == 0:
            return "0"
        if math.isinf(value):
            return "inf"
        return f"{value:.4g}"
    return str(value)


def _fmt_parameters(params):
    return ", ".join(f"{k}={'None' if v is None else format_value(v)}" for k, v in params.items()) or "(none)"


def _fmt_fraction(value):
    return "" if value is None else f"{100 * value:.1f}%"


def _cell(row, column):
    return _fmt_fraction(row[column]) if column == "of_ceiling" else format_value(row[column])


class PrivacyReport:
    """What a private object spent, and what its total guarantees. Read-only.

    Build it with :func:`sklearn_dpsco.privacy_report`. ``repr`` prints a
    plain-text table and the guarantee; in a notebook the report renders as
    an HTML table (``_repr_html_``).

    Parameters
    ----------
    subject : str
        What the report is about (e.g. ``"DPLinearRegressor"``, ``"ledger"``).
    rows : list of dict
        One dict per spend, keys :data:`COLUMNS` (see :func:`spend_rows`).
    total : tuple of float
        ``(epsilon, delta)`` of all spends composed.
    ceiling : tuple of float or None
        ``(epsilon, delta)`` the total is held against (a ledger's ceiling,
        an estimator's or pipeline's budget); None when there is none.
    privacy_unit : {"row", "user"} or None
        The unit the total holds for.
    guarantee : str
        The guarantee in words: unit, neighbouring relation, and what it
        rests on.
    public_parameters : dict, default=None
        ``{part: {parameter: value}}``: the public parameters the guarantee
        rests on (declared bounds, clip levels, noise path...), per step.
    parts : list of dict, default=None
        How one spend was split inside (a search's candidate fits, selection
        and refit): a breakdown of the spend, not further spends.
    notes : list of str, default=None
        Warnings and remarks (e.g. a step that voids the guarantee).

    Attributes
    ----------
    rows, total, ceiling, privacy_unit, guarantee, public_parameters, parts, notes
        As given.
    table : pandas.DataFrame or list of dict
        The rows as a DataFrame when pandas is installed, else the list of
        dicts.

    See Also
    --------
    sklearn_dpsco.privacy_report : build a report.
    sklearn_dpsco.BudgetAccountant.total : the total a ledger report ends with.
    """

    def __init__(
        self, subject, rows, total, ceiling, privacy_unit, guarantee, public_parameters=None, parts=None, notes=None
    ):
        self.subject = subject
        self.rows = [dict(r) for r in rows]
        self.total = tuple(total)
        self.ceiling = None if ceiling is None else tuple(ceiling)
        self.privacy_unit = privacy_unit
        self.guarantee = guarantee
        self.public_parameters = {k: dict(v) for k, v in (public_parameters or {}).items()}
        self.parts = [dict(p) for p in (parts or [])]
        self.notes = list(notes or [])

    @property
    def table(self):
        """The spends as a :class:`pandas.DataFrame` (columns :data:`COLUMNS`), or a list of dicts without pandas."""
        try:
            import pandas as pd  # optional dependency: the report works without pandas
        except ImportError:
            return [dict(r) for r in self.rows]
        return pd.DataFrame(self.rows, columns=list(COLUMNS))

    def to_dict(self):
        """The report as plain Python objects (for JSON)."""
        return {
            "subject": self.subject,
            "rows": [dict(r) for r in self.rows],
            "total": list(self.total),
            "ceiling": None if self.ceiling is None else list(self.ceiling),
            "privacy_unit": self.privacy_unit,
            "guarantee": self.guarantee,
            "public_parameters": {k: dict(v) for k, v in self.public_parameters.items()},
            "parts": [dict(p) for p in self.parts],
            "notes": list(self.notes),
        }

    # -- rendering ---------------------------------------------------------------------------
    def _header(self):
        total = f"epsilon={format_value(self.total[0])}, delta={format_value(self.total[1])}"
        if self.ceiling is None:
            return f"Privacy report: {self.subject}\nTotal: {total}"
        return (
            f"Privacy report: {self.subject}\nTotal: {total} "
            f"(ceiling epsilon={format_value(self.ceiling[0])}, delta={format_value(self.ceiling[1])})"
        )

    @staticmethod
    def _text_table(columns, rows, cell):
        body = [[cell(r, c) for c in columns] for r in rows]
        widths = [max([len(c)] + [len(b[i]) for b in body]) for i, c in enumerate(columns)]
        lines = ["  ".join(c.ljust(w) for c, w in zip(columns, widths))]
        lines.append("  ".join("-" * w for w in widths))
        lines += ["  ".join(v.ljust(w) for v, w in zip(b, widths)) for b in body]
        return "\n".join(line.rstrip() for line in lines)

    def to_text(self):
        """The report as plain text: header, table of spends, breakdown, parameters, guarantee."""
        out = [self._header(), ""]
        if self.rows:
            out.append(self._text_table(COLUMNS, self.rows, _cell))
        else:
            out.append("(no spends recorded)")
        if self.parts:
            columns = tuple(self.parts[0])
            out += ["", "Breakdown of the spend (one spend, split inside):"]
            out.append(self._text_table(columns, self.parts, lambda r, c: format_value(r.get(c))))
        if self.public_parameters:
            out += ["", "Public parameters the guarantee rests on:"]
            for part, params in self.public_parameters.items():
                out.append(f"  {part}: {_fmt_parameters(params)}")
        out += ["", "Guarantee: " + self.guarantee]
        out += [f"Note: {n}" for n in self.notes]
        return "\n".join(out)

    def __repr__(self):
        return self.to_text()

    def _repr_html_(self):
        esc = html.escape

        def table(columns, rows, cell):
            head = "".join(f"<th>{esc(c)}</th>" for c in columns)
            body = "".join("<tr>" + "".join(f"<td>{esc(cell(r, c))}</td>" for c in columns) + "</tr>" for r in rows)
            return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"

        out = [f"<div class='dpsco-privacy-report'><p><b>{esc(self._header()).replace(chr(10), '<br>')}</b></p>"]
        out.append(table(COLUMNS, self.rows, _cell) if self.rows else "<p>(no spends recorded)</p>")
        if self.parts:
            out.append("<p>Breakdown of the spend (one spend, split inside):</p>")
            out.append(table(tuple(self.parts[0]), self.parts, lambda r, c: format_value(r.get(c))))
        if self.public_parameters:
            items = "".join(
                f"<li>{esc(part)}: {esc(_fmt_parameters(params))}</li>"
                for part, params in self.public_parameters.items()
            )
            out.append(f"<p>Public parameters the guarantee rests on:</p><ul>{items}</ul>")
        out.append(f"<p>Guarantee: {esc(self.guarantee)}</p>")
        out += [f"<p>Note: {esc(n)}</p>" for n in self.notes]
        out.append("</div>")
        return "".join(out)


# -- the report of a ledger ----------------------------------------------------------------------
def _ledger_delta(accountant, delta):
    """The delta a ledger's report reads Gaussian / zCDP spends at: given, else the ceiling's (if < 1)."""
    if delta is not None:
        return check_delta(delta) if delta != 1.0 else 1.0
    return accountant.delta if accountant.delta < 1.0 else None


def ledger_report(accountant, delta=None):
    """The report of a ledger: every entry, running totals against its ceiling, the unit of its total.

    Parameters
    ----------
    accountant : BudgetAccountant
        Read only (its entries and ceiling); nothing is spent.
    delta : float, optional
        The total delta at which Gaussian / zCDP spends are read. Defaults
        to the ledger's delta ceiling, as :meth:`BudgetAccountant.total`.

    Returns
    -------
    PrivacyReport
    """
    entries = accountant.ledger
    read_at = _ledger_delta(accountant, delta)
    rows, total = spend_rows(((e.label, e.event, e.privacy_unit) for e in entries), read_at, accountant.epsilon)
    eps, dlt = read_total(total, read_at) if entries else (0.0, 0.0)
    unit = accountant.unit_of_total
    where = f"SQLite file {accountant.path}" if accountant.path else "memory"
    if not entries:
        guarantee = f"nothing was recorded in this ledger ({where}); its ceiling is unspent."
    else:
        guarantee = (
            f"the {len(entries)} recorded spend{'s' if len(entries) > 1 else ''} together are "
            f"(epsilon={format_value(eps)}, delta={format_value(dlt)})-differentially private "
            f"(unit of privacy: {unit}) with "
            f"respect to {neighbouring_relation(unit)}, composed by the rules of doc/privacy/composition.rst "
            f"(ledger kept in {where}). The ledger records events, not the fits' parameters: each spend's "
            "guarantee rests on the public parameters of the fit that made it (privacy_report(estimator) "
            "lists them)."
        )
    notes = []
    if accountant.privacy_unit is not None:
        notes.append(f"the ledger is declared {accountant.privacy_unit}-level: every total holds for that unit.")
    if accountant.max_items_per_user is not None:
        notes.append(
            f"row-level spends were converted by group privacy over m={accountant.max_items_per_user} rows per "
            "user: a promise, made when the ledger was created, that every user has at most m rows in the data "
            "of every row-level fit charged here (the estimators do not check it)."
        )
    return PrivacyReport(
        "ledger" if not accountant.path else f"ledger {accountant.path}",
        rows,
        (eps, dlt),
        (accountant.epsilon, accountant.delta),
        unit,
        guarantee,
        notes=notes,
    )
