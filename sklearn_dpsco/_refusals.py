"""Refusals before any spend end with "Nothing was spent." (non-negotiable 5: bad input is refused, clearly,
before any budget is spent, and the refusal says so).

Shared by the estimators' fit template (linear_model/_base.py), ``DPStandardScaler``, ``DPPipeline`` and the
private searches; it imports nothing of the package, so any of them may import it.

Only the part of a fit that runs before its first release is wrapped (:func:`refusing_before_any_spend`): a
failure after a release, or after the ledger was charged, is an outcome of the data and never says that nothing
was spent (doc/privacy/accounting.rst).
"""

import contextlib
import contextvars

__all__ = ["RELEASED_UPSTREAM", "nothing_spent", "refusing_before_any_spend", "say_nothing_spent"]

NOTHING_SPENT = "Nothing was spent."

#: Set while a pipeline fits its final step after a private step released on the rows (its name): a refusal of
#: that step (a nested pipeline, an estimator) then says that spend stands.
RELEASED_UPSTREAM = contextvars.ContextVar("dpsco_pipeline_released_upstream", default=None)


def nothing_spent(owner="fit"):
    """The end of a refusal raised before ``owner`` (``"fit"``, ``"pipeline"``) spent: "Nothing was spent.", or,
    in a fit run as the final step of a pipeline after its private step released on the rows, that this fit spent
    nothing but that release stands."""
    upstream = RELEASED_UPSTREAM.get()
    if upstream is None:
        return NOTHING_SPENT
    return (f"Nothing was spent by this {owner}, but the enclosing pipeline's private step {upstream!r} has released "
            "on these rows and spent its share: that spend stands (a failure after a release is an outcome of the "
            "data, doc/privacy/accounting.rst).")


def say_nothing_spent(exc, owner="fit"):
    """End the message of ``exc``, a refusal raised before ``owner`` spent anything, with :func:`nothing_spent`
    when it does not say so already (scikit-learn's checks of the parameters and of ``X`` and ``y``, the shared
    checks of epsilon and delta...). After a pipeline's private step released, a message that says plain
    "Nothing was spent." is told that the release stands.

    The exception keeps its type, attributes and traceback (an ``InvalidParameterError`` stays one, so
    scikit-learn's own checks and user code still catch it); one whose text is not its single string argument
    (``KeyError``...) is left as it is."""
    message = exc.args[0] if len(exc.args) == 1 else None
    if not isinstance(message, str) or str(exc) != message:
        return
    if "nothing was spent" in message.lower():
        ending = nothing_spent(owner)
        if ending != NOTHING_SPENT and NOTHING_SPENT in message and "spend stands" not in message:
            exc.args = (message.replace(NOTHING_SPENT, ending, 1),)
        return
    message = message.rstrip()
    exc.args = (f"{message}{'' if message.endswith('.') else '.'} {nothing_spent(owner)}",)


@contextlib.contextmanager
def refusing_before_any_spend(owner="fit"):
    """Run the checks of a fit before its first release: any ``Exception`` they raise says that nothing was
    spent (:func:`say_nothing_spent`), with its type unchanged. Wrap nothing that releases or spends."""
    try:
        yield
    except Exception as exc:
        say_nothing_spent(exc, owner)
        raise
