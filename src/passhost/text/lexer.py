"""Tokens of passhost's IR text format, and a token stream with position-aware errors.

Both the graph-function and the PrimFunc parsers read from a :class:`TokenStream`; every
error they raise carries the line and column of the offending token and says what was
expected (see docs/ir-text-format.md).
"""

from __future__ import annotations

import re
from typing import NamedTuple, NoReturn

from passhost.errors import ParseError
from passhost.ir.node import Span

# Token kinds.
IDENT = "identifier"      # nn.conv2d, float32, fn, true
GLOBAL = "global name"    # @main
LOCAL = "local name"      # %x, %0
INT = "integer"
FLOAT = "number"
STRING = "string"
PUNCT = "punctuation"
DIRECTIVE = "directive"   # #[...] at the start of a line
EOF = "end of input"

_TOKEN_RE = re.compile(
    r"""
    (?P<ws>[ \t\r\n]+)
  | (?P<line_comment>//[^\n]*)
  | (?P<block_comment>/\*.*?\*/)
  | (?P<directive>\#\[[^\]\n]*\])
  | (?P<global>@[A-Za-z_][A-Za-z0-9_.\-]*)
  | (?P<local>%[A-Za-z0-9_][A-Za-z0-9_]*)
  | (?P<float>(?:\d+\.\d*(?:[eE][+-]?\d+)?|\d+[eE][+-]?\d+))
  | (?P<int>\d+)
  | (?P<ident>[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*)
  | (?P<string>"(?:[^"\\\n]|\\.)*")
  | (?P<punct>->|<=|>=|==|!=|&&|\|\||[()\[\]{},:;=.+\-*/<>!%?])
    """,
    re.VERBOSE | re.DOTALL,
)

_KINDS = {"global": GLOBAL, "local": LOCAL, "float": FLOAT, "int": INT, "ident": IDENT,
          "string": STRING, "punct": PUNCT, "directive": DIRECTIVE}


class Token(NamedTuple):
    """One token: its kind, its text and where it starts (a light tuple: tokens are many)."""

    kind: str
    text: str
    line: int
    column: int

    def describe(self) -> str:
        """How an error message names this token."""
        if self.kind == EOF:
            return "end of input"
        return f"{self.kind} {self.text!r}"


#: The most digits an integer literal may have: 64-bit integers (and ``uint64``'s largest,
#: 18446744073709551615) have at most 20.
MAX_INT_DIGITS = 20
#: The most elements a shape may hold (and so the largest dimension): a signed 64-bit size.
MAX_ELEMENTS = 2**63 - 1


def tokenize(text: str, source_name: str = "<text>", line_offset: int = 0) -> list[Token]:
    """Split ``text`` into tokens (comments and white space dropped), ending with EOF.

    ``line_offset`` is added to line numbers, for text that starts inside a larger file.
    """
    tokens: list[Token] = []
    append = tokens.append
    pos, end = 0, len(text)
    line, line_start = 1 + line_offset, 0
    match = _TOKEN_RE.match
    kinds = _KINDS
    while pos < end:
        m = match(text, pos)
        if m is None:
            col = pos - line_start + 1
            if text.startswith("/*", pos):
                raise ParseError("unterminated comment", line, col, source_name)
            if text[pos] == '"':
                raise ParseError("unterminated string", line, col, source_name)
            raise ParseError(f"unexpected character {text[pos]!r}", line, col, source_name)
        kind = m.lastgroup
        value = m.group()
        if kind == "int" and len(value) > MAX_INT_DIGITS:
            raise ParseError(f"integer literal of {len(value)} digits is out of range "
                             f"(passhost's integers are at most 64 bits: at most "
                             f"{MAX_INT_DIGITS} digits)", line, pos - line_start + 1,
                             source_name)
        if kind in kinds:
            append(Token(kinds[kind], value, line, pos - line_start + 1))
        newlines = value.count("\n") if kind in ("ws", "block_comment") else 0
        if newlines:
            line += newlines
            line_start = pos + value.rindex("\n") + 1
        pos = m.end()
    append(Token(EOF, "", line, end - line_start + 1))
    return tokens


class TokenStream:
    """A cursor over tokens with helpers that raise :class:`ParseError` on mismatch."""

    def __init__(self, tokens: list[Token], source_name: str = "<text>") -> None:
        self.tokens = tokens
        self.pos = 0
        self.source_name = source_name

    @classmethod
    def from_text(cls, text: str, source_name: str = "<text>", line_offset: int = 0,
                  ) -> TokenStream:
        """Tokenize ``text`` and wrap it in a stream."""
        return cls(tokenize(text, source_name, line_offset), source_name)

    def peek(self, ahead: int = 0) -> Token:
        """The token ``ahead`` places after the current one (EOF past the end)."""
        i = min(self.pos + ahead, len(self.tokens) - 1)
        return self.tokens[i]

    def next(self) -> Token:
        """Consume and return the current token."""
        tok = self.tokens[self.pos]
        if tok.kind != EOF:
            self.pos += 1
        return tok

    def at(self, kind: str, text: str | None = None) -> bool:
        """True when the current token is of ``kind`` (and has ``text``, if given)."""
        tok = self.tokens[self.pos]
        return tok.kind == kind and (text is None or tok.text == text)

    def at_punct(self, text: str) -> bool:
        """True when the current token is the punctuation ``text``."""
        return self.at(PUNCT, text)

    def accept(self, kind: str, text: str | None = None) -> Token | None:
        """Consume the current token if it matches; return it, or None."""
        if self.at(kind, text):
            return self.next()
        return None

    def accept_punct(self, text: str) -> Token | None:
        """Consume the punctuation ``text`` if it is next."""
        return self.accept(PUNCT, text)

    def expect(self, kind: str, text: str | None = None, what: str | None = None) -> Token:
        """Consume a token of ``kind`` (and ``text``), or raise saying what was expected."""
        if self.at(kind, text):
            return self.next()
        wanted = what or (repr(text) if text is not None else f"a {kind}")
        self.error(f"expected {wanted}, found {self.peek().describe()}")

    def expect_punct(self, text: str, what: str | None = None) -> Token:
        """Consume the punctuation ``text`` or raise."""
        return self.expect(PUNCT, text, what)

    def expect_keyword(self, word: str) -> Token:
        """Consume the identifier ``word`` or raise."""
        return self.expect(IDENT, word, repr(word))

    def span(self, tok: Token | None = None) -> Span:
        """The source position of ``tok`` (default: the current token)."""
        tok = tok or self.peek()
        return Span(tok.line, tok.column, self.source_name)

    def error(self, message: str, tok: Token | None = None) -> NoReturn:
        """Raise a ParseError at ``tok`` (default: the current token)."""
        tok = tok or self.peek()
        raise ParseError(message, tok.line, tok.column, self.source_name)

    def check_shape(self, dims: list[int], tok: Token) -> tuple[int, ...]:
        """``dims`` as a shape, or a ParseError at ``tok`` (the shape's first token) when
        it holds more elements than a 64-bit size can count."""
        count = 1
        for dim in dims:
            count *= dim
        if count > MAX_ELEMENTS:
            self.error(f"shape {dims} holds {count} elements, more than a 64-bit size can "
                       f"count ({MAX_ELEMENTS})", tok)
        return tuple(dims)
