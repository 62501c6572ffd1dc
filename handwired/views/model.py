"""Drawing a model and its predictions: the model line, the window and mask notes, the next-token tables."""

from pathlib import Path

import numpy as np
from rich.console import Group, JustifyMethod
from rich.table import Table
from rich.text import Text

from handwired.engine.logits import gaps, top_token
from handwired.engine.trace import Trace
from handwired.views.numbers import column, probability
from handwired.weightfile import Model, bundled_dir, bundled_folder
from handwired.weightfile.axes import printable, shown


def model_line(model: Model) -> Text:
    plural = lambda n, word: f"{n} {word}" + ("" if n == 1 else "s")  # noqa: E731
    folder = Path(model.source).parent  # a bundled model or puzzle solution by its name, not its installed path
    where = (" (bundled)" if folder == bundled_dir() else " (bundled solution)"
             if folder == bundled_folder("puzzles") / "solutions" else f" ({model.source})")
    return Text.assemble(
        ("model ", "dim"), (printable(model.name or "(unnamed)"), "bold"), (where, "dim"),
        ("  vocab ", "dim"), " ".join(map(shown, model.vocab)), ("  n_ctx ", "dim"), str(model.n_ctx),
        ("  n_embd ", "dim"), str(model.n_embd), "  ",
        f"{plural(model.n_head, 'head')}, {plural(model.n_layer, 'block')}" if model.n_layer else "no blocks",
    )


def window_note(model: Model, trace: Trace) -> Text | None:
    if not trace.truncated:
        return None
    return Text(
        f"The context has {len(trace.text)} tokens; the model sees only the last n_ctx = {model.n_ctx}: "
        f"{trace.window!r}.",
        style="yellow",
    )


def mask_note(trace: Trace) -> Text | None:
    if trace.causal:
        return None
    return Text("Mask off: bidirectional self-attention, as in an encoder. Every position also sees the "
                "tokens after it, so a prediction at an earlier position may be reading its own answer.",
                style="bold yellow")


def prediction_view(model: Model, trace: Trace, every_position: bool = False) -> Group:
    parts: list = [model_line(model)]
    for note in (window_note(model, trace), mask_note(trace)):
        if note:
            parts.append(note)
    if every_position:
        parts.append(_positions_table(model, trace))
    best, tied = top_token(trace.logits[-1])
    parts.append(Text.assemble(
        (shown(trace.window), "bold"), " → ", (shown(model.vocab[best]), "bold green"),
        (f"  (tied with {', '.join(_tied_with(model, trace.logits[-1], best))}; argmax takes the first)", "yellow")
        if tied else "",
    ))
    parts.append(probability_table(model, trace.logits[-1], trace.probs[-1], best))
    return Group(*parts)


def _tied_with(model: Model, logits: np.ndarray, best: int) -> list[str]:
    return [shown(model.vocab[i]) for i in np.flatnonzero(logits == logits[best]) if i != best]


def probability_table(model: Model, logits: np.ndarray, probs: np.ndarray, best: int) -> Table:
    table = Table(title="next token", title_justify="left", caption_justify="left",
                  caption="gap: its logit minus the best other token's")
    table.add_column("token")
    table.add_column("logit", justify="right")
    table.add_column("gap", justify="right")
    table.add_column("probability", justify="right")
    table.add_column("", no_wrap=True)
    gap = column(gaps(logits), signed=True)  # the top token's lead over the runner-up; the others' distance below it
    logit = column(logits)
    for i, token in enumerate(model.vocab):
        bar = "█" * int(round(probs[i] * 20))
        style = "bold green" if i == best else ""
        table.add_row(Text(shown(token), style=style), logit[i], gap[i], probability(probs[i]),
                      Text(bar, style="green" if i == best else "blue"))
    return table


def _positions_table(model: Model, trace: Trace) -> Table:
    table = Table(title="prediction at every position", title_justify="left", caption_justify="left",
                  caption="lead: the predicted token's logit minus the best other token's")
    columns: tuple[tuple[str, JustifyMethod], ...] = (("pos", "right"), ("token", "left"), ("sees", "left"),
                                                      ("predicts", "left"), ("p", "right"), ("lead", "right"),
                                                      ("next in input", "left"))
    for name, justify in columns:
        table.add_column(name, justify=justify)
    leads = column(np.array([gaps(trace.logits[i])[top_token(trace.logits[i])[0]] for i in range(len(trace.window))]),
                   signed=True)
    for i, token in enumerate(trace.window):
        best, tied = top_token(trace.logits[i])
        predicted = model.vocab[best]
        actual = trace.window[i + 1] if i + 1 < len(trace.window) else ""
        verdict = "" if not actual else (" ✓" if actual == predicted and not tied else " ✗")
        table.add_row(
            str(i), shown(token), shown(trace.window[: i + 1]), shown(predicted) + (" (tie)" if tied else ""),
            probability(trace.probs[i, best]), leads[i],
            Text((shown(actual) if actual else "") + verdict, style="green" if verdict == " ✓" else "red"),
        )
    return table


def context_json(model: Model, trace: Trace) -> dict:
    """What every JSON answer about one context starts with: the model, its file, the text and its tokens."""
    return {"model": model.name, "weights": model.source, "vocab": list(model.vocab), "text": trace.text,
            "window": trace.window, "truncated": trace.truncated, "causal": trace.causal,
            "tokens": trace.tokens.tolist()}


def prediction_json(model: Model, trace: Trace, every_position: bool = False) -> dict:
    """The prediction for programs: tokens, window, logits, probabilities; each position's too if asked."""
    def at(i: int) -> dict:
        best, tied = top_token(trace.logits[i])
        return {
            "position": i,
            "token": trace.window[i],
            "prediction": model.vocab[best],
            "tied": tied,
            "logits": trace.logits[i].tolist(),
            "probabilities": trace.probs[i].tolist(),
        }

    last = at(len(trace.window) - 1)
    result = {
        **context_json(model, trace),
        "prediction": last["prediction"],
        "tied": last["tied"],
        "logits": last["logits"],
        "probabilities": last["probabilities"],
    }
    if every_position:
        result["positions"] = [at(i) for i in range(len(trace.window))]
    return result
