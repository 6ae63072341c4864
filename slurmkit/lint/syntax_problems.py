"""What bash would refuse in a script, read from tree-sitter-bash's error and missing nodes.

The grammar recovers from any text; bash does not. Where the two agree that something is
wrong (an unclosed quote or ``$(``, an ``if`` without ``then``, an operator where a command
must start, a stray ``fi``) the place is reported with bash's meaning, line and column.
Anywhere else an error node is a gap in the grammar (``8#022``, ``for NAME do``, extended
globs): unknown, never reported as wrong. Checked against ``bash -n`` on 785 scripts.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from slurmkit.lint.parsed import Parsed, SyntaxProblem


def find_problems(
    root: Any, data: bytes, parsed: Parsed, at: Callable[[int, Any], int]
) -> list[SyntaxProblem]:
    """The first error bash would stop at, then its warnings, in ``parsed``'s positions.

    ``data`` is the parsed bytes (templates masked), ``at`` turns a tree-sitter byte offset
    and point into a character offset of the text.
    """
    return _Finder(data, parsed, at).find(root)


class _Finder:
    def __init__(self, data: bytes, parsed: Parsed, at: Callable[[int, Any], int]) -> None:
        self.data = data
        self.parsed = parsed
        self.at = at

    def find(self, root: Any) -> list[SyntaxProblem]:
        if not root.has_error:
            stray = self._stray_closer()
            return [] if stray is None else [stray]
        stack = [root]
        found: list[SyntaxProblem] = []
        errors_seen: list[Any] = []
        end_of_text = len(self.data.rstrip())
        while stack:
            node = stack.pop()
            if node.is_missing:
                problem = self._missing(node)
                if problem is not None:
                    found.append(problem)
                continue
            if node.type == "ERROR":
                problem = self._error(node, end_of_text)
                if problem is not None:
                    found.append(problem)
                    continue
                errors_seen.append(node)
            if node.has_error:
                stack.extend(node.children)
        if errors_seen:
            # Only the first error: after a place the grammar does not know, what follows
            # may be its recovery, not the script's mistake.
            problem = self._unexpected(min(errors_seen, key=lambda e: e.start_byte))
            if problem is not None:
                found.append(problem)
        if not any(p.severity == "error" for p in found) and errors_seen:
            problem = self._unclosed_at(errors_seen) or self._closed_by_another(
                [e for e in errors_seen if e.end_byte >= end_of_text]
            )
            if problem is not None:
                found.append(problem)
        found.sort(key=lambda p: (p.line, p.column))
        errors = [p for p in found if p.severity == "error"]
        return errors[:1] + [p for p in found if p.severity != "error"]

    def _unclosed_at(self, errors: list[Any]) -> SyntaxProblem | None:
        """A ``${`` that bash never closes, where the grammar also stopped understanding.

        ``CMD="… ${WORK/ds.json …"``: bash reads on to the matching ``}``, swallowing the
        closing quote, and fails at the end of the text; the grammar may recover in the
        middle instead. Both signals must agree (the unclosed ``${`` at an error node), so
        a grammar gap elsewhere is still unknown, never wrong.
        """
        unclosed = _unclosed_expansion(self.data)
        if unclosed is None:
            return None
        if not any(e.start_byte - 2 <= unclosed < e.end_byte for e in errors):
            return None
        line, column = self.parsed.position(self.at(unclosed, _point(self.data, unclosed)))
        return SyntaxProblem(line, column, "the expansion ${… opened here is never closed")

    def _closed_by_another(self, errors: list[Any]) -> SyntaxProblem | None:
        """An ``if`` that a ``done`` meets before its ``fi`` (a loop's ``done`` inside it).

        The grammar then gives up on the rest of the text: one error node to its end holds
        the keywords and commands it could not fit together (a ``done`` it reads as a
        command). Its keywords are paired as bash pairs them, in the order of the text; a
        closer of another construct where one is still open is bash's "syntax error near
        unexpected token", unless the closer that is needed stands somewhere in between
        (the grammar may have read it into a node of its own).
        """
        if not errors:
            return None
        opened: list[tuple[Any, bytes]] = []
        stack = [min(errors, key=lambda e: e.start_byte)]
        while stack:
            node = stack.pop()
            if node.type in _CLOSED_BY:
                opened.append((node, _CLOSED_BY[node.type]))
                continue
            closer = self._closer(node)
            if closer is None:
                if node.type not in _STATEMENTS or node.has_error:
                    stack.extend(reversed(node.children))  # a whole statement is paired
                continue
            if not opened:
                continue
            opener, needed = opened.pop()
            if closer == needed:
                continue
            between = self.data[opener.end_byte : node.start_byte]
            if re.search(rb"(?<![\w$-])" + needed + rb"(?![\w-])", between):
                return None
            line, column = self._position(opener)
            return SyntaxProblem(
                line,
                column,
                f"this {opener.type} opened here is never closed (missing {needed.decode()!r}): "
                f"bash meets a {closer.decode()!r} first (syntax error near unexpected token)",
            )
        return None

    def _closer(self, node: Any) -> bytes | None:
        if node.type in _CLOSER_WORDS:
            return node.type.encode()
        if node.type == "command" and node.child_count == 1:
            word = self.data[node.start_byte : node.end_byte]
            return word if word.decode(errors="replace") in _CLOSER_WORDS else None
        return None

    def _position(self, node: Any) -> tuple[int, int]:
        return self.parsed.position(self.at(node.start_byte, node.start_point))

    def _missing(self, node: Any) -> SyntaxProblem | None:
        kind = node.type
        opener = node.parent
        if kind == "heredoc_end":
            line, column = self._position(opener)
            return SyntaxProblem(
                line,
                column,
                "here-document delimited by end-of-file: its terminator line is missing "
                "(bash warns and takes the rest of the script as its body)",
                "warning",
            )
        what = _OPENED_BY.get(opener.type) if opener is not None else None
        what = what or _MISSING.get(kind)
        if what is None or opener is None:
            return None
        if opener.type == "expansion" and _closed_on_its_line(self.data, opener.start_byte):
            return None
        line, column = self._position(opener)
        return SyntaxProblem(line, column, f"{what} opened here is never closed (missing {kind!r})")

    def _unexpected(self, node: Any) -> SyntaxProblem | None:
        """An ERROR in the middle of the text that starts with an operator where bash needs
        a command: ``echo a )``, ``a && && b``, ``| grep x``, ``for i in 1 2; echo``.

        bash refuses these wherever they stand ("syntax error near unexpected token").
        Other ERROR nodes in the middle are places the grammar does not know (``8#022``,
        ``for NAME do``, function headers it loses track of): unknown, never reported.
        Extended globs (``+([[:digit:]]))`` in a case pattern) are valid under ``shopt -s
        extglob``, which the grammar does not follow: a line with one is unknown too.
        """
        if not node.children:
            return None
        token = node.children[0].type
        needed = _NEEDS.get(token)
        if needed is not None:
            return self._opener_without(node, token, needed)
        if token not in _UNEXPECTED:
            return None
        line_start = self.data.rfind(b"\n", 0, node.start_byte) + 1
        line_end = self.data.find(b"\n", node.start_byte)
        if _EXTGLOB.search(self.data[line_start : line_end if line_end >= 0 else None]):
            return None
        line, column = self._position(node)
        return SyntaxProblem(line, column, f"syntax error near unexpected token `{token}'")

    def _opener_without(self, node: Any, opener: str, needed: str) -> SyntaxProblem | None:
        """``if`` without ``then``, a loop without ``do``, ``case`` without ``in``: the
        error node the grammar makes of the whole construct, whose keyword is missing.

        ``for NAME do`` (no ``in``: the positional parameters) is valid bash the grammar
        stops at before the ``do``: a ``do`` right after the node is that form.
        """
        if any(child.type == needed for child in node.children):
            return None
        if needed == "do" and re.match(rb"\s*;?\s*do\b", self.data[node.end_byte :]):
            return None
        line, column = self._position(node)
        return SyntaxProblem(
            line, column, f"syntax error: this {opener} has no {needed} (bash: unexpected token)"
        )

    def _stray_closer(self) -> SyntaxProblem | None:
        """``fi``, ``done``, ``esac`` or ``}`` where a command starts, in a text the grammar
        otherwise read without an error (where it did, such a word may be its recovery).

        tree-sitter-bash reads a stray ``fi`` as a command named fi; bash refuses the
        script ("syntax error near unexpected token `fi'"), as for an ``if`` closed twice.
        """
        for command in self.parsed.commands:
            if command.words and command.words[0].raw in _CLOSERS:
                line, column = self.parsed.position(command.words[0].start)
                word = command.words[0].raw
                return SyntaxProblem(line, column, f"syntax error near unexpected token `{word}'")
        return None

    def _error(self, node: Any, end_of_text: int) -> SyntaxProblem | None:
        """An ERROR reaching the end of the text that starts an unclosed construct.

        Other ERROR nodes are places the grammar does not know (``$(( 8#022 ))``):
        unknown, never reported as wrong.
        """
        if node.end_byte < end_of_text:
            return None
        raw = self.data[node.start_byte : node.end_byte]
        best: tuple[int, int, str] | None = None  # (position, -len(opener), what)
        for opener, closer, what in _OPENERS:
            position = raw.find(opener)
            if position < 0 or (opener == b"case" and raw[:position].strip()):
                continue
            if closer in raw[position + len(opener) :]:
                continue
            candidate = (position, -len(opener), what)
            best = candidate if best is None or candidate < best else best
        if best is None:
            # The opener may lie before the error (in the assignment the grammar kept).
            unclosed = _unclosed_expansion(self.data)
            if unclosed is not None:
                best = (unclosed - node.start_byte, -2, "the expansion ${…")
        if best is None:
            return None
        offset = node.start_byte + best[0]
        line, column = self.parsed.position(self.at(offset, _point(self.data, offset)))
        return SyntaxProblem(line, column, f"{best[2]} opened here is never closed")


# Tokens bash never accepts where a command should start.
_UNEXPECTED = frozenset({")", "&&", "||", "|", "|&", ";", ";;", "&"})
_CLOSERS = frozenset({"fi", "done", "esac", "}"})
# The keyword each compound command cannot do without.
_NEEDS = {
    "if": "then",
    "elif": "then",
    "for": "do",
    "select": "do",
    "while": "do",
    "until": "do",
    "case": "in",
}
_EXTGLOB = re.compile(rb"[?*+@!]\(")
# The word that closes each compound command bash pairs by keyword.
_CLOSED_BY = {
    "if": b"fi",
    "for": b"done",
    "select": b"done",
    "while": b"done",
    "until": b"done",
    "case": b"esac",
}
_CLOSER_WORDS = frozenset({"fi", "done", "esac"})
_STATEMENTS = frozenset(
    {
        "if_statement",
        "for_statement",
        "c_style_for_statement",
        "while_statement",
        "case_statement",
        "function_definition",
        "compound_statement",
        "subshell",
    }
)
_MISSING = {
    '"': 'the double-quoted string "…',
    "'": "the single-quoted string '…",
    "`": "the backtick substitution `…",
    ")": "this (…)",
    "}": "this {…}",
    "]]": "this [[ … ]] test",
    "fi": "this if (no fi)",
    "done": "this loop (no done)",
    "esac": "this case (no esac)",
}
_OPENED_BY = {
    "command_substitution": "the command substitution $(…",
    "process_substitution": "the process substitution <(…",
    "subshell": "the subshell (…",
    "array": "the array (…",
    "expansion": "the expansion ${…",
    "arithmetic_expansion": "the arithmetic $((…",
    "compound_statement": "the group {…",
}
_OPENERS = (
    (b"'", b"'", "the single-quoted string '…"),
    (b'"', b'"', 'the double-quoted string "…'),
    (b"$((", b"))", "the arithmetic $((…"),
    (b"${", b"}", "the expansion ${…"),
    (b"$(", b")", "the command substitution $(…"),
    (b"`", b"`", "the backtick substitution `…"),
    (b"<(", b")", "the process substitution <(…"),
    (b">(", b")", "the process substitution >(…"),
    (b"case", b"esac", "this case (no esac)"),
)


def _unclosed_expansion(raw: bytes) -> int | None:
    """Where the outermost ``${`` that no ``}`` closes starts, or None.

    ``"… ${WORK/configs/ds.json …"``: bash reads to the ``}`` that matches, nested
    ``${…}`` included, so the string's closing quote is swallowed and bash stops at the
    end of the text. The grammar then wraps the whole script in one error without a
    missing node. Counting ``${`` against ``}`` can only err towards closing too early
    (a function's ``}``), so what it reports is still open in bash too.
    """
    openers: list[int] = []
    index = raw.find(b"${")
    while 0 <= index < len(raw):
        if raw.startswith(b"${", index) and (index == 0 or raw[index - 1 : index] != b"\\"):
            openers.append(index)
            index += 2
            continue
        if raw[index : index + 1] == b"}" and openers:
            openers.pop()
        index += 1
    return openers[0] if openers else None


def _closed_on_its_line(data: bytes, start: int) -> bool:
    """Whether the ``${`` at ``start`` meets its ``}`` on its own line.

    tree-sitter-bash 0.25 cannot read an offset that is an expansion (``${a:$i}``,
    ``${arr[@]:$from:$n}``, valid bash): it makes the ``}`` missing and reads on. bash
    reads to the matching ``}``; one on the same line closes it.
    """
    end = data.find(b"\n", start)
    closing = _unclosed_expansion(data[start : len(data) if end < 0 else end])
    return closing is None


def _point(data: bytes, offset: int) -> tuple[int, int]:
    row = data.count(b"\n", 0, offset)
    line_start = data.rfind(b"\n", 0, offset) + 1
    return row, offset - line_start
