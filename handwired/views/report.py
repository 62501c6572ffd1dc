"""Drawing a check's report: what was checked, the counts, the margin, the shortest failures."""

import math

from rich.console import Console, ConsoleOptions, Group, RenderResult
from rich.table import Table
from rich.text import Text

from handwired.defaults import NEAR_MISS
from handwired.judge.checking.report import Margin, Report
from handwired.views.model import model_line
from handwired.views.numbers import column, count, logits, number, probability
from handwired.views.paging import COLUMN_CHROME, TABLE_EDGE, column_pages, table_width
from handwired.weightfile import Model
from handwired.weightfile.axes import shown


def report_view(model: Model, report: Report, near_miss: float = NEAR_MISS) -> Group:
    parts: list = [model_line(model), Text.assemble(("checked: ", "dim"), report.description),
                   Text.assemble(("judged by: ", "dim"), report.rule)]
    if report.interrupted:
        left = "" if report.cases is None else (f" ({count(report.cases.left, 'case')} left, covering "
                                                 f"{count(report.cases.left_contexts, 'context')})")
        parts.append(Text(f"Interrupted: {report.checked:,} of {report.total:,} contexts were checked{left}.",
                          style="yellow"))
    counts = Table.grid(padding=(0, 2))
    counts.add_column(justify="right")
    counts.add_column()
    counts.add_row(f"{report.checked:,}", "contexts checked")
    counts.add_row(Text(f"{report.passed:,}", style="green"), "passed")
    counts.add_row(Text(f"{report.failed:,}", style="red" if report.failed else "green"), "failed")
    if report.proof:
        counts.add_row(Text(f"{report.proved:,}", style="green"), "proved (the bounds hold in real arithmetic)")
    if report.unproved:
        counts.add_row(Text(f"{report.unproved:,}", style="red"), "passed in float64 but not proved")
    if report.cases is not None:
        counts.add_row(f"{report.cases.proved:,}", "cases proved whole (sets of contexts, bounded at once)")
        if report.cases.leaves:
            counts.add_row(f"{report.cases.leaves:,}", "single contexts the cases split down to")
        if report.cases.left:
            counts.add_row(Text(f"{report.cases.left:,}", style="red"),
                           f"cases left, covering {count(report.cases.left_contexts, 'context')}")
    if report.ambiguous:
        counts.add_row(f"{report.ambiguous:,}", "ambiguous (the rule allows more than one next token; not judged)")
    if report.out_of_domain:
        counts.add_row(f"{report.out_of_domain:,}", "out of domain (never occurs under the rule; not judged)")
    parts.append(counts)
    if report.decided:
        accuracy = 100 * report.passed / report.decided
        style = "bold green" if report.failed == 0 else "bold red"
        parts.append(Text(f"accuracy {accuracy:.2f} % ({report.passed:,} / {report.decided:,} judged)", style=style))
    else:
        parts.append(Text("No context was judged: nothing to score.", style="yellow"))
    proof = proof_line(report)
    if proof is not None:
        parts.append(proof)
    if report.margin is not None:
        near = report.near_miss(near_miss)
        parts.append(margin_line(report.margin, near, explained=True, by_cases=report.cases is not None))
        if near and report.cases is not None:  # a lower bound: the real lead may be far larger
            parts.append(Text(f"The proof guarantees less than {logits(near_miss)} of margin there: a small change to "
                              "the weights might flip an answer, or the real leads may be larger than the bounds of "
                              "a case say.", style="yellow"))
        elif near:
            parts.append(Text(f"Near miss: a margin under {logits(near_miss)} means a small change to the weights "
                              "could flip that answer.", style="yellow"))
    if report.failures:
        parts.append(failures_table(model, report))
    return Group(*parts)


def proof_line(report: Report) -> Text | None:
    """Whether the passing contexts are proved: on every one, not on the first unproved (one line), or not tried."""
    unproved = report.first_unproved
    if unproved is not None:
        if math.isinf(unproved.overlap):
            why = ("its logits are unbounded: float64 overflowed or made a NaN on the way to them, so its numbers say "
                   "nothing of real arithmetic")
        else:
            overlap = number(unproved.overlap, show_tiny=True)  # a bound's size is the lesson: never ≈0
            why = (f"the bounds overlap by {overlap} logits ({unproved.wrong}'s upper bound over {unproved.right}'s "
                   "lower bound)")
        return Text(f"Not proved: {unproved.context!r} passes in float64, but {why}; "
                    f"{count(report.unproved, 'context')} not proved", style="bold red")
    if report.cases is not None and report.cases.left and not report.failed and not report.interrupted:
        return Text(f"Not proved: {count(report.cases.left, 'case')} left, covering "
                    f"{count(report.cases.left_contexts, 'context')}, when the time allowed was spent "
                    f"({report.checked:,} of {report.total:,} contexts proved so far).", style="bold red")
    if not report.passed or report.failed or report.interrupted:
        return None
    if report.cases is not None:
        return Text(f"Proved on all {report.checked:,} contexts{cases_done(report)} (deepest split "
                    f"{report.cases.deepest}): each right token's lower bound is above every other token's upper "
                    "bound over every case, in real arithmetic.", style="bold green")
    if not report.proof:
        return Text("Passed in float64, not proved: the rounding was not bounded.", style="yellow")
    where = f"on the {report.checked:,} sampled contexts" if report.sampled else "on every context"
    return Text(f"Proved {where}: each right token's lower bound is above every other token's upper "
                f"bound, in real arithmetic (the widest bound {number(report.widest, show_tiny=True)} logits).",
                style="bold green")


def cases_done(report: Report) -> str:
    """`` in 169,879 cases``, and the single contexts they split down to: `` in 12 cases and 40 single contexts``;
    ``, split down to single contexts`` when no case was proved whole."""
    assert report.cases is not None, "a proof by cases"
    if not report.cases.proved:
        return ", split down to single contexts"
    leaves = f" and {count(report.cases.leaves, 'single context')}" if report.cases.leaves else ""
    return " in " + count(report.cases.proved, "case") + leaves


def margin_line(margin: Margin, near: bool, explained: bool = False, by_cases: bool = False) -> Text:
    """``margin 1023 logits at 'aa' (b over a)``, yellow when it is a near miss; ``explained`` says what a margin is;
    ``by_cases``: a certified lower bound, at the case (or context) where it was found."""
    if by_cases:
        return Text.assemble(("margin at least ", "dim"), (logits(margin.value), "bold yellow" if near else "bold"),
                             f" in {margin.context!r} ({margin.right} over {margin.wrong})",
                             ": no context's lead of a right token over the best wrong one is smaller (over a case, "
                             "the lead its bounds guarantee)" if explained else "")
    line = Text.assemble(("margin ", "dim"), (logits(margin.value), "bold yellow" if near else "bold"),
                         f" at {margin.context!r} ({margin.right} over {margin.wrong})")
    if explained:
        line.append(": the smallest lead of a right token over the best wrong one among passing contexts")
    elif near:
        line.append("  near miss", "yellow")
    return line


def failure_view(model: Model, report: Report, near_miss: float = NEAR_MISS, everything: bool = False,
                 reveal: str | None = None) -> list:
    """The report, then the shortest failing context followed through the whole model, if any.

    ``reveal``: the command that shows that context with nothing folded, named in its fold lines.
    """
    parts: list = [report_view(model, report, near_miss)]
    failure = report.shortest_failure
    if failure is not None:
        # loaded only to follow a failure through the model (its trace, attribution and step views): a check that
        # passes never draws one
        from handwired.views.failure import failure_parts

        parts += failure_parts(model, failure, everything, reveal)
    return parts


def failures_table(model: Model, report: Report) -> Group:
    listed = len(report.failures)
    if listed < report.failed:
        title = f"failures: the {listed} shortest distinct failing contexts (of {count(report.failed, 'failure')})"
    else:
        title = f"failures: all {listed}"
    head = [Text("context"), Text("expected"), Text("predicted"), Text("gap", justify="right")]
    gaps = column([failure.gap for failure in report.failures], signed=True)
    rows = [[Text(failure.context), Text(" or ".join(failure.acceptable)),
             Text(failure.predicted + (" (tie)" if failure.tied else ""), style="red"),
             Text(gap, justify="right"),
             *[Text(probability(p), justify="right") for p in failure.probs]]
            for failure, gap in zip(report.failures, gaps)]
    probabilities = [Text(f"p({shown(token)})", justify="right") for token in model.vocab]
    table = _PagedColumns(head, probabilities, rows)
    note = Text("gap: the best wrong token's logit minus the best right one's (0: a tie, which fails too)",
                style="dim")
    return Group(Text(title, style="bold"), table, note)


class _PagedColumns:
    """A table whose first columns repeat on every page and whose other columns are paged to fit the terminal
    (each token's probability, when the vocabulary is wide): as views.paging pages a matrix, nothing squeezed."""

    def __init__(self, head: list[Text], paged: list[Text], rows: list[list[Text]],
                 joined: frozenset[int] = frozenset()):
        """``joined``: paged columns (by index in ``paged``) kept on the page of the column before them."""
        self.head, self.paged, self.rows, self.joined = head, paged, rows, joined

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        n = len(self.head)
        widths = [max(cell.cell_len for cell in [header, *(row[i] for row in self.rows)])
                  for i, header in enumerate(self.head + self.paged)]  # each column's widest cell
        fixed = table_width(widths[:n]) - TABLE_EDGE - COLUMN_CHROME  # the repeated columns, as one label column
        groups: list[list[int]] = []  # paged columns that go together, each group paged as one wider column
        for i in range(len(self.paged)):
            if groups and i in self.joined:
                groups[-1].append(i)
            else:
                groups.append([i])
        group_widths = [sum(widths[n + i] for i in group) + COLUMN_CHROME * (len(group) - 1) for group in groups]
        for grouped in column_pages(fixed, group_widths, options.max_width):
            page = [i for g in grouped for i in groups[g]]
            table = Table()
            for header in [*self.head, *(self.paged[i] for i in page)]:
                table.add_column(header, justify=header.justify or "left")
            for row in self.rows:
                table.add_row(*row[:n], *(row[n + i] for i in page))
            yield table


def finite_or_none(value: float) -> float | None:
    """A bound for JSON: null when it is unbounded (JSON has no infinity)."""
    return value if math.isfinite(value) else None


def report_json(report: Report, near_miss: float = NEAR_MISS) -> dict:
    """The report for programs: counts, failures with their logits, the margin."""
    margin = report.margin
    return {
        "checked": report.description,
        "rule": report.rule,
        "total": report.total,
        "contexts": report.checked,
        "passed": report.passed,
        "failed": report.failed,
        "ambiguous": report.ambiguous,
        "out_of_domain": report.out_of_domain,
        "ok": report.ok,
        "interrupted": report.interrupted,
        "proof": report.proof,
        "sampled": report.sampled,
        "proved": report.proved,
        "unproved": report.unproved,
        "widest_bound": finite_or_none(report.widest),
        "cases": None if report.cases is None else {
            "cases": report.cases.proved, "cases_evaluated": report.cases.cases, "single_contexts": report.cases.leaves,
            "deepest_split": report.cases.deepest, "cases_left": report.cases.left,
            "contexts_left": report.cases.left_contexts, "spent": report.cases.spent},
        "first_unproved": None if report.first_unproved is None else {
            "context": report.first_unproved.context, "overlap": finite_or_none(report.first_unproved.overlap),
            "right": report.first_unproved.right, "wrong": report.first_unproved.wrong},
        "shortest_failure": report.shortest_failure.context if report.shortest_failure else None,
        "failures": [
            {"context": f.context, "expected": list(f.acceptable), "predicted": f.predicted, "tied": f.tied,
             "gap": f.gap, "logits": f.logits.tolist(), "probabilities": f.probs.tolist()}
            for f in report.failures
        ],
        "margin": None if margin is None else {
            "logits": margin.value, "context": margin.context, "right": margin.right, "wrong": margin.wrong,
            "near_miss": report.near_miss(near_miss),
        },
    }
