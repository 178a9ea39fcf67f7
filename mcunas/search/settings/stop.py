"""A stop asked for by a signal, kept until the search acts on it.

``mcunas search`` turns SIGTERM (and Ctrl-C) into ``KeyboardInterrupt``. A
signal handler's exception is lost when it lands while Python runs a
``__del__`` method or a weakref callback (TensorFlow has many): Python
prints "Exception ignored in ..." and goes on, and the search ran to its
end. So the handler also sets this flag, and every finished trial's
progress line (:meth:`mcunas.search.settings.progress.Progress.trial_done`) raises
the interrupt again if it is set: the search stops after that trial at the
latest, with its resume line.
"""

from __future__ import annotations

import threading

__all__ = ["ask", "asked", "clear", "raise_if_asked"]

_ASKED = threading.Event()


def ask() -> None:
    """Note that a signal asked the search to stop."""
    _ASKED.set()


def asked() -> bool:
    """True once a stop was asked and not cleared."""
    return _ASKED.is_set()


def clear() -> None:
    """Forget an earlier stop (a new search in the same process starts clean)."""
    _ASKED.clear()


def raise_if_asked() -> None:
    """Raise ``KeyboardInterrupt`` if a stop was asked (and lost on its way)."""
    if _ASKED.is_set():
        raise KeyboardInterrupt
