"""The arithmetics the one block step (:mod:`handwired.engine.block_step`) is run in, each a class with one method
per operation: :mod:`.floats` (float64 on columns, and the float walk), :mod:`.certified` (intervals in midpoint-radius
form on the same columns, whose bounds :mod:`.interval` computes, and the certified walk) and :mod:`.cases` (the
certified arithmetic over sets of contexts: an embedding is the hull of a set of tokens' rows). A new operation of
the model is one method in each."""
