"""Loading a model from Python: a bundled name, a path, a document already in memory, or a model loaded before."""

import os
from typing import Any, TypeAlias

from handwired.api.keywords import speaks_python
from handwired.api.model import HookedModel
from handwired.defaults import DEFAULT_MODEL
from handwired.errors import HandwiredError
from handwired.weightfile import Model, parse
from handwired.weightfile import load as load_file

DICT_SOURCE = "<dict>"  # what messages call a weight file given as a dict
Loadable: TypeAlias = str | os.PathLike[str] | dict[str, Any] | Model | HookedModel  # what load takes


@speaks_python
def load(spec: Loadable = DEFAULT_MODEL) -> HookedModel:
    """A model from a bundled name (``"aab"``), a weight file's path, a ``handwired/1`` document as a dict, or a
    model loaded already; a file with a mistake raises one HandwiredError naming the first (and how many more)."""
    if isinstance(spec, HookedModel):
        return spec
    if isinstance(spec, Model):
        return HookedModel(spec)
    if isinstance(spec, dict):
        _refuse_keys(spec, "")
        model, problems = parse(spec, source=DICT_SOURCE)
        if problems or model is None:
            more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
            raise HandwiredError(f"{DICT_SOURCE}: {problems[0] if problems else 'not a weight file'}{more}")
        return HookedModel(model)
    if isinstance(spec, (str, os.PathLike)):
        return HookedModel(load_file(os.fspath(spec)))
    raise HandwiredError(f"{{spec}}: expected a bundled model's name, a path, a dict or a model; found "
                         f"{type(spec).__name__}", ("spec",))


def _refuse_keys(value: object, path: str) -> None:
    """A document's every object key a string, as in JSON; one line naming the first that is not."""
    stack = [(value, path)]
    while stack:
        value, path = stack.pop()
        if isinstance(value, dict):
            for key, item in value.items():
                if not isinstance(key, str):
                    raise HandwiredError(f"{{spec}}: key {key!r} at {path or 'the top'}: a weight file's keys are "
                                         "strings, as in JSON", ("spec",))
                stack.append((item, f"{path}.{key}" if path else key))
        elif isinstance(value, list):
            stack.extend((item, f"{path}[{i}]") for i, item in enumerate(value))
