"""What every command of the command line shares: user errors and warnings as one line
each (never a stack trace), on one error console.

Light on purpose: the command modules import it before checking their arguments, so it
imports neither torch nor the model.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from functools import wraps
from typing import Any, ClassVar

import typer
from typer.core import TyperCommand

from ..common.console import GuardedStdout, labelled, plain_console
from ..common.errors import InvalidInputError, NormXLogitError
from ..common.options import toml_spelling
from ..common.targets import CONTRAST_HELP, TARGET_HELP, without_index_advice

#: the console of errors, warnings and progress (stderr; text is never read as markup)
err = plain_console(stderr=True)


class OnceEach(TyperCommand):
    """A command whose one-value options take one value each. Given twice, typer keeps
    the last without a word (``explain --method a --method b`` explains with b alone, ``-o
    x1.json -o x2.json`` never writes x1.json), so differing values are refused, in one
    line, before any work. Options that take a list (``multiple``) and flags are free to
    repeat."""

    #: a watched option's long flag and what to do instead (else: give it once)
    once: ClassVar[dict[str, str]] = {}

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        given = list(args)
        rest = super().parse_args(ctx, args)  # --help and typer's own refusals first
        if (message := self._repeated(given)) is not None:
            err.print(labelled("error:", "red", message), soft_wrap=True)
            raise typer.Exit(2)
        return rest

    def _repeated(self, args: list[str]) -> str | None:
        for param in self.params:
            if not _one_value(param):
                continue
            values = _values_of(args, list(param.opts))
            if len(set(values)) > 1:  # the same value twice loses nothing
                flag = next((f for f in param.opts if f.startswith("--")), param.opts[0])
                shown = ", then ".join(repr(value) for value in values)
                instead = self.once.get(flag) or f"give {flag} once"
                return (
                    f"{flag} is given {len(values)} times ({shown}), and {self.name} takes one "
                    f"(it would keep the last alone): {instead}"
                )
        return None


def _one_value(param: Any) -> bool:
    """Whether ``param`` is an option taking one value (not a list, a flag or a count)."""
    return (  # typer's options are its own click's, so read them by their attributes
        any(flag.startswith("-") for flag in param.opts)
        and not getattr(param, "multiple", False)
        and not getattr(param, "is_flag", False)
        and not getattr(param, "count", False)
        and getattr(param, "nargs", 1) == 1
    )


def once_each(**hints: str) -> type[OnceEach]:
    """A command class refusing a repeat of any one-value option, with what to do instead
    for those ``hints`` names (its long flag, ``_`` for ``-``)."""
    once = {"--" + name.replace("_", "-"): hint for name, hint in hints.items()}
    return type("OnceEachCommand", (OnceEach,), {"once": once})


def _values_of(args: list[str], flags: list[str]) -> list[str]:
    """The values ``args`` give an option spelt ``flags`` (``--x V``, ``--x=V``, ``-x V``,
    ``-xV``), in order, up to a ``--``."""
    values, position = [], 0
    while position < len(args) and args[position] != "--":
        token = args[position]
        if token in flags and position + 1 < len(args):
            values.append(args[position + 1])
            position += 2
            continue
        for flag in flags:
            if flag.startswith("--") and token.startswith(flag + "="):
                values.append(token[len(flag) + 1 :])
            elif not flag.startswith("--") and token[:2] == flag and len(token) > 2:
                values.append(token[2:])  # -mNAME
        position += 1
    return values


def friendly(command: Callable) -> Callable:
    """Print user errors and warnings as one line each, never a stack trace."""

    @wraps(command)
    def run(*args, **kwargs):
        from ..common.options import check_magnitude

        def show_warning(message, category, *rest, **more):
            err.print(labelled("warning:", "yellow", message), soft_wrap=True)

        previous = warnings.showwarning
        warnings.showwarning = show_warning
        try:
            for name, value in kwargs.items():  # every integer flag, bounded
                for item in value if isinstance(value, list) else [value]:
                    check_magnitude(item, f"--{name.replace('_', '-')}")
            result = command(*args, **kwargs)
            GuardedStdout().flush()  # a full disk shows here, not as a failure at exit
            return result
        except NormXLogitError as error:
            err.print(labelled("error:", "red", error), soft_wrap=True)
            raise typer.Exit(2) from None
        except KeyboardInterrupt:
            err.print(labelled("interrupted", "red", "(files are written whole or not at all)"))
            raise typer.Exit(130) from None
        finally:
            warnings.showwarning = previous

    return run


def refuse_model_file(output: object, model: str, flag: str) -> None:
    """Refuse an output ``flag`` that names an existing file inside the local model folder
    ``model`` (its config.json, weights, tokenizer files): writing it would break the
    model. A new file inside the folder is left alone; so is a model that is no folder."""
    import os
    from pathlib import Path

    from ..common.errors import OutputPathError

    if output is None or not model:
        return
    folder, target = Path(model), Path(os.fspath(output))
    try:
        if not folder.is_dir() or not target.exists() or target.is_dir():
            return
        inside = target.resolve().is_relative_to(folder.resolve())
    except (OSError, RuntimeError):  # a link loop: RuntimeError before Python 3.13
        return
    if inside:
        raise OutputPathError(f"{flag} {output} is a file of the model {model}; write elsewhere")


#: ReAGent's ``sampler='uniform'`` as ``explain`` (one method) and the commands that take
#: several methods pass it
SAMPLER_FIX = {
    "explain": "add --option sampler=uniform",
    "several": "add --option reagent.sampler=uniform",
}


def refuse_missing_tagger(methods: Iterable[Any], tokenizer: Any | None, command: str) -> None:
    """A ReAGent whose pos sampler cannot run here, refused in the command's flags: before
    the model loads (``tokenizer`` None: where no groups are cached at all), and again once
    its tokenizer is known, before any method runs."""
    from ..methods.reagent import tagger_refusal

    if (reason := tagger_refusal(methods, tokenizer, SAMPLER_FIX[command])) is not None:
        raise InvalidInputError(reason)


#: a ReAGent option's fix as ``explain`` (one method) and the commands that take several
#: methods pass it, ``{name}`` and ``{value}`` filled in
OPTION_FIX = {
    "explain": "add --option {name}={value}",
    "several": "add --option reagent.{name}={value}",
}


def refuse_reagent_model(
    methods: Iterable[Any], model: Any, command: str, pairs: Iterable[str] = ()
) -> None:
    """A ReAGent whose probes cannot watch the loaded model's outputs (a regressor, a
    classifier of no more labels than its stopping top k), refused in the command's flags
    before any method runs; ``pairs`` are the ``--option`` values as given, so a value
    the user set is named to change (adding the other spelling would not win over it)."""
    from ..methods.reagent import model_refusal

    fix = option_fix(command, pairs, "stopping_condition_top_k")
    if (reason := model_refusal(methods, model, fix)) is not None:
        raise InvalidInputError(reason)


def option_fix(command: str, pairs: Iterable[str], name: str) -> str:
    """The fix of ReAGent option ``name`` in the command's flags: change the ``--option``
    that takes effect where one was given (``reagent.NAME`` wins over ``NAME``), else add
    it. ``{value}`` is left for the refusal to fill in."""
    given = _given_option(pairs, name)
    if given is None:
        return OPTION_FIX[command]
    key, value = (text.replace("{", "{{").replace("}", "}}") for text in given)
    return f"change --option {key}={value} to {{value}}"


def _given_option(pairs: Iterable[str], name: str) -> tuple[str, str] | None:
    """The ``--option`` key and value for ReAGent's ``name`` that takes effect, as the
    user spelt them (None: not given)."""
    bare = None
    for pair in pairs:
        key, _, value = pair.partition("=")
        owner, dot, option = key.strip().rpartition(".")
        if option.strip() != name:
            continue
        if not dot:
            bare = (key.strip(), value.strip())
        elif owner.strip().lower().replace("-", "_") == "reagent":
            return key.strip(), value.strip()
    return bare


#: the library's keyword names and the flags of ``explain`` that pass them
KEYWORD_FLAGS = {
    "contrast_input": "--contrast-input",
    "contrast": "--contrast",
    "segment_reduce": "--segment-reduce",
    "segments": "--segments",
    "aggregate": "--aggregate",
    "continuation": "--continuation",
    "max_new_tokens": "--max-new-tokens",
    "max_tokens_per_batch": "--max-tokens-per-batch",
    "batch_size": "--batch-size",
    "layer": "--layer",
}
#: the keywords of ``evaluate`` (its --protocol settings are named by :data:`_PROTOCOL`)
EVALUATE_FLAGS = {
    name: KEYWORD_FLAGS[name]
    for name in ("segment_reduce", "segments", "max_tokens_per_batch", "batch_size")
}
#: what the library's messages to ``explain`` advise in Python terms (a list, a second
#: explanation, a keyword named bare), and the command line's way of doing it
PHRASES = {
    "target='all'": "--all-labels",
    "Pass the tokens you want as a list": "Pass the tokens you want: repeat --label (or "
    "--label-id)",
    TARGET_HELP: "pass --label NAME (a label name or token string), --label-id N (a label "
    "index; a vocabulary id for language models) or --all-labels; repeat --label/--label-id "
    "for several",
    CONTRAST_HELP: "pass --contrast NAME (a label name or token string) or --contrast-id N (a "
    "label index; a vocabulary id for language models); repeat them for one per target",
    "an empty contrast ''": "an empty --contrast ''",
    "(or a list of the text's segments)": "(or --segments FILE, one segment of the text per line)",
    "and max_new_tokens come to": "and --max-new-tokens come to",
    "compare two explanations instead": "explain each text in its own run and compare the "
    "two instead",
    "the target to explain against it (target=...)": "the target to explain against it "
    "(--label or --label-id)",
}
#: a protocol setting named as ``Protocol(ratios=...)``: ``--protocol ratios=...``
_PROTOCOL = re.compile(r"Protocol\((\w+)=([^()]*)\)")
QUOTES = "'\""


def _keyword_pattern(flags: dict[str, str]) -> re.Pattern:
    names = "|".join(sorted(map(re.escape, flags), key=len, reverse=True))
    return re.compile(r"(?<![\w.\[-])(" + names + r")=(\S?)")


#: each command's keywords and the pattern that finds them in a message
_COMMANDS = {
    command: (flags, _keyword_pattern(flags))
    for command, flags in (("explain", KEYWORD_FLAGS), ("evaluate", EVALUATE_FLAGS))
}


def config_keys_named(message: str) -> str:
    """``message`` (the library's) in the words of a bench config: a protocol setting named
    as ``Protocol(empty_rationale='score')`` is the ``[protocol]`` key that sets it,
    ``[protocol] empty_rationale = "score"`` (``...`` kept: the value is the user's); a
    label index's advice for Python and the command line is dropped, as a config's targets
    and contrasts are names."""

    def key(found: re.Match) -> str:
        return f"[protocol] {found[1]} = {toml_spelling(found[2])}"

    return _PROTOCOL.sub(key, without_index_advice(message))


def flags_named(message: str, command: str = "explain") -> str:
    """``message`` (the library's) in the words of the command line's ``command``, the one
    place that translates them: the keywords it names as the flags that pass them
    (``aggregate=`` is ``--aggregate``, ``segment_reduce='max'`` ``--segment-reduce 'max'``,
    ``generate=True`` ``--generate``, ``contrast_input[0]`` (one text's)
    ``--contrast-input``); ``Protocol(ratios=...)`` ``--protocol ratios=...``; and advice
    only Python can follow (:data:`PHRASES`) as the command line's."""
    if command == "bench":  # a config's keys, not flags
        return config_keys_named(message)
    flags, keywords = _COMMANDS[command]

    def flag(match: re.Match) -> str:
        name, after = match[1], match[2]
        if not after or after in ",.;:)":
            return flags[name] + after
        return f"{flags[name]} {after}"

    message = _PROTOCOL.sub(
        lambda found: f"--protocol {found[1]}={found[2].strip(QUOTES)}", message
    )
    if command == "explain":
        for python, command_line in PHRASES.items():
            message = message.replace(python, command_line)
        message = message.replace("contrast_input[0]", "--contrast-input")
        message = message.replace("segments[0]", "--segments")
        message = re.sub(r"(?<![\w.\[-])generate=True", "--generate", message)
    return keywords.sub(flag, message)


@contextmanager
def warnings_named(command: str) -> Iterator[None]:
    """Within it, the library's warnings are shown in the command line's words (see
    :func:`flags_named`; ``"bench"``: a config's keys), as :func:`friendly` shows them."""
    shown = warnings.showwarning

    def show(message, category, *rest, **more):
        shown(flags_named(str(message), command), category, *rest, **more)

    warnings.showwarning = show
    try:
        yield
    finally:
        warnings.showwarning = shown
