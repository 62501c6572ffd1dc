"""The judge: which contexts a model is run on, what the right next token is, and the verdict.

:mod:`.rules` says which next tokens are right for a context (pattern, first,
previous, … the rule kinds a puzzle names); :mod:`.contexts` enumerates and
samples contexts; :mod:`.plans` pairs contexts with a rule; :mod:`.report` runs
a plan through the engine and keeps the counts, the shortest failures and the
margin. The game sits on top: :mod:`.puzzle` reads statements, :mod:`.catalogue`
finds them, :mod:`.scores` scores an answer, :mod:`.verdict` gives the one
verdict on a submission, :mod:`.progress` keeps a player's progress, and
:mod:`.compare` says what an edit changed. Nothing here draws or parses a command line.
"""
