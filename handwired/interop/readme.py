"""The loading code for an exported folder, for each TransformerLens major version, and the folder's README."""

from handwired.engine.forward import forward
from handwired.weightfile import Model
from handwired.weightfile.axes import escaped, printable

TESTED = {"3": "3.9.0", "4": "4.3.0"}  # with torch 2.13.0 (CPU build)

LOAD_V4 = '''\
import json, torch
from safetensors.torch import load_file
from transformer_lens import TransformerBridge
from transformer_lens.utilities.tl_checkpoint_conversion import convert_tl_checkpoint

def load_handwired(folder):
    """TransformerLens 4.x: a TL-native model with the exported weights, in float64."""
    cfg = json.load(open(f"{folder}/config.json"))
    model = TransformerBridge.boot_native(cfg, dtype=torch.float64)  # dtype must be given here
    state = convert_tl_checkpoint(load_file(f"{folder}/model.safetensors"), model.cfg)
    model.load_state_dict(state, strict=True)
    return model
'''

LOAD_V3 = '''\
import json, torch
from safetensors.torch import load_file
from transformer_lens import HookedTransformer, HookedTransformerConfig

def load_handwired(folder):
    """TransformerLens 3.x: a HookedTransformer with the exported weights, in float64."""
    cfg = json.load(open(f"{folder}/config.json"))
    model = HookedTransformer(HookedTransformerConfig(**{**cfg, "dtype": torch.float64}))
    missing, unexpected = model.load_state_dict(load_file(f"{folder}/model.safetensors"), strict=False)
    # the causal mask and the masking value are buffers the model makes itself
    assert not unexpected and all(key.endswith((".mask", ".IGNORE")) for key in missing)
    return model
'''

USE = '''\
import torch
model = load_handwired(".")  # this folder
vocab = {vocab}
tokens = torch.tensor([[vocab.index(c) for c in "{example}"]])
logits, cache = model.run_with_cache(tokens)
print(vocab[logits[0, -1].argmax()])          # {prediction}
print(cache["blocks.0.attn.hook_pattern"][0, 0])
'''


def readme(model: Model, config: dict) -> str:
    """The exported folder's README: what is in it, how to load it, what differs."""
    example = (model.example or model.decode(range(model.n_vocab)))[-model.n_ctx:]
    logits = forward(model.params, model.encode(example)[None, :], model.n_head, last_only=True)[0]
    prediction = model.vocab[int(logits.argmax())]
    title = printable(model.name) or "handwired model"  # a README is read in a terminal too: shown, never obeyed
    use = USE.format(vocab=list(model.vocab), example=example, prediction=prediction)
    description = f"{escaped(model.description.strip())}\n\n" if model.description and model.description.strip() else ""
    return f"""# {title}: a hand-wired transformer for TransformerLens

{description}Exported by handwired from a `handwired/1` weight file, for TransformerLens. TransformerLens
computes the same logits as handwired to float64 rounding, provided the model stays in float64
(in float32 the logits of random test models move by up to 5e-5 of their size) and none of
TransformerLens's weight processing (`fold_ln`, `center_unembed`, …) is applied.

| file | what it holds |
| --- | --- |
| `config.json` | the configuration: d_model {config['d_model']}, {_count(config['n_heads'], 'head')} of \
{config['d_head']}, {_count(config['n_layers'], 'block')}, n_ctx {config['n_ctx']}, d_vocab {config['d_vocab']}, \
{'LayerNorm' if config['normalization_type'] else 'no LayerNorm'}, \
{f"MLP width {config['d_mlp']}" if config['d_mlp'] else 'attention only'} |
| `model.safetensors` | the weights under TransformerLens's names (`embed.W_E`, `blocks.0.attn.W_Q` …), float64 |
| `vocab.json` | token id → character; one character is one token, no BOS token |
| `handwired.json` | what TransformerLens has no place for: the residual dimensions' labels, name, example, target |

## Loading, TransformerLens 4.x (tested with {TESTED['4']})

```python
{LOAD_V4}```

## Loading, TransformerLens 3.x (tested with {TESTED['3']})

```python
{LOAD_V3}```

## Using it

```python
{use}```

## What differs from handwired

- Every hook handwired records under a TransformerLens name holds the same numbers here, but one:
  in 4.x, `attn.hook_attn_scores` holds the softmax pattern on this path (handwired and 3.x hold
  the scaled, masked scores there); use `attn.hook_pattern` for the pattern.
- The unembedding is tied in handwired: `unembed.W_U` is `embed.W_E` transposed and `unembed.b_U` is 0.
{_mlp_note(model, config)}"""


def _mlp_note(model: Model, config: dict) -> str:
    """What the folder's MLPs are when the weight file's blocks differ in having one, or in its width; else nothing."""
    widths = [block["mlp"]["c_fc"]["w"].shape[1] if "mlp" in block else 0 for block in model.params["blocks"]]
    if config["attn_only"] or len(set(widths)) == 1:
        return ""
    notes = []
    if 0 in widths:
        notes.append(f"a block without an MLP in handwired is an all-zero MLP of width d_mlp = {config['d_mlp']} here")
    if len({width for width in widths if width}) > 1:
        notes.append(f"a narrower MLP is zero-padded to d_mlp = {config['d_mlp']}")
    text = "; ".join(notes)
    return f"- {text[0].upper()}{text[1:]}: the zeros add exactly nothing.\n"


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"
