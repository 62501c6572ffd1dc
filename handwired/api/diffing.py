"""Two models compared from Python, as ``handwired diff`` compares two files: the weights that differ, by label, and
the contexts whose answer moved (:func:`handwired.judge.workbench.compare.compare`, shown with the command's view)."""

from handwired.api.keywords import speaks_python
from handwired.api.loading import Loadable, load
from handwired.defaults import CHANGES_SHOWN, SEED
from handwired.judge.workbench.compare import Diff, WeightChange, compare, most_changes
from handwired.views.cost import refuse_slow_diff
from handwired.views.diff import diff_view, summary
from handwired.views.display import View, html_fragment
from handwired.weightfile import Model


class ModelDiff:
    """What changed from ``old`` to ``new``: ``.weights`` (each entry's label, old and new value), ``.result`` (the
    core's :class:`~handwired.judge.workbench.compare.Diff`: the contexts compared and those that changed)."""

    def __init__(self, old: Model, new: Model, result: Diff) -> None:
        self.old, self.new, self.result = old, new, result

    @property
    def weights(self) -> list[WeightChange]:
        return self.result.weights

    def view(self) -> View:
        return View(f"diff · {self.old.name or self.old.source} → {self.new.name or self.new.source}",
                    lambda everything: [diff_view(self.old, self.new, self.result)])

    def __repr__(self) -> str:
        return f"<ModelDiff: {summary(self.result)}>"

    def _repr_html_(self) -> str:
        return html_fragment([diff_view(self.old, self.new, self.result)])


@speaks_python
def diff(old: Loadable, new: Loadable, *, sample: int | None = None, seed: int = SEED,
         show: int = CHANGES_SHOWN) -> ModelDiff:
    """Compare two models (each a HookedModel, bundled name, path or dict) as ``handwired diff`` does, in memory:
    a model edited with ``model.set`` is compared as it now is. ``sample``: this many random contexts instead of
    every one."""
    before, after = load(old).model, load(new).model
    refuse_slow_diff(most_changes(before, after), False)
    return ModelDiff(before, after, compare(before, after, sample, seed, show))
