"""kafka-metadata-shell's commands over a node tree (shell/src/main/java/org/apache/kafka/
shell/command/*.java and glob/*.java): ls, cat, tree, find in both modes; cd, pwd, help, man,
history and exit only in the interactive shell, as in Kafka. Paths may be globs (``*``,
``?``, ``[...]``, ``{a,b}``) per path component, as GlobComponent reads them.

Sans-I/O: ``Shell.run(words)`` returns the text a command prints and whether it was an error;
the terminal loop lives in tools/metadata_shell.py.
"""
from __future__ import annotations

import re
import shlex
from dataclasses import dataclass

from .java_text import java_string_key
from .shell_args import command_line, split_options, usage_help

__all__ = ["Shell", "CommandResult", "COMMANDS", "glob_to_regex", "split_path"]


@dataclass(frozen=True)
class CommandSpec:
    name: str
    description: str
    shell_only: bool


COMMANDS = {c.name: c for c in (
    CommandSpec("cat", "Show the contents of metadata files.", False),
    CommandSpec("cd", "Set the current working directory.", True),
    CommandSpec("exit", "Exit the metadata shell.", True),
    CommandSpec("find", "Search for nodes in the directory hierarchy.", False),
    CommandSpec("help", "Display this help message.", True),
    CommandSpec("history", "Print command history.", True),
    CommandSpec("ls", "List metadata nodes.", False),
    CommandSpec("man", "Show the help text for a specific command.", True),
    CommandSpec("pwd", "Print the current working directory.", True),
    CommandSpec("tree", "Show the contents of metadata nodes in a tree structure.", False),
)}


@dataclass
class CommandResult:
    output: str
    error: bool = False
    exit: bool = False


# --- paths and globs ------------------------------------------------------------------------

def split_path(path: str) -> list[str]:
    """CommandUtils.splitPath: repeated and trailing slashes do not matter."""
    return [c for c in path.split("/") if c]


def strip_dot_components(components: list[str]) -> list[str]:
    out: list[str] = []
    for c in components:
        if c == "..":
            if out:
                out.pop()
        elif c != ".":
            out.append(c)
    return out


_REGEX_SPECIAL = set("$()+.[]^{|")
_GLOB_SPECIAL = set("*?\\{}[]")


def glob_to_regex(glob: str) -> str | None:
    """GlobComponent.toRegularExpression: None when the component is a literal; ValueError
    when it is malformed (Kafka then treats it as a literal too)."""
    out = ["^"]
    literal = True
    in_group = False
    i = 0
    while i < len(glob):
        c = glob[i]
        i += 1
        if c == "?":
            literal = False
            out.append(".")
        elif c == "*":
            literal = False
            out.append(".*")
        elif c == "\\":
            if i == len(glob):
                out.append("\\\\")
            else:
                nxt = glob[i]
                i += 1
                out.append(("\\" if nxt in _GLOB_SPECIAL or nxt in _REGEX_SPECIAL else "") + nxt)
        elif c == "{":
            if in_group:
                raise ValueError("Can't nest glob groups.")
            literal = False
            out.append("(?:(?:")
            in_group = True
        elif c == ",":
            if in_group:
                literal = False
                out.append(")|(?:")
            else:
                out.append(c)
        elif c == "}":
            if in_group:
                literal = False
                out.append("))")
                in_group = False
            else:
                out.append("\\}")
        elif c == "[":
            literal = False
            out.append("[")
            if i < len(glob) and glob[i] in "!^":
                out.append("^")
                i += 1
            if i < len(glob) and glob[i] == "]":
                out.append("\\]")
                i += 1
            closed = False
            while i < len(glob):
                b = glob[i]
                i += 1
                if b == "]":
                    closed = True
                    out.append("]")
                    break
                if b == "\\" and i < len(glob):
                    escaped = glob[i]
                    i += 1
                    out.append(("\\" if escaped in "][\\-^" else "") + escaped)
                else:
                    out.append("\\\\" if b == "\\" else b)
            if not closed:
                raise ValueError("Unterminated character class.")
        else:
            out.append(("\\" if c in _REGEX_SPECIAL else "") + c)
    if in_group:
        raise ValueError("Unterminated glob group.")
    if literal:
        return None
    out.append("$")
    return "".join(out)


class _GlobComponent:
    def __init__(self, component: str):
        self.component = component
        try:
            regex = glob_to_regex(component)
            self.pattern = None if regex is None else re.compile(regex, re.DOTALL)
        except (ValueError, re.error):
            self.pattern = None   # a malformed glob is matched literally

    def matches(self, name: str) -> bool:
        if self.pattern is None:
            return name == self.component
        return self.pattern.match(name) is not None


def _sorted(names) -> list[str]:
    return sorted(names, key=java_string_key)


# --- the shell ------------------------------------------------------------------------------

class Shell:
    def __init__(self, root, *, interactive: bool, screen_width: int | None = None):
        self.root = root
        self.working_directory = "/"
        self.interactive = interactive
        self.screen_width = screen_width
        self.history: list[str] = []
        self._failed = False

    # -- path resolution --

    def visit(self, glob: str):
        """GlobVisitor: every (absolute path components, node) the glob matches, in order."""
        full = glob if glob.startswith("/") else f"{self.working_directory}/{glob}"
        components = strip_dot_components(split_path(full))
        matches: list = []
        self._visit(components, 0, self.root, [], matches)
        return matches

    def _visit(self, components, index, node, path, matches) -> None:
        if index >= len(components):
            matches.append((path, node))
            return
        component = _GlobComponent(components[index])
        if not node.is_directory:
            return
        if component.pattern is None:
            child = node.child(component.component)
            if child is not None:
                self._visit(components, index + 1, child, path + [component.component], matches)
            return
        for name in _sorted(node.child_names()):
            if component.matches(name):
                self._visit(components, index + 1, node.child(name), path + [name], matches)

    # -- running a command --

    def run_line(self, line: str) -> CommandResult:
        try:
            words = shlex.split(line)
        except ValueError as exc:
            return CommandResult(f"{exc}\n", error=True)
        if self.interactive and line.strip():
            self.history.append(line)
        return self.run(words)

    def run(self, words: list[str]) -> CommandResult:
        while words and not words[-1]:
            words = words[:-1]
        if not words:
            return CommandResult("")
        available = sorted(n for n, spec in COMMANDS.items() if self.interactive or not spec.shell_only)
        name, args = words[0], words[1:]
        if name not in available:
            candidates = [n for n in available if n.startswith(name)]
            if len(candidates) == 1:
                return CommandResult(f"invalid choice: '{name}': did you mean '{candidates[0]}'?\n", error=True)
            choices = ", ".join(f"'{n}'" for n in available)
            return CommandResult(f"invalid choice: '{name}' (choose from {choices})\n", error=True)
        positionals, instead = split_options(args)
        if instead == "help":
            return CommandResult(usage_help(name, with_help_option=True))
        if instead is not None:
            return CommandResult(instead, error=True)
        return getattr(self, f"_cmd_{name}")(positionals)

    def _expect(self, args, least: int, most: int | None):
        if len(args) < least:
            return CommandResult("too few arguments\n", error=True)
        if most is not None and len(args) > most:
            return CommandResult(f"unrecognized arguments: '{' '.join(args[most:])}'\n", error=True)
        return None

    @staticmethod
    def _effective(paths: list[str]) -> list[str]:
        """CommandUtils.getEffectivePaths: empty strings dropped, the working directory if none."""
        return [p for p in paths if p] or ["."]

    def _resolve(self, command: str, targets, missing: str, out: list):
        """Yield (target, path, node) for every match of every target, in order; a target that
        matches nothing adds Kafka's ``<command>: <target>: <missing>`` line to ``out`` where
        Kafka prints it, and sets ``self._failed``."""
        for target in targets:
            matches = self.visit(target)
            if not matches:
                out.append(f"{command}: {target}: {missing}\n")
                self._failed = True
            for path, node in matches:
                yield target, path, node

    def _cmd_ls(self, args) -> CommandResult:
        out: list[str] = []
        files, directories = [], []
        self._failed = False
        for _, path, node in self._resolve("ls", self._effective(args), "no such file or directory.", out):
            name = path[-1] if path else "/"
            if node.is_directory:
                directories.append((name, _sorted(node.child_names())))
            else:
                files.append(name)
        out += [line + "\n" for line in _print_targets(self.screen_width if self.interactive else None,
                                                        files, directories)]
        return CommandResult("".join(out), error=self._failed)

    def _cmd_cat(self, args) -> CommandResult:
        problem = self._expect(args, 1, None)
        if problem:
            return problem
        out: list[str] = []
        self._failed = False
        for target, _, node in self._resolve("cat", args, "No such file or directory.", out):
            if node.is_directory:
                out.append(f"cat: {target}: Is a directory\n")
                self._failed = True
            else:
                out.append(node.text + "\n")
        return CommandResult("".join(out), error=self._failed)

    def _cmd_tree(self, args) -> CommandResult:
        problem = self._expect(args, 1, None)
        if problem:
            return problem
        out: list[str] = []
        self._failed = False
        for _, _, node in self._resolve("tree", args, "No such file or directory.", out):
            _print_node(node, 0, out)
        return CommandResult("".join(out), error=self._failed)

    def _cmd_find(self, args) -> CommandResult:
        out: list[str] = []
        self._failed = False
        for target, _, node in self._resolve("find", self._effective(args), "no such file or directory.", out):
            _find(target, node, out)
        return CommandResult("".join(out), error=self._failed)

    def _cmd_cd(self, args) -> CommandResult:
        problem = self._expect(args, 0, 1)
        if problem:
            return problem
        target = args[0] if args else "/"
        matches = self.visit(target)
        if not matches:
            return CommandResult(f"cd: {target}: no such directory.\n", error=True)
        out = []
        for path, node in matches:   # as in Kafka, the last directory a glob matches wins
            if node.is_directory:
                self.working_directory = "/" + "/".join(path)
            else:
                out.append(f"cd: {target}: not a directory.\n")
        return CommandResult("".join(out), error=bool(out))

    def _cmd_pwd(self, args) -> CommandResult:
        return self._expect(args, 0, 0) or CommandResult(self.working_directory + "\n")

    def _cmd_exit(self, args) -> CommandResult:
        return self._expect(args, 0, 0) or CommandResult("", exit=True)

    def _cmd_help(self, args) -> CommandResult:
        names = sorted(COMMANDS)
        lines = ["Welcome to the Apache Kafka metadata shell.", "",
                 f"usage:  {{{','.join(names)}}} ...", "", "positional arguments:",
                 f"  {{{','.join(names)}}}"]
        lines += [command_line(name, COMMANDS[name].description) for name in names]
        return self._expect(args, 0, 0) or CommandResult("\n".join(lines) + "\n")

    def _cmd_man(self, args) -> CommandResult:
        problem = self._expect(args, 1, 1)
        if problem:
            return problem
        spec = COMMANDS.get(args[0])
        if spec is None:
            return CommandResult(f"man: unknown command {args[0]}. Type help to get a list of commands.\n",
                                 error=True)
        return CommandResult(f"{spec.name}: {spec.description}\n\n{usage_help(spec.name, with_help_option=False)}")

    def _cmd_history(self, args) -> CommandResult:
        problem = self._expect(args, 0, 1)
        if problem:
            return problem
        try:
            count = int(args[0]) if args else len(self.history)
        except ValueError:
            return CommandResult(f"argument numEntriesToShow: could not convert '{args[0]}' to Integer\n",
                                 error=True)
        count = max(0, min(count, len(self.history)))
        first = len(self.history) - count
        return CommandResult("".join(f"{i:5d}  {self.history[i]}\n" for i in range(first, len(self.history))))


def _print_node(node, level: int, out: list) -> None:
    """MetadataNode.print through ShellNodePrinter: ``name:`` lines, two spaces a level."""
    indent = "  " * level
    if not node.is_directory:
        out.append(f"{indent}{node.text}\n")
        return
    for name in _sorted(node.child_names()):
        out.append(f"{indent}{name}:\n")
        _print_node(node.child(name), level + 1, out)


def _find(path: str, node, out: list) -> None:
    out.append(path + "\n")
    if node.is_directory:
        for name in _sorted(node.child_names()):
            _find(path + name if path == "/" else f"{path}/{name}", node.child(name), out)


# --- ls columns (LsCommandHandler.printTargets / calculateColumnSchema) ----------------------

def _print_targets(screen_width, files, directories) -> list[str]:
    out = _print_entries("", screen_width, files)
    need_intro = bool(files) or len(directories) > 1
    first_intro = not files
    for name, children in directories:
        intro = ""
        if need_intro:
            if not first_intro:
                intro = "\n"
            intro += f"{name}:"
            first_intro = False
        out += _print_entries(intro, screen_width, children)
    return out


def _print_entries(intro: str, screen_width, entries) -> list[str]:
    if not entries:
        return []
    out = [intro] if intro else []
    widths, per_column = _column_schema(screen_width, entries)
    columns = len(widths)
    lines = (len(entries) + columns - 1) // columns
    for line in range(lines):
        text = []
        for column in range(columns):
            index = line + column * per_column
            if index < len(entries):
                entry = entries[index]
                text.append(entry)
                if column < columns - 1:
                    text.append(" " * (widths[column] - len(entry)))
        out.append("".join(text))
    return out


def _column_schema(screen_width, entries) -> tuple[list[int], int]:
    if not screen_width or screen_width // 4 <= 1:
        return [0], len(entries)
    schemas = []
    for columns in range(1, screen_width // 4 + 1):
        per_column = (len(entries) + columns - 1) // columns
        widths = [0] * columns
        for i, entry in enumerate(entries):
            c = i // per_column
            widths[c] = max(widths[c], len(entry) + 2)
        schemas.append((widths, per_column))
    for widths, per_column in reversed(schemas[1:]):
        if widths[-1] != 0 and sum(widths) <= screen_width:
            return widths, per_column
    return schemas[0]
