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


class UnknownConstant(ExpressionError):
    """The expression names a constant that is not defined (or did not evaluate): ``name``."""

    def __init__(self, message: str, name: str) -> None:
        super().__init__(message)
        self.name = name


MAX_DEPTH = 100  # brackets, functions and signs nested inside each other: far beyond anything written by hand
MAX_LENGTH = 1000  # characters in one expression


def _tokenize(text: str) -> list[tuple[str, str]]:
    if len(text) > MAX_LENGTH:
        raise ExpressionError(f"{len(text):,} characters long; an expression may have at most {MAX_LENGTH:,}")
    tokens = []
    pos = 0
    text = text.translate(_TYPOGRAPHIC).rstrip()
    while pos < len(text):
        match = _TOKEN.match(text, pos)
        if match is None or match.end() == pos:
            raise ExpressionError(f"unexpected character {text[pos:].lstrip()[0]!r}")
        kind = match.lastgroup or ""  # every alternative of _TOKEN is a named group
        tokens.append((kind, match.group(kind)))
        pos = match.end()
    return tokens


def evaluate(text: str, constants: dict[str, float]) -> float:
    """Evaluate ``text`` using ``constants``; raise ExpressionError if it is not valid."""
    tokens = _tokenize(text)
    if not tokens:
        raise ExpressionError("empty expression")
    parser = _Parser(tokens, constants)
    value = parser.expr()
    if parser.pos != len(tokens):
        raise ExpressionError(f"unexpected {tokens[parser.pos][1]!r}")
    if not math.isfinite(value):
        raise ExpressionError(f"result is {value}, expected a finite number")
    return value


class _Parser:
    """Recursive descent over the tokens, one method per rule of the grammar, nesting bounded by MAX_DEPTH."""

    def __init__(self, tokens: list[tuple[str, str]], constants: dict[str, float]) -> None:
        self.tokens, self.constants = tokens, constants
        self.pos = 0
        self.depth = 0

    def peek(self) -> tuple[str, str] | None:
        return self.tokens[self.pos] if self.pos < len(self.tokens) else None

    def take(self) -> tuple[str, str]:
        token = self.tokens[self.pos]
        self.pos += 1
        return token

    def deeper(self) -> None:
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise ExpressionError(f"nested more than {MAX_DEPTH} deep (brackets, functions and signs)")

    def expr(self) -> float:
        value = self.term()
        while (token := self.peek()) is not None and token[0] == "op" and token[1] in "+-":
            self.take()
            value = value + self.term() if token[1] == "+" else value - self.term()
        return value

    def term(self) -> float:
        value = self.unary()
        while (token := self.peek()) is not None and token[0] == "op" and token[1] in "*/":
            self.take()
            right = self.unary()
            if token[1] == "*":
                value = value * right
            elif right == 0:
                raise ExpressionError("division by zero")
            else:
                value = value / right
        return value

    def unary(self) -> float:
        token = self.peek()
        if token is None or token[0] != "op" or token[1] not in "+-":
            return self.atom()
        self.take()
        self.deeper()
        value = self.unary()
        self.depth -= 1
        return -value if token[1] == "-" else value

    def atom(self) -> float:
        if self.peek() is None:
            raise ExpressionError("expression ends too early")
        kind, text = self.take()
        if kind == "number":
            return float(text)
        if kind == "name":
            return self.name(text)
        if text == "(":
            self.deeper()
            value = self.expr()
            if self.peek() != ("op", ")"):
                raise ExpressionError("missing ')'")
            self.take()
            self.depth -= 1
            return value
        raise ExpressionError(f"unexpected {text!r}")

    def name(self, text: str) -> float:
        """A function applied to the parenthesised atom after it, or a constant."""
        if text in FUNCTIONS and self.peek() == ("op", "("):
            self.deeper()
            value = FUNCTIONS[text](self.atom())
            self.depth -= 1
            return value
        if text in FUNCTIONS and text not in self.constants:
            raise ExpressionError(f"{text} is a function: write {text}(…)")
        if text not in self.constants:
            known = ", ".join(self.constants) if self.constants else "none defined"
            raise UnknownConstant(f"unknown constant {text!r} (constants: {known})", text)
        return self.constants[text]
