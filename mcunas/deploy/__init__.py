"""Deployable projects: the chosen model, ready to build for its board (no TensorFlow)."""

from mcunas.deploy.project import ArenaFigure, arena_size, write_project

__all__ = ["ArenaFigure", "arena_size", "write_project"]
