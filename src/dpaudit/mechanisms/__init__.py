"""Mechanisms under audit: the protocol, the zoo of reference mechanisms and library adapters."""

from .base import CallableMechanism, Mechanism, describe_dataset, draw

__all__ = ["CallableMechanism", "Mechanism", "describe_dataset", "draw"]
