"""The game's views: the list of puzzles, a statement, and the verdict on a submission with its score."""

from rich import box
from rich.console import Group, JustifyMethod
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from handwired.defaults import NEAR_MISS
from handwired.engine.logits import top_token
from handwired.engine.trace import Trace
from handwired.judge.progress import Progress
from handwired.judge.puzzle import Answer, Caps, Puzzle, answer
from handwired.judge.rules import AMBIGUOUS, DECIDED, OUT_OF_DOMAIN
from handwired.judge.scores import Score, nonzero_parameters
from handwired.judge.verdict import Submission
from handwired.views.cost import refuse_slow_examples
from handwired.views.numbers import column as number_column
from handwired.views.numbers import count, logits
from handwired.views.report import report_json
from handwired.weightfile import Model
from handwired.weightfile.axes import escaped, printable, shown

STATUS: dict[int, str] = {DECIDED: "decided", AMBIGUOUS: "ambiguous", OUT_OF_DOMAIN: "out of domain"}


def score_text(score: Score) -> str:
    """``18 non-zero parameters, n_embd 6, 1 head, 1 block, margin 1023 logits``."""
    return (f"{count(score.parameters, 'non-zero parameter')}, n_embd {score.n_embd}, {count(score.n_head, 'head')}, "
            f"{count(score.n_layer, 'block')}, margin {logits(score.margin)}")


WIDE = 100  # columns: from here on the list also says what each puzzle asks (puzzles show always does)
COMPACT = 80  # columns: below this the list's headers are short, so that it fits whole (60 columns at least)
SHORT = {"level": "lv", "n_embd": "embd", "heads": "hd", "blocks": "blk", "record": "rec"}


def catalogue_view(catalogue: list[Puzzle], progress: Progress, width: int = 80) -> Group:
    """Every puzzle on one line: level, name, its caps under labelled columns, par, record, the player's best;
    on a terminal of ``WIDE`` columns or more, also what to build."""
    wide, short = width >= WIDE, width < COMPACT
    table = Table(title="puzzles: each judged on every context", title_justify="left", box=box.SIMPLE_HEAD,
                  pad_edge=False, show_edge=not short)
    columns: list[tuple[str, JustifyMethod]] = [
        ("level", "right"), ("name", "left"), *([("to build", "left")] if wide else []), ("n_embd", "right"),
        ("heads", "right"), ("blocks", "right"), ("MLP", "right"), ("par", "right"), ("record", "right"),
        ("yours", "right")]
    yours = [_yours(puzzle, progress.best(puzzle.key), progress.solved(puzzle.key)) for puzzle in catalogue]
    kept = {"name": max((len(p.name) for p in catalogue), default=4),
            "yours": max(text.cell_len for text in yours + [Text()])}
    for column, justify in columns:  # on a narrow terminal the headers are shorter; a name or a ★ is never cut
        wraps = column == "to build"
        table.add_column(SHORT.get(column, column) if short else column, justify=justify, no_wrap=not wraps,
                         ratio=1 if wraps else None, min_width=kept.get(column))
    for puzzle, mine in zip(catalogue, yours):
        caps = puzzle.caps
        table.add_row(
            str(puzzle.level), Text(puzzle.name, style="bold"), *([printable(puzzle.summary)] if wide else []),
            str(caps.n_embd), str(caps.n_head), str(caps.n_layer), mlp_cap(caps),
            _parameters(puzzle.par), _parameters(puzzle.record), mine,
        )
    table.caption = (("lv: level · embd, hd, blk: n_embd, heads, blocks" if short else "n_embd, heads, blocks")
                     + ": at most · MLP: allowed, with at most that many hidden units · par, "
                     + ("rec (record)" if short else "record") + ", yours: the non-zero parameters of the reference, "
                     f"of the leanest answer known, of your best · {RECORD_MARK}: your best ties or beats the record"
                     + ("" if wide else " · what each asks: handwired puzzles show NAME"))
    table.caption_justify = "left"
    unsolved = [p.name for p in catalogue if not progress.solved(p.key)]
    solved = f"{len(catalogue) - len(unsolved)} of {len(catalogue)} solved."
    if not unsolved:
        footer = f"{solved} Every puzzle is solved: now beat par and the record (fewer non-zero parameters)."
    else:
        footer = (f"{solved} {'Start with' if len(unsolved) == len(catalogue) else 'Next'}: "
                  f"handwired puzzles show {unsolved[0]}")
    return Group(table, Text(footer, style="dim"))


RECORD_MARK = "★"


def _yours(puzzle: Puzzle, best: Score | None, solved: bool) -> Text:
    """The player's best in the list: ``✓ 8``, and ``★`` when it ties or beats the statement's record as it is now."""
    if not solved or best is None:
        return Text("·", style="dim")
    mark = f" {RECORD_MARK}" if best.against(puzzle.record) in ("better", "tie") else ""
    return Text(f"✓ {best.parameters}{mark}", style="bold green" if mark else "green")


def catalogue_json(catalogue: list[Puzzle], progress: Progress) -> dict:
    """Every puzzle with the player's progress, for programs: solved, best score, hints revealed of how many, and
    how the best compares with par and the record (``better``, ``tie``, ``worse``; null without one of them)."""
    return {"puzzles": [{"name": puzzle.name, "level": puzzle.level, "title": puzzle.title,
                         "solved": progress.solved(puzzle.key), "best": _figures(best := progress.best(puzzle.key)),
                         "hints": progress.hints(puzzle.key), "hints_available": len(puzzle.hints),
                         "par": _figures(puzzle.par), "record": _figures(puzzle.record),
                         "best_against_par": _against(best, puzzle.par),
                         "best_against_record": _against(best, puzzle.record)} for puzzle in catalogue]}


def _against(score: Score | None, other: Score | None) -> str | None:
    return None if score is None else score.against(other)


def mlp_cap(caps: Caps) -> str:
    """The MLP cap in a cell: ``no``, ``yes`` or ``≤16`` (hidden units)."""
    return "no" if not caps.mlp else "yes" if caps.hidden is None else f"≤{caps.hidden}"


def _parameters(score: Score | None) -> str:
    return "—" if score is None else str(score.parameters)


def statement_view(puzzle: Puzzle, progress: Progress) -> Panel:
    """The statement: story, rule, how it is judged, caps, examples with the rule's answers, par, hints."""
    refuse_slow_examples(puzzle)
    examples = Table(title="examples (the answers are the rule's)", title_justify="left")
    examples.add_column("context")
    examples.add_column("next token")
    for context in puzzle.examples:
        said = answer(puzzle, context)
        examples.add_row(context, Text(said.text(), style="bold green" if said.status == DECIDED else "yellow"))
    best = progress.best(puzzle.key)
    parts = [
        Text(escaped(puzzle.story)),
        Text.assemble(("\nrule: ", "bold"), puzzle.rule.description),
        Text.assemble(("judged: ", "bold"), judged_text(puzzle)),
        Text.assemble(("caps: ", "bold"), f"vocab {' '.join(map(shown, puzzle.vocab))} (in this order), "
                      f"n_ctx {puzzle.n_ctx}, ", puzzle.caps.text(), "; LayerNorm always allowed"),
        examples,
        Text.assemble(("par: ", "bold"), score_text(puzzle.par) if puzzle.par else "no reference solution"),
    ]
    if puzzle.record is not None:
        parts.append(Text.assemble(("record: ", "bold"), score_text(puzzle.record),
                                   (" (the leanest answer known: beat it)", "dim")))
    if best is not None:
        parts.append(Text.assemble(("your best: ", "bold"), score_text(best)))
    answer_path = puzzle.answer_file
    parts.append(Text(f"hints: {progress.hints(puzzle.key)} of {len(puzzle.hints)} revealed "
                      f"(handwired puzzles hint {puzzle.ref})", style="dim"))
    parts.append(Text(f"Next: handwired puzzles start {puzzle.ref} -o {answer_path}, wire it, then "
                      f"handwired puzzles check {puzzle.ref} {answer_path}", style="dim"))
    title = Text.assemble((f"{puzzle.name}", "bold magenta"), f" — {printable(puzzle.title)}  (level {puzzle.level})",
                          ("  solved ✓" if progress.solved(puzzle.key) else "", "green"))
    return Panel(Group(*parts), title=title, title_align="left", expand=False)


def judged_text(puzzle: Puzzle) -> str:
    """Which contexts the puzzle judges, and how, in words."""
    if puzzle.domain is not None:
        which = (f"on every context of its domain, {puzzle.domain.description} ({puzzle.n_contexts:,} contexts); "
                 "a context outside it is never judged, whatever the model says there")
    else:
        vocab = ", ".join(map(shown, puzzle.vocab))
        which = (f"on every context of length 1…{puzzle.n_ctx} over {vocab} ({puzzle.n_contexts:,} contexts), each fed "
                 "from position 0, by this rule alone — not by the stream test that `handwired check` runs on a "
                 "model's target" + (", which starts the pattern at phase 0" if puzzle.rule_spec["kind"] == "pattern"
                                     else ""))
    return which + (". A context passes when the right token's logit is strictly above every other; ambiguous and "
                    "out-of-domain contexts are counted, never judged.")


def puzzle_line(puzzle: Puzzle) -> Text:
    return Text.assemble(("puzzle ", "dim"), (puzzle.name, "bold magenta"),
                         f" — {printable(puzzle.title)} (level {puzzle.level})")


def score_view(submission: Submission, best_before: Score | None, new_best: bool) -> Group:
    """A solved puzzle: the verdict against par, the score table, where to see the reference."""
    puzzle, score, par = submission.puzzle, submission.score, submission.par
    assert score is not None, "the score view is a solved puzzle's"
    table = Table(title="score (better: fewer non-zero parameters, then n_embd, blocks, heads; the margin is shown, "
                  "not ranked)", title_justify="left")
    table.add_column("")
    for column in ("non-zero parameters", "n_embd", "heads", "blocks", "margin"):
        table.add_column(column, justify="right")
    record = puzzle.record
    rows = [(label, figures) for label, figures in (("yours", score), ("par", par), ("record", record),
                                                    ("your best before", best_before)) if figures is not None]
    margins = number_column([figures.margin for _, figures in rows])  # one format for the column
    for (label, figures), margin in zip(rows, margins):
        table.add_row(label, str(figures.parameters), str(figures.n_embd), str(figures.n_head),
                      str(figures.n_layer), margin)
    verdict = f"\nSolved puzzle {puzzle.name!r}!" + _standing(score, par, record, best_before, new_best)
    notes = [Text(verdict, style="bold green"), table]
    if puzzle.bundled:
        notes.append(Text(f"How the reference does it: handwired puzzles solution {puzzle.ref}", style="dim"))
    if score.margin < NEAR_MISS:
        notes.append(Text(f"The margin is under {logits(NEAR_MISS)}: it counts, but a more robust wiring "
                          "would lead by more.", style="yellow"))
    return Group(*notes)


def _standing(score: Score, par: Score | None, record: Score | None, best_before: Score | None,
              new_best: bool) -> str:
    """The verdict's words on par, the record and the player's best: better, or a tie (never "better" on a margin)."""
    words = {"better": {"par": " Better than par.", "record": " Better than the record: the leanest answer known "
                        "until now!"},
             "tie": {"par": " Ties par.", "record": " Ties the record."}}
    said = "".join(words.get(score.against(other) or "", {}).get(label, "")
                   for label, other in (("par", par), ("record", record)))
    if new_best and best_before is not None:
        said += " A new best."
    elif score.ties(best_before):
        said += " Ties your best."
    return said


def unsolved_line(submission: Submission) -> Text:
    """Not solved yet: the size so far against par and the record, and where help is."""
    puzzle = submission.puzzle
    against = [f"{label} {score.parameters}" for label, score in (("par", puzzle.par), ("record", puzzle.record))
               if score is not None]
    size = count(nonzero_parameters(submission.model), "non-zero parameter")
    return Text(f"\nNot solved yet: {size} so far{' (' + ', '.join(against) + ')' if against else ''}. "
                f"Stuck? handwired puzzles hint {puzzle.ref}", style="dim")


def submission_json(submission: Submission, best: Score | None, new_best: bool, near_miss: float = NEAR_MISS) -> dict:
    """The verdict for programs: the report, solved, the score, par, the player's best."""
    return {"puzzle": submission.puzzle.name, **report_json(submission.fitted_report, near_miss),
            "solved": submission.solved, "parameters": nonzero_parameters(submission.model),
            "score": _figures(submission.score), "par": _figures(submission.par),
            "record": _figures(submission.puzzle.record), "best": _figures(best), "new_best": new_best,
            "against_par": _against(submission.score, submission.par),
            "against_record": _against(submission.score, submission.puzzle.record)}


def _figures(score: Score | None) -> dict | None:
    return None if score is None else score.to_json()


def rule_answers(puzzle: Puzzle, model: Model, run: Trace, every_position: bool) -> list[dict]:
    """At the last position (or every one): the context, the rule's answer, the model's, and whether it is right."""
    positions = range(len(run.window)) if every_position else [len(run.window) - 1]
    answers = []
    for i in positions:
        context = run.window[:i + 1]
        best, tied = top_token(run.logits[i])
        said = answer(puzzle, context) if not run.truncated else Answer(context, OUT_OF_DOMAIN, ())
        right = None if said.status != DECIDED else model.vocab[best] in said.tokens and not tied
        answers.append({"position": i, "context": context, "rule": said.text(), "tokens": list(said.tokens),
                        "status": STATUS[said.status], "prediction": model.vocab[best], "tied": tied, "right": right})
    return answers


def rule_view(puzzle: Puzzle, model: Model, run: Trace, every_position: bool) -> Table:
    """The puzzle's rule beside the model: what should follow each context, and what the model predicts."""
    table = Table(title=f"puzzle {puzzle.name}", title_justify="left")
    for column in ("context", "the rule says", "the model says"):
        table.add_column(column)
    for row in rule_answers(puzzle, model, run, every_position):
        mark = {True: " ✓", False: " ✗", None: ""}[row["right"]]
        table.add_row(row["context"], Text(row["rule"], style="" if row["status"] == "decided" else "dim"),
                      Text(row["prediction"] + (" (tie)" if row["tied"] else "") + mark,
                           style={True: "green", False: "red", None: ""}[row["right"]]))
    if run.truncated:
        table.caption = f"the puzzle judges contexts of at most {puzzle.n_ctx} tokens fed from position 0; " \
                        "this one was cut to its last ones"
    return table
