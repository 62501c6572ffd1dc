"""The Python face of handwired, for scripts and notebooks: the top layer beside the command line, and like it a
thin face over the core, never a second copy of it.

:func:`load` gives a :class:`HookedModel` (a weight file by path, bundled name or dict) that runs as a
TransformerLens user expects: ``model(input)`` → logits [batch, pos, vocab]; ``model.run_with_cache(input)`` →
logits and an :class:`ActivationCache` keyed by TransformerLens hook names, batch axis kept, with its short forms
(``cache["pattern", 0]``) and the residual stream taken apart; ``model.run_with_hooks(input, fwd_hooks=…)`` for
ablation and patching; TransformerLens's weight names (``model.W_Q``, ``model.OV``) read from the model;
``model.set(…)`` and ``model.save(path)`` edit and write it, :func:`diff` compares two. :func:`check` judges a
model on its target, :func:`puzzle` reads a puzzle whose
``submit(model)`` gives the game's verdict; ``with allow(max_seconds=…, max_memory=…):`` lets work that a refusal
by estimate stopped go on. Everything shows itself in Jupyter (``_repr_html_``) from the same
views the terminal prints, and has a plain repr of a line. ``import handwired`` itself stays cheap: these names
load on first use.
"""

from handwired.api.cache import ActivationCache
from handwired.api.diffing import ModelDiff, diff
from handwired.api.judging import CheckReport, PuzzleHandle, Verdict, check, puzzle
from handwired.api.loading import load
from handwired.api.model import HookedModel, HookPoint
from handwired.api.names import act_name
from handwired.api.weights import Factored
from handwired.budget import allowing as allow
from handwired.views.display import View

__all__ = ["ActivationCache", "CheckReport", "Factored", "HookPoint", "HookedModel", "ModelDiff", "PuzzleHandle",
           "Verdict", "View", "act_name", "allow", "check", "diff", "load", "puzzle"]
