"""A loaded model for Python and notebooks: call it, run it with a cache or with hooks, as TransformerLens's
``HookedTransformer`` is used, on handwired's own forward pass (:func:`handwired.engine.forward.forward`)."""

import inspect
import os
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, overload

import numpy as np
from numpy.typing import ArrayLike, NDArray

from handwired.api.arguments import shown as described
from handwired.api.cache import ActivationCache
from handwired.api.editing import save, set_entry
from handwired.api.heads import Array, head_result
from handwired.api.keywords import speaks_python, warn
from handwired.api.tokens import chunks, to_tokens, token_ids
from handwired.api.weights import TransformerLensWeights
from handwired.engine.forward import forward
from handwired.engine.logits import raise_not_finite
from handwired.engine.trace import trace
from handwired.errors import HandwiredError
from handwired.judge.workbench import spread as spreading
from handwired.views import steps as explaining
from handwired.views.cost import refuse_slow_drawing, refuse_slow_explain, refuse_slow_predict
from handwired.views.display import View, escape, html_fragment
from handwired.views.matrices import explain_parts
from handwired.views.model import model_line, prediction_view
from handwired.views.spread import spread_view
from handwired.weightfile import Config, Model, Params, bundled_dir, bundled_folder
from handwired.weightfile.axes import shown

HookFunction = Callable[..., Any]  # fn(value, hook) -> a replacement, or None to keep the value (changed in place)
NamesFilter = str | Iterable[str] | Callable[[str], bool] | None


@dataclass(frozen=True)
class HookPoint:
    """What a hook function is told about where it runs, as TransformerLens's ``hook`` argument: ``hook.name``."""

    name: str

    def layer(self) -> int:
        """The block the hook is in (``blocks.1.…`` → 1); one outside a block has none."""
        if not isinstance(self.name, str):
            raise HandwiredError(f"HookPoint({described(self.name)}): a hook's name is a string")
        parts = self.name.split(".")
        if parts[0] != "blocks":
            raise HandwiredError(f"{self.name}: is in no block")
        return int(parts[1])


class HookedModel(TransformerLensWeights):
    """A weight file, loaded: ``model(input)`` gives logits [batch, pos, vocab]; ``input`` is text, a list of texts
    of one length, or token ids [pos] or [batch, pos]."""

    def __init__(self, model: Model) -> None:
        self.model = model  # the weight file's Model: config, float64 params, what the file wrote

    @property
    def cfg(self) -> Config:
        return self.model.config

    @property
    def name(self) -> str:
        return self.model.name

    @property
    def vocab(self) -> tuple[str, ...]:
        return self.model.vocab

    @property
    def params(self) -> Params:
        """The parameters in GPT-2's layout: ``params["blocks"][0]["attn"]["c_proj"]["w"]``."""
        return self.model.params

    @property
    def hook_names(self) -> list[str]:
        """Every hook this model records, in forward-pass order."""
        record: dict = {}
        forward(self.model.params, np.zeros((1, 1), dtype=np.intp), self.model.n_head, record=record)
        return list(record)

    @speaks_python
    def to_tokens(self, input: object) -> NDArray[np.intp]:  # -> [batch, pos]
        return to_tokens(self.model, input)

    @overload
    def to_string(self, tokens: Sequence[int] | NDArray[np.integer[Any]]) -> str: ...
    @overload
    def to_string(self, tokens: Sequence[Sequence[int]]) -> list[str]: ...
    @overload
    def to_string(self, tokens: object) -> str | list[str]: ...

    @speaks_python
    def to_string(self, tokens: object) -> str | list[str]:
        """Token ids [pos] -> text; [batch, pos] -> a list of texts. (A numpy array's number of axes is not known
        to a type checker: ``to_string(ids)`` is typed ``str`` there; give ``[batch, pos]`` as a list of lists for
        ``list[str]``.)"""
        ids = token_ids(self.model, tokens, "tokens", "token ids [pos] or [batch, pos]")
        texts = [self.model.decode(row) for row in ids]
        return texts[0] if np.asarray(tokens).ndim == 1 else texts

    @overload
    def to_str_tokens(self, input: str | Sequence[int] | NDArray[np.integer[Any]]) -> list[str]: ...
    @overload
    def to_str_tokens(self, input: list[str]) -> list[list[str]]: ...

    @speaks_python
    def to_str_tokens(self, input: object) -> list[str] | list[list[str]]:
        """Each token as its text, as TransformerLens's: text or ids [pos] (or [1, pos]) -> ``["a", "a", "b"]``; a
        list of texts -> one list each."""
        if isinstance(input, list) and input and all(isinstance(text, str) for text in input):
            return [self.to_str_tokens(text) for text in input]  # type: ignore[misc]  (each a str)
        tokens = self.to_tokens(input)
        if len(tokens) != 1:
            raise HandwiredError(f"{{input}}: {len(tokens)} contexts; give one ([pos] or [1, pos]), or a list of "
                                 "texts", ("input",))
        return [self.model.vocab[int(i)] for i in tokens[0]]

    @speaks_python
    def __call__(self, input: object) -> Array:  # -> [batch, pos, n_vocab]
        """Logits [batch, pos, vocab]; a batch too large for the memory budget at once is run in parts."""
        tokens = to_tokens(self.model, input, chunked=True)
        logits = np.empty((*tokens.shape, self.model.n_vocab))
        for start, stop in chunks(self.model, tokens.shape):
            logits[start:stop] = self._run(tokens[start:stop])
        return logits

    @speaks_python
    def run_with_cache(self, input: object, names_filter: NamesFilter = None,
                       use_attn_result: bool = False) -> tuple[Array, ActivationCache]:
        """(logits [batch, pos, vocab], the cache of every hook, or of those ``names_filter`` keeps);
        ``use_attn_result``: each block's ``attn.hook_result`` too, every head's result [batch, pos, head, n_embd],
        as TransformerLens records it when asked (its z through its rows of c_proj, without the bias)."""
        keep = _names_filter(names_filter)
        tokens = self.to_tokens(input)
        record: dict[str, Array] = {}
        logits = self._run(tokens, record.__setitem__)
        cached: dict[str, Array] = {}
        for name, value in record.items():
            if keep(name):
                cached[name] = value
            if use_attn_result and name.endswith(".attn.hook_z") and keep(result := name[:-1] + "result"):
                cached[result] = head_result(self.model, value, HookPoint(name).layer())
        return logits, ActivationCache(self.model, tokens, cached)

    @speaks_python
    def run_with_hooks(self, input: object, fwd_hooks: Iterable[tuple[str | Callable[[str], bool], HookFunction]] = (),
                       ) -> Array:
        """Logits [batch, pos, vocab] of a run where each ``(name, fn)`` sees its hook's value: ``fn(value, hook)``
        may return a replacement, or change ``value`` in place and return None (zero-ablation, mean-ablation,
        patching in a value from another run's cache). ``name`` may be a filter ``name -> bool``."""
        hooks = _hooks(fwd_hooks)
        names = [name for name in self.hook_names if name != "probs"]  # probs follow the logits; hook those
        unknown = [name for name, _ in hooks if isinstance(name, str) and name not in names]
        if unknown:
            raise HandwiredError(f"{{fwd_hooks}}: the model has no hook {unknown[0]!r}; it has {', '.join(names)}",
                                 ("fwd_hooks",))
        chosen_by = [(_names_filter(name), fn) for name, fn in hooks]

        def hook(name: str, value: np.ndarray) -> np.ndarray | None:
            chosen = [fn for keep, fn in chosen_by if keep(name)] if name != "probs" else []
            if not chosen:
                return None
            value = value.copy()  # the function may change it in place: never the pass's own arrays
            for fn in chosen:
                new = fn(value, HookPoint(name))
                if new is not None:
                    value = _replacement(name, value, new)
            return value

        return self._run(self.to_tokens(input), hook)

    def _run(self, tokens: np.ndarray, hook=None) -> np.ndarray:
        with np.errstate(over="ignore", invalid="ignore"):  # overflow is reported below, in one line
            logits = forward(self.model.params, tokens, self.model.n_head, hook=hook)
        if not np.isfinite(logits).all():
            raise_not_finite(self.model, "on this input, the logits are not finite numbers")
        return logits

    @speaks_python
    def set(self, path: str, value: ArrayLike, row: str | int | None = None, col: str | int | None = None) -> None:
        """Edit the model: the parameter at ``path`` (``"blocks.0.attn.c_proj.w"``, as the file names it) gets
        ``value`` at ``row`` and ``col`` (each a label, ``"z7"``, or a number; None: the whole axis), e.g.
        ``model.set("blocks.0.attn.c_proj.w", 2.0, row="z7", col="b")``. The model runs, checks, shows and saves
        with it at once."""
        set_entry(self.model, path, value, row, col)

    @speaks_python
    def save(self, path: "str | os.PathLike[str]", force: bool = False) -> Path:
        """Write the model as a ``handwired/1`` weight file (atomically; over an existing file only with
        ``force=True``): its file as loaded, each edited entry as its new number, labels, form, constants and
        every unchanged expression kept. ``handwired diff OLD NEW`` names exactly the entries edited."""
        return save(self.model, path, force)

    @speaks_python
    def predict(self, text: str, every_position: bool = False) -> View:
        """The next token after ``text``, as ``handwired predict`` shows it."""
        refuse_slow_predict(self.model, min(len(self.model.encode(text, "text")), self.model.n_ctx), every_position)
        run = trace(self.model, text)
        return View(f"predict {text!r} · model {self.name}",
                    lambda everything: [prediction_view(self.model, run, every_position)])

    @speaks_python
    def explain(self, text: str | None = None, step: str | list[str] | None = None, block: int | None = None,
                head: int | None = None) -> View:
        """Every step of the forward pass on ``text`` (default: the file's example), or the ``step`` asked for
        (``"pattern"``, ``"why"``, …), as ``handwired explain`` shows it."""
        text = text if text is not None else self.model.example
        if text is None:
            raise HandwiredError(f"{self.model.source}: has no 'example'; give the context as {{text}}", ("text",))
        wanted = explaining.expand([step] if isinstance(step, str) else step or [])
        refuse_slow_explain(self.model, min(len(self.model.encode(text, "text")), self.model.n_ctx), wanted, block,
                            head)  # before the trace, as the command does; then the drawing, which shows every number
        run = trace(self.model, text)
        panels = explaining.steps(self.model, run, wanted, block, head)
        refuse_slow_drawing(panels, True)
        return View(f"explain {text!r} · model {self.name}",
                    lambda everything: explain_parts(self.model, run, panels, everything))

    @speaks_python
    def spread(self, value: str, puzzle: str | None = None, by: str = "", position: int = -1,
               head: int | None = None) -> View:
        """One value (``HOOK:COLUMN``, e.g. ``"blocks.0.hook_resid_post:out"``, or ``"lead"``) over every context a
        check judges, grouped by the right answer, as ``handwired spread`` shows it; ``puzzle``: judged by that puzzle
        (default: the one the file names, else the file's target, else every context)."""
        probe = spreading.parse_value(self.model, value, head)
        source = _spread_source(self.model, puzzle)
        by = by or ("answer" if source.rule is not None else "predicted")
        result = spreading.spread(self.model, probe, source, by, position)
        return View(f"spread {value} · model {self.name}", lambda everything: [spread_view(self.model, result)])

    def __repr__(self) -> str:
        m = self.model
        folder = Path(m.source).parent
        where = ("bundled" if folder == bundled_dir() else "bundled solution"
                 if folder == bundled_folder("puzzles") / "solutions" else m.source)
        mlp = f"MLP widths {'/'.join(map(str, m.hidden))}" if any(m.hidden) else "no MLP"
        blocks, heads = ("block" if m.n_layer == 1 else "blocks"), ("head" if m.n_head == 1 else "heads")
        return (f"<HookedModel {m.name or '(unnamed)'!r} ({where}): vocab {' '.join(map(shown, m.vocab))}, "
                f"n_ctx {m.n_ctx}, n_embd {m.n_embd}, {m.n_layer} {blocks} × {m.n_head} {heads}, {mlp}>")

    def _repr_html_(self) -> str:
        about = f"<p>{escape(self.model.description)}</p>" if self.model.description else ""
        return html_fragment([model_line(self.model)]) + about


def _spread_source(model: Model, puzzle: str | None) -> spreading.Source:
    """The contexts spread reads: the puzzle's, else the one the file names, else its target's, else every one (as
    handwired.judge.judging decides), with the command line's warnings as Python's."""
    source, notes = spreading.judged_source(model, puzzle)
    for note in notes:
        warn(str(note))
    return source


def _names_filter(names: object, parameter: str = "names_filter") -> Callable[[str], bool]:
    if names is None:
        return lambda name: True
    if isinstance(names, str):
        return lambda name: name == names
    if callable(names):
        return lambda name: bool(names(name))
    wanted = list(names) if isinstance(names, Iterable) else [None]
    if all(isinstance(name, str) for name in wanted):
        return lambda name: name in wanted
    raise HandwiredError(f"{{{parameter}}}: expected a hook's name, a list of names or a function name -> bool; "
                         f"found {_what(names)}", (parameter,))


def _hooks(given: object) -> list[tuple[str | Callable[[str], bool], HookFunction]]:
    """``fwd_hooks`` as (name or filter, function) pairs, each function taking (value, hook); one line otherwise."""
    where = "{fwd_hooks}"
    if isinstance(given, (str, bytes)) or not isinstance(given, Iterable):
        raise HandwiredError(f"{where}: expected a list of (name, function) pairs; found {_what(given)}",
                             ("fwd_hooks",))
    hooks = list(given)
    for i, pair in enumerate(hooks):
        if not isinstance(pair, tuple | list) or len(pair) != 2:
            raise HandwiredError(f"{where}: item {i} is {_what(pair)}; expected a pair (name, function)",
                                 ("fwd_hooks",))
        name, fn = pair
        if not (isinstance(name, str) or callable(name)):
            raise HandwiredError(f"{where}: item {i}'s name is {_what(name)}; expected a hook's name or a filter "
                                 "name -> bool", ("fwd_hooks",))
        if not callable(fn) or not _takes_two(fn):
            raise HandwiredError(f"{where}: item {i}'s function is {_what(fn)}; expected a function of (value, hook)",
                                 ("fwd_hooks",))
    return [(name, fn) for name, fn in hooks]


def _takes_two(fn: Callable[..., Any]) -> bool:
    try:
        inspect.signature(fn).bind(None, None)
    except TypeError:
        return False
    except ValueError:  # a builtin without a signature: given the benefit of the doubt
        return True
    return True


def _replacement(name: str, value: np.ndarray, new: object) -> np.ndarray:
    """What a hook function returned, as an array of the hook's shape; one line naming the hook otherwise."""
    try:
        array = np.broadcast_to(np.asarray(new, dtype=np.float64), value.shape)
    except (TypeError, ValueError):
        raise HandwiredError(f"the hook function for {name} returned {_what(new)}; expected None or an array "
                             f"of shape {list(value.shape)}") from None
    return np.array(array)


def _what(new: object) -> str:
    shape = getattr(new, "shape", None)
    if shape is not None:
        return f"{type(new).__name__} of shape {list(shape)}"
    return getattr(new, "__qualname__", None) or repr(new)[:60]
