"""Which SQL a monitor may run: one read-only SELECT, checked token by token before every use.

A monitor's query is pasted into ``SELECT * FROM (<query>) AS q ...``, so anything the check
lets through runs with the privileges of the monitor's database user. The rules:

* exactly one statement, starting with ``SELECT`` or ``WITH`` (optionally inside parentheses),
  with balanced parentheses (a ``)`` closing the wrapper early is refused);
* none of the words that make a SELECT write or lock: ``INSERT``, ``UPDATE``, ``DELETE``,
  ``MERGE`` (data-modifying CTEs), ``INTO`` (``SELECT INTO`` creates a table), ``UPDATE`` /
  ``SHARE`` (``FOR UPDATE``, ``FOR KEY SHARE``), ``COPY`` (a column named so must be quoted);
* no call of a server-side file, large-object, remote-connection, query-string or admin
  function (:data:`DENIED_FUNCTIONS`, prefixes, applied to every name, quoted or not, that
  is followed by ``(``), and no name at all starting with ``pg_`` nor ``information_schema``:
  PostgreSQL's system catalogs (``pg_shadow``, ``pg_stat_activity``, ``pg_file_settings``) and
  admin functions all carry that prefix. ``pg_sleep`` is refused by the same rule; a query
  that is slow for other reasons is cut by the statement timeout
  (``CONTEXTSHIFT_MONITOR_QUERY_TIMEOUT_S``).

The lexer is our own rather than a general SQL parser because what matters is that it reads
the text exactly as the database will, and where dialects disagree it refuses instead of
guessing: a backslash (an escape in PostgreSQL ``E''`` strings and MySQL, a plain character
elsewhere, so ``'a\\'`` would hide the code after it from one reader), ``#`` (MySQL comment,
PostgreSQL operator), nested ``/* /* */`` comments (PostgreSQL nests them, SQLite does not),
``U&''`` escapes, ``$1`` parameters, and ``$tag$`` strings and ``[name]``/backtick names
outside the dialect that has them. Comments are replaced by a space in the text that is
executed, so what the database sees is what was checked. A check is no substitute for a
read-only database user (see the README): it is one layer, the READ ONLY transaction another.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from service.errors import InvalidRequest

# Words that turn a SELECT into a write or a lock wherever they stand (unquoted).
FORBIDDEN_WORDS = frozenset({"insert", "update", "delete", "merge", "into", "share", "copy", "uescape"})
# Function-name prefixes refused when called, in any schema (lower-cased, quoted names too).
DENIED_FUNCTIONS = (
    # PostgreSQL: large objects (lo_export writes a server file inside a plain SELECT)
    "lo_", "loread", "lowrite",
    # remote connections and SQL run from a string
    "dblink", "query_to_xml", "cursor_to_xml", "table_to_xml", "schema_to_xml", "database_to_xml",
    "ts_stat", "ts_rewrite",
    # settings, sequences, maintenance that writes
    "set_config", "current_setting", "nextval", "setval", "binary_upgrade_", "brin_summarize",
    "brin_desummarize", "gin_clean_pending_list", "get_raw_page", "heap_page", "bt_page", "page_header",
    # SQLite: extensions and the file functions of the fileio extension
    "load_extension", "readfile", "writefile", "fsdir", "fts3_tokenizer", "zipfile",
)
DENIED_EXACT = frozenset({"edit"})  # SQLite shell's edit(); as a prefix it would refuse edit_distance()
# Names refused wherever they appear (system catalogs, admin functions such as pg_read_file,
# pg_ls_dir, pg_stat_file, pg_sleep, pg_terminate_backend, pg_logical_*).
DENIED_NAME_PREFIXES = ("pg_", "information_schema")
STATEMENT_STARTS = frozenset({"select", "with"})

_WORD = re.compile(r"[A-Za-z_\u0080-\uffff][A-Za-z0-9_$\u0080-\uffff]*")
_NUMBER = re.compile(r"(?:\d[\w.]*|\.\d[\w.]*)")
_DOLLAR_TAG = re.compile(r"\$(?:[A-Za-z_\u0080-\uffff][A-Za-z0-9_\u0080-\uffff]*)?\$")


class UnsafeQuery(InvalidRequest):
    """A monitor query that is not one plain read-only SELECT (422 ``unsafe_query``)."""

    code = "unsafe_query"


@dataclass(frozen=True)
class Token:
    kind: str  # word (unquoted, lower-cased), name (quoted), string, number, op
    value: str
    position: int


@dataclass(frozen=True)
class CheckedQuery:
    """A query that passed :func:`check_query`: ``text`` is what to execute (comments blanked,
    trailing ``;`` removed)."""

    text: str
    tokens: tuple[Token, ...]


def _refuse(message: str, position: int | None = None, **details) -> UnsafeQuery:
    where = f" (at character {position})" if position is not None else ""
    return UnsafeQuery(f"The monitor's SQL query is refused: {message}{where}. A monitor query must be "
                       "one read-only SELECT.", details={"rule": details.pop("rule"), "position": position,
                                                         **details})


def _closing(text: str, start: int, quote: str) -> int:
    """Index just past the quoted run opened at ``start`` (a doubled quote stands for itself)."""
    pos = start + 1
    while True:
        end = text.find(quote, pos)
        if end < 0:
            raise _refuse(f"unterminated {quote} quote", start, rule="unterminated_quote")
        if text.startswith(quote, end + 1):
            pos = end + 2
            continue
        return end + 1


def tokenize(text: str, dialect: str) -> tuple[list[Token], str]:
    """The tokens of ``text`` as ``dialect`` reads them, and ``text`` with comments blanked."""
    tokens: list[Token] = []
    blanked = list(text)
    pos, n, postgres, sqlite = 0, len(text), dialect == "postgresql", dialect == "sqlite"
    while pos < n:
        ch = text[pos]
        if ch.isspace():
            pos += 1
        elif text.startswith("--", pos):
            end = text.find("\n", pos)
            end = n if end < 0 else end
            blanked[pos:end] = " " * (end - pos)
            pos = end
        elif text.startswith("/*", pos):
            end = text.find("*/", pos + 2)
            if end < 0:
                raise _refuse("unterminated /* comment", pos, rule="unterminated_comment")
            if "/*" in text[pos + 2:end]:
                raise _refuse("nested /* comments are read differently by different databases", pos,
                              rule="nested_comment")
            blanked[pos:end + 2] = " " * (end + 2 - pos)
            pos = end + 2
        elif ch in "'\"" or (ch == "`" and not postgres):
            end = _closing(text, pos, ch)
            if "\\" in text[pos:end]:
                raise _refuse("backslashes in quotes are escapes for some databases and not others", pos,
                              rule="backslash")
            body = text[pos + 1:end - 1].replace(ch * 2, ch)
            tokens.append(Token("string" if ch == "'" else "name", body, pos))
            pos = end
        elif ch == "[" and sqlite:
            end = text.find("]", pos)
            if end < 0:
                raise _refuse("unterminated [ name", pos, rule="unterminated_quote")
            tokens.append(Token("name", text[pos + 1:end], pos))
            pos = end + 1
        elif ch == "$":
            tag = _DOLLAR_TAG.match(text, pos) if postgres else None
            if tag is None:
                raise _refuse("'$' (a parameter or a quote this check does not read)", pos, rule="dollar")
            end = text.find(tag.group(), tag.end())
            if end < 0:
                raise _refuse("unterminated $-quoted string", pos, rule="unterminated_quote")
            tokens.append(Token("string", text[tag.end():end], pos))
            pos = end + len(tag.group())
        elif ch in "\\#`":
            raise _refuse(f"the character {ch!r} (read differently by different databases)", pos,
                          rule="ambiguous_character")
        elif ch == "&" and pos + 1 < n and text[pos + 1] in "'\"":
            raise _refuse("U&'...' escapes", pos, rule="unicode_escape")
        elif (m := _WORD.match(text, pos)) is not None:
            tokens.append(Token("word", m.group().lower(), pos))
            pos = m.end()
        elif (m := _NUMBER.match(text, pos)) is not None:
            tokens.append(Token("number", m.group(), pos))
            pos = m.end()
        elif text.startswith("::", pos):
            tokens.append(Token("op", "::", pos))
            pos += 2
        else:
            tokens.append(Token("op", ch, pos))
            pos += 1
    return tokens, "".join(blanked)


def _check_names(tokens: list[Token]) -> None:
    for index, token in enumerate(tokens):
        if token.kind not in ("word", "name"):
            continue
        name = token.value.lower()
        if token.kind == "word" and name in FORBIDDEN_WORDS:
            raise _refuse(f"the word {token.value.upper()} (it writes or locks; quote a column of that name)",
                          token.position, rule="forbidden_word", word=name)
        if name.startswith(DENIED_NAME_PREFIXES):
            raise _refuse(f"the name {token.value!r} (system catalogs and admin functions are not readable by "
                          "monitors)", token.position, rule="system_name", name=token.value)
        called = index + 1 < len(tokens) and tokens[index + 1].value == "("
        if called and (name.startswith(DENIED_FUNCTIONS) or name in DENIED_EXACT):
            raise _refuse(f"a call of {token.value!r} (server files, large objects, remote connections, "
                          "settings and admin functions are refused)", token.position, rule="denied_function",
                          function=token.value)


def check_query(query: str, dialect: str) -> CheckedQuery:
    """``query`` if it is one read-only SELECT as ``dialect`` reads it; :class:`UnsafeQuery` otherwise.

    Parameters
    ----------
    query : str
        The monitor's query, as posted.
    dialect : str
        SQLAlchemy dialect name of the database it runs on (``"postgresql"``, ``"sqlite"``, ...).
    """
    if "\x00" in query:
        raise _refuse("a NUL character", query.index("\x00"), rule="ambiguous_character")
    tokens, blanked = tokenize(query, dialect)
    while tokens and tokens[-1].value == ";":
        blanked = blanked[:tokens[-1].position] + " " * (len(blanked) - tokens[-1].position)
        tokens.pop()
    if not tokens:
        raise _refuse("it is empty", rule="empty")
    first = next((t for t in tokens if t.value != "("), tokens[0])
    if first.kind != "word" or first.value not in STATEMENT_STARTS:
        raise _refuse(f"it starts with {first.value!r}, not SELECT or WITH", first.position, rule="not_select")
    depth = 0
    for token in tokens:
        if token.kind != "op":
            continue
        if token.value == ";":
            raise _refuse("more than one statement", token.position, rule="multiple_statements")
        depth += {"(": 1, ")": -1}.get(token.value, 0)
        if depth < 0:
            raise _refuse("a ')' with no '(' before it", token.position, rule="unbalanced_parentheses")
    if depth:
        raise _refuse("an unclosed '('", rule="unbalanced_parentheses")
    _check_names(tokens)
    return CheckedQuery(text=blanked.strip(), tokens=tuple(tokens))
