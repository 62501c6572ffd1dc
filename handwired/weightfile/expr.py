"""A tiny arithmetic evaluator for weight entries such as ``"-Lg"`` or ``"2*Lg+1"``.

Grammar (usual precedence, left to right)::

    expr   := term (('+' | '-') term)*
    term   := unary (('*' | '/') unary)*
    unary  := ('+' | '-') unary | atom
    atom   := NUMBER | NAME | FUNCTION '(' expr ')' | '(' expr ')'

NAME is a constant from the weight file; FUNCTION is ``sqrt``, ``exp`` or ``ln``
(so a query can undo attention's 1/√d_head exactly: ``"Lg*sqrt(4)"``). Nothing is ever handed to ``eval``:
the string is tokenised and evaluated here, so a weight file can hold numbers
and nothing else.
"""

from __future__ import annotations

import math
import re

# Typographic operators people paste from notes are accepted as their ASCII twins.
_TYPOGRAPHIC = str.maketrans({"\u2212": "-", "\u00d7": "*", "\u00f7": "/"})

_TOKEN = re.compile(
    r"\s*(?:"
    r"(?P<number>(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)"
    r"|(?P<name>[A-Za-z_][A-Za-z0-9_]*)"
    r"|(?P<op>[-+*/()])"
    r")"
)

NAME_PATTERN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


def _sqrt(x: float) -> float:
    if x < 0:
        raise ExpressionError(f"sqrt of a negative number ({x:g})")
    return math.sqrt(x)


def _ln(x: float) -> float:
    if x <= 0:
        raise ExpressionError(f"ln of a number that is not positive ({x:g})")
    return math.log(x)


def _exp(x: float) -> float:
    if x > 709:  # e^709.8 is the largest float64
        raise ExpressionError(f"exp({x:g}) is too large for a float64")
    return math.exp(x)


FUNCTIONS = {"sqrt": _sqrt, "exp": _exp, "ln": _ln}


class ExpressionError(ValueError):
    """The expression is malformed or names an unknown constant."""


def _tokenize(text: str) -> list[tuple[str, str]]:
    tokens = []
    pos = 0
    text = text.translate(_TYPOGRAPHIC)
    while pos < len(text):
        if text[pos:].strip() == "":
            break
        match = _TOKEN.match(text, pos)
        if match is None or match.end() == pos:
            raise ExpressionError(f"unexpected character {text[pos:].lstrip()[0]!r}")
        kind = match.lastgroup
        tokens.append((kind, match.group(kind)))
        pos = match.end()
    return tokens


def evaluate(text: str, constants: dict[str, float]) -> float:
    """Evaluate ``text`` using ``constants``; raise ExpressionError if it is not valid."""
    tokens = _tokenize(text)
    if not tokens:
        raise ExpressionError("empty expression")
    pos = 0

    def peek() -> tuple[str, str] | None:
        return tokens[pos] if pos < len(tokens) else None

    def take() -> tuple[str, str]:
        nonlocal pos
        token = tokens[pos]
        pos += 1
        return token

    def expr() -> float:
        value = term()
        while (token := peek()) is not None and token[1] in "+-" and token[0] == "op":
            take()
            value = value + term() if token[1] == "+" else value - term()
        return value

    def term() -> float:
        value = unary()
        while (token := peek()) is not None and token[1] in "*/" and token[0] == "op":
            take()
            right = unary()
            if token[1] == "*":
                value = value * right
            elif right == 0:
                raise ExpressionError("division by zero")
            else:
                value = value / right
        return value

    def unary() -> float:
        token = peek()
        if token is not None and token[0] == "op" and token[1] in "+-":
            take()
            value = unary()
            return -value if token[1] == "-" else value
        return atom()

    def atom() -> float:
        token = peek()
        if token is None:
            raise ExpressionError("expression ends too early")
        kind, text_ = take()
        if kind == "number":
            return float(text_)
        if kind == "name" and text_ in FUNCTIONS and peek() == ("op", "("):
            return FUNCTIONS[text_](atom())  # the parenthesised argument is an atom
        if kind == "name" and text_ in FUNCTIONS and text_ not in constants:
            raise ExpressionError(f"{text_} is a function: write {text_}(…)")
        if kind == "name":
            if text_ not in constants:
                known = ", ".join(constants) if constants else "none defined"
                raise ExpressionError(f"unknown constant {text_!r} (constants: {known})")
            return constants[text_]
        if text_ == "(":
            value = expr()
            closing = peek()
            if closing != ("op", ")"):
                raise ExpressionError("missing ')'")
            take()
            return value
        raise ExpressionError(f"unexpected {text_!r}")

    value = expr()
    if pos != len(tokens):
        raise ExpressionError(f"unexpected {tokens[pos][1]!r}")
    if not math.isfinite(value):
        raise ExpressionError(f"result is {value}, expected a finite number")
    return value
