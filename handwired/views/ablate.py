"""Drawing an ablation: the parts the model needs, most harmful removal first, then the ones it does not."""

from rich.console import Group
from rich.text import Text

from handwired.judge.workbench.ablate import Ablations, spare_parameters
from handwired.views.model import model_line
from handwired.views.numbers import count, number
from handwired.views.report import _PagedColumns
from handwired.views.sweep import lead_texts

REMOVED = {
    False: "each part removed: a head's or unit's rows of c_proj.w, an attention's or MLP's c_proj (w and b) and a "
           "weight entry set to 0, ln_f taken out",
    True: "each head, unit, attention and MLP replaced by its mean output over every position of the judged "
          "contexts (added to c_proj.b); ln_f taken out and weight entries set to 0",
}


def ablate_view(model, result: Ablations) -> Group:
    base = result.base
    parts: list = [
        model_line(model),
        Text(f"ablation over {result.source} ({count(result.judged, 'context')} judged), {REMOVED[result.mean]}; "
             "judged in float64 as check judges", style="dim"),
        Text.assemble(("as it is: ", "bold"), (f"{base.passed:,} passed, {base.failed:,} failed",
                                               "green" if base.ok else "red"),
                      f", smallest lead {number(base.worst)}" if base.finite else ""),
    ]
    needed = [row for row in result.rows if row.needed]
    spare = [row for row in result.rows if not row.needed]
    if needed:
        parts.append(_table("needed: removing it breaks contexts the model passes, most harmful first",
                            ("part", "broken", "failed", "smallest lead", "at", "first broken", "cost"),
                            [(row.part.name, Text(f"{row.verdict.broken:,}", style="red"), f"{row.verdict.failed:,}",
                              lead, row.verdict.worst_context, row.verdict.first_broken or "", f"{row.part.cost:,}")
                             for row, lead in zip(needed, lead_texts([row.verdict for row in needed]))]))
    if spare:
        parts.append(_table("not needed: removing it alone breaks nothing", ("part", "failed", "smallest lead", "at",
                                                                              "cost"),
                            [(row.part.name, f"{row.verdict.failed:,}", lead, row.verdict.worst_context,
                              f"{row.part.cost:,}")
                             for row, lead in zip(spare, lead_texts([row.verdict for row in spare]))]))
    parts.append(Text(f"{count(len(needed), 'part')} needed, {count(len(spare), 'part')} not needed "
                      f"({spare_parameters(spare):,} distinct parameters in all; cost: the non-zero parameters a "
                      "part holds). Each was removed on its own: "
                      "removing several together may break what each alone does not.", style="bold"))
    return Group(*parts)


def _table(title: str, headers: tuple[str, ...], rows: list[tuple]) -> Group:
    """Its title, then the table with the part's name on every page and the other columns paged to fit the terminal,
    so that no number is ever cut, and a smallest lead never parted from the context it was "at"."""
    head = [Text(header, justify="left" if header in ("part", "at", "first broken") else "right") for header in headers]
    cells = [[Text(cell, justify=header.justify) if isinstance(cell, str) else cell for cell, header in zip(row, head)]
             for row in rows]
    joined = frozenset(i for i, header in enumerate(headers[1:]) if header == "at")  # beside its smallest lead
    return Group(Text(title, style="italic"), _PagedColumns(head[:1], head[1:], cells, joined))


def ablate_json(model, result: Ablations) -> dict:
    def verdict(v) -> dict:
        return {"passed": v.passed, "failed": v.failed, "finite": v.finite,
                "smallest_lead": v.worst if v.finite else None, "at": v.worst_context or None}

    return {
        "model": model.name,
        "weights": model.source,
        "contexts": result.source,
        "judged": result.judged,
        "arithmetic": "float64",
        "mean": result.mean,
        "as_it_is": verdict(result.base),
        "not_needed_parameters": spare_parameters([row for row in result.rows if not row.needed]),
        "parts": [{"part": row.part.name, "kind": row.part.kind, "parameters": row.part.cost,
                   "needed": row.needed, "broken": row.verdict.broken, "first_broken": row.verdict.first_broken,
                   **verdict(row.verdict)} for row in result.rows],
    }
