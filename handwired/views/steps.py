"""The explain view as data: which matrices each step shows, with labels, formula and shapes.

Pure: it reads a :class:`~handwired.engine.trace.Trace` and returns
:class:`~handwired.views.figures.Step` objects; :mod:`handwired.views.matrices`
draws them. Attention matrices have query (destination) positions as rows and
key (source) positions as columns.
"""

import numpy as np

from handwired.engine import attribution
from handwired.engine.logits import gaps, top_token
from handwired.engine.trace import Trace
from handwired.errors import bad_head, bad_value
from handwired.views.figures import Matrix, Prediction, Step
from handwired.views.numbers import number
from handwired.weightfile import Model
from handwired.weightfile.axes import shown

HEAD_STEPS = ("qkv", "scores", "mask", "pattern", "z")
BLOCK_STEPS = ("heads", "concat")  # every head together: shown by "all" only on a model with several heads
STEPS = ("embed", "ln1", *HEAD_STEPS, *BLOCK_STEPS, "proj", "mlp", "logits", "probs", "prediction", "why")
GROUPS = {
    "all": STEPS,
    "attention": (*HEAD_STEPS, "prediction"),  # Q, K, V → scores → mask → pattern → z, then what each position predicts
}
CHOICES = (*STEPS, *GROUPS)  # what a step may be named by


def expand(steps: list[str] | tuple[str, ...]) -> list[str]:
    """Steps and groups by name -> the steps to show, in forward-pass order."""
    wanted: set[str] = set()
    for step in steps or ["all"]:
        if step not in CHOICES:
            raise bad_value("step", repr(step), f"expected one of {', '.join(CHOICES)}")
        wanted.update(GROUPS.get(step, (step,)))
    return [step for step in STEPS if step in wanted]


def _shape(array: np.ndarray) -> str:
    return "[" + ", ".join(str(n) for n in array.shape) + "]"


def steps(model: Model, trace: Trace, wanted: list[str], block: int | None = None, head: int | None = None,
          position: int | None = None, every_step: bool = False,
          split: attribution.Attribution | None = None) -> list[Step]:
    """The explain view of ``trace``: the ``wanted`` steps, for one block/head or all of them.

    ``position`` is the position ``why`` explains (default: the last). The
    multi-head steps (``heads``, ``concat``) are left out on a one-head model
    unless asked for by name (``every_step`` False: they came from ``all``).
    ``split`` is the attribution ``why`` shows when the caller has it already
    (of this trace, at that position), so it is not worked out twice.
    """
    if block is not None and not 0 <= block < model.n_layer:
        raise bad_value("block", block, f"the model has blocks 0…{model.n_layer - 1}" if model.n_layer
                        else "the model has no blocks")
    if head is not None and not 0 <= head < model.n_head:
        raise bad_head(head, model.n_head)
    if position is not None and not 0 <= position < len(trace.window):
        raise bad_value("position", position, f"the context has positions 0…{len(trace.window) - 1}")
    blocks = [block] if block is not None else list(range(model.n_layer))
    heads = [head] if head is not None else list(range(model.n_head))
    view = _View(model, trace)
    result: list[Step] = []
    if "embed" in wanted:
        result.append(view.embed())
    for b in blocks:
        if "ln1" in wanted and f"blocks.{b}.ln1.hook_out" in trace.record:
            result.append(view.ln1(b))
        for h in heads:  # one head's whole story before the next head's
            result.extend(getattr(view, key)(b, h) for key in HEAD_STEPS if key in wanted)
        if model.n_head > 1 or every_step:
            result.extend(getattr(view, key)(b) for key in BLOCK_STEPS if key in wanted)
        if "proj" in wanted:
            result.append(view.proj(b))
        if "mlp" in wanted and f"blocks.{b}.hook_mlp_out" in trace.record:
            result.append(view.mlp(b))
    if not model.n_layer and set(wanted) & {"ln1", *HEAD_STEPS, *BLOCK_STEPS, "proj", "mlp"}:
        result.append(_no_blocks(model))
    if "logits" in wanted:
        result.append(view.logits())
    if "probs" in wanted:
        result.append(view.probs())
    if "prediction" in wanted:
        result.append(view.prediction())
    if "why" in wanted:
        result.append(view.why(position, split))
    return result


def _tops(vocab: tuple[str, ...], tokens: tuple[int, ...]) -> str:
    """``b``, or ``a tie of a, b and c``."""
    names = [shown(vocab[t]) for t in tokens]
    return names[0] if len(names) == 1 else f"a tie of {', '.join(names[:-1])} and {names[-1]}"


def _no_blocks(model: Model) -> Step:
    """What the block steps show on a model with none: that there are none, and what the model is instead."""
    norm = "ln_f" in model.params
    formula = f"logits = {'ln_f(' if norm else '('}wte[token] + wpe[position]) · wteᵀ"
    return Step("blocks", "No blocks", formula, "",
                "This model has no blocks: no attention, projection or MLP to show. Each position's embedding goes "
                f"straight to {'the final LayerNorm, then ' if norm else ''}the unembedding, so a position sees "
                "only its own token and place.", ())


class _View:
    """Labels shared by every step of one trace."""

    def __init__(self, model: Model, trace: Trace) -> None:
        self.model = model
        self.trace = trace
        self.record = trace.record
        self.positions = tuple(f"{i}:{shown(token)}" for i, token in enumerate(trace.window))
        self.dims = model.dims
        self.n = len(trace.window)

    def _residual(self, title: str, hook: str, values: np.ndarray | None = None) -> Matrix:
        values = self.record[hook] if values is None else values
        return Matrix(title, hook, values, self.positions, self.dims, "position:token", "residual dim", "pos ╲ dim")

    def _head_matrix(self, title: str, hook: str, block: int, head: int, prefix: str) -> Matrix:
        values = self.record[f"blocks.{block}.attn.{hook}"][:, head, :]  # [pos, head, d_head] -> [pos, d_head]
        cols = self.model.head_labels(block, prefix, head)  # as c_attn's columns and c_proj's rows are labelled
        return Matrix(title, f"blocks.{block}.attn.{hook}", values, self.positions, cols,
                      "position:token", f"{prefix} dim (this head)", f"pos ╲ {prefix}")

    def _attention_matrix(self, title: str, hook: str, block: int, head: int, future_text: str | None) -> Matrix:
        values = self.record[f"blocks.{block}.attn.{hook}"][head]  # [head, query, key] -> [query, key]
        future = np.triu(np.ones(values.shape, dtype=bool), k=1) if self.trace.causal else None
        return Matrix(title, f"blocks.{block}.attn.{hook}", values, self.positions, self.positions,
                      "query (destination) position", "key (source) position", "query ╲ key", future, future_text)

    def _where(self, block: int, head: int) -> str:
        heads = f", head {head} of {self.model.n_head}" if self.model.n_head > 1 else ""
        return f"block {block}{heads}"

    def embed(self) -> Step:
        token = self.record["hook_embed"]
        position = self.record["hook_pos_embed"]
        total = self.record.get("blocks.0.hook_resid_pre", token + position)
        return Step(
            "embed", "Embedding", "x = wte[tokens] + wpe[positions]",
            f"tokens [{self.n}] → wte rows {_shape(token)} + wpe rows {_shape(position)} → x {_shape(total)}",
            "Each row is one position's residual stream: what the token is plus where it is.",
            (self._residual("token embedding wte[tokens]", "hook_embed"),
             self._residual("position embedding wpe[positions]", "hook_pos_embed"),
             self._residual("x, the residual stream entering block 0", "blocks.0.hook_resid_pre", total)),
        )

    def ln1(self, block: int) -> Step:
        hook = f"blocks.{block}.ln1.hook_out"
        return Step(
            "ln1", f"LayerNorm before attention · block {block}", "LN(x) = g·(x − mean(x)) / √(var(x) + 1e-5) + b",
            f"{_shape(self.record[hook])} → {_shape(self.record[hook])}, each row separately",
            "Attention reads this normalised copy; the residual stream itself is unchanged.",
            (self._residual("LN(x)", hook),),
        )

    def qkv(self, block: int, head: int) -> Step:
        d = self.model.d_head
        lo, hi = head * d, (head + 1) * d
        return Step(
            "qkv", f"Queries, keys, values · {self._where(block, head)}",
            "Q, K, V = split(x · W_attn + b_attn)",
            f"x [{self.n}, {self.model.n_embd}] · c_attn.w [{self.model.n_embd}, {3 * self.model.n_embd}] → "
            f"Q, K, V; this head's columns {lo}…{hi - 1} of each: [{self.n}, {d}]",
            "A query asks, a key answers: their dot product decides how much one position reads another's value.",
            (self._head_matrix("Q", "hook_q", block, head, "q"),
             self._head_matrix("K", "hook_k", block, head, "k"),
             self._head_matrix("V", "hook_v", block, head, "v")),
        )

    def scores(self, block: int, head: int) -> Step:
        return Step(
            "scores", f"Attention scores · {self._where(block, head)}", "scores = Q · Kᵀ / √d_head",
            f"Q [{self.n}, {self.model.d_head}] · Kᵀ [{self.model.d_head}, {self.n}] / √{self.model.d_head} "
            f"→ [{self.n}, {self.n}]",
            "How well each query matches each key. "
            + ("Grey cells in [brackets]: keys after the query, masked next." if self.trace.causal
               else "No mask: every key counts."),
            (self._attention_matrix("Q·Kᵀ/√d_head", "scores_before_mask", block, head, None),),
        )

    def mask(self, block: int, head: int) -> Step:
        if not self.trace.causal:
            return self._no_mask(block, head)
        return Step(
            "mask", f"Causal mask · {self._where(block, head)}", "scores + M,  M[q, k] = 0 if k ≤ q else −∞",
            f"[{self.n}, {self.n}] + [{self.n}, {self.n}] → [{self.n}, {self.n}]",
            "A position may read itself and earlier positions only; −∞ becomes exactly 0 after softmax.",
            (self._attention_matrix("scores + M", "hook_attn_scores", block, head, "−∞"),),
        )

    def _no_mask(self, block: int, head: int) -> Step:
        return Step(
            "mask", f"No mask · {self._where(block, head)}", "scores + M,  M = 0 everywhere",
            f"[{self.n}, {self.n}] + 0 → [{self.n}, {self.n}]",
            "The mask is off: nothing is masked, and each position also reads the positions after it, "
            "as an encoder's bidirectional self-attention does.",
            (self._attention_matrix("scores + M (M = 0)", "hook_attn_scores", block, head, None),),
        )

    def pattern(self, block: int, head: int) -> Step:
        return Step(
            "pattern", f"Attention pattern · {self._where(block, head)}", "pattern = softmax(Q · Kᵀ / √d_head + M)",
            f"[{self.n}, {self.n}] → [{self.n}, {self.n}], softmax along each row",
            "Each row sums to 1: how the query position splits its attention over the key positions.",
            (self._attention_matrix("pattern", "hook_pattern", block, head, "·"),),
        )

    def z(self, block: int, head: int) -> Step:
        return Step(
            "z", f"Weighted sum of values · {self._where(block, head)}", "z = pattern · V",
            f"pattern [{self.n}, {self.n}] · V [{self.n}, {self.model.d_head}] → z [{self.n}, {self.model.d_head}]",
            "Each position's z is the average of the values it attends to, weighted by the pattern.",
            (self._head_matrix("z", "hook_z", block, head, "z"),),
        )

    def proj(self, block: int) -> Step:
        after = (f"blocks.{block}.hook_resid_mid" if f"blocks.{block}.hook_resid_mid" in self.record
                 else f"blocks.{block}.hook_resid_post")
        heads = "concat(z₀ … z_H)" if self.model.n_head > 1 else "z"
        return Step(
            "proj", f"Output projection and residual · block {block}",
            f"attn_out = {heads} · W_proj + b_proj;  x ← x + attn_out",
            f"z [{self.n}, {self.model.n_embd}] · c_proj.w [{self.model.n_embd}, {self.model.n_embd}] "
            f"→ [{self.n}, {self.model.n_embd}]",
            "The projection writes the attention result back into residual dims, and the block adds it to x.",
            (self._residual("attn_out", f"blocks.{block}.hook_attn_out"),
             self._residual("x + attn_out", after)),
        )

    def mlp(self, block: int) -> Step:
        pre = self.record[f"blocks.{block}.mlp.hook_pre"]
        hidden = self.model.axes(f"blocks[{block}].mlp.c_fc.w")[1].labels  # the file's own names for its hidden units
        normed = "LN(x)" if f"blocks.{block}.ln2.hook_out" in self.record else "x"
        return Step(
            "mlp", f"MLP · block {block}", "mlp_out = gelu(LN(x) · W_fc + b_fc) · W_proj + b_proj;  x ← x + mlp_out",
            f"[{self.n}, {self.model.n_embd}] → hidden [{self.n}, {pre.shape[1]}] → [{self.n}, {self.model.n_embd}]",
            "Each position alone: no information moves between positions here. A unit's threshold is where its "
            "hidden value crosses 0: gelu passes what is above and all but silences what is below.",
            (Matrix(f"hidden = {normed} · W_fc + b_fc, before gelu", f"blocks.{block}.mlp.hook_pre", pre,
                    self.positions, hidden, "position:token", "hidden unit", "pos ╲ unit"),
             Matrix("gelu(hidden)", f"blocks.{block}.mlp.hook_post", self.record[f"blocks.{block}.mlp.hook_post"],
                    self.positions, hidden, "position:token", "hidden unit", "pos ╲ unit"),
             self._residual("mlp_out", f"blocks.{block}.hook_mlp_out"),
             self._residual("x + mlp_out", f"blocks.{block}.hook_resid_post")),
        )

    def logits(self) -> Step:
        final = "ln_final.hook_out" in self.record
        matrices = []
        if final:
            matrices.append(self._residual("LN_f(x)", "ln_final.hook_out"))
        matrices.append(Matrix("logits", "logits", self.record["logits"], self.positions, self.model.vocab,
                               "position:token", "next token", "pos ╲ next"))
        return Step(
            "logits", "Logits", "logits = LN_f(x) · wteᵀ" if final else "logits = x · wteᵀ",
            f"[{self.n}, {self.model.n_embd}] · wteᵀ [{self.model.n_embd}, {self.model.n_vocab}] "
            f"→ [{self.n}, {self.model.n_vocab}]",
            "The unembedding is tied: a token's logit is the dot product of the residual stream with its embedding.",
            tuple(matrices),
        )

    def _predictions(self) -> list[Prediction]:
        result = []
        for position, logits, probs in zip(self.positions, self.record["logits"], self.record["probs"]):
            best, tied = top_token(logits)
            result.append(Prediction(position, self.model.vocab[best], float(probs[best]), tied,
                                     float(gaps(logits)[best])))
        return result

    def probs(self) -> Step:
        predicted = [p.token + ("(tie)" if p.tied else "") for p in self._predictions()]
        return Step(
            "probs", "Next-token probabilities", "probs = softmax(logits)",
            f"[{self.n}, {self.model.n_vocab}] → [{self.n}, {self.model.n_vocab}], softmax along each row",
            "Row i predicts the token after position i. Predicted: " + " ".join(predicted) + ".",
            (Matrix("probabilities", "probs", self.record["probs"], self.positions, self.model.vocab,
                    "position:token", "next token", "pos ╲ next"),),
        )

    def prediction(self) -> Step:
        return Step(
            "prediction", "Prediction at each position",
            "next token = argmax(logits),  p = softmax(logits)[next],  lead = its logit − the best other logit",
            f"logits [{self.n}, {self.model.n_vocab}] → one token per position",
            "Position i predicts the token after it; the last position's guess is the model's answer.",
            (), predictions=tuple(self._predictions()),
        )

    # ---------------------------------------------------------------- every head together (several heads)

    def heads(self, block: int) -> Step:
        n_head = self.model.n_head
        return Step(
            "heads", f"Every head's pattern · block {block}",
            "pattern_h = softmax(Q_h · K_hᵀ / √d_head + M),  h = 0 … " + str(n_head - 1),
            f"{n_head} head{'s' if n_head > 1 else ''} × [{self.n}, {self.n}]; "
            f"head h reads columns h·{self.model.d_head} … of Q, K and V",
            "The residual width is split across the heads: each one attends on its own, so each can do its own job.",
            tuple(self._attention_matrix(f"head {h}", "hook_pattern", block, h, "·") for h in range(n_head)),
            side_by_side=True,
        )

    def concat(self, block: int) -> Step:
        n_head, d_head, n_embd = self.model.n_head, self.model.d_head, self.model.n_embd
        c_proj = self.model.params["blocks"][block]["attn"]["c_proj"]
        z = self.record[f"blocks.{block}.attn.hook_z"]  # [pos, head, d_head]
        z_labels = self.model.head_labels(block, "z")
        spans = [f"{z_labels[h * d_head]}…{z_labels[(h + 1) * d_head - 1]}" for h in range(n_head)]
        writes = attribution.head_writes(z, c_proj["w"], n_head)  # [pos, head, n_embd]
        matrices = [
            Matrix("concat(z_0 … z_H): the heads' outputs side by side", f"blocks.{block}.attn.hook_z",
                   z.reshape(self.n, n_embd), self.positions, z_labels, "position:token",
                   "z dim (" + ", ".join(f"head {h}: {span}" for h, span in enumerate(spans)) + ")",
                   "pos ╲ z"),
            Matrix("W_O = c_proj.w", f"blocks[{block}].attn.c_proj.w", c_proj["w"], z_labels, self.dims,
                   "z dim", "residual dim", "z ╲ dim"),
        ]
        for h in range(n_head):
            matrices.append(self._residual(f"head {h}'s share: z_{h} · W_O[{spans[h]}]",
                                           f"blocks.{block}.attn.hook_z", writes[:, h]))
        matrices.append(self._residual("attn_out = Σ shares + b_O", f"blocks.{block}.hook_attn_out"))
        return Step(
            "concat", f"Concatenate the heads and project · block {block}",
            "attn_out = concat(z_0 … z_H) · W_O + b_O = Σ_h z_h · W_O[rows of head h] + b_O",
            f"{n_head} × z_h [{self.n}, {d_head}] → concat [{self.n}, {n_embd}] · W_O [{n_embd}, {n_embd}] "
            f"→ [{self.n}, {n_embd}]",
            "c_proj mixes the heads: each head's rows of W_O say where in the residual stream its result is written.",
            tuple(matrices),
        )

    # ---------------------------------------------------------------- why this token

    def why(self, position: int | None, split: attribution.Attribution | None = None) -> Step:
        split = attribution.attribute(self.model, self.trace, position) if split is None else split
        vocab = self.model.vocab
        values = np.vstack([split.contributions, split.total[None, :]])  # [n_parts + 1, n_vocab]
        best, tied = top_token(split.logits)
        note = [f"Position {split.position} ({self.positions[split.position]}) predicts "
                f"{vocab[best]}{' (tie)' if tied else ''}; each row is one part's share of every logit, and the "
                "rows add up to the logit."]
        for part, without, with_it in attribution.movers(split):
            top = "top token would be" if len(without) == 1 else "top tokens would be"
            note.append(f"Without {part} the {top} {_tops(vocab, without)}: it moves the prediction from "
                        f"{_tops(vocab, without)} to {_tops(vocab, with_it)}.")
        effect = attribution.gain_effect(split)
        if effect is not None:
            note.append(_gain_note(self.model, effect))
        formula = "logit[t] = Σ_part part · wte[t]"
        if split.scale is not None:
            formula = "logit[t] = Σ_part (g ⊙ (part − mean(part)) / σ) · wte[t] + ln_f.b · wte[t]"
            note.append(f"With ln_f the split is exact only for this context's scale σ = √(var(x) + 1e-5) = "
                        f"{split.scale:.6g}: each part is centred and divided by that σ; "
                        "ln_f's bias is a row of its own.")
        return Step(
            "why", f"Why this token: direct logit attribution · position {split.position}", formula,
            f"{len(split.parts)} parts × [{self.model.n_embd}] · wteᵀ [{self.model.n_embd}, {self.model.n_vocab}] "
            f"→ [{len(split.parts)}, {self.model.n_vocab}]",
            " ".join(note),
            (Matrix("each part's share of each logit", "logits", values, (*split.parts, "total = logit"), vocab,
                    "part of the model", "token", "part ╲ token"),),
        )


def _gain_note(model: Model, effect: attribution.GainEffect) -> str:
    """What ln_f's gain g does here, in words: the answer it decides, the parts whose push it turns around."""
    vocab, g = model.vocab, model.params["ln_f"]["g"]
    top, other = vocab[effect.top], vocab[effect.runner_up]
    gain = f"g = {number(g[0])}" if np.all(g == g[0]) else f"g from {number(g.min())} to {number(g.max())}"
    said = []
    if effect.top_at_unit_gain != effect.top:
        said.append(f"The final LayerNorm's gain ln_f.g ({gain}) decides the answer: with g = 1 the top token "
                    f"would be {vocab[effect.top_at_unit_gain]}; the gain makes it {top}.")
    if effect.flipped:
        shown = ", ".join(effect.flipped[:3]) + (f" and {len(effect.flipped) - 3} more" if len(effect.flipped) > 3
                                                 else "")
        they = "it favours" if len(effect.flipped) == 1 else "they favour"
        said.append(f"ln_f.g turns around the push of {shown}: before the gain {they} {other} over {top}, "
                    f"after it {top} over {other}.")
    return " ".join(said)
