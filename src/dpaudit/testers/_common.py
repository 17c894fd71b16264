"""The skeleton testers built around one estimator share (written once)."""

from __future__ import annotations

from .base import Tester

__all__ = ["EstimatorTester"]


class EstimatorTester(Tester):
    """A tester that holds one estimator, given either ready-made or by its keyword arguments.

    Subclasses set ``estimator_class`` (called with the keyword arguments when no estimator is
    given) besides ``name`` and implement :meth:`test`. :meth:`config` records the tester's name
    and the estimator's hyper-parameters.

    Parameters
    ----------
    estimator : object with ``config() -> dict``, optional
        Default ``estimator_class(**estimator_kwargs)``.
    **estimator_kwargs
        Shortcut for ``estimator_class(**estimator_kwargs)``.

    Raises
    ------
    ValueError
        If both an estimator and keyword arguments are given (and whatever the estimator's
        constructor raises for invalid keyword arguments).
    """

    estimator_class: type = type(None)

    def __init__(self, estimator=None, **estimator_kwargs):
        if estimator is None:
            estimator = self.estimator_class(**estimator_kwargs)
        elif estimator_kwargs:
            raise ValueError(
                f"give either estimator or estimator keyword arguments, not both (got {sorted(estimator_kwargs)})"
            )
        self.estimator = estimator

    def config(self) -> dict:
        """``{"tester": name, **estimator.config()}``, recorded in audit reports."""
        return {"tester": self.name, **self.estimator.config()}
