"""Finders: ask/tell proposals of neighbouring dataset pairs (paper 000, §5)."""

from .finders import ChainFinder, Finder, GridFinder, RandomFinder

__all__ = ["ChainFinder", "Finder", "GridFinder", "RandomFinder"]
