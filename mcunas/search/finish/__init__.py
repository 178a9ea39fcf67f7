"""Finishing a search: choose, re-score, refit (distil, average), export.

The run owns this stage (:class:`mcunas.search.finish.stage.FinishStage`),
after its strategy's search. The package's ``__init__`` imports nothing, so the
result and the report can read the choice without loading the stage.
"""
