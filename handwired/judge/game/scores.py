"""A solved puzzle's score, and reading one back from a statement or the progress file.

Better means, in this order: fewer non-zero parameters, a narrower residual
stream (n_embd), fewer blocks, fewer heads — nothing else. Two scores equal on
all four tie, whatever their margins: a margin grows with the weights, so it is
shown beside a score and never ranks it (a progress file written when it did
still loads, margin and all).
"""

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from handwired.weightfile.checker import MAX_SIZE, Checker, join

if TYPE_CHECKING:  # a score reads a report and a model; reading a score (the list, the progress file) needs neither
    from handwired.judge.checking.report import Report
    from handwired.weightfile.model import Model

SCORE_KEYS = {"parameters": True, "n_embd": True, "n_head": True, "n_layer": True, "margin": True}
MAX_PARAMETERS = MAX_SIZE**3  # far beyond any file handwired reads; a bound for numbers read back
MARGIN_DECIMALS = 6  # a score's margin, in logits, is kept to this many decimals


@dataclass(frozen=True)
class Score:
    parameters: int  # non-zero numbers in the weight file
    n_embd: int
    n_head: int
    n_layer: int  # blocks
    margin: float  # logits: the smallest lead of the right token over the best wrong one

    def key(self) -> tuple[int, int, int, int]:
        """Smaller is better: fewest non-zero parameters, then n_embd, blocks, heads. Not the margin."""
        return (self.parameters, self.n_embd, self.n_layer, self.n_head)

    def better_than(self, other: "Score | None") -> bool:
        return other is None or self.key() < other.key()

    def ties(self, other: "Score | None") -> bool:
        """Equal on parameters, n_embd, blocks and heads (the margins may differ)."""
        return other is not None and self.key() == other.key()

    def against(self, other: "Score | None") -> str | None:
        """``better``, ``tie`` or ``worse`` than ``other``; None when there is nothing to compare with."""
        if other is None:
            return None
        return "better" if self.better_than(other) else "tie" if self.ties(other) else "worse"

    def to_json(self) -> dict[str, Any]:
        return {"parameters": self.parameters, "n_embd": self.n_embd, "n_head": self.n_head,
                "n_layer": self.n_layer, "margin": self.margin}


def read_score(check: Checker, value: Any, path: str) -> Score | None:
    """A score as :meth:`Score.to_json` writes it; problems go to ``check``."""
    spec = check.obj(value, path, SCORE_KEYS)
    if spec is None or any(key not in spec for key in SCORE_KEYS):
        return None
    parameters = check.whole(spec["parameters"], join(path, "parameters"), 0, MAX_PARAMETERS)
    n_embd, n_head, n_layer = (check.whole(spec[key], join(path, key), 0) for key in ("n_embd", "n_head", "n_layer"))
    margin = check.finite(spec["margin"], join(path, "margin"), "a finite number of logits")
    if parameters is None or n_embd is None or n_head is None or n_layer is None or margin is None:
        return None
    return Score(parameters, n_embd, heads(n_head, n_layer), n_layer, margin)


def heads(n_head: int, n_layer: int) -> int:
    """The heads a score counts: a model with no blocks has none, whatever n_head it declares (a score written when
    it was counted as 1 reads back as 0)."""
    return n_head if n_layer else 0


def nonzero_parameters(model: "Model") -> int:
    """How many numbers in the model's parameters are not zero (a missing bias counts as zeros)."""

    def count(value: Any) -> int:
        if isinstance(value, dict):
            return sum(count(item) for item in value.values())
        if isinstance(value, list):
            return sum(count(item) for item in value)
        return int((value != 0).sum())  # the array's own methods: reading a score loads no numpy

    return count(model.params)


def score(model: "Model", report: "Report") -> Score | None:
    """The score of a solved puzzle; None when the report is not a solution: something failed, or the passing
    contexts are not all proved (or the proof was skipped)."""
    if not report.ok or report.margin is None or not report.proof:
        return None
    # to a millionth of a logit: a reference copied by hand scores level with par, not 2e-14 below it
    margin = round(report.margin.value, MARGIN_DECIMALS)
    return Score(nonzero_parameters(model), model.n_embd, heads(model.n_head, model.n_layer), model.n_layer, margin)
