"""The engine: the GPT-2 forward pass in numpy, and the ways handwired runs it.

:mod:`.forward` is the model itself, small pure functions in picoGPT's manner, recording intermediates under
TransformerLens hook names. :mod:`.trace` runs one context and keeps every intermediate (predict, explain);
:mod:`.batch` runs many contexts in bounded memory; :mod:`.walk` runs any set of contexts a check judges (a puzzle's
domain, every string, a list) as the trie of their prefixes, walked depth first in bounded batches, each evaluated
by the one block step (:mod:`.block_step`) in one of the arithmetics of :mod:`.arithmetic` (float64, certified
intervals, or intervals over sets of contexts); :mod:`.parts` walks every string in parts, :mod:`.resume`
walks variants of a model beside it, and :mod:`.probe` reads one recorded value there for every context (spread).
:mod:`.memory` sizes a pass before it runs; :mod:`.generate` continues a context greedily; :mod:`.attribution` splits
a logit into each part's share; :mod:`.attend` is one attention step on matrices given by hand. It reads models from
:mod:`handwired.weightfile` and knows nothing of rules, views or a command line.
"""
