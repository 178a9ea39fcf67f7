"""``mcunas boards``: list board profiles, or show one."""

from __future__ import annotations

import click

from mcunas.boards.catalog import BoardProfile, list_boards, load_board
from mcunas.jsontext import dumps
from mcunas.paths import user_boards_dir


def _kb(n: int) -> str:
    return f"{n / 1024:.0f}"


@click.group(
    invoke_without_command=True,
    epilog="""\b
Examples:
  mcunas boards
  mcunas boards --json
  mcunas boards show esp32s3
  mcunas boards show ./my_board.toml""",
)
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_context
def cli(ctx: click.Context, as_json: bool) -> None:
    """List the board profiles (user folder first, then built-in)."""
    if ctx.invoked_subcommand is not None:
        return
    problems: list[str] = []
    boards = list_boards(problems)
    for problem in problems:
        click.secho(f"skipped: {problem}", err=True, fg="yellow")
    if as_json:
        click.echo(dumps([b.to_dict() for b in boards]))
        return
    header = (
        f"{'name':<15} {'core':<14} {'MHz':>5} {'SRAM KB':>8} {'model KB':>8} "
        f"{'flash KB':>9} {'kernels':<9} {'latency':<16} origin"
    )
    click.echo(header)
    for b in boards:
        origin = "built-in" if b.builtin else "user"
        click.echo(
            f"{b.name:<15} {b.core:<14} {b.clock_hz / 1e6:>5.0f} {_kb(b.sram_bytes):>8} "
            f"{_kb(b.model_sram_budget_bytes):>8} {_kb(b.flash_bytes):>9} {b.kernels:<9} "
            f"{_latency_basis(b):<16} {origin}"
        )
    click.echo(
        f"\nUser profiles go in {user_boards_dir()} (searched first). latency: the "
        "stated error of measured op kinds, fitted to this board or family defaults; "
        "`mcunas calibrate` fits a board."
    )


def _latency_basis(board: BoardProfile) -> str:
    """``+/-14% fitted`` (the board's own table) or ``+/-60% defaults`` (family defaults)."""
    from mcunas.cost.latency import resolve
    from mcunas.errors import BoardProfileError

    try:
        coef = resolve(board, board.kernels)
    except BoardProfileError:
        return "invalid table"
    return f"+/-{coef.error_pct:.0f}% {'fitted' if board.latency_fitted else 'defaults'}"


def _describe(board: BoardProfile) -> list[str]:
    lines = [
        f"{board.name}: {board.title}",
        f"  MCU / core        {board.mcu or '?'} / {board.core} @ {board.clock_hz / 1e6:g} MHz",
        f"  SRAM              {board.sram_bytes} B total, {board.usable_sram_bytes} B usable, "
        f"{board.model_sram_budget_bytes} B left to the model",
        f"  flash             {board.flash_bytes} B total, {board.usable_flash_bytes} B usable, "
        f"{board.model_flash_budget_bytes} B left to the model",
        f"  firmware baseline {board.firmware_ram_bytes} B RAM, {board.firmware_stack_bytes} B "
        f"stack, {board.firmware_flash_bytes} B flash",
        f"  kernels           {board.kernels}",
        f"  memory            {board.memory} (where model, arena and code live)",
        f"  peak int8 MAC/cyc {board.peak_macs_per_cycle:g}",
        f"  PlatformIO        env={board.pio_env or '-'} board={board.pio_board or '-'}",
        f"  serial            {board.baud} baud, USB ids {', '.join(board.hwids) or '-'}",
        f"  profile file      {board.path}",
    ]
    lines += _basis_lines(board)
    lines += _setup_lines(board)
    if board.latency:
        lines += _latency_lines(board.latency)
    lines += [f"  source: {k:<11} {v}" for k, v in board.sources.items()]
    return lines


@cli.command(
    "show",
    epilog="Examples: mcunas boards show esp32s3 --json;  mcunas boards show ./my_board.toml",
)
@click.argument("name")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def show(name: str, as_json: bool) -> None:
    """Show one board profile: NAME or a path to a .toml profile."""
    board = load_board(name)
    if as_json:
        click.echo(dumps(board.to_dict()))
    else:
        click.echo("\n".join(_describe(board)))


def _latency_lines(latency: dict) -> list[str]:
    """The profile's fitted latency tables, one line per kernel library."""
    lines = [f"  latency model     {latency.get('source', 'fitted tables')}"]
    for lib, entry in latency.items():
        if not isinstance(entry, dict):
            continue
        error = entry.get("error_pct")
        parts = [
            f"scale {entry.get('scale', 1.0)}",
            f"error +/-{error}%" if error is not None else "error not measured",
        ]
        if "error_method" in entry:
            parts.append(str(entry["error_method"]))
        checked = entry.get("checked_variants") or list(entry.get("op_error_pct", {}))
        if checked:
            parts.append(f"measured op kinds: {', '.join(checked)}")
        if "mac" in entry:
            parts.append(f"{len(entry['mac'])} fitted per-variant costs")
        lines.append(f"    {lib:<14}  " + "; ".join(parts))
    return lines


def _setup_lines(board: BoardProfile) -> list[str]:
    """The setup keys (stated or their baseline) and how each moved the latency estimate."""
    from mcunas.cost.setup import BASELINE, combined, effect_label, setup_effects

    lines = ["  setup             (a key left out means the baseline the defaults were fitted on)"]
    for key, baseline in BASELINE.items():
        stated = board.setup.get(key)
        shown = str(stated).lower() if isinstance(stated, bool) else stated
        shown = "-" if stated is None else shown
        lines.append(f"    {key:<18} {shown:<14} baseline: {baseline}")
    effects = setup_effects(board)
    for e in effects:
        lines.append(
            f"    effect {e.key:<11} x{e.factor:.2f} +/-{e.error_pct:.0f}%  "
            f"{effect_label(e)} ({'; '.join(filter(None, (e.value, e.basis.partition(': ')[2])))})"
        )
    factor, error = combined(effects)
    lines.append(
        f"    latency moved      x{factor:.2f}, +/-{error:.0f}% added in quadrature "
        "(fitted effects move it; priors only widen it)"
    )
    return lines


def _basis_lines(board: BoardProfile) -> list[str]:
    """Kernel scale, core speed and band of the board's library: fitted or prior, and why."""
    from mcunas.cost.fit.basis import latency_basis
    from mcunas.errors import BoardProfileError

    try:
        parts = [p for p in latency_basis(board) if not p.part.startswith("setup")]
    except BoardProfileError:
        return []
    lines = ["  latency basis     (fitted: set by measured rows; prior: carried over or guessed)"]
    lines += [f"    {p.part:<18} {p.value:<30} {p.kind:<8} {p.source}" for p in parts]
    return lines
