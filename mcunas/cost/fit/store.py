"""A board fitted to everything the measurement store holds, as a typed result.

What ``mcunas latency-model fit`` and ``mcunas calibrate`` both do: start from the
board's built-in base, fit its ``[latency]`` table
(:func:`mcunas.cost.fit.board.fit_board`) and, on request, state the
error by K-fold cross-validation.

Example::

    fitted = fit_store(load_board("esp32s3"), RecordStore(), folds=5)
    write_user_board(load_board("esp32s3"), fitted.table)
    [lib.text() for lib in fitted.libraries]
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from mcunas.cost.fit.board import LatencyTable, fit_base, fit_board
from mcunas.cost.fit.scale import CalibrationRow, cached_graph
from mcunas.errors import UserError

if TYPE_CHECKING:
    from mcunas.boards.catalog import BoardProfile
    from mcunas.cost.fit.kernels import GraphOf
    from mcunas.cost.fit.records import RecordStore

__all__ = ["BoardFit", "LibraryFit", "fit_store", "store_graphs"]


@dataclass(frozen=True)
class LibraryFit:
    """One kernel library of a fit: its scale and stated error (None: not measured)."""

    kernels: str
    scale: float | None
    error_pct: float | None

    def text(self) -> str:
        """``esp-nn: scale 1.02, error 8.1%`` (a ``-`` for a scale the fit left out)."""
        error = "error not measured" if self.error_pct is None else f"error {self.error_pct}%"
        return f"{self.kernels}: scale {'-' if self.scale is None else self.scale}, {error}"


@dataclass(frozen=True)
class BoardFit:
    """A board fitted to a measurement store.

    Attributes:
        board: the profile's name.
        table: the new ``[latency]`` table (what :func:`write_user_board` writes).
        cv: K-fold cross-validation of the board's own kernel library over the
            store's whole-model rows, ``(row, predicted ms)``; empty unless asked.
    """

    board: str
    table: LatencyTable
    cv: tuple[tuple[CalibrationRow, float], ...] = ()

    @property
    def libraries(self) -> list[LibraryFit]:
        """Every kernel library of the table, in its order."""
        return [
            LibraryFit(name, entry.get("scale"), entry.get("error_pct"))
            for name, entry in self.table.items()
            if isinstance(entry, dict)
        ]


def store_graphs(store: RecordStore) -> GraphOf:
    """Model hash -> its graph, read once from the store's model files."""
    return lambda key: cached_graph(store.model_path(key))


def fit_store(board: BoardProfile, store: RecordStore, *, folds: int = 0) -> BoardFit:
    """Fit ``board`` to everything ``store`` holds for it (from its built-in base).

    Args:
        board: the profile fitted.
        store: the measurement store.
        folds: K of a K-fold cross-validation of the board's kernel library over its
            whole-model rows (0: none).

    Raises:
        UserError: the store holds no measurement of the board.
    """
    from mcunas.cost.fit.kernels import cross_validate

    board = fit_base(board)  # the store holds every earlier run: start from the priors
    rows, ops = store.model_rows(board.name), store.op_records(board.name)
    if not rows and not ops:
        raise UserError(f"No measurements for board '{board.name}' in {store.path}")
    graph_of = store_graphs(store)
    table = fit_board(board, rows, ops, graph_of)
    cv: tuple[tuple[CalibrationRow, float], ...] = ()
    if folds:
        mine = [r for r in rows if r.kernels == board.kernels]
        own_ops = [o for o in ops if o.kernels == board.kernels]
        cv = tuple(cross_validate(board, own_ops, mine, graph_of, folds=folds))
    return BoardFit(board.name, table, cv)
