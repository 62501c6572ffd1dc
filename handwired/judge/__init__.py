"""The judge: which contexts a model is run on, what the right next token is, and the verdict.

:mod:`.rules` says which next tokens are right for a context (pattern, first,
previous, …) and :mod:`.answers` the kinds that answer after a separator, both
built from a statement's data by :mod:`.kinds`; :mod:`.domains` gives the exact
contexts a puzzle judges; :mod:`.contexts` enumerates and
samples contexts; :mod:`.plans` pairs contexts with a rule; :mod:`.report` runs
a plan through the engine and keeps the counts, the shortest failures and the
margin. The game sits on top: :mod:`.puzzle` reads statements whole and
:mod:`.listing` reads only what the list shows, both by the schema and limits of
:mod:`.statement`; :mod:`.catalogue` finds them, :mod:`.scores` scores an answer, :mod:`.verdict` gives the one
verdict on a submission, :mod:`.judging` decides once how a file is judged (by a puzzle, a target, or not at all)
and holds the one :class:`~.judging.Verdict` a judging produces, :mod:`.progress` keeps a player's progress, and
:mod:`.compare` says what an edit changed; :mod:`.spread` groups one recorded
value over the judged contexts and :mod:`.separation` finds the thresholds
between the groups. Nothing here draws or parses a command line.
"""
