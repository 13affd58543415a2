"""The budget accountant: a ledger of privacy spent, with a ceiling; and :func:`budget`.

This module holds :class:`BudgetAccountant` (check / spend / ceiling; totals
through :mod:`._composition`, units through :mod:`._units`), its refusal
:class:`BudgetExceededError`, and :func:`budget`, a block on a new ledger.
Where entries are stored is :mod:`._memory_ledger` or :mod:`._sqlite_ledger`
(the record itself is :class:`._entries.LedgerEntry`); the stack of open
blocks is :mod:`._blocks`; which ledger a fit charges is :mod:`._resolve`.

Semantics (doc/privacy/accounting.rst):

* ``spend(event)`` composes the event with everything already recorded and
  appends it only if the total stays within the ceiling; otherwise it raises
  :class:`BudgetExceededError` and records nothing. Check and append happen
  under one lock (one transaction for the SQLite ledger), so concurrent
  spends from threads or processes never overshoot the ceiling.
* An accountant is an *identity*, not a value: ``copy.copy``,
  ``copy.deepcopy`` and :func:`sklearn.base.clone` return the same object, so
  budget spent by a cloned estimator (inside ``cross_val_score``,
  ``GridSearchCV``, ...) lands in the user's one ledger.
* A ledger follows a fit into other processes and into saved models
  (doc/persistence.rst): when an in-memory ledger is first pickled, it moves
  to a private session file (the same transactional store as the session's
  default ledger) and keeps using it, and the pickled copy carries the file,
  the ledger's identity and a snapshot of its entries (:mod:`._portable`).
  A copy unpickled where the ledger is reachable (a joblib loky or Dask
  LocalCluster worker on this machine) charges the same file; elsewhere (a
  later session, a remote machine) it is a detached, read-only record
  (:mod:`._detached`) whose ``check`` and ``spend`` refuse, until
  :meth:`BudgetAccountant.attach` continues it in a file. A budget is never
  forked: every copy that can spend charges the one ledger.
* Every entry records its privacy unit (``"row"`` or ``"user"``). A ledger
  may declare the unit its total must hold for; the rule that admits or
  converts a spend is :func:`~sklearn_dpsco.accounting._units.admit_spend`
  (doc/privacy/accounting.rst, "Privacy units").
* ``with accountant:`` charges every fit inside the block to it, together
  with every enclosing block and any explicit ``accountant`` parameter
  (doc/privacy/accounting.rst, "Budget blocks"; accounting/_nested.py); :meth:`BudgetAccountant.temporary` makes a process-safe
  ledger in a session file.
"""

import contextlib
import math
import numbers
import os
import threading
import time
import weakref

import numpy as np

from .._param_checks import check_delta
from ._blocks import enter_block, exit_block
from ._composition import profile_epsilon, profile_of
from ._describe import describe_event
from ._entries import LedgerEntry, new_ledger_id
from ._events import PrivacyEvent
from ._memory_ledger import MemoryLedger
from ._portable import export_state, move_to_file, restore_storage
from ._session import process_token, session_file
from ._sqlite_ledger import LedgerIdentityError, SQLiteLedger
from ._units import admit_spend, check_privacy_unit

__all__ = ["BudgetAccountant", "BudgetExceededError", "budget"]

# Relative slack when comparing a total with the ceiling, so that e.g. three
# spends of epsilon/3 fit a ceiling of epsilon despite rounding.
_REL_TOL = 1e-9


class BudgetExceededError(ValueError):
    """Raised when a spend would take the ledger above its ceiling. Nothing was spent."""

    def __init__(self, message, *, requested=None, spent=None, ceiling=None):
        super().__init__(message)
        self.requested = requested
        self.spent = spent
        self.ceiling = ceiling


class BudgetAccountant:
    """Ledger of privacy spent, with a ceiling it refuses to cross.

    Parameters
    ----------
    epsilon : float, default=inf
        Ceiling on the total epsilon. ``inf`` records without limiting.
    delta : float, default=0.0
        Ceiling on the total delta, in [0, 1]. With ``delta=0`` only pure-DP
        spends fit; ``delta=1`` means no delta ceiling.
    path : str or os.PathLike, default=None
        Store the ledger in this SQLite file instead of memory: it outlives
        this session, and several processes (on machines sharing the file)
        may share it; the ceiling holds across all of them. Without a path
        the ledger is kept in memory and moves to a private session file
        the first time it is pickled (a joblib or Dask worker on this
        machine, a saved model; doc/persistence.rst).
    privacy_unit : {None, "row", "user"}, default=None
        The neighbouring relation the total must hold for. None: any spend
        is recorded with its unit, and the total holds for the weakest unit
        among them (:attr:`unit_of_total`). ``"row"``: row- and user-level
        spends (user-level DP implies row-level DP). ``"user"``: user-level
        spends only; row-level spends are refused, unless
        ``max_items_per_user`` is given. A persistent ledger keeps the unit
        it was created with (None on reopening adopts it).
    max_items_per_user : int, default=None
        Only with ``privacy_unit="user"``: convert row-level spends by group
        privacy over this many rows (``group_privacy_event``). Declaring
        it is a promise about the data of every row-level fit charged here:
        every user has at most this many rows, and the user-level neighbours
        to protect against change one user's rows *in place* (the same
        number of rows at the same positions: the row count and every other
        row unchanged). A row-level fit reveals its row count and may read
        rows by position (blocks, strides), so a user replaced by another
        number of rows, or by rows elsewhere, is not covered by group
        privacy; the library's user-level estimators cover any replacement
        of a user's rows. The row-level estimators do not check it.

    Attributes
    ----------
    epsilon, delta : float
        The ceiling.
    privacy_unit : {None, "row", "user"}
        The declared unit.
    max_items_per_user : int or None
    ledger_id : str
        The ledger's identity, kept by pickled copies and saved models.
    is_detached : bool
        True for a read-only record loaded where the ledger is unreachable.

    See Also
    --------
    sklearn_dpsco.accounting.PureDPEvent, sklearn_dpsco.accounting.GaussianEvent

    Notes
    -----
    Totals are computed by the composition rules of
    doc/privacy/composition.rst: basic composition for pure and
    (epsilon, delta) parts, exact Gaussian-DP composition for Gaussian
    parts, zCDP for the rest, converted at the ceiling's delta. Units:
    doc/privacy/accounting.rst, "Privacy units".

    Examples
    --------
    >>> from sklearn_dpsco.accounting import BudgetAccountant, PureDPEvent
    >>> acc = BudgetAccountant(epsilon=1.0)
    >>> _ = acc.spend(PureDPEvent(0.4), label="first fit")
    >>> acc.total()
    (0.4, 0.0)
    >>> acc.remaining()
    (0.6, 0.0)
    """

    def __init__(self, epsilon=math.inf, delta=0.0, *, path=None, privacy_unit=None, max_items_per_user=None):
        # numpy scalars count as numbers (np.int64(3), np.float32(3)), as the estimators' epsilon does
        if (isinstance(epsilon, (bool, np.bool_)) or not isinstance(epsilon, numbers.Real)
                or math.isnan(epsilon) or epsilon < 0):
            raise ValueError(f"epsilon ceiling must be a number >= 0 (inf for none), got {epsilon!r}.")
        if delta == 1.0:
            if epsilon != math.inf:
                raise ValueError("delta ceiling 1 means 'no ceiling' and needs epsilon=inf; use delta < 1.")
        else:
            check_delta(delta, "delta ceiling")
        unit = _check_ledger_unit(privacy_unit, max_items_per_user)
        self.epsilon = float(epsilon)
        self.delta = float(delta)
        if path is None:
            self._ledger = MemoryLedger(self.epsilon, self.delta, unit, ledger_id=new_ledger_id())
        else:
            self._ledger = SQLiteLedger(path, self.epsilon, self.delta, unit)

    @classmethod
    def _from_storage(cls, storage):
        acc = cls.__new__(cls)
        acc.epsilon, acc.delta = (float(c) for c in storage.ceiling)
        acc._ledger = storage
        return acc

    @property
    def _store(self):
        """The storage in use (an in-memory ledger that moved to a file answers with the file)."""
        moved = getattr(self._ledger, "moved_to", None)
        return self._ledger if moved is None else moved

    @classmethod
    def temporary(cls, epsilon=math.inf, delta=0.0):
        """A process-safe ledger in a temporary file of this session.

        The file lives in a private directory removed when this process
        exits; worker processes (joblib's loky backend, multiprocessing)
        reopen it by path, so their spends land in this ledger and the
        ceiling holds across all of them.

        Parameters
        ----------
        epsilon, delta : float
            The ceiling, as in the constructor.

        Returns
        -------
        BudgetAccountant
        """
        acc = cls(epsilon, delta)
        acc._ledger = move_to_file(acc._ledger, session_file("ledger"), owner=process_token())
        return acc

    # -- budget blocks ------------------------------------------------------------------
    def __enter__(self):
        """Open a budget block: charge every fit run inside it to this ledger until the block ends.

        Blocks nest, and a fit charges *every* enclosing block, not only the
        innermost: it is checked against each block's ledger before touching
        data (any refusal refuses it, nothing spent anywhere) and recorded
        once in each distinct ledger, all or nothing. A fit given an explicit
        ``accountant`` inside the block charges it *and* the enclosing
        blocks (doc/privacy/accounting.rst, "Budget blocks").
        """
        enter_block(self)
        return self

    def __exit__(self, exc_type, exc, tb):
        exit_block(self)
        return False

    # -- identity under copy / clone -------------------------------------------------
    def __copy__(self):
        return self

    def __deepcopy__(self, memo):
        return self

    def __sklearn_clone__(self):
        # clone(accountant) itself, not only clone of an estimator holding it (scikit-learn >= 1.3's protocol)
        return self

    # -- pickling: workers and saved models (doc/persistence.rst) ----------------------------
    def _portable_state(self, snapshot=True):
        """The state a pickled copy carries; an in-memory ledger first moves to a session file."""
        store, reason = self._store, None
        if store.kind == "memory":
            try:
                store = self._ledger = move_to_file(store, session_file("ledger"), owner=process_token())
            except (OSError, RuntimeError) as exc:  # no writable temporary directory, or a forked copy
                reason = (
                    f"it was kept in memory by process {store.owner_pid}, which could not move it to a file "
                    f"that other processes reach ({exc})."
                )
        _register_origin(self)
        return export_state(store, snapshot=snapshot, reason=reason)

    def __reduce__(self):
        return (_restore_accountant, (self._portable_state(),))

    # skops (and other state-based savers) use these: plain values only
    def __getstate__(self):
        return self._portable_state()

    def __setstate__(self, state):
        other = _restore_accountant(state)
        self.epsilon, self.delta, self._ledger = other.epsilon, other.delta, other._ledger

    def attach(self, path):
        """Continue this ledger in the SQLite file ``path``; return self.

        For a detached record (a saved model loaded where its ledger is
        unreachable): a new file starts with the record's entries, ceiling,
        unit and identity; an existing file must hold this same ledger
        (attached earlier), and is opened. For an in-memory ledger: its
        entries move to the new file. Later spends charge the file, and the
        file can be reopened with ``BudgetAccountant(epsilon, delta,
        path=path)`` or by loading models pickled after this call.

        Attach a detached record once: attaching two loaded copies of one
        saved ledger to two different files would give the budget twice.

        Parameters
        ----------
        path : str or os.PathLike

        Returns
        -------
        self : BudgetAccountant

        Raises
        ------
        ValueError
            The ledger is kept in another file already, or ``path`` holds
            another ledger.
        """
        path = os.fspath(path)
        store = self._store
        if store.kind == "sqlite":
            if os.path.abspath(store.path) == os.path.abspath(path):
                return self
            raise ValueError(
                f"this ledger is kept in {store.path!r} already (processes may be using it); it cannot move. "
                "Give a ledger its file when you create it: BudgetAccountant(..., path=FILE)."
            )
        if store.kind == "memory":
            self._ledger = move_to_file(store, path)
            return self
        if os.path.exists(path):
            new = SQLiteLedger(path, *store.ceiling, store.unit, ledger_id=store.ledger_id, must_exist=True)
            if len(new.rows()) < len(store.rows):
                raise LedgerIdentityError(f"{path!r} holds fewer entries of ledger {store.ledger_id} than this record.")
        else:
            new = SQLiteLedger(
                path, *store.ceiling, store.unit, ledger_id=store.ledger_id, seed=(store.entries(), store.profile())
            )
        self._ledger = new
        return self

    # -- reading ------------------------------------------------------------------------
    @property
    def ledger(self):
        """Tuple of :class:`LedgerEntry`, oldest first."""
        return self._ledger.entries()

    @property
    def path(self):
        """The SQLite file the ledger is kept in (a session file once an in-memory ledger moved), or None."""
        return getattr(self._store, "path", None)

    @property
    def ledger_id(self):
        """The ledger's identity: kept by pickled copies, saved models and :meth:`attach`."""
        return self._store.ledger_id

    @property
    def is_detached(self):
        """True for a read-only record (a saved ledger loaded where it cannot be reached)."""
        return self._store.kind == "detached"

    @property
    def privacy_unit(self):
        """The declared unit (None: undeclared)."""
        return self._ledger.unit[0]

    @property
    def max_items_per_user(self):
        """The declared group size of row-to-user conversion, or None."""
        return self._ledger.unit[1]

    @property
    def unit_of_total(self):
        """The unit :meth:`total` holds for: the declared one, else the weakest among the entries.

        ``"user"`` only if every entry is user-level; None for an empty
        undeclared ledger.
        """
        if self.privacy_unit is not None:
            return self.privacy_unit
        units = {e.privacy_unit for e in self.ledger}
        if not units:
            return None
        return "user" if units == {"user"} else "row"

    def _report_delta(self, profile, delta):
        if delta is not None:
            return check_delta(delta) if delta != 1.0 else 1.0
        if not profile.needs_delta:
            return profile.approx_delta
        if self.delta < 1.0:
            return self.delta
        raise ValueError(
            "the ledger holds Gaussian or zCDP spends and this accountant has no delta "
            "ceiling: pass the delta at which to report epsilon, e.g. total(delta=1e-6)."
        )

    def total(self, delta=None):
        """Total (epsilon, delta) spent.

        Parameters
        ----------
        delta : float, optional
            Report epsilon at this total delta. Defaults to the exact delta
            of the spends when they have no Gaussian/zCDP parts, else to the
            ceiling's delta.

        Returns
        -------
        (epsilon, delta) : tuple of float
        """
        profile = self._ledger.profile()
        delta = self._report_delta(profile, delta)
        return profile_epsilon(profile, delta), delta

    def remaining(self):
        """(epsilon, delta) still available under the ceiling.

        With Gaussian/zCDP spends the epsilon is counted at the ceiling's
        delta, so ``remaining`` is the headroom a further *pure* spend has.
        """
        profile = self._ledger.profile()
        delta_left = max(self.delta - profile.approx_delta, 0.0)
        if self.epsilon == math.inf:
            return math.inf, delta_left
        eps = profile_epsilon(profile, self.delta)
        return max(self.epsilon - eps, 0.0), delta_left

    # -- spending -----------------------------------------------------------------------
    def _within(self, profile):
        if profile.approx_delta > self.delta * (1 + _REL_TOL):
            return False
        if self.epsilon == math.inf:
            return not (profile.needs_delta and self.delta <= profile.approx_delta)
        eps = profile_epsilon(profile, self.delta)
        return eps <= self.epsilon * (1 + _REL_TOL)

    def _refusal(self, event, profile):
        try:
            eps_now = profile_epsilon(profile, self.delta)
        except ValueError:
            eps_now = math.nan
        new = profile + profile_of(event)
        eps_new = profile_epsilon(new, self.delta)
        hint = ""
        if new.needs_delta and self.delta == 0:
            hint = " This accountant allows pure DP only (delta ceiling 0); create it with delta > 0."

        # the event's mechanisms in one line (a fit composes dozens of parts; the event itself is `requested`)
        return BudgetExceededError(
            f"Privacy budget exceeded: spending {type(event).__name__}({describe_event(event)}) would bring the "
            f"total to "
            f"epsilon={eps_new:.6g}, delta={max(new.approx_delta, self.delta if new.needs_delta else 0):.3g} "
            f"against the ceiling epsilon={self.epsilon:.6g}, delta={self.delta:.3g} "
            f"(already spent epsilon={eps_now:.6g}). Nothing was spent.{hint}",
            requested=event,
            spent=eps_now,
            ceiling=(self.epsilon, self.delta),
        )

    def _admit(self, event, privacy_unit):
        """The event, unit and label note recorded for a spend at ``privacy_unit`` (may refuse)."""
        if not isinstance(event, PrivacyEvent):
            raise TypeError(f"expected a PrivacyEvent, got {type(event).__name__}.")
        return admit_spend(self.privacy_unit, self.max_items_per_user, event, privacy_unit)

    def check(self, event, privacy_unit="row"):
        """Raise if ``event`` would not fit now.

        Estimators call this before touching data; the authoritative,
        atomic test is made again by :meth:`spend`.

        Parameters
        ----------
        event : PrivacyEvent
        privacy_unit : {"row", "user"}, default="row"
            The unit ``event`` holds for.

        Raises
        ------
        BudgetExceededError
            The total would exceed the ceiling.
        PrivacyUnitError
            The ledger's declared unit refuses this unit.
        DetachedLedgerError
            This is a read-only record of a saved ledger (:meth:`attach`).
        """
        event, _, _ = self._admit(event, privacy_unit)
        if self.is_detached:
            raise self._store.error()
        profile = self._ledger.profile()
        if not self._within(profile + profile_of(event)):
            raise self._refusal(event, profile)

    def spend(self, event, label="", privacy_unit="row"):
        """Record ``event`` if it fits under the ceiling, atomically.

        Parameters
        ----------
        event : PrivacyEvent
        label : str, default=""
            A note stored with the entry (estimators put their class name).
        privacy_unit : {"row", "user"}, default="row"
            The unit ``event`` holds for (the estimator's ``privacy_unit``).
            On a user-level ledger with ``max_items_per_user``, a row-level
            event is recorded converted by group privacy.

        Returns
        -------
        entry : LedgerEntry

        Raises
        ------
        BudgetExceededError
            If the total would exceed the ceiling. Nothing is recorded.
        PrivacyUnitError
            If the ledger's declared unit refuses this unit. Nothing is recorded.
        DetachedLedgerError
            This is a read-only record of a saved ledger (:meth:`attach`).
        """
        event, unit, note = self._admit(event, privacy_unit)
        entry = LedgerEntry(event=event, label=str(label) + note, timestamp=time.time(), privacy_unit=unit)
        ok, profile = self._ledger.append_if_within(entry, self._within)
        if not ok:
            raise self._refusal(event, profile)
        return entry

    def _retract(self, entry):
        """Undo :meth:`spend` of ``entry`` (the spend of a fit charged to several ledgers failed in another;
        accounting/_nested.py)."""
        self._ledger.retract(entry)

    def __repr__(self):
        where = f", path={self.path!r}" if self.path else (", detached" if self.is_detached else "")
        if self.privacy_unit is not None:
            where += f", privacy_unit={self.privacy_unit!r}"
        if self.max_items_per_user is not None:
            where += f", max_items_per_user={self.max_items_per_user}"
        return f"BudgetAccountant(epsilon={self.epsilon}, delta={self.delta}{where})"


def _check_ledger_unit(privacy_unit, max_items_per_user):
    privacy_unit = check_privacy_unit(privacy_unit, "privacy_unit of a ledger", allow_none=True)
    if max_items_per_user is None:
        return privacy_unit, None
    if privacy_unit != "user":
        raise ValueError(
            "max_items_per_user converts row-level spends for a user-level ledger; it needs privacy_unit='user'."
        )
    if isinstance(max_items_per_user, bool) or int(max_items_per_user) != max_items_per_user or max_items_per_user < 1:
        raise ValueError(f"max_items_per_user must be an integer >= 1, got {max_items_per_user!r}.")
    return privacy_unit, int(max_items_per_user)


def _reattach(ledger):
    # loads accountants pickled before ledgers carried their identity (SQLite ledgers, by path)
    return BudgetAccountant._from_storage(ledger)


# The accountants of this process that were pickled (by ledger identity), and
# those restored here from a pickle (by identity and file; kept, so every task
# a worker runs for one ledger charges one object and reuses its connections).
_registry_lock = threading.Lock()
_origin = weakref.WeakValueDictionary()
_restored = {}


def _register_origin(acc):
    with _registry_lock:
        _origin[acc.ledger_id] = acc


def _restore_accountant(state):
    """Unpickle: this process's own accountant of that ledger if any, else the reopened ledger or its record."""
    key = (state["ledger_id"], state["path"])
    with _registry_lock:
        acc = _origin.get(state["ledger_id"]) or _restored.get(key)
    if acc is not None:
        return acc
    storage = restore_storage(state)
    acc = BudgetAccountant._from_storage(storage)
    if storage.kind == "sqlite":
        with _registry_lock:
            acc = _restored.setdefault(key, acc)
    return acc


@contextlib.contextmanager
def budget(epsilon=math.inf, delta=0.0, *, path=None, process_safe=True):
    """A budget block on one new ledger: every fit inside it is charged to it.

    Blocks nest: a fit inside nested blocks is charged to every enclosing
    block (checked against all before touching data, recorded once in each
    distinct ledger, or in none), and a fit given an explicit ``accountant``
    inside the block charges that ledger and the block's. A fit that exceeds
    any enclosing ceiling is refused (doc/privacy/accounting.rst, "Budget
    blocks").

    Parameters
    ----------
    epsilon : float, default=inf
        Ceiling on the total epsilon of the block's ledger.
    delta : float, default=0.0
        Ceiling on the total delta.
    path : str or os.PathLike, default=None
        Keep the ledger in this SQLite file.
    process_safe : bool, default=True
        Without ``path``: True keeps the ledger in a temporary session file
        (:meth:`BudgetAccountant.temporary`), so fits sent to worker processes
        (joblib's loky backend) charge it too; False keeps it in memory until
        it is first pickled, when it moves to a session file
        (doc/persistence.rst). Both record every fit of every backend.

    Yields
    ------
    accountant : BudgetAccountant
        The block's ledger; read ``total()`` and ``ledger`` after the block.

    Examples
    --------
    >>> import sklearn_dpsco
    >>> from sklearn_dpsco.accounting import PureDPEvent, get_accountant
    >>> with sklearn_dpsco.budget(epsilon=1.0) as acc:
    ...     _ = get_accountant(None).spend(PureDPEvent(0.25))
    >>> acc.total()
    (0.25, 0.0)
    >>> with sklearn_dpsco.budget(epsilon=1.0) as outer:
    ...     with sklearn_dpsco.budget(epsilon=5.0) as inner:
    ...         _ = get_accountant(None).spend(PureDPEvent(0.5))   # recorded in both
    >>> outer.total(), inner.total()
    ((0.5, 0.0), (0.5, 0.0))
    """
    if path is not None:
        accountant = BudgetAccountant(epsilon, delta, path=path)
    elif process_safe:
        accountant = BudgetAccountant.temporary(epsilon, delta)
    else:
        accountant = BudgetAccountant(epsilon, delta)
    with accountant:
        yield accountant
