"""A validated weight file: the architecture (:class:`Config`), the parameters, and what the file wrote.

The forward pass needs only the config and the float64 parameters, laid out as
picoGPT lays out GPT-2's (``params["blocks"][0]["attn"]["c_attn"]["w"]``). The
views and the rewriting of a file need more — each entry as written (``"2*Lg"``,
not 2048), the labels of every matrix's rows and columns, the document itself —
and find it beside them, in :class:`Written`.
"""

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from handwired.errors import HandwiredError
from handwired.weightfile.axes import Axis, shown

Params = dict[str, Any]  # "wte", "wpe", "blocks": [{"attn": {"c_attn": {"w", "b"}, "c_proj": …}, "mlp"?, …}], "ln_f"?


@dataclass(frozen=True)
class Config:
    """The shape of a model and the names of its tokens and residual dims."""

    vocab: tuple[str, ...]
    n_ctx: int
    n_embd: int
    n_head: int
    n_layer: int
    dims: tuple[str, ...]

    @property
    def n_vocab(self) -> int:
        return len(self.vocab)

    @property
    def d_head(self) -> int:
        return self.n_embd // self.n_head


@dataclass(frozen=True)
class Written:
    """What the file wrote: for the views, for ``diff`` and for writing the file back."""

    document: dict[str, Any] = field(default_factory=dict)  # the parsed file, as written
    constants: dict[str, float] = field(default_factory=dict)
    # Each parameter's entries as the file wrote them (numbers or expressions such as "2*Lg"),
    # keyed by JSON path ("wte", "blocks[0].attn.c_attn.w" …).
    entries: dict[str, np.ndarray] = field(default_factory=dict)
    axes: dict[str, tuple[Axis, ...]] = field(default_factory=dict)  # the same keys: each one's labelled sides


@dataclass(frozen=True)
class Model:
    """A weight file that validated: its config, its float64 parameters, and what it wrote."""

    config: Config
    params: Params
    source: str = "<weights>"
    name: str = ""
    description: str = ""
    example: str | None = None  # a context to show
    target: str | None = None  # a repeating pattern the model should follow
    written: Written = field(default_factory=Written, repr=False)
    puzzle: str | None = None  # the puzzle it answers: a bundled name, or "statement.json#hash" (judge.game.catalogue)

    def __repr__(self) -> str:  # one line: the parameters and what the file wrote are too many to print
        c = self.config
        return (f"<Model {self.name or '(unnamed)'!r} from {self.source}: vocab {' '.join(map(shown, c.vocab))}, "
                f"n_ctx {c.n_ctx}, n_embd {c.n_embd}, {c.n_layer} block(s) × {c.n_head} head(s)>")

    # The config's figures, read so often that they are the model's too.
    @property
    def vocab(self) -> tuple[str, ...]:
        return self.config.vocab

    @property
    def n_vocab(self) -> int:
        return self.config.n_vocab

    @property
    def n_ctx(self) -> int:
        return self.config.n_ctx

    @property
    def n_embd(self) -> int:
        return self.config.n_embd

    @property
    def n_head(self) -> int:
        return self.config.n_head

    @property
    def d_head(self) -> int:
        return self.config.d_head

    @property
    def n_layer(self) -> int:
        return self.config.n_layer

    @property
    def hidden(self) -> tuple[int, ...]:
        """Each block's MLP width (hidden units); 0 for a block without an MLP."""
        return tuple(block["mlp"]["c_fc"]["w"].shape[1] if "mlp" in block else 0 for block in self.params["blocks"])

    @property
    def dims(self) -> tuple[str, ...]:
        return self.config.dims

    def axes(self, path: str) -> tuple[Axis, ...]:
        """The labelled sides of the parameter at ``path`` (rows, columns; a vector: its one axis)."""
        return self.written.axes[path]

    def head_labels(self, block: int, kind: str, head: int | None = None) -> tuple[str, ...]:
        """The labels of a block's ``q``, ``k`` or ``v`` columns (of c_attn.w) or ``z`` rows (of c_proj.w), as
        sparse entries name them (``q:pos``, or numbered across heads: ``q3``); one head's, or every head's."""
        n_embd, d_head = self.n_embd, self.d_head
        path = f"blocks[{block}].attn." + ("c_proj.w" if kind == "z" else "c_attn.w")
        if path not in self.written.axes:  # a model built in code, not read from a file: numbered
            labels = tuple(f"{kind}{i}" for i in range(n_embd))
        elif kind == "z":
            labels = self.written.axes[path][0].labels
        else:
            offset = "qkv".index(kind) * n_embd
            labels = self.written.axes[path][1].labels[offset:offset + n_embd]
        return labels if head is None else labels[head * d_head:(head + 1) * d_head]

    def encode(self, text: str, what: str = "input") -> np.ndarray:
        """Text -> token ids, one character a token."""
        vocabulary = ", ".join(map(shown, self.vocab))
        if text == "":
            raise HandwiredError(f"{what}: empty; give at least one token from the vocabulary {vocabulary}")
        index = {token: i for i, token in enumerate(self.vocab)}
        for position, char in enumerate(text):
            if char not in index:
                quoted = repr(text) if len(text) <= 40 else repr(text[:37] + "…")
                raise HandwiredError(f"{what} {quoted}: {char!r} (position {position}) is not in the vocabulary "
                                     f"{vocabulary}")
        return np.array([index[char] for char in text], dtype=np.intp)

    def decode(self, ids) -> str:
        return "".join(self.vocab[int(i)] for i in ids)
