"""The views: what a person reads, built as data and drawn with rich.

:mod:`.numbers` formats every number a view prints, one way; :mod:`.steps`
turns a trace into explain's steps (labelled matrices with formula and shape);
:mod:`.paging` decides which all-zero rows and columns fold and which columns
share a page; :mod:`.matrices` draws a matrix as a heat map and a step as a
panel; :mod:`.model` draws predictions, :mod:`.weights` every weight matrix,
:mod:`.report` and :mod:`.failure` check reports and the shortest failure
through the whole model; :mod:`.attend`, :mod:`.diff`, :mod:`.watch`,
:mod:`.spread` and :mod:`.puzzles` are those commands' views. Views read the engine and the judge; nothing below
them imports a view, and nothing here parses a command line.
"""
