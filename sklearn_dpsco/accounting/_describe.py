"""Privacy events in words (``describe_event``): a module of its own, with no import of the ledgers, so the
ledgers' refusals can name an event without a deferred import (tests/integration/test_import_graph.py)."""

from collections import Counter

from ._events import (
    ApproxDPEvent,
    ComposedEvent,
    GaussianEvent,
    LaplaceEvent,
    ParallelComposedEvent,
    PureDPEvent,
    SelfComposedEvent,
    ZCDPEvent,
)

__all__ = ["describe_event"]


# -- events in words ----------------------------------------------------------------------------
def _leaf_name(event):
    if isinstance(event, LaplaceEvent):
        return f"Laplace ({event.norm})"
    if isinstance(event, GaussianEvent):
        return "Gaussian"
    if isinstance(event, ZCDPEvent):
        return "zCDP"
    if isinstance(event, PureDPEvent):
        return "pure DP"
    if isinstance(event, ApproxDPEvent):
        return "pure DP" if event.delta == 0 else "approximate DP"
    return type(event).__name__


def _leaf_counts(event, k=1, counts=None):
    counts = Counter() if counts is None else counts
    if isinstance(event, ComposedEvent):
        for part in event.events:
            _leaf_counts(part, k, counts)
    elif isinstance(event, SelfComposedEvent):
        _leaf_counts(event.event, k * event.count, counts)
    elif isinstance(event, ParallelComposedEvent):
        # disjoint parts: the parts compose to the worst one, so name the kinds, not a count
        for part in event.events:
            for name in _leaf_counts(part):
                counts.setdefault(name, 0)
    else:
        counts[_leaf_name(event)] += k
    return counts


def describe_event(event):
    """A short description of the mechanisms in ``event`` (e.g. ``"Laplace (l1) x2 + zCDP"``).

    Parameters
    ----------
    event : PrivacyEvent

    Returns
    -------
    str
        The kinds of the noise-adding parts, with their counts;
        ``"parallel: ..."`` for a composition over disjoint parts of the
        data (whose total is that of its worst part).
    """
    counts = _leaf_counts(event)
    text = " + ".join(name if n <= 1 else f"{name} x{n}" for name, n in counts.items())
    return f"parallel: {text}" if isinstance(event, ParallelComposedEvent) else text
