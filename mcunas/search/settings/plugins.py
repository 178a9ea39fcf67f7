"""The strategy registry: what each ``--strategy`` is, read by the settings' check and the CLI.

A strategy registers one :class:`StrategyPlugin`: the ``--strategy`` names it
answers to, its factory (one strategy per run), the words ``--help`` says of
it, its options (a dataclass whose fields are its own ``mcunas search``
options) and the check of its settings. The registry lives here, low, so that
:meth:`mcunas.search.settings.config.SearchConfig.validate` and ``mcunas search`` read
it; the registrations themselves are made at the top, by :mod:`mcunas.engine`
(one line per strategy).

An option field's ``metadata`` gives its CLI form: ``help`` (required) and
``choices`` (a click choice). Its default is the field's default; a field whose
name has a range in :data:`mcunas.limits.LIMITS` is checked against it. The
value lives in the :class:`~mcunas.search.settings.config.SearchConfig` field of the same
name, or, for a field SearchConfig does not have, in ``SearchConfig.options``.

Example::

    @dataclass(frozen=True)
    class ToyOptions:
        toy_steps: int = field(default=3, metadata={"help": "--strategy toy: steps."})

    register(StrategyPlugin(("toy",), ToyStrategy, "toy = one step per trial", ToyOptions))
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import MISSING, Field, dataclass, fields
from typing import Any

from mcunas.errors import UserError

# A SearchConfig (mcunas.search.settings.config, which reads this registry: named, not imported).
SearchConfig = Any

__all__ = [
    "StrategyPlugin",
    "names",
    "option_fields",
    "options_of",
    "plugin_for",
    "plugins",
    "register",
    "starts_from_reference",
]


@dataclass(frozen=True)
class StrategyPlugin:
    """One registered strategy.

    Args:
        names: the ``--strategy`` values it runs (a Keras Tuner strategy has one per oracle).
        factory: makes the strategy (one per run); it has a ``name`` (its kind).
        help: what ``mcunas search --help`` says of it, after the choices.
        options: a dataclass of its own options (None: it has none).
        validate: checks a ``SearchConfig`` naming it; raises ``UserError`` (None: no check).
        no_reference: its names that never start from a reference design (``--seed-arch
            auto`` seeds none of them; Keras Tuner's hyperband).
    """

    names: tuple[str, ...]
    factory: Callable[[], Any]
    help: str = ""
    options: type | None = None
    validate: Callable[[SearchConfig], None] | None = None
    no_reference: tuple[str, ...] = ()


_REGISTRY: dict[str, StrategyPlugin] = {}


def register(plugin: StrategyPlugin) -> StrategyPlugin:
    """Make every name of ``plugin`` a ``--strategy`` (a later registration replaces one)."""
    for name in plugin.names:
        _REGISTRY[name] = plugin
    return plugin


def unregister(plugin: StrategyPlugin) -> None:
    """Take ``plugin``'s names out of the registry (a test's own strategy, after it)."""
    for name in plugin.names:
        if _REGISTRY.get(name) is plugin:
            del _REGISTRY[name]


def names() -> tuple[str, ...]:
    """Every ``--strategy`` value, in registration order."""
    return tuple(_REGISTRY)


def plugins() -> list[StrategyPlugin]:
    """Every registered plugin once, in registration order."""
    seen: list[StrategyPlugin] = []
    for plugin in _REGISTRY.values():
        if plugin not in seen:
            seen.append(plugin)
    return seen


def plugin_for(name: str) -> StrategyPlugin:
    """The plugin of ``--strategy name``.

    Raises:
        UserError: no strategy of that name is registered.
    """
    plugin = _REGISTRY.get(name)
    if plugin is None:
        known = ", ".join(_REGISTRY) or "none registered (import mcunas.engine)"
        raise UserError(f"Unknown strategy '{name}'; choose {known}.")
    return plugin


def starts_from_reference(name: str) -> bool:
    """Whether ``--strategy name`` can start from a reference design (``--seed-arch``)."""
    return name not in plugin_for(name).no_reference


def option_fields() -> Iterator[Field[object]]:
    """Every registered strategy's option fields, once each, in registration order."""
    seen: set[str] = set()
    for plugin in plugins():
        for each in fields(plugin.options) if plugin.options is not None else ():
            if each.name not in seen:
                seen.add(each.name)
                yield each


def default_of(each: Field[object]) -> object:
    """An option field's default value (None when it has none)."""
    if each.default is not MISSING:
        return each.default
    if each.default_factory is not MISSING:
        return each.default_factory()
    return None


def options_of(config: SearchConfig) -> Any:
    """The options dataclass of ``config``'s strategy, filled from ``config`` (None: no options).

    Raises:
        UserError: ``config.strategy`` is not registered.
    """
    plugin = plugin_for(config.strategy)
    if plugin.options is None:
        return None
    values = {
        each.name: config.options.get(each.name, getattr(config, each.name, default_of(each)))
        for each in fields(plugin.options)
    }
    return plugin.options(**values)
