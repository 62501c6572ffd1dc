"""Rule and domain kinds: what a statement may name, each implemented once. A statement is data and can only name
these (:mod:`.spec` builds one from it)."""
