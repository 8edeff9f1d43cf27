"""The command lines the README and docs/ give, found where a reader finds them: every line of a
```sh, ```bash or ```shell block (a trailing backslash joins lines, a `#` starts a comment), the `$ `
lines of any other block, every `dralab ...`, `make ...` or `python -m ...` in inline code, and
the dralab commands of docs/ci's templates. Each becomes a Command: the page and line, the text as
written and its words, the program it runs (dralab, make, pytest, or another) with the `sudo`,
environment assignments and virtualenv paths in front of it taken off.

A line may be a synopsis rather than a command: `[--out DIR]` optional parts, `a|b` alternatives,
placeholders (PLACEHOLDERS) and `...`. `expansions` turns one into the commands it stands for (every
optional part in, each alternative once; none of the optional parts), placeholders left for the
checker to fill from the option's type.

`check` says whether a command exists as given (click's make_context on dralab's words, nothing
invoked; the Makefile's targets and variables, a target's recipe expanded into the commands it runs;
pytest's paths and options) and how it is to be run: here (it starts no lab), by a test elsewhere
(a lab command), or not at all (a mention in prose, another program)."""

from __future__ import annotations

import functools
import re
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import click
import yaml

REPO = Path(__file__).resolve().parents[2]
PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
TEMPLATES = sorted((REPO / "docs" / "ci").glob("*.yml"))

SHELL_BLOCKS = {"sh", "bash", "shell"}
FENCE = re.compile(r"^(\s*)```(\S*)\s*$")
INLINE = re.compile(r"`([^`\n]+)`")
# Where a shell command ends and another begins, or its output goes.
SEPARATORS = {"&&", "||", ";", "|"}
REDIRECT = re.compile(r"^\d?>>?|^<")
ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
DRALAB_PROGRAM = re.compile(r"^(?:\S*/bin/)?dralab$|^\"?\$\{?DRALAB\}?\"?$")
PYTHON_PROGRAM = re.compile(r"^(?:\S*/)?python3?$")
# The placeholders synopses write for a value (`--out DIR`, `PROFILE ...`, `DIR...`). A word in
# capitals that is not one of them is taken as written: `--only MD` names the MD suite.
PLACEHOLDERS = {"DIR", "DRIVER:NAME", "FILE", "LAB", "N", "NAME", "PATH", "PROFILE", "REF", "REGEX", "S", "SRC:DEST", "V"}


@dataclass(frozen=True)
class Command:
    page: str  # relative to the checkout
    line: int
    text: str  # as written, continuation lines joined
    program: str  # "dralab", "make", "pytest" or the program's own name ("docker", "python -m venv")
    words: tuple[str, ...]  # after the program: `certify --driver gpu`
    inline: bool  # from inline code in prose, not a code block
    via: str = ""  # a Makefile recipe's command: the page and line of the make command that runs it

    @property
    def argv(self) -> str:
        """The command as the mappings key it: the program and its words."""
        return " ".join((self.program, *self.words))

    @property
    def where(self) -> str:
        return f"{self.page}:{self.line}" + (f" (make, from {self.via})" if self.via else "")

    @property
    def synopsis(self) -> bool:
        return any(w.startswith("[") or w.endswith("]") or "|" in w or is_placeholder(w.strip("[]")) for w in self.words)


def _shell_words(text: str) -> list[str]:
    text = re.sub(r"(?<=\S);(?=\s|$)", " ;", text)  # `qualify-local; local=$?`
    lexer = shlex.shlex(text, posix=True, punctuation_chars=False)
    lexer.whitespace_split = True
    lexer.commenters = "#"
    try:
        return list(lexer)
    except ValueError:  # an unbalanced quote: the line is not a command
        return []


def _split(words: list[str]) -> list[list[str]]:
    """The simple commands of a shell line, each cut at its first redirection (a `|` inside a
    synopsis' brackets is an alternative, not a pipe)."""
    commands: list[list[str]] = [[]]
    cut = False
    depth = 0
    for word in words:
        depth += word.count("[") - word.count("]")
        if (word in SEPARATORS and depth <= 0) or word == "&":
            commands.append([])
            cut = False
        elif REDIRECT.match(word):
            cut = True
        elif not cut:
            commands[-1].append(word)
    return [c for c in commands if c]


def _program(words: list[str]) -> tuple[str, list[str]] | None:
    """The program a simple command runs and its words, past sudo, env and NAME=value; None if
    the words are no command (a path, a bare word of prose)."""
    words = list(words)
    while words and (words[0] in ("sudo", "env") or ASSIGNMENT.match(words[0])):
        words.pop(0)
    if not words:
        return None
    first, rest = words[0], words[1:]
    if DRALAB_PROGRAM.match(first):
        return "dralab", rest
    if PYTHON_PROGRAM.match(first) and rest[:1] == ["-m"] and len(rest) > 1:
        module, rest = rest[1], rest[2:]
        if module == "dralab.cli":
            return "dralab", rest
        return ("pytest" if module == "pytest" else f"python -m {module}"), rest
    if first in ("make", "pytest"):
        return first, rest
    name = first.rsplit("/", 1)[-1]
    if name in ("pip", "pip3"):
        return f"pip {rest[0]}" if rest else "pip", rest[1:]
    if name in ("docker", "skopeo", "ip", "nsenter", "helm", "kubectl", "go", "lspci", "ruff", "mypy", "gofmt"):
        return name, rest
    return None


# What inline code in prose counts as a command the page gives: dralab's, make's, a Python module
# run with -m and pip's. Other programs named in passing (`helm template`, `ip link set`, `docker
# exec`) are what dralab does or what cannot be done, not steps for the reader.
INLINE_PROGRAMS = re.compile(r"^(dralab|make|pytest|python -m .*|pip .*)$")


def _commands(page: str, line: int, text: str, inline: bool) -> list[Command]:
    found = []
    for words in _split(_shell_words(text)):
        program = _program(words)
        if program and (not inline or INLINE_PROGRAMS.match(program[0])):
            found.append(Command(page, line, text, program[0], tuple(program[1]), inline))
    return found


def _relative(path: Path) -> str:
    return str(path.relative_to(REPO))


def page_commands(path: Path) -> list[Command]:
    """The commands of one Markdown page, in order."""
    page = _relative(path)
    found: list[Command] = []
    block: str | None = None  # the open fence's language, "" for none
    pending: tuple[int, str] | None = None  # a shell line continued with a backslash
    for number, line in enumerate(path.read_text().splitlines(), 1):
        fence = FENCE.match(line)
        if fence:
            block = fence.group(2) if block is None else None
            pending = None
            continue
        if block is None:
            for span in INLINE.findall(line):
                found += _commands(page, number, span, inline=True)
            continue
        stripped = line.strip()
        if block in SHELL_BLOCKS:
            if found and not pending and found[-1].line < number and stripped[:1] in ("[", "-"):
                # A synopsis' options go on, indented, on the next line: `[--scale 100x8x200]`.
                last = found.pop()
                pending = (last.line, last.text)
            start, text = pending if pending else (number, "")
            text = f"{text} {stripped}".strip()
            if text.endswith("\\"):
                pending = (start, text[:-1])
                continue
            pending = None
            found += _commands(page, start, text.removeprefix("$ "), inline=False)
        elif stripped.startswith("$ "):
            found += _commands(page, number, stripped[2:], inline=False)
    return found


def template_commands(path: Path) -> list[Command]:
    """The dralab commands of a CI template's scripts (a GitHub `run: |` block's lines, a GitLab
    script's `- ` items; `$(...)` opened, a trailing backslash joining lines), and the dralab and
    make commands its comments give in inline code."""
    page = _relative(path)
    found: list[Command] = []
    pending: tuple[int, str] | None = None
    for number, line in enumerate(path.read_text().splitlines(), 1):
        stripped = line.strip()
        if stripped.startswith("#"):
            for span in INLINE.findall(line):
                found += [c for c in _commands(page, number, span, inline=True) if c.program in ("dralab", "make")]
            continue
        start, text = pending if pending else (number, "")
        text = f"{text} {stripped.removeprefix('- ')}".strip()
        if text.endswith("\\"):
            pending = (start, text[:-1])
            continue
        pending = None
        opened = re.sub(r"\$\((.*)\)", r"; \1 ;", text)
        found += [c for c in _commands(page, start, opened, inline=False) if c.program == "dralab"]
    return found


def all_commands() -> list[Command]:
    return [c for p in PAGES for c in page_commands(p)] + [c for t in TEMPLATES for c in template_commands(t)]


def expansions(words: tuple[str, ...]) -> list[list[str]]:
    """The commands a synopsis stands for: every optional part in with the first alternative of
    each choice, then each other alternative once, then no optional part at all. Placeholders
    stay; `...` after a word that repeats is dropped. A plain command is its one expansion."""
    tokens: list[str] = []
    depth = 0
    for word in words:  # `[--out` `DIR]` -> `[` `--out` `DIR` `]`; a test ID's `[param]` stays
        while word.startswith("[") and word != "[":
            tokens.append("[")
            depth += 1
            word = word[1:]
        closing = 0
        while depth and word.endswith("]") and len(word) > 1:
            closing += 1
            depth -= 1
            word = word[:-1]
        tokens += [word] + ["]"] * closing
    # Items are words, ("opt", [alternatives, each a list of items]) or ("alt", [words]).
    stack: list[list[list[object]]] = [[[]]]  # each level: its alternatives, each a list of items
    for token in tokens:
        if token == "[":
            stack.append([[]])
        elif token == "]" and len(stack) > 1:
            alternatives = stack.pop()
            stack[-1][-1].append(("opt", alternatives))
        elif token == "|" and len(stack) > 1:
            stack[-1].append([])
        elif "|" in token and not token.startswith("-"):  # remove|restore
            stack[-1][-1].append(("alt", token.split("|")))
        else:
            stack[-1][-1].append(token)
    while len(stack) > 1:  # an unclosed [: close it
        alternatives = stack.pop()
        stack[-1][-1].append(("opt", alternatives))
    top = stack[0][0]

    def render(items: list[object], choice: dict[int, int], optional: bool) -> list[str]:
        out: list[str] = []
        for item in items:
            if isinstance(item, str):
                out.append(item)
            elif item[0] == "alt":
                options = item[1]
                out.append(options[choice.get(id(item), 0)])
            elif optional:
                alternatives = item[1]
                out += render(alternatives[choice.get(id(item), 0)], choice, optional)
        return out

    def choices(items: list[object]) -> list[tuple[int, int]]:
        found = []
        for item in items:
            if isinstance(item, str):
                continue
            kind, content = item
            found += [(id(item), i) for i in range(1, len(content))]
            if kind == "opt":
                for alternative in content:
                    found += choices(alternative)
        return found

    results = [render(top, {}, True)]
    results += [render(top, {key: index}, True) for key, index in choices(top)]
    results.append(render(top, {}, False))
    unique: list[list[str]] = []
    for result in results:
        cleaned = [w.removesuffix("...") if w.endswith("...") and len(w) > 3 else w for w in result]
        if cleaned not in unique:
            unique.append(cleaned)
    return unique


# The Makefile: its variables (`NAME ?= value`, `NAME = value`), rules and recipes, enough to
# expand a target's recipe into the commands it runs.
MAKEFILE = REPO / "Makefile"
MAKE_VARIABLE = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)\s*(\?=|:=|=)\s*(.*)$")
MAKE_RULE = re.compile(r"^([^\s:=#][^:=]*):(?!=)(.*)$")


@dataclass(frozen=True)
class Rule:
    target: str
    prerequisites: tuple[str, ...]
    recipe: tuple[tuple[int, str], ...]  # (line, text), continuation lines joined, unexpanded


def _logical_lines(text: str) -> list[tuple[int, str]]:
    lines: list[tuple[int, str]] = []
    pending: tuple[int, str] | None = None
    for number, line in enumerate(text.splitlines(), 1):
        start, joined = pending if pending else (number, "")
        joined = f"{joined} {line.lstrip()}" if pending else line
        if joined.endswith("\\"):
            pending = (start, joined[:-1].rstrip())
            continue
        pending = None
        lines.append((start, joined))
    return lines


class Makefile:
    def __init__(self, path: Path = MAKEFILE) -> None:
        self.variables: dict[str, str] = {}
        parsed: list[tuple[list[str], list[str], list[tuple[int, str]]]] = []  # targets, prerequisites, recipe
        for number, line in _logical_lines(path.read_text()):
            if line.startswith("\t") and parsed:
                parsed[-1][2].append((number, line[1:]))
                continue
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            variable = MAKE_VARIABLE.match(line)
            rule = MAKE_RULE.match(line)
            if variable:
                self.variables[variable.group(1)] = variable.group(3).strip()
                parsed.append(([], [], []))  # a recipe line after it belongs to no rule
            elif rule:
                parsed.append((rule.group(1).split(), [w for w in rule.group(2).split() if w != "|"], []))
        # Targets named through variables ($(PYTHON):) under their expanded names.
        self.rules: dict[str, Rule] = {
            self.expand(t): Rule(self.expand(t), tuple(self.expand(p) for p in prerequisites), tuple(recipe))
            for targets, prerequisites, recipe in parsed
            for t in targets
        }

    def expand(self, text: str, overrides: dict[str, str] | None = None, target: str = "") -> str:
        """$(NAME), $(NAME:%=prefix%suffix), $@ and $$ as make expands them."""
        values = {**self.variables, **(overrides or {}), "MAKE": "make"}

        def one(match: re.Match[str]) -> str:
            name, _, substitution = match.group(1).partition(":")
            value = self.expand(values.get(name, ""), overrides)
            if substitution:
                pattern, _, replacement = substitution.partition("=")
                if pattern == "%":
                    value = " ".join(replacement.replace("%", w) for w in value.split())
            return value

        text = text.replace("$$", "\0").replace("$@", target)
        while True:
            expanded = re.sub(r"\$\(([^()]*)\)", one, text)
            if expanded == text:
                return expanded.replace("\0", "$")
            text = expanded

    @property
    def targets(self) -> set[str]:
        return set(self.rules)

    def commands(self, target: str, overrides: dict[str, str] | None = None, seen: set[str] | None = None) -> list[Command]:
        """The commands `make TARGET` runs, its prerequisites' first (as make runs them), each at
        its line of the Makefile."""
        seen = set() if seen is None else seen
        if target in seen or target not in self.rules:
            return []
        seen.add(target)
        rule = self.rules[target]
        found: list[Command] = []
        for prerequisite in rule.prerequisites:
            found += self.commands(prerequisite, overrides, seen)
        for number, text in rule.recipe:
            expanded = self.expand(text, overrides, target).lstrip("@-")
            found += _commands("Makefile", number, expanded, inline=False)
        return found


# dralab's commands, as its click group has them.


def resolve(words: list[str]) -> tuple[list[str], click.Command, list[str]]:
    """The subcommand path the words name (group by group), its command and the words given to it."""
    from dralab.cli import main

    command: click.Command = main
    path: list[str] = []
    rest = list(words)
    while isinstance(command, click.Group) and rest and rest[0] in command.commands:
        path.append(rest[0])
        command = command.commands[rest.pop(0)]
    return path, command, rest


def is_placeholder(word: str) -> bool:
    """A word standing for a value: a synopsis' placeholder, `...`, a shell variable or a glob."""
    return word.removesuffix("...") in PLACEHOLDERS or word == "..." or "$" in word or "*" in word


def _options(command: click.Command) -> dict[str, click.Parameter]:
    return {o: p for p in command.params for o in (*p.opts, *p.secondary_opts) if o.startswith("-")}


def _sample(param: click.Parameter) -> str:
    """A value of the type the option or argument takes, for a placeholder, to parse the words."""
    kind = param.type
    if isinstance(kind, click.Choice):
        return str(kind.choices[0])
    if isinstance(kind, (click.IntRange, click.FloatRange)) and kind.min is not None:
        return str(kind.min + (1 if kind.min_open else 0))
    if isinstance(kind, (click.types.IntParamType, click.types.FloatParamType)):
        return "1"
    if isinstance(kind, click.Path):
        return str(REPO if not kind.file_okay else MAKEFILE)
    return "x"


def fill(command: click.Command, words: list[str]) -> tuple[list[str], list[str]]:
    """The words with each placeholder given a value, and the words of what runs after a `--`
    (soak's certify arguments). `$NAME_ARGS` (the templates' extra options, empty) go."""
    options = _options(command)
    arguments = [p for p in command.params if isinstance(p, click.Argument)]
    out: list[str] = []
    wanted: click.Parameter | None = None  # the option whose value comes next
    for index, word in enumerate(words):
        if re.fullmatch(r"\$\{?[A-Z_]*ARGS\}?", word):
            continue
        if word == "--":
            return out, words[index + 1 :]
        if wanted is not None:
            out.append(_sample(wanted) if is_placeholder(word) else word)
            wanted = None
            continue
        name = word.split("=", 1)[0]
        if word.startswith("-") and name in options:
            param = options[name]
            if isinstance(param, click.Option) and not param.is_flag and not param.count and "=" not in word:
                wanted = param
            out.append(word)
        elif is_placeholder(word) and arguments:
            out.append(_sample(arguments[0] if arguments[0].nargs == -1 else arguments.pop(0)))
        elif word == "...":
            continue
        else:
            if not word.startswith("-") and arguments and arguments[0].nargs != -1:
                arguments.pop(0)
            out.append(word)
    return out, []


def parse(command: click.Command, name: str, args: list[str]) -> str | None:
    """What click says is wrong with the words (None: they parse), as the command would take them
    on the command line: unknown options, missing values and required ones, values of the wrong
    type or outside a choice. Nothing is invoked. A path that must exist is taken as existing (the
    run or an earlier step makes it): it is the shape of the command that is checked here."""
    args = list(args)
    options = _options(command)
    for index, word in enumerate(args[:-1]):
        param = options.get(word)
        if isinstance(param, click.Option) and isinstance(param.type, click.Path) and param.type.exists:
            args[index + 1] = str(REPO if not param.type.file_okay else MAKEFILE)
    try:
        command.make_context(name, args, resilient_parsing=False)
    except click.exceptions.Exit:  # --help
        return None
    except click.ClickException as e:
        return e.format_message()
    return None


# What the values name: shipped driver and hardware profiles, their variants, requirement IDs.
PROFILES = REPO / "drivers_under_test" / "profiles"
HARDWARE = REPO / "fake_hardware" / "profiles"


def _is_path(value: str) -> bool:
    return "/" in value or value.endswith((".yaml", ".yml"))


@functools.cache
def _variants(profile: str) -> set[str]:
    data = yaml.safe_load((PROFILES / f"{profile}.yaml").read_text())
    return set(data.get("variants") or {})


@functools.cache
def _catalogue() -> set[str]:
    return set(yaml.load((REPO / "suites" / "catalogue.yaml").read_text(), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)))


def value_problems(path: list[str], args: list[str]) -> list[str]:
    """What is wrong with the values the words give, beyond their type: a driver or hardware
    profile, variant, requirement ID or matrix cell that dralab does not have."""
    profiles = {p.stem for p in PROFILES.glob("*.yaml")}
    # --profile is a driver profile but for `hw up`, whose --profile is a hardware profile.
    driver_options = ("--driver",) if path[:1] == ["hw"] else ("--driver", "--profile")
    hardware_options = ("--hardware", "--profile") if path[:1] == ["hw"] else ("--hardware",)
    hardware = {p.stem for p in HARDWARE.glob("*.yaml")} | {"none"}
    catalogue = _catalogue()
    families = {i.rsplit("-", 1)[0] for i in catalogue}
    pairs = list(zip(args, args[1:]))
    problems = []
    drivers = [v for o, v in pairs if o in driver_options and not is_placeholder(v)]
    for option, value in pairs:
        if is_placeholder(value):
            continue
        if option in driver_options and not _is_path(value) and value not in profiles:
            problems.append(f"{option} {value}: no shipped driver profile of that name ({', '.join(sorted(profiles))})")
        elif option in hardware_options and not _is_path(value) and value not in hardware:
            problems.append(f"{option} {value}: no hardware profile of that name ({', '.join(sorted(hardware))})")
        elif option == "--only":
            unknown = [i for i in value.split(",") if i not in catalogue and i not in families and i != "..."]
            if unknown:
                problems.append(f"--only {value}: {', '.join(unknown)} is no requirement ID or suite of suites/catalogue.yaml")
        elif option == "--cell":
            driver, _, _version = value.partition("@")
            if driver not in profiles:
                problems.append(f"--cell {value}: no shipped driver profile {driver}")
        elif option == "--variant" and path == ["selfcheck"]:
            driver, _, variant = value.rpartition(":")
            known = {v for d in ([driver] if driver else ["gpu", "net", "fake-gpu-plugin", "gpu-nvml"]) for v in _variants(d)}
            if driver and driver not in profiles or variant not in known | {"reference"}:
                problems.append(f"--variant {value}: no reference driver has that variant")
        elif option == "--variant" and len(drivers) == 1 and not _is_path(drivers[0]) and drivers[0] in profiles:
            if value not in _variants(drivers[0]):
                problems.append(f"--variant {value}: profile {drivers[0]} has no such variant")
    return problems


# How each command is verified.
MENTION = "mention"  # inline code naming a command or option in prose: the names exist
RUN_HERE = "run here"  # starts no lab: run by the unit test, exit 0
LAB = "lab"  # starts a lab, builds, or needs root: a test elsewhere must run it (doc_command_runs.RUNS)
TEST_RUN = "test run"  # a Makefile recipe's pytest, go test, ruff, mypy: the tests themselves
MAKE = "make"  # a make target: its recipe's commands are checked in turn
OTHER = "other"  # another program: doc_command_runs.OTHER_PROGRAMS says why no test runs it

# dralab commands that start no lab, build nothing and need no root: the unit test runs them.
CHEAP = {("driver", "list"), ("driver", "schema"), ("driver", "validate"), ("image", "build")}
# Python modules run with -m whose main(argv) starts no lab, and which of their forms the unit test
# runs (the page's generator only when it checks: rewriting the page is not the test's to do).
CHEAP_MODULES: dict[str, Callable[[list[str]], bool]] = {
    "fake_hardware.nvml": lambda words: True,
    "reports.perf.doc_tables": lambda words: words == ["--check"],
}
# What a placeholder is given when the unit test runs the command (an --out always gets a
# temporary path); `{tmp}` is the test's temporary directory, where `{tmp}/program` exists.
RUN_SAMPLES = {
    "PROFILE": str(PROFILES / "gpu.yaml"),
    "REF": "registry.example/doc-commands:1.0",
    "SRC:DEST": "{tmp}/program:/usr/bin/program",
    "PATH": "/usr/bin/program",
}
PYTEST_OPTIONS = {"-s", "-q", "-x", "-n", "-p", "-k", "-m", "--durations", "--ignore", "--deselect", "-ra"}


@dataclass
class Checked:
    command: Command
    kind: str
    problems: list[str]
    runs: list[list[str]]  # RUN_HERE: the words to run, placeholders filled (`{tmp}` to format)
    derived: list[Command]  # MAKE: what its recipe runs


def _cheap(path: list[str], args: list[str]) -> bool:
    return (
        "--help" in args
        or tuple(path) in CHEAP
        or (path == ["selfcheck"] and "--list" in args)
        or (path == ["matrix"] and "--plan" in args and "--cell" not in args)
    )


def _runnable(command: click.Command, args: list[str]) -> bool:
    """Every input the words name is here: the paths of path options and arguments, a --file's
    or --dir's source, a profile given by path. (An --out is the test's temporary directory.)"""
    options = _options(command)
    inputs = []
    for option, value in zip(args, args[1:]):
        param = options.get(option)
        if option in ("--file", "--dir"):
            inputs.append(value.split(":", 1)[0])
        elif isinstance(param, click.Option) and isinstance(param.type, click.Path) and option != "--out":
            inputs.append(value)
    positional = [w for i, w in enumerate(args) if not w.startswith("-") and (i == 0 or not _takes_value(options, args[i - 1]))]
    inputs += [w for w in positional if _is_path(w)]
    return all("{tmp}" in i or (REPO / Path(i).expanduser()).exists() for i in inputs)


def _takes_value(options: dict[str, click.Parameter], word: str) -> bool:
    param = options.get(word)
    return isinstance(param, click.Option) and not param.is_flag and not param.count


def _run_words(rest: list[str]) -> list[str]:
    """The words as the unit test runs them: an --out under `{tmp}`, placeholders from
    RUN_SAMPLES (others stay: such a command cannot be run here), `...` and `$NAME_ARGS` gone."""
    words = []
    for index, word in enumerate(rest):
        if index and rest[index - 1] == "--out":
            words.append(f"{{tmp}}/out{index}")
        elif word.removesuffix("...") in RUN_SAMPLES:
            words.append(RUN_SAMPLES[word.removesuffix("...")])
        elif word != "..." and not re.fullmatch(r"\$\{?[A-Z_]*ARGS\}?", word):
            words.append(word)
    return words


def _check_dralab(command: Command) -> Checked:
    problems: list[str] = []
    runs: list[list[str]] = []
    kinds = set()
    for words in expansions(command.words):
        path, click_command, rest = resolve(words)
        name = " ".join(["dralab", *path])
        group = isinstance(click_command, click.Group)
        if group and rest and not rest[0].startswith("-"):
            problems.append(f"`{name}` has no subcommand {rest[0]!r} ({', '.join(click_command.commands)})")
            continue
        if not rest and (command.inline or group):
            kinds.add(MENTION)  # the program or a command named in prose
            continue
        args, after = fill(click_command, rest)
        error = parse(click_command, name, args)
        if error and command.inline and "requires an argument" in error and all(w.startswith("-") for w in rest):
            kinds.add(MENTION)  # `dralab matrix --cell`: the option named in prose
            continue
        if error:
            problems.append(f"`{name} {' '.join(args)}`: {error}")
        given = rest[: rest.index("--")] if "--" in rest else rest
        problems += value_problems(path, given)
        if after and path == ["soak"]:  # what soak passes on to each certify
            _, certify, _ = resolve(["certify"])
            certify_args, _ = fill(certify, after)
            error = parse(certify, "dralab certify", certify_args)
            problems += [f"`dralab certify {' '.join(after)}` (soak's certify arguments): {error}"] if error else []
            problems += value_problems(["certify"], after)
        if _cheap(path, args):
            words_run = _run_words(rest)
            if _runnable(click_command, words_run) and not any(is_placeholder(w) for w in words_run):
                runs.append([*path, *words_run])
                kinds.add(RUN_HERE)
                continue
        kinds.add(LAB)
    kind = LAB if LAB in kinds else RUN_HERE if RUN_HERE in kinds else MENTION
    return Checked(command, kind, problems, runs if kind == RUN_HERE else [], [])


@functools.cache
def pytest_options() -> set[str]:
    """The options dralab's pytest plugin and the suites' conftests add."""
    found = set(PYTEST_OPTIONS)
    for path in [*(REPO / "dralab").rglob("*.py"), *(REPO / "suites").rglob("conftest.py"), REPO / "conftest.py"]:
        found |= set(re.findall(r"addoption\(\s*\"(--[\w-]+)\"", path.read_text()))
    return found


def _test_file(node: str) -> tuple[Path, str]:
    file, _, name = node.partition("::")
    return REPO / file, name.split("[", 1)[0]


def node_problem(node: str) -> str | None:
    """Why NODE (a path, `path::function` or `path::function[id]`) names no test, or None."""
    import ast

    path, name = _test_file(node)
    if not path.exists():
        return f"{node}: no such file"
    if name and name not in {d.name for d in ast.parse(path.read_text()).body if isinstance(d, (ast.FunctionDef, ast.ClassDef))}:
        return f"{node}: {path.name} defines no {name}"
    return None


def _check_pytest(command: Command) -> Checked:
    problems = []
    known = pytest_options()
    for words in expansions(command.words):
        previous = ""
        for word in words:
            option, _, value = word.partition("=")
            if word.startswith("-"):
                if option not in known:
                    problems.append(f"pytest option {option} is neither pytest's nor added by dralab's plugin or conftests")
                elif option in ("--ignore", "--deselect") and value:
                    problems += [p for p in [node_problem(value)] if p]
            elif previous in ("-p", "-n", "-k", "-m") or is_placeholder(word) or _takes_pytest_value(previous):
                pass
            else:
                problems += [p for p in [node_problem(word)] if p]
            previous = word
    return Checked(command, TEST_RUN if command.page == "Makefile" else LAB, problems, [], [])


def _takes_pytest_value(word: str) -> bool:
    """`--kubeconfig PATH`: an option written apart from its value (the plugin's take one each)."""
    return word.startswith("--") and "=" not in word


def _check_make(command: Command, makefile: Makefile) -> Checked:
    problems: list[str] = []
    derived: list[Command] = []
    for words in expansions(command.words):
        overrides = dict(w.split("=", 1) for w in words if "=" in w)
        targets = [w for w in words if "=" not in w and not w.startswith("-")]
        problems += [f"make {t}: the Makefile has no such target" for t in targets if t not in makefile.targets]
        problems += [f"make {v}=...: the Makefile has no variable {v}" for v in overrides if v not in makefile.variables]
        for target in targets:
            derived += [c for c in makefile.commands(target, overrides) if c not in derived]
    return Checked(command, MAKE, problems, [], derived)


def check(command: Command, makefile: Makefile | None = None) -> Checked:
    """Whether the command exists as the page gives it, and how it is to be run."""
    if command.program == "dralab":
        return _check_dralab(command)
    if command.program == "make":
        return _check_make(command, makefile or Makefile())
    if command.program == "pytest":
        return _check_pytest(command)
    if command.program in ("go", "ruff", "mypy", "gofmt") and command.page == "Makefile":
        return Checked(command, TEST_RUN, [], [], [])
    if command.program.startswith("python -m "):
        import importlib.util

        module = command.program.removeprefix("python -m ")
        problems = [] if module in ("venv", "pip") or importlib.util.find_spec(module) else [f"no module {module}"]
        if command.inline and not command.words:
            return Checked(command, MENTION, problems, [], [])
        runs = [_run_words(w) for w in expansions(command.words)]
        if module in CHEAP_MODULES and all(CHEAP_MODULES[module](w) for w in runs):
            return Checked(command, RUN_HERE, problems, runs, [])
        return Checked(command, OTHER, problems, [], [])
    return Checked(command, OTHER, [], [], [])
