"""Bash read with a real grammar (tree-sitter-bash), turned into what the lint rules need.

The rules see commands (their words, quoting and expansions), assignments, pipelines,
background jobs, command substitutions and heredocs, each with its offset in the
text. A hand-written lexer did this before and could not be right: it read a
heredoc fed to ``sbatch`` as lines of the outer script, accepted an unterminated
quote, and recursed once per ``$(`` (a 5,000-deep one raised RecursionError).
tree-sitter parses in C, reports what bash would refuse (missing ``"``, ``)``,
``fi``, ``done``, a heredoc terminator) and builds no Python stack; the tree is
walked here with an explicit stack, never recursion.

Two things are done around the grammar:

* Template text (Jinja ``{{ … }}``, ``{% … %}``, ``{# … #}``; ERB, EJS and R's brew
  ``<% … %>``, ``<%= … %>``) is not bash. Before parsing each tag is replaced by text
  of the same length: a tag alone on its line by blanks, any other by a ``${…}``
  expansion, so what a template will put there reads as *unknown* (like
  ``${VAR:-default}``) and never as a wrong literal. A ``<% … %>`` code block that
  opens a line may span lines (brew's R code before the ``#SBATCH`` lines): it is
  blanked, line ends kept. Offsets and line numbers stay those of the original text.
* tree-sitter-bash 0.25 joins a line of assignments only (``A=1 B=2``) with the
  next line's command. A command whose words are separated by an unescaped
  newline is split back into the commands bash sees.
* tree-sitter-bash 0.25 splits ``${A}_$b.log`` (an expansion, text, then ``$name``
  and more text) into two words, ``${A}_$`` and ``b.log``; bash has one word. Words
  with no blank between them are joined back into the word bash sees.
* tree-sitter-bash 0.25 ends a heredoc at a line that only starts with its
  delimiter (``EOFINNER`` ends ``<<EOF``; bash needs the whole line). Such a line's
  first letter is blanked and the text read again, so the body goes on as in bash.
* tree-sitter-bash 0.25 reads ``! { a || b; }`` (a negated group) as a command named
  ``{`` and then a stray ``}``. The ``!`` is blanked and the text read again.

Offsets are character offsets into the original text (tree-sitter's byte offsets
are converted), so ``text[start:end]`` is the source of a word or command.

What the rules get is :mod:`slurmkit.lint.parsed` (re-exported here); what bash would
refuse is found by :mod:`slurmkit.lint.syntax_problems`.
"""

from __future__ import annotations

import bisect
import re
from functools import lru_cache
from operator import attrgetter
from typing import Any

from slurmkit.errors import UsageError
from slurmkit.lint.parsed import (
    Assignment,
    Command,
    Comment,
    Heredoc,
    Parsed,
    SyntaxProblem,
    Word,
    as_assignment,
)
from slurmkit.lint.syntax_problems import find_problems

__all__ = [
    "Assignment",
    "Command",
    "Heredoc",
    "NestingTooDeep",
    "Parsed",
    "SyntaxProblem",
    "Word",
    "as_assignment",
    "mask_templates",
    "parse",
]

# Template tags: one line each (a tag spanning lines is left as bash sees it).
_TEMPLATE_TAG = re.compile(r"\{\{.*?\}\}|\{%.*?%\}|\{#.*?#\}")
# Node types that are one shell word when they stand as an argument.
_WORD_TYPES = frozenset(
    {
        "word",
        "string",
        "raw_string",
        "ansi_c_string",
        "translated_string",
        "concatenation",
        "simple_expansion",
        "expansion",
        "command_substitution",
        "process_substitution",
        "arithmetic_expansion",
        "number",
        "array",
        "brace_expression",
    }
)
# A command of plain words on one line: no quotes, escapes, expansions, redirections.
_PLAIN_COMMAND = re.compile(r"[^'\"$\\`<>&|;(){}\n#]*")
_SIMPLE = frozenset({"command", "declaration_command", "unset_command", "variable_assignment"})
_PLAIN_WORD = re.compile(r"[^ \t]+")
_REDIRECTS = frozenset({"file_redirect", "heredoc_redirect", "herestring_redirect"})
_SUBSTITUTIONS = frozenset({"command_substitution", "process_substitution"})
# Leaves, or nodes below which no command can hide.
_NO_COMMANDS = frozenset({"word", "raw_string", "number", "variable_name", "regex"})
_DECLARATIONS = frozenset({"declaration_command", "unset_command"})
_TOKENS = frozenset({"&", ";", "&&", "||", "|", "|&", ";;", "\n", "(", ")", "{", "}"})


class NestingTooDeep(UsageError):
    """Kept for callers of the former lexer; the grammar-based reader never raises it."""


_NOTHING: frozenset[str] = frozenset()
_START = attrgetter("start")
# Building the tuple directly skips the named tuple's Python-level __new__ (300,000 calls).
_new_word = tuple.__new__
_NAME_EXPANSION = re.compile(r"\$[A-Za-z_]\w*")


def mask_templates(text: str) -> str:
    """Template tags replaced by same-length shell text that reads as unknown (see above)."""
    if "<%" in text:
        text = _mask_erb(text)
    if "{{" not in text and "{%" not in text and "{#" not in text:
        return text
    return _TEMPLATE_TAG.sub(lambda match: _masked_tag(text, match.start(), match.end()), text)


def _masked_tag(text: str, start: int, end: int) -> str:
    """A one-line tag: blanks when it is code alone on its line, else one unknown word.

    What an output tag (``{{ x }}``, ``<%= x %>``) prints is a word even alone on its
    line (it may print a command); a code tag prints nothing.
    """
    tag = text[start:end]
    line_start = text.rfind("\n", 0, start) + 1
    line_end = text.find("\n", end)
    line_end = len(text) if line_end < 0 else line_end
    alone = not text[line_start:start].strip() and not text[end:line_end].strip()
    if alone and not tag.startswith(_OUTPUT_TAGS):
        return " " * len(tag)
    return "${" + "_" * (len(tag) - 3) + "}"


_OUTPUT_TAGS = ("{{", "<%=", "<%-")
# ERB/EJS/brew delimiters; ``<%%`` and ``%%>`` are their escapes for a literal one.
_ERB_MARK = re.compile(r"<%%|%%>|<%|%>")
_NOT_LINE_BREAK = re.compile(r"[^\n\r\v\f\x1c-\x1e\x85\u2028\u2029]")


def _mask_erb(text: str) -> str:
    """``<% … %>`` tags masked; one pass over the delimiters, so linear in the text.

    A tag on one line is masked like a Jinja tag. A tag over several lines is masked
    only when its ``<%`` opens its line, the way a template's code block is written:
    a stray ``<%`` in a bash word (``printf '<%s'``) never swallows the lines after it.
    """
    pieces: list[str] = []
    done = 0
    opened = -1
    spans = False  # a line break lies between ``opened`` and the last delimiter
    last = 0
    for mark in _ERB_MARK.finditer(text):
        kind, at = mark.group(0), mark.start()
        if opened >= 0 and not spans:
            spans = "\n" in text[last:at]
        last = at
        if kind in ("<%%", "%%>") or (kind == "%>" and opened < 0):
            continue
        if kind == "<%":
            if opened < 0 or (spans and not _opens_line(text, opened)):
                opened, spans = at, False
            continue
        start, end = opened, mark.end()
        opened = -1
        if not spans:
            pieces += [text[done:start], _masked_tag(text, start, end)]
        elif _opens_line(text, start):
            pieces += [text[done:start], _NOT_LINE_BREAK.sub(" ", text[start:end])]
        else:
            continue
        done = end
    if not pieces:
        return text
    pieces.append(text[done:])
    return "".join(pieces)


def _opens_line(text: str, at: int) -> bool:
    return not text[text.rfind("\n", 0, at) + 1 : at].strip()


@lru_cache(maxsize=1)
def _parser() -> Any:
    import tree_sitter
    import tree_sitter_bash

    return tree_sitter.Parser(tree_sitter.Language(tree_sitter_bash.language()))


def parse(text: str) -> Parsed:
    """Read ``text`` with the bash grammar; never raises on any text."""
    masked = mask_templates(text)
    data = masked.encode("utf-8", "surrogatepass")
    tree = _parser().parse(data)
    if b"<<" in data and (bare := _bare_heredocs(data, tree.root_node)):
        data = _commented(data, bare)  # the words keep their letters: ``masked``
        tree = _parser().parse(data)
    if b"!" in data and (negated := _negated_groups(data, tree.root_node)):
        data = _blank_first(data, negated)
        tree = _parser().parse(data)
    for _ in range(_REREADS):
        longer = _longer_than_delimiter(data, tree.root_node)
        if not longer:
            break
        data = _blank_first(data, longer)  # the words keep their letters: ``masked``
        tree = _parser().parse(data)
    return _Reader(text, masked, data).read(tree.root_node)


# Bounded: each reading fixes the heredocs the grammar closed too early; one inside
# another's body shows only in the next reading.
_REREADS = 4
_HEREDOC_WORD = re.compile(rb"<<-?[ \t]*['\"\\]?([A-Za-z_]\w*)")


def _longer_than_delimiter(data: bytes, root: Any) -> list[int]:
    """Starts of lines where the grammar ended a heredoc that bash does not end.

    Bash ends a heredoc only at a line equal to its delimiter (``EOF)`` inside ``$(``
    too); the grammar ends it at a line that starts with it (``EOFINNER``, ``EOF x``).
    Only lines that start with some heredoc's delimiter are looked up in the tree.
    """
    if b"<<" not in data:
        return []
    delimiters = {m[1] for m in _HEREDOC_WORD.finditer(data)}
    if not delimiters:
        return []
    pattern = b"|".join(re.escape(d) for d in sorted(delimiters, key=len, reverse=True))
    found = []
    for match in re.finditer(rb"(?m)^\t*(?:" + pattern + rb")(?=[^\n\r)])", data):
        start = match.end(0) - len(match.group(0).lstrip(b"\t"))
        node = root.descendant_for_byte_range(start, start + 1)
        if node is not None and node.type == "heredoc_end" and node.start_byte == start:
            after = data[node.end_byte : node.end_byte + 1]
            if after not in (b"", b"\n", b"\r", b")"):
                found.append(start)
    return found


# A line that is only a heredoc (``<<comment`` … ``comment``): bash feeds the body to no
# command, a block comment; tree-sitter-bash 0.25 cannot read it and runs the body's lines.
_BARE_HEREDOC = re.compile(rb"(?m)^[ \t]*<<(-?)[ \t]*(['\"]?)([A-Za-z_]\w*)\2[ \t]*\r?$")


def _bare_heredocs(data: bytes, root: Any) -> list[tuple[int, int]]:
    """(start, end) of each heredoc with no command that the grammar misread, from
    its ``<<`` line through its delimiter line (to the end if none: bash reads on too)."""
    found: list[tuple[int, int]] = []
    for match in _BARE_HEREDOC.finditer(data):
        if found and match.start(0) < found[-1][1]:
            continue  # inside the body before it: each body is searched once (linear)
        start = match.start(0) + len(match.group(0)) - len(match.group(0).lstrip(b" \t"))
        node = root.descendant_for_byte_range(start, start + 1)
        if node is None or node.type != "<":  # ``<<`` when read, a body's or string's text
            continue
        tabs = rb"\t*" if match.group(1) else b""
        end = re.compile(rb"(?m)^" + tabs + re.escape(match.group(3)) + rb"\r?$")
        closing = end.search(data, match.end(0) + 1)
        found.append((match.start(0), closing.end(0) if closing else len(data)))
    return found


def _commented(data: bytes, spans: list[tuple[int, int]]) -> bytes:
    """Each line of the spans starts with ``#``: same length, read as comments (a line
    that starts with a multi-byte letter is left: its length in letters would change)."""
    changed = bytearray(data)
    for start, end in spans:
        line = start
        while line < end:
            if changed[line] < 0x80 and changed[line] != 0x0A:
                changed[line] = 0x23
            newline = data.find(b"\n", line, end)
            line = end if newline < 0 else newline + 1
    return bytes(changed)


_NEGATED_GROUP = re.compile(rb"![ \t]+\{(?=[ \t\r\n])")


def _negated_groups(data: bytes, root: Any) -> list[int]:
    """Where ``! { … }`` negates a group: bash accepts it, tree-sitter-bash 0.25 reads the
    ``{`` as a command's name and the ``}`` as a stray token. Blanking the ``!`` leaves
    the group the grammar knows (its status, negated, is read by no rule)."""
    found = []
    for match in _NEGATED_GROUP.finditer(data):
        start = match.start(0)
        node = root.descendant_for_byte_range(start, start + 1)
        if node is not None and node.type == "!" and node.start_byte == start:
            parent = node.parent
            if parent is not None and parent.type == "negated_command":
                found.append(start)
    return found


def _blank_first(data: bytes, starts: list[int]) -> bytes:
    """The first letter of each line blanked: same length, no longer a delimiter."""
    changed = bytearray(data)
    for start in starts:
        changed[start] = 0x20
    return bytes(changed)


class _Offsets:
    """Byte offsets (tree-sitter) to character offsets (Python strings)."""

    def __init__(self, text: str, data: bytes) -> None:
        self.ascii = len(text) == len(data)
        if not self.ascii:
            self.lines = data.split(b"\n")
            starts = [0]
            for line in self.lines:
                starts.append(starts[-1] + len(line.decode("utf-8", "surrogatepass")) + 1)
            self.starts = starts

    def at(self, byte: int, point: Any) -> int:
        if self.ascii:
            return byte
        row, column = point
        return self.starts[row] + len(self.lines[row][:column].decode("utf-8", "surrogatepass"))


class _Reader:
    """One pass over the tree with an explicit stack: commands, heredocs, comments, problems."""

    def __init__(self, text: str, masked: str, data: bytes) -> None:
        self.text = text
        self.masked = masked
        self.data = data
        self.offsets = _Offsets(masked, data)
        self.result = Parsed(text)
        self.pipeline_ids = 0
        self.by_node: dict[int, Command] = {}
        self.pipe_of_node: dict[int, int] = {}
        self.redirected: list[Any] = []
        self.substituted = False  # the last word read holds a substitution

    def _branches(self, node: Any) -> None:
        """The character ranges of an ``if``'s or ``case``'s branches: at most one runs.

        ``if``: the ``then`` part (from ``then`` to the first ``elif``/``else``/``fi``),
        each ``elif_clause`` and the ``else_clause``; ``case``: each ``case_item``.
        """
        ranges: list[tuple[int, int]] = []
        if node.type == "case_statement":
            ranges = [self.span(c) for c in node.children if c.type == "case_item"]
        else:
            then_start: int | None = None
            for child in node.children:
                if child.type == "then" and not ranges and then_start is None:
                    then_start = self.span(child)[1]
                elif child.type in ("elif_clause", "else_clause", "fi"):
                    if then_start is not None:
                        ranges.append((then_start, self.span(child)[0]))
                        then_start = None
                    if child.type != "fi":
                        ranges.append(self.span(child))
        if len(ranges) > 1:
            self.result.branches.append(tuple(ranges))

    def _function(self, node: Any) -> None:
        name, body = node.child_by_field_name("name"), node.child_by_field_name("body")
        if name is not None and body is not None:
            start, end = self.span(name)
            self.result.functions[self.masked[start:end]] = self.span(body)

    def span(self, node: Any) -> tuple[int, int]:
        offsets = self.offsets
        if offsets.ascii:
            return node.start_byte, node.end_byte
        return offsets.at(node.start_byte, node.start_point), offsets.at(
            node.end_byte, node.end_point
        )

    def read(self, root: Any) -> Parsed:
        result = self.result
        # (node, depth, background, pipeline or None)
        stack: list[tuple[Any, int, bool, tuple[int, int, int] | None]] = [(root, 0, False, None)]
        while stack:
            node, depth, background, pipeline = stack.pop()
            kind = node.type
            if kind in _SIMPLE and self._plain(node, depth, background, pipeline):
                continue
            if kind == "command":
                self._command(node, depth, background, pipeline, stack)
                continue
            if kind in _DECLARATIONS or kind in ("variable_assignment", "variable_assignments"):
                self._declaration(node, depth, background, pipeline)
                for child in [node] if kind == "variable_assignment" else node.children:
                    if child.type == "variable_assignment":
                        self._push_value(child, depth, stack)
                    elif child.type == "variable_assignments":
                        for inner in child.children:
                            self._push_value(inner, depth, stack)
                    elif child.child_count and child.type not in _NO_COMMANDS:
                        stack.append((child, depth, False, None))
                continue
            if kind == "comment":
                start, end = self.span(node)
                result.comments.append(Comment(start, self.text[start:end]))
                continue
            if kind in _NO_COMMANDS or node.child_count == 0:
                continue
            if kind in _SUBSTITUTIONS:
                self._push_children(node, depth + 1, False, None, stack)
                continue
            if kind == "pipeline":
                self._pipeline(node, depth, background, stack)
                continue
            if kind == "redirected_statement":
                self.redirected.append((node, depth))
            elif kind in ("if_statement", "case_statement"):
                self._branches(node)
            elif kind == "function_definition":
                self._function(node)
            self._push_children(node, depth, background, pipeline, stack)
        result.commands.sort(key=_START)
        result.comments.sort(key=_START)
        for node, _ in self.redirected:
            self._heredocs(node)
        result.heredocs.sort(key=_START)
        result.problems = find_problems(root, self.data, result, self.offsets.at)
        for commands in result._pipelines.values():
            commands.sort(key=lambda c: c.pipeline[1] if c.pipeline else 0)
        return result

    def _push_children(
        self,
        node: Any,
        depth: int,
        background: bool,
        pipeline: tuple[int, int, int] | None,
        stack: list,
        skip_words: bool = True,
    ) -> None:
        children = node.children
        types = [child.type for child in children]
        count = len(children)
        comments = self.result.comments
        for index in range(count - 1, -1, -1):
            kind = types[index]
            if kind in _NO_COMMANDS or kind in _TOKENS:
                continue
            child = children[index]
            if kind == "comment":  # read here, not stacked: scripts are half comments
                start, end = self.span(child)
                comments.append(Comment(start, self.text[start:end]))
                continue
            if not child.child_count:
                continue  # a leaf (a quote, `$`, `[`): read would pass it by
            bg = background or (index + 1 < count and types[index + 1] == "&")
            stack.append((child, depth, bg, pipeline))

    def _plain(
        self, node: Any, depth: int, background: bool, pipeline: tuple[int, int, int] | None
    ) -> bool:
        """The common command (``srun python t.py``, ``export V=x``): plain words on one line.

        Its words are split at blanks without visiting its nodes, which is most of the
        time of a 40,000-line script; anything with quotes, escapes, expansions or
        redirections goes the long way.
        """
        start, end = self.span(node)
        source = self.masked[start:end]
        if not _PLAIN_COMMAND.fullmatch(source):
            return False
        make, none = _new_word, _NOTHING
        words = [
            make(Word, (word, word, True, start + a, start + b, none, ()))
            for m in _PLAIN_WORD.finditer(source)
            for word, (a, b) in ((m.group(), m.span()),)
        ]
        if words:
            self._add(node, words, depth, background, pipeline)
        return True

    def _push_value(self, assignment: Any, depth: int, stack: list) -> None:
        """The value of an assignment, to find the commands of its substitutions."""
        children = assignment.children
        if len(children) >= 3 and children[-1].child_count:
            stack.append((children[-1], depth, False, None))

    def _pipeline(self, node: Any, depth: int, background: bool, stack: list) -> None:
        children = node.children
        self.pipeline_ids += 1
        pid = self.pipeline_ids
        position = 0
        if children and children[0].type in ("|", "|&"):
            position = 1  # ``cat <<EOF | sbatch``: position 0 is the heredoc's reader
            self.pipe_of_node[node.start_byte] = pid
        members = []
        for child in children:
            if child.type in ("|", "|&"):
                continue
            members.append((child, position))
            position += 1
        for child, index in reversed(members):
            stack.append((child, depth, background, (pid, index, position)))

    def _command(
        self,
        node: Any,
        depth: int,
        background: bool,
        pipeline: tuple[int, int, int] | None,
        stack: list,
    ) -> None:
        data = self.data
        groups: list[list[Word]] = [[]]
        previous_end = None
        for child in node.children:
            kind = child.type
            if kind in _REDIRECTS:
                if child.child_count:
                    stack.append((child, depth, False, None))
                continue
            if previous_end is not None and _newline_between(data, previous_end, child.start_byte):
                groups.append([])  # tree-sitter joined an assignments-only line with the next
            previous_end = child.end_byte
            # A word's nodes are read for the commands of its substitutions only: one
            # without any (most: "$x", "a b") is not walked again.
            if kind == "command_name":
                inner = child.children[0] if child.child_count else child
                groups[-1].append(self._word(inner))
                if inner.child_count and self.substituted:
                    stack.append((inner, depth, False, None))
            elif kind == "variable_assignment":
                groups[-1].append(self._assignment_word(child))
                self._push_value(child, depth, stack)
            elif kind in _WORD_TYPES:
                groups[-1].append(self._word(child))
                if child.child_count and kind != "word" and self.substituted:
                    stack.append((child, depth, False, None))
        for words in groups:
            if words:
                self._add(node, words, depth, background, pipeline)

    def _add(
        self,
        node: Any,
        words: list[Word],
        depth: int,
        background: bool,
        pipeline: tuple[int, int, int] | None,
    ) -> Command:
        if len(words) > 1:
            words = _joined(words)
        command = Command(
            words=tuple(words),
            start=words[0].start,
            end=words[-1].end,
            depth=depth,
            background=background,
            after_pipe=bool(pipeline and pipeline[1] > 0),
            pipe_to_next=bool(pipeline and pipeline[1] < pipeline[2] - 1),
            pipeline=pipeline,
        )
        self.result.commands.append(command)
        self.by_node.setdefault(node.start_byte, command)
        if pipeline is not None:
            self.result._pipelines.setdefault(pipeline[0], []).append(command)
        return command

    def _declaration(
        self, node: Any, depth: int, background: bool, pipeline: tuple[int, int, int] | None
    ) -> None:
        children = [node] if node.type == "variable_assignment" else node.children
        if node.type == "variable_assignments":
            children = [c for c in children if c.type == "variable_assignment"]
        words = []
        for child in children:
            kind = child.type
            if kind == "variable_assignment":
                words.append(self._assignment_word(child))
            elif kind in _WORD_TYPES or kind == "variable_name" or child.child_count == 0:
                if kind in (";", "&", "\n"):
                    continue
                words.append(self._word(child))
        if words:
            self._add(node, words, depth, background, pipeline)

    # ------------------------------------------------------------ words

    def _assignment_word(self, node: Any) -> Word:
        start, end = self.span(node)
        raw = self.masked[start:end]
        children = node.children
        value = children[-1] if len(children) >= 3 else None
        head = raw
        if value is not None:
            value_word = self._word(value)
            value_start = value_word.start - start
            head = raw[:value_start]
            return Word(
                raw,
                head + value_word.text,
                value_word.literal,
                start,
                end,
                value_word.expands,
                value_word.substitutes,
            )
        return Word(raw, head, True, start, end)

    def _word(self, node: Any) -> Word:
        self.substituted = False  # set by _expansions: a $(…) or <(…) somewhere inside
        start, end = self.span(node)
        raw = self.masked[start:end]
        kind = node.type
        if kind == "word" or kind == "number" or kind == "variable_name":
            if "\\" in raw:
                return Word(raw, _unescape(raw), True, start, end)
            literal = "${" not in raw or kind != "word"
            return _new_word(Word, (raw, raw, literal, start, end, _NOTHING, ()))
        if kind == "simple_expansion" and _NAME_EXPANSION.fullmatch(raw):
            # ``$NAME``, a third of the other words: its one name without walking its nodes
            return _new_word(Word, (raw, raw, False, start, end, frozenset((raw[1:],)), ()))
        text, literal = self._text(node)
        expands: frozenset[str] = frozenset()
        substitutes: tuple[str, ...] = ()
        if not literal:
            expands, substitutes = self._expansions(node)
        return Word(raw, text, literal, start, end, expands, substitutes)

    def _text(self, node: Any) -> tuple[str, bool]:
        """Quote removal of one word node (iterative over concatenations and strings)."""
        kind = node.type
        start, end = self.span(node)
        raw = self.masked[start:end]
        if kind == "raw_string":
            return raw[1:-1] if raw.endswith("'") and len(raw) > 1 else raw[1:], True
        if kind == "ansi_c_string":
            return _ansi_c(raw[2:-1]), True
        if kind in ("word", "number"):
            return (_unescape(raw) if "\\" in raw else raw), True
        if kind in ("string", "translated_string"):
            literal = True
            out: list[str] = []
            for child in node.children:
                ctype = child.type
                if ctype == '"' or ctype == '$"':
                    continue
                cstart, cend = self.span(child)
                piece = self.masked[cstart:cend]
                if ctype == "string_content":
                    out.append(_unescape_double(piece))
                else:
                    out.append(piece)
                    literal = False
            return "".join(out), literal
        if kind == "concatenation":
            literal = True
            out = []
            for child in node.children:
                piece, plain = self._text(child) if child.type != "concatenation" else ("", True)
                out.append(piece)
                literal = literal and plain
            return "".join(out), literal
        return raw, False  # an expansion or substitution: as written, unknown

    def _expansions(self, node: Any) -> tuple[frozenset[str], tuple[str, ...]]:
        """Variables expanded and programs substituted anywhere in a word (single quotes aside)."""
        names: set[str] = set()
        programs: list[str] = []
        stack = [node]
        self.substituted = False
        while stack:
            current = stack.pop()
            kind = current.type
            if kind in ("raw_string", "ansi_c_string", "word", "string_content", "number"):
                continue
            if kind in ("simple_expansion", "expansion"):
                for child in current.children:
                    if child.type in ("variable_name", "special_variable_name"):
                        start, end = self.span(child)
                        names.add(self.masked[start:end])
                        break
            elif kind in _SUBSTITUTIONS:
                self.substituted = True
                # Only the program it runs: its own words are words of their own commands
                # (descending made a 5,000-deep $(…) quadratic).
                for child in current.children:
                    if child.type == "command":
                        for part in child.children:
                            if part.type == "command_name":
                                start, end = self.span(part)
                                programs.append(self.masked[start:end])
                                break
                        break
                continue
            stack.extend(current.children)
        return frozenset(names), tuple(programs)

    # ------------------------------------------------------------ heredocs

    def _heredocs(self, node: Any) -> None:
        children = node.children
        body_node = children[0] if children else None
        reader = self.by_node.get(body_node.start_byte) if body_node is not None else None
        target = None
        for child in children:
            if child.type == "file_redirect":
                target = target or self._redirect_target(child)
        for child in children:
            if child.type != "heredoc_redirect":
                continue
            self._heredoc(child, reader, target)

    def _redirect_target(self, node: Any) -> str | None:
        operator = None
        for part in node.children:
            if part.type in (">", ">>", ">|", "&>", "&>>"):
                operator = part.type
            elif operator and part.type in _WORD_TYPES:
                return self._word(part).text
        return None

    def _heredoc(self, node: Any, reader: Command | None, target: str | None) -> None:
        delimiter = ""
        quoted = False
        body = None
        terminated = False
        piped: list[Command] = []
        operator = 0
        for part in node.children:
            kind = part.type
            if kind in ("<<", "<<-"):
                operator = self.span(part)[0]
            elif kind == "heredoc_start":
                start, end = self.span(part)
                raw = self.masked[start:end]
                quoted = any(c in raw for c in "'\"\\")
                delimiter = raw.strip("'\"").replace("\\", "")
            elif kind == "heredoc_body":
                body = part
            elif kind == "heredoc_end":
                terminated = not part.is_missing
            elif kind == "file_redirect":
                target = target or self._redirect_target(part)
            elif kind == "pipeline":
                pid = self.pipe_of_node.get(part.start_byte, -1)
                piped.extend(self.result._pipelines.get(pid, []))
        if body is None:
            start = end = self.span(node)[1]
        else:
            start, end = self.span(body)
        first = piped[0].pipeline if piped else None
        if reader is not None and first is not None and reader.pipeline is None:
            joined = Command(
                **{**_fields(reader), "pipeline": (first[0], 0, first[2]), "pipe_to_next": True}
            )
            self._replace(reader, joined)
            reader = joined
        self.result.heredocs.append(
            Heredoc(
                delimiter=delimiter,
                quoted=quoted,
                body=self.text[start:end],
                start=start,
                end=end,
                operator=operator,
                line=self.result.line_of(start),
                reader=reader,
                piped_to=tuple(c for c in piped if c.pipeline and c.pipeline[1] > 0),
                target=target,
                terminated=terminated,
            )
        )

    def _replace(self, old: Command, new: Command) -> None:
        commands = self.result.commands
        index = bisect.bisect_left([c.start for c in commands], old.start)
        while index < len(commands) and commands[index] is not old:
            index += 1
        if index < len(commands):
            commands[index] = new
        if new.pipeline is not None:
            self.result._pipelines.setdefault(new.pipeline[0], []).append(new)


_NAME_START = re.compile(r"[A-Za-z_]\w*|[0-9@*#?$!-]")


def _joined(words: list[Word]) -> list[Word]:
    """Words the grammar split with no blank between them, as the one word bash reads."""
    out = [words[0]]
    for word in words[1:]:
        before = out[-1]
        if word.start != before.end:
            out.append(word)
            continue
        expands = before.expands | word.expands
        name = _NAME_START.match(word.raw) if before.raw.endswith("$") else None
        if name is not None:
            expands = expands | {name.group(0)}
        out[-1] = Word(
            before.raw + word.raw,
            before.text + word.text,
            before.literal and word.literal and name is None,
            before.start,
            word.end,
            expands,
            before.substitutes + word.substitutes,
        )
    return out


def _fields(command: Command) -> dict[str, Any]:
    return {
        "words": command.words,
        "start": command.start,
        "end": command.end,
        "depth": command.depth,
        "background": command.background,
        "after_pipe": command.after_pipe,
        "pipe_to_next": command.pipe_to_next,
        "pipeline": command.pipeline,
    }


def _newline_between(data: bytes, start: int, end: int) -> bool:
    """An unescaped newline between two words (a line continuation does not count)."""
    gap = data[start:end]
    return b"\n" in gap and gap.replace(b"\\\n", b"").find(b"\n") >= 0


def _unescape(raw: str) -> str:
    return re.sub(r"\\(.)", r"\1", raw.replace("\\\n", ""), flags=re.S)


def _unescape_double(raw: str) -> str:
    if "\\" not in raw:
        return raw
    return re.sub(r'\\([\\"$`])', r"\1", raw.replace("\\\n", ""))


_ANSI = {"n": "\n", "t": "\t", "r": "\r", "\\": "\\", "'": "'", '"': '"', "a": "\a", "e": "\x1b"}


def _ansi_c(body: str) -> str:
    return re.sub(r"\\(.)", lambda m: _ANSI.get(m.group(1), "\\" + m.group(1)), body)
