"""The judge: which contexts a model is run on, what the right next token is, and the verdict.

Four sub-systems, each a folder, each importing only those listed before it:

- :mod:`.kinds`, the rule and domain kinds a statement may name: :mod:`.kinds.rules` (a rule of the context),
  :mod:`.kinds.answers` (an answer after a separator) and :mod:`.kinds.circuits` (the third ladder's), built from a
  statement's data by :mod:`.kinds.spec`; :mod:`.kinds.domains` (the exact contexts a puzzle judges),
  :mod:`.kinds.sampling` (a domain's contexts drawn at random) and :mod:`.kinds.case_rules` (what a rule says over a
  set of contexts at once);
- :mod:`.checking`, a model judged on a set of contexts: :mod:`.checking.contexts` (which contexts, and what
  walking them costs), :mod:`.checking.plans` (contexts paired with a rule), :mod:`.checking.report` (a plan run
  through the engine: counts, shortest failures, margin) and :mod:`.checking.cases` (proof by cases);
- :mod:`.game`, the puzzles: :mod:`.game.statement` (a statement's schema and limits), read whole by
  :mod:`.game.puzzle` and light by :mod:`.game.listing`, found by :mod:`.game.catalogue`; :mod:`.game.scores`,
  :mod:`.game.verdict` (the verdict on a submission) and :mod:`.game.progress` (a player's progress);
- :mod:`.workbench`, many variants of one model judged together: :mod:`.workbench.variants` (each a tally, on one
  walk), :mod:`.workbench.sweep`, :mod:`.workbench.ablate`, :mod:`.workbench.spread` with
  :mod:`.workbench.separation`, and :mod:`.workbench.compare` (what an edit changed).

Between the game and the workbench, :mod:`.judging` decides once how a file is judged (by a puzzle, a target, or not
at all) and holds the one :class:`~.judging.Verdict` a judging produces. Nothing here draws or parses a command line.
"""
