"""The shortest failing context, followed through the whole model: which token won and by how many logits, which
parts of the model pushed it there, and every step of every block, so a fault in the MLP shows as plainly as one
in attention."""

import numpy as np
from rich.text import Text

from handwired.engine import attribution
from handwired.engine.trace import trace
from handwired.judge.checking.contexts import duration
from handwired.judge.checking.report import Failure
from handwired.views import steps as explaining
from handwired.views.cost import over_view, steps_drawing
from handwired.views.figures import Step
from handwired.views.matrices import SHOW_ALL, step_panel
from handwired.views.numbers import logits, number
from handwired.weightfile import Model

# every step a block has (ln1 and mlp where the model has them; heads and concat with several heads), then what
# each position predicts
BLOCK_STEPS = ("ln1", *explaining.HEAD_STEPS, *explaining.BLOCK_STEPS, "proj", "mlp", "prediction")


def headline(model: Model, failure: Failure, split: attribution.Attribution) -> list[Text]:
    """The right token against the predicted one with the logit gap, and the part that pushed the wrong one up."""
    right, wrong, gap = failure.right, failure.wrong, failure.gap
    vocab, values = model.vocab, failure.logits
    beats = "ties with" if gap == 0 else "beats"
    lines = [Text.assemble(
        ("Why the shortest failing context ", "bold"), (repr(failure.context), "bold"), (" fails: ", "bold"),
        "the right token is ", (vocab[right], "green"), ", but ", (vocab[wrong], "red"), f" {beats} it: logit ",
        (number(values[wrong]), "red"), " against ", (number(values[right]), "green"),
        ", a gap of ", (logits(gap), "bold red"), f" (p({vocab[wrong]}) = {failure.probs[wrong]:.4f}).")]
    effect = attribution.gain_effect(split)  # what ln_f's gain does, if it changes the winner or a push
    push = attribution.pushes(split, wrong, right)  # [n_parts]
    worst = int(np.argmax(push))
    if push[worst] > 0:
        line = Text.assemble(("The part that pushed ", "dim"), vocab[wrong], (" over ", "dim"), vocab[right],
                             (" most: ", "dim"), (split.parts[worst], "bold"), f" ({logits(push[worst])})")
        best = int(np.argmin(push))
        if push[best] < 0:
            line.append_text(Text.assemble(("; the most against it: ", "dim"), (split.parts[best], "bold"),
                                           f" ({logits(-push[best])} for {vocab[right]})"))
        if split.parts[worst] in (effect.flipped if effect is not None else ()):
            line.append_text(Text(f"; ln_f.g turns its push around: before the gain it favours {vocab[right]}",
                                  style="dim"))
        lines.append(line)
    if effect is not None and effect.top_at_unit_gain != effect.top:
        lines.append(Text.assemble(("The final LayerNorm's gain ln_f.g decides: with g = 1 the top token would be ",
                                    "dim"), (vocab[effect.top_at_unit_gain], "bold"), (", the gain makes it ", "dim"),
                                   (vocab[effect.top], "bold"), (".", "dim")))
    return lines


def failure_steps(model: Model, context: str) -> tuple[attribution.Attribution, list[Step]]:
    """The attribution at the context's last position, then its why step and every block's steps."""
    run = trace(model, context)
    split = attribution.attribute(model, run)  # once: the headline and the why step both show it
    wanted = ["why", *BLOCK_STEPS]
    steps = explaining.steps(model, run, wanted, split=split)
    why = [step for step in steps if step.key == "why"]
    return split, why + [step for step in steps if step.key != "why"]


def failure_parts(model: Model, failure: Failure, everything: bool = False, reveal: str | None = None) -> list:
    """The headline, the why step and every block's steps for one failing context, folded unless ``everything``;
    ``reveal`` is the command that shows the whole explain view of it, named in the fold lines and at the end."""
    split, steps = failure_steps(model, failure.context)
    parts: list = [Text(""), *headline(model, failure, split)]
    _, seconds = steps_drawing(steps, everything)
    shown = steps[:1] if over_view(seconds) else steps  # the why step, at least: a deep model's blocks may not fit
    parts += [step_panel(step, everything, reveal or SHOW_ALL) for step in shown]
    if len(shown) < len(steps):
        parts.append(Text(f"The steps of its {model.n_layer:,} blocks are not drawn here: {len(steps) - 1:,} panels, "
                          f"about {duration(seconds)} to draw, more than a view takes; explain it with --block B to "
                          "draw one block", style="yellow"))
    if reveal:
        parts.append(Text.assemble(("Every step of this context, nothing folded: ", "dim"), reveal))
    return parts
