"""Views of wide models: all-zero rows and columns folded, wide tables paged, nothing cut.

The printed output is parsed back into cells and compared with the matrices
the views were drawn from, so "every number in full" is checked cell by cell.
"""

import html
import io
import json
import re
from collections import Counter

import numpy as np
import pytest
from reference import _affine_row, _layer_norm_row, params_to_document, random_params, reference_forward
from rich.cells import cell_len
from test_cli import invoke

from handwired.engine.trace import trace as run_trace
from handwired.views import steps as explain
from handwired.views.matrices import matrix_table
from handwired.views.numbers import numbers as format_values
from handwired.views.numbers import probability as format_probability
from handwired.views.paging import column_pages, table_width
from handwired.views.weights import weight_matrices
from handwired.weightfile import fold_labels, load

WIDTH = 80


def wide_document(seed: int = 24) -> dict:
    """24 wide, two blocks, two heads, LayerNorm and MLPs: dense where it mixes, sparse where it is wired.

    The embeddings leave the 15 scratch dims at 0; c_attn keeps about 40 % of its entries, has four
    all-zero q columns (so head 0's Q has four zero columns) and four all-zero rows, and one entry far
    larger than the rest (a wide number); c_proj's bias is all zero.
    """
    rng = np.random.default_rng(seed)
    params = random_params(rng, n_vocab=3, n_ctx=6, n_embd=24, n_layer=2, n_hidden=30)
    for block in params["blocks"]:
        w = block["attn"]["c_attn"]["w"]
        w[rng.random(w.shape) < 0.6] = 0
        w[:, 5:9] = 0
        block["attn"]["c_attn"]["b"][5:9] = 0
        w[20:, :] = 0
        w[3, 3] = -123456.789
        block["attn"]["c_proj"]["b"][:] = 0
    params["wte"][:, 9:] = 0
    params["wpe"][:, 9:] = 0
    doc = params_to_document(params, 2, "abc", 6)
    doc["dims"] = [f"p{i}" for i in range(6)] + ["tok_a", "tok_b", "tok_c"] + [f"scratch{i}" for i in range(15)]
    return doc


@pytest.fixture
def wide_file(tmp_path):
    path = tmp_path / "wide.json"
    path.write_text(json.dumps(wide_document()))
    return path


# ---------------------------------------------------------------- reading the output back


def tables(lines: list[str]) -> list[tuple[list[str], list[list[str]]]]:
    """Every table in ``lines``: its header cells and its rows' cells (panel borders removed first)."""
    found = []
    for line in lines:
        if line.startswith("┃"):
            found.append(([cell.strip() for cell in line.split("┃")[1:-1]], []))
        elif line.startswith("│") and found and not line.startswith(("│ ┃", "│ │")):
            found[-1][1].append([cell.strip() for cell in line.split("│")[1:-1]])
    return found


def unpanel(output: str) -> list[str]:
    """The output's lines with the explain panels' borders ("│ " … " │") taken off."""
    lines, inside = [], False
    for line in output.splitlines():
        if line.startswith(("╭", "╰")):  # kept: a matrix's tables end with its panel
            inside = line.startswith("╭")
            lines.append(line)
            continue
        lines.append(line[2:-2] if inside else line)
    return lines


def printed_cells(output: str, matrices: list) -> list[list[dict]]:
    """For each matrix in order: the pages printed for it, each {(row label, column label): text}.

    A matrix's tables are those between its title line and the next matrix's title or the end of its panel.
    """
    lines = unpanel(output)
    starts, at = [], 0
    for matrix in matrices:
        hook = matrix.hook if matrix.hook != matrix.title else ""  # a hook that repeats the title is not printed
        title = f"{matrix.title}  {hook}".rstrip()
        while lines[at].rstrip() != title:
            at += 1
        starts.append(at)
        at += 1
    result = []
    for i, start in enumerate(starts):
        end = starts[i + 1] if i + 1 < len(starts) else len(lines)
        end = next((j for j in range(start, end) if lines[j].startswith("╰")), end)
        pages = []
        for header, rows in tables(lines[start:end]):
            pages.append({(row[0], column): text for row in rows for column, text in zip(header[1:], row[1:])})
        result.append(pages)
    return result


def expected_cells(matrix) -> dict:
    """What must be printed for a matrix: every cell's text, except rows and columns that are 0 everywhere."""
    values = matrix.values
    texts = matrix.texts if matrix.texts is not None else format_values(values)  # weights: as written
    keep_rows = range(len(matrix.rows))
    keep_cols = range(len(matrix.cols))
    if matrix.future is None:  # attention squares are never folded
        keep_rows = [r for r in keep_rows if np.any(values[r] != 0)]
        keep_cols = [c for c in keep_cols if np.any(values[:, c] != 0)]
    cells = {}
    for r in keep_rows:
        for c in keep_cols:
            future = matrix.future is not None and matrix.future[r, c]
            # a masked cell: its own text (−∞, ·), else its value in brackets, masked without colour too
            shown = (matrix.future_text or f"[{texts[r][c]}]") if future else texts[r][c]
            cells[matrix.rows[r], matrix.cols[c]] = shown
    return cells


def check_every_number_in_full(output: str, matrices: list) -> tuple[int, int]:
    """Assert the output fits WIDTH, cuts no cell, and prints every kept cell's whole text exactly once.

    Returns (matrices paged, matrices folded), so a test can insist both happened.
    """
    for line in output.splitlines():
        assert cell_len(line) <= WIDTH, line
    for header, rows in tables(unpanel(output)):
        for cell in [*header, *(cell for row in rows for cell in row)]:
            assert "…" not in cell, cell
    paged = folded = 0
    for matrix, pages in zip(matrices, printed_cells(output, matrices), strict=True):
        expected = expected_cells(matrix)
        merged = {key: text for page in pages for key, text in page.items()}
        assert merged == expected, matrix.title
        columns = Counter(column for page in pages for column in {c for _, c in page})
        assert all(n == 1 for n in columns.values()), (matrix.title, columns)  # each column on exactly one page
        for page in pages:  # every page repeats every shown row's label
            assert {r for r, _ in page} == {r for r, _ in expected}, matrix.title
        paged += len(pages) > 1
        folded += len(expected) < matrix.values.size
    return paged, folded


# ---------------------------------------------------------------- every number in full


def test_explain_of_a_wide_model_at_80_columns_prints_every_number_in_full(wide_file, monkeypatch):
    monkeypatch.setenv("COLUMNS", str(WIDTH))
    out = invoke("explain", "abcab", "-w", str(wide_file)).stdout
    model = load(str(wide_file))
    steps = explain.steps(model, run_trace(model, "abcab"), explain.expand([]))
    matrices = [matrix for step in steps for matrix in step.matrices]
    paged, folded = check_every_number_in_full(out, matrices)
    assert paged >= 10 and folded >= 5
    assert out.count("15 all-zero columns hidden: scratch0…scratch14; --all to show them") == 3  # the embeddings
    assert out.count("4 all-zero columns hidden: q5…q8; --all to show them") == 2  # head 0's Q in both blocks
    # the prediction at each position, after the matrices: position:token, the next token, its probability
    lines = unpanel(out)
    start = next(i for i, line in enumerate(lines) if "[prediction]" in line)
    end = next(i for i in range(start, len(lines)) if lines[i].startswith("╰"))
    [(header, rows)] = tables(lines[start:end])
    assert header == ["position:token", "predicts", "probability", "lead (logits)"]
    logits, _ = reference_forward(wide_document(), [0, 1, 2, 0, 1], 2)
    expected, leads = [], []
    for i, token in enumerate("abcab"):
        best = int(np.argmax(logits[i]))
        probs = np.exp(np.array(logits[i]) - max(logits[i]))
        expected.append([f"{i}:{token}", "abc"[best], format_probability(float(probs[best] / probs.sum()))])
        leads.append(logits[i][best] - max(v for j, v in enumerate(logits[i]) if j != best))
    assert [row[:3] for row in rows] == expected
    # the lead: the predicted token's logit minus the best other one's, signed, as the view rounds it
    assert all(row[3].startswith("+") for row in rows)
    assert [float(row[3]) for row in rows] == pytest.approx(leads, abs=5e-4)


def test_weights_show_of_a_wide_model_at_80_columns_prints_every_number_in_full(wide_file, monkeypatch):
    monkeypatch.setenv("COLUMNS", str(WIDTH))
    out = invoke("weights", "show", str(wide_file)).stdout
    paged, folded = check_every_number_in_full(out, weight_matrices(load(str(wide_file))))
    assert paged >= 10 and folded >= 6
    assert "-123456.789" in out
    assert ("4 all-zero rows hidden: scratch11…scratch14; 4 all-zero columns hidden: q5…q8; --all to show them"
            in " ".join(out.split()))


def test_all_shows_every_row_and_column(wide_file, monkeypatch):
    monkeypatch.setenv("COLUMNS", str(WIDTH))
    model = load(str(wide_file))
    out = invoke("weights", "show", str(wide_file), "--all").stdout
    assert "all-zero" not in out and "entries are 0" not in out
    for matrix, pages in zip(weight_matrices(model), printed_cells(out, weight_matrices(model))):
        merged = {key: text for page in pages for key, text in page.items()}
        texts = matrix.texts  # weights show prints each entry as the file wrote it
        assert merged == {(row, col): texts[r][c] for r, row in enumerate(matrix.rows)
                          for c, col in enumerate(matrix.cols)}


# ---------------------------------------------------------------- folding


def test_weights_show_folds_the_all_zero_rows_and_columns_of_aab():
    out = invoke("weights", "show").stdout
    assert ("3 all-zero rows hidden: a, b, out; 3 all-zero columns hidden: q5…q7; --all to show them"
            in " ".join(out.split()))
    model = load("aab")
    matrices = weight_matrices(model)
    w_q = printed_cells(out, matrices)[2]
    assert len(w_q) == 1
    assert sorted({r for r, _ in w_q[0]}) == ["p0", "p1", "p2", "p3", "p4"]
    assert sorted({c for _, c in w_q[0]}) == ["q0", "q1", "q2", "q3", "q4"]
    assert "all 8 entries are 0 (1 × 8); --all to show it" in out  # b_Q: a whole zero vector is one line
    everything = invoke("weights", "show", "--all").stdout
    assert "all-zero" not in everything and "entries are 0" not in everything
    w_q = printed_cells(everything, matrices)[2]
    assert len({r for r, _ in w_q[0]}) == 8 and len({c for _, c in w_q[0]}) == 8


def test_explain_folds_and_all_unfolds():
    out = invoke("explain", "aabaa", "--step", "embed").stdout
    assert "6 all-zero columns hidden: p0…p4, out; --all to show them" in out  # the token embedding
    assert "3 all-zero columns hidden: a, b, out; --all to show them" in out  # the position embedding
    token = printed_cells(out, explain.steps(load("aab"), run_trace(load("aab"), "aabaa"), ["embed"])[0].matrices)[0]
    assert {c for _, c in token[0]} == {"a", "b"}
    out = invoke("explain", "aabaa", "--step", "embed", "--all").stdout
    assert "all-zero" not in out
    assert out.count("┃ pos ╲ dim ┃ p0 ┃ p1 ┃ p2 ┃ p3 ┃ p4 ┃ a ┃ b ┃ out ┃") == 3


def test_attention_squares_are_never_folded(tmp_path):
    path = tmp_path / "blank.json"
    invoke("weights", "new", "-o", str(path))
    out = invoke("explain", "ab", "-w", str(path), "--step", "scores", "--step", "qkv").stdout
    assert out.count("all 16 entries are 0 (2 × 8); --all to show it") == 3  # Q, K and V of a blank model
    model = load(str(path))
    scores = explain.steps(model, run_trace(model, "ab"), ["scores"])[0].matrices[0]
    [[page]] = printed_cells(out, [scores])
    # the key after the query, which the mask will hide, in brackets: masked with or without colour
    assert page == {("0:a", "0:a"): "0", ("0:a", "1:b"): "[0]", ("1:b", "0:a"): "0", ("1:b", "1:b"): "0"}


def test_masked_scores_read_as_masked_without_colour(monkeypatch):
    monkeypatch.setenv("NO_COLOR", "1")
    out = invoke("explain", "aabaa", "--step", "scores").stdout
    # scaled scores: Lg·1/√8 = 362.039 where the query matches; the keys after each query in brackets
    assert re.search(r"│ 0:a\s+│ 362\.039 │\s+\[0\] │\s+\[0\] │\s+\[0\] │\s+\[0\] │", out)
    assert re.search(r"│ 3:a\s+│\s+0 │\s+0 │ 362\.039 │ 362\.039 │\s+\[0\] │", out)
    assert "grey [value]: a key" in out


def test_fold_labels_folds_runs_of_three_or_more():
    assert fold_labels(["p5", "p6", "p7", "p8", "q6", "q7", "q8", "q9", "q10", "q11"]) == "p5…p8, q6…q11"
    assert (fold_labels(["q1", "q2", "a", "b", "out", "h3", "h5", "h6", "h7", "0:a"])
            == "q1, q2, a, b, out, h3, h5…h7, 0:a")


def fewest_pages(label_width: int, widths: list[int], max_width: int) -> int:
    """By brute force: the fewest pages of consecutive columns that each fit (or hold one column)."""
    best = {0: 0}  # columns placed -> pages used
    for start in range(len(widths)):
        for end in range(start + 1, len(widths) + 1):
            if end - start > 1 and table_width([label_width, *widths[start:end]]) > max_width:
                break
            best[end] = min(best.get(end, len(widths)), best[start] + 1)
    return best[len(widths)]


def test_column_pages_keep_order_fit_place_every_column_once_and_are_as_few_as_possible():
    widths = [5, 12, 3, 9, 9, 1, 30, 4, 6, 6, 6, 6, 6, 6, 6, 6]
    for max_width in (20, 40, 55, 80, 120, 300):
        pages = column_pages(6, widths, max_width)
        assert [c for page in pages for c in page] == list(range(len(widths)))
        for page in pages:
            assert table_width([6, *[widths[c] for c in page]]) <= max_width or len(page) == 1
        assert len(pages) == fewest_pages(6, widths, max_width)
    assert column_pages(6, widths, 300) == [list(range(len(widths)))]
    # even pages: seventeen columns of 6 in 80 columns are 6 + 6 + 5, not 8 + 8 + 1
    assert [len(page) for page in column_pages(3, [6] * 17, 80)] == [6, 6, 5]


# ---------------------------------------------------------------- saving and colour


def test_svg_and_html_carry_everything_unfolded(tmp_path, wide_file, monkeypatch):
    monkeypatch.setenv("COLUMNS", str(WIDTH))
    page_svg, page_html = tmp_path / "view.svg", tmp_path / "view.html"
    out = invoke("explain", "aab", "--step", "embed", "--svg", str(page_svg), "--html", str(page_html)).stdout
    assert "all-zero columns hidden" in out
    text = html.unescape(re.sub(r"<[^>]+>", "", page_html.read_text()))
    assert "all-zero" not in text
    assert text.count("┃ pos ╲ dim ┃ p0 ┃ p1 ┃ p2 ┃ p3 ┃ p4 ┃ a ┃ b ┃ out ┃") == 3
    svg = page_svg.read_text()
    assert svg.startswith("<svg") and "all-zero" not in svg
    assert svg.count("&#160;┃&#160;p0&#160;┃&#160;p1&#160;┃&#160;p2&#160;┃&#160;p3&#160;┃&#160;p4&#160;┃"
                     "&#160;a&#160;┃&#160;b&#160;┃&#160;out&#160;┃") == 3
    # a wide model's export is as wide as its widest table: no page needed, nothing folded
    invoke("explain", "abcab", "-w", str(wide_file), "--step", "qkv", "--block", "0", "--head", "0",
           "--html", str(page_html), "--force")
    text = html.unescape(re.sub(r"<[^>]+>", "", page_html.read_text()))
    assert "page 1 of" not in text and "all-zero" not in text
    assert max(cell_len(line) for line in text.splitlines()) > WIDTH


def test_no_color_is_respected(monkeypatch):
    def colours(output: str) -> set[int]:
        """The colour codes among the terminal's style sequences (30–49: foreground/background, 90–107: bright)."""
        codes = {int(code) for sequence in re.findall(r"\x1b\[([0-9;]*)m", output)
                 for code in sequence.split(";") if code}
        return {code for code in codes if 30 <= code <= 49 or 90 <= code <= 107}

    monkeypatch.setenv("FORCE_COLOR", "1")
    assert colours(invoke("explain", "--step", "pattern").stdout)
    monkeypatch.setenv("NO_COLOR", "1")
    for command in (["explain"], ["weights", "show"], ["check", "--exhaustive"]):
        out = invoke(*command).stdout
        assert "\x1b[1m" in out and not colours(out), command  # still bold, never coloured


# ---------------------------------------------------------------- labels shared by explain and weight files


def test_head_columns_are_numbered_across_heads_and_match_c_attn_and_c_proj():
    rng = np.random.default_rng(8)
    params = random_params(rng, n_vocab=3, n_ctx=6, n_embd=8, n_layer=1, layer_norm=True, mlp=False)
    from handwired.weightfile import parse

    model, problems = parse(params_to_document(params, 2, "abc", 6))
    assert problems == []
    trace = run_trace(model, "abca")
    tokens = [0, 1, 2, 0]
    block = params["blocks"][0]
    x = [[params["wte"][t][i] + params["wpe"][p][i] for i in range(8)] for p, t in enumerate(tokens)]
    h = [_layer_norm_row(row, block["ln_1"]["g"], block["ln_1"]["b"]) for row in x]
    qkv = [_affine_row(row, block["attn"]["c_attn"]["w"].tolist(), list(block["attn"]["c_attn"]["b"])) for row in h]
    c_attn_columns = [f"q{i}" for i in range(8)] + [f"k{i}" for i in range(8)] + [f"v{i}" for i in range(8)]
    z_columns = {}
    for head in (0, 1):
        q, k, v = explain.steps(model, trace, ["qkv"], head=head)[0].matrices
        assert q.cols == tuple(f"q{4 * head + i}" for i in range(4))
        assert (k.cols == tuple(f"k{4 * head + i}" for i in range(4))
                and v.cols == tuple(f"v{4 * head + i}" for i in range(4)))
        for matrix in (q, k, v):  # a column labelled q5 is c_attn's column q5
            for c, label in enumerate(matrix.cols):
                np.testing.assert_allclose(matrix.values[:, c], [row[c_attn_columns.index(label)] for row in qkv],
                                           atol=1e-9)
        z = explain.steps(model, trace, ["z"], head=head)[0].matrices[0]
        assert z.cols == tuple(f"z{4 * head + i}" for i in range(4))
        z_columns.update({label: z.values[:, c] for c, label in enumerate(z.cols)})
    # c_proj's row zN in weights show multiplies explain's column zN
    c_proj = next(m for m in weight_matrices(model) if m.title == "blocks[0].attn.c_proj.w")
    attn_out = sum(np.outer(z_columns[label], c_proj.values[r]) for r, label in enumerate(c_proj.rows))
    attn_out = attn_out + block["attn"]["c_proj"]["b"]
    np.testing.assert_allclose(attn_out, trace.record["blocks.0.hook_attn_out"], atol=1e-9)


def test_cell_texts_given_with_the_matrix_are_printed_and_folding_follows_the_values():
    from rich.console import Console

    from handwired.views.figures import Matrix

    values = np.array([[1024.0, 0.0, 0.0], [0.0, 0.0, 2048.0]])
    texts = (("Lg", "0", "0"), ("0", "0*Lg", "2*Lg"))  # e.g. as written in the weight file
    console = Console(width=WIDTH, file=io.StringIO(), color_system=None)
    console.print(matrix_table(Matrix("m", "", values, ("r0", "r1"), ("c0", "c1", "c2"), "row", "col")))
    console.print(matrix_table(Matrix("w", "", values, ("r0", "r1"), ("c0", "c1", "c2"), "row", "col", texts=texts)))
    plain, written = printed_cells(console.file.getvalue(), [Matrix("m", "", values, (), (), "", ""),
                                                             Matrix("w", "", values, (), (), "", "")])
    assert plain == [{("r0", "c0"): "1024", ("r0", "c2"): "0", ("r1", "c0"): "0", ("r1", "c2"): "2048"}]
    assert written == [{("r0", "c0"): "Lg", ("r0", "c2"): "0", ("r1", "c0"): "0", ("r1", "c2"): "2*Lg"}]
    assert console.file.getvalue().count("1 all-zero column hidden: c1; --all to show them") == 2
