"""How kafka-metadata-shell's commands read their arguments and print their help: Kafka parses
each command with argparse4j, whose rules and layout differ from Python's argparse.

* Arguments are read left to right. ``--`` ends the options: everything after it is a path.
  ``-h``/``--help`` prints the command's help (``usage:  ls [-h] ...``, with the optional
  arguments section) and runs nothing. Any other argument that starts with ``-`` (but ``-``
  alone or a negative integer or decimal like ``-1``) is refused at once as
  ``unrecognized arguments: '<it>'``.
* ``man <command>`` prints ``<command>: <description>``, a blank line and the help of a parser
  without ``-h``. Arguments are laid out ``  <name>`` padded to column 25, then their help.
* Help text is filled to 75 columns, and a line that had to break is justified: the missing
  spaces go one per gap to every gap, the remainder to the gaps in the middle.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["Positional", "POSITIONALS", "split_options", "usage_help", "command_line"]


@dataclass(frozen=True)
class Positional:
    name: str
    nargs: str          # "+", "*", "?" or "1", as the command declares it
    help: str

    def usage(self) -> str:
        n = self.name
        return {"+": f"{n} [{n} ...]", "*": f"[{n} [{n} ...]]", "?": f"[{n}]"}.get(self.nargs, n)


POSITIONALS = {
    "cat": Positional("targets", "+", "The metadata files to display."),
    "cd": Positional("target", "?", "The directory to change to."),
    "find": Positional("paths", "*", "The paths to start at."),
    "history": Positional("numEntriesToShow", "?", "The number of entries to show."),
    "ls": Positional("targets", "*", "The metadata node paths to list."),
    "man": Positional("cmd", "1", "The command to get help text for."),
    "tree": Positional("targets", "+", "The metadata nodes to display."),
}

HELP_OPTIONS = ("-h", "--help")
_NUMBER = re.compile(r"-\d+(\.\d+)?")
_HELP_COLUMN = 25
_WIDTH = 75


def _justify(words: list[str], width: int) -> str:
    gaps = len(words) - 1
    if gaps == 0:
        return words[0]
    missing = width - sum(map(len, words)) - gaps
    each, remainder = divmod(missing, gaps)
    first_wider = (gaps - remainder + 1) // 2
    line = words[0]
    for gap, word in enumerate(words[1:]):
        line += " " * (1 + each + (first_wider <= gap < first_wider + remainder)) + word
    return line


def _filled(text: str) -> list[str]:
    """``text`` from column 25 to 75, as argparse4j fills it: a word (with the space after it)
    that would pass column 75 starts the next line, and every line but the last is justified."""
    words = text.split(" ")
    lines, current, column = [], [], _HELP_COLUMN
    for i, word in enumerate(words):
        column += len(word) + (i < len(words) - 1)
        if column > _WIDTH and current:
            lines.append(_justify(current, _WIDTH - _HELP_COLUMN))
            current, column = [], _HELP_COLUMN + len(word) + (i < len(words) - 1)
        current.append(word)
    return lines + [" ".join(current)]


def command_line(name: str, description: str) -> str:
    """One command in ``help``'s list: ``    <name>`` padded to column 25, its description."""
    first, *rest = _filled(description)
    return "\n".join([f"    {name:<{_HELP_COLUMN - 5}} {first}"] + [" " * _HELP_COLUMN + line for line in rest])


def _argument_line(name: str, text: str) -> str:
    return f"  {name:<{_HELP_COLUMN - 3}} {text}"


def usage_help(command: str, *, with_help_option: bool) -> str:
    """The help argparse4j prints for ``command``: for ``-h`` (``with_help_option``, usage
    after two spaces, as a subcommand of Kafka's nameless parser) or for ``man``."""
    positional = POSITIONALS.get(command)
    words = [command] + (["[-h]"] if with_help_option else []) + ([positional.usage()] if positional else [])
    lines = [("usage:  " if with_help_option else "usage: ") + " ".join(words)]
    if positional:
        lines += ["", "positional arguments:", _argument_line(positional.name, positional.help)]
    if with_help_option:
        lines += ["", "optional arguments:", _argument_line("-h, --help", "show this help message and exit")]
    return "\n".join(lines) + "\n"


def split_options(args: list[str]) -> tuple[list[str] | None, str | None]:
    """(the positional arguments, None), or (None, what to print instead): the help of the
    command for -h, or the unrecognized-argument error (the caller tells which by the text)."""
    positionals = []
    for i, arg in enumerate(args):
        if arg == "--":
            return positionals + args[i + 1:], None
        if arg.startswith("-") and arg != "-" and not _NUMBER.fullmatch(arg):
            if arg in HELP_OPTIONS:
                return None, "help"
            return None, f"unrecognized arguments: '{arg}'\n"
        positionals.append(arg)
    return positionals, None
