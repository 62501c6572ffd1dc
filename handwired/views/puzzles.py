"""The game's views: a statement, and the verdict on a submission with its score."""

from rich.console import Group
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from handwired.defaults import NEAR_MISS
from handwired.engine.logits import top_token
from handwired.engine.trace import Trace
from handwired.judge.game.progress import Progress
from handwired.judge.game.puzzle import Answer, Puzzle, answer
from handwired.judge.game.scores import Score, nonzero_parameters
from handwired.judge.game.verdict import Submission
from handwired.judge.kinds.domains import MAX_INPUTS
from handwired.judge.kinds.rules import AMBIGUOUS, DECIDED, OUT_OF_DOMAIN
from handwired.views.catalogue import against, score_json
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
    parts.append(Text(f"hints: {progress.hints(puzzle.key)} of {len(puzzle.hints)} revealed "
                      f"(handwired puzzles hint {puzzle.ref})", style="dim"))
    parts.append(Text(next_step(puzzle, best if progress.solved(puzzle.key) else None), style="dim"))
    title = Text.assemble((f"{puzzle.name}", "bold magenta"), f" — {printable(puzzle.title)}  (level {puzzle.level})",
                          ("  solved ✓" if progress.solved(puzzle.key) else "", "green"))
    return Panel(Group(*parts), title=title, title_align="left", expand=False)


def next_step(puzzle: Puzzle, best: Score | None) -> str:
    """What to do next: start and check an answer; once solved (``best``), go for the record, or lean further."""
    answer_path = puzzle.answer_file
    check = f"handwired puzzles check {puzzle.ref} {answer_path}"
    if best is None:
        return f"Next: handwired puzzles start {puzzle.ref} -o {answer_path}, wire it, then {check}"
    if puzzle.record is not None and best.key() > puzzle.record.key():
        return (f"Solved (your best is above). Next, try for the record: an answer leaner than it, by non-zero "
                f"parameters first, then n_embd, blocks and heads; then {check}")
    level = "ties" if puzzle.record is not None and best.ties(puzzle.record) else "beats"
    return (f"Solved, and your best {level} the record." if puzzle.record is not None else "Solved.") + (
        f" Next: leaner still, if you can; {check}")


def judged_text(puzzle: Puzzle) -> str:
    """Which contexts the puzzle judges, and how, in words."""
    if puzzle.domain is not None:
        walked = puzzle.n_contexts <= MAX_INPUTS or puzzle.by_cases_size() is None
        how = "" if walked else ", too many to walk one by one: proved by cases, sets of contexts bounded at once"
        which = (f"on every context of its domain, {puzzle.domain.description} ({puzzle.n_contexts:,} contexts{how}); "
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
    """The verdict's words on par, the record and the player's best: better, or a tie (never "better" on a margin).
    A record falls once: a score that only ties (or trails) the player's own best does not announce it again."""
    first = best_before is None or score.better_than(best_before)
    words = {"better": {"par": " Better than par.",
                        "record": " Better than the record: the leanest answer known until now!" if first else
                        " Better than the record."},
             "tie": {"par": " Ties par.", "record": " Ties the record."}}
    said = "".join(words.get(score.against(other) or "", {}).get(label, "")
                   for label, other in (("par", par), ("record", record)))
    if new_best and best_before is not None:
        said += " A new best."
    elif score.ties(best_before):
        said += " Ties your best, already recorded."
    elif best_before is not None and not first:
        said += " Your best, already recorded, is leaner."
    return said


def unsolved_line(submission: Submission) -> Text:
    """Not solved yet: the size so far against par and the record, and where help is; or, when every context passes
    in float64, that a puzzle is solved only when proved."""
    puzzle, report = submission.puzzle, submission.report
    if report is not None and report.cases is not None and report.cases.left and not report.failed:
        return Text(f"\nNot solved: {count(report.cases.left, 'case')} left unproved; a puzzle judged by cases is "
                    "solved only when every case is proved.", style="yellow")
    if report is not None and report.passed and not report.failed and not report.interrupted:
        skipped = "" if report.proof else " (this check skipped the proof)"
        return Text(f"\nNot solved: every judged context passes in float64, but a puzzle is solved only when every "
                    f"one is proved{skipped}.", style="yellow")
    against = [f"{label} {score.parameters}" for label, score in (("par", puzzle.par), ("record", puzzle.record))
               if score is not None]
    size = count(nonzero_parameters(submission.model), "non-zero parameter")
    return Text(f"\nNot solved yet: {size} so far{' (' + ', '.join(against) + ')' if against else ''}. "
                f"Stuck? handwired puzzles hint {puzzle.ref}", style="dim")


def submission_json(submission: Submission, best: Score | None, new_best: bool, near_miss: float = NEAR_MISS) -> dict:
    """The verdict for programs: the report, solved, the score, par, the player's best."""
    return {"puzzle": submission.puzzle.name, **report_json(submission.fitted_report, near_miss),
            "solved": submission.solved, "parameters": nonzero_parameters(submission.model),
            "score": score_json(submission.score), "par": score_json(submission.par),
            "record": score_json(submission.puzzle.record), "best": score_json(best), "new_best": new_best,
            "against_par": against(submission.score, submission.par),
            "against_record": against(submission.score, submission.puzzle.record)}


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
