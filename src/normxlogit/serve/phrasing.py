"""The library's messages in the page's words: the library advises in Python's terms (a
keyword to pass, a ``Protocol`` setting), the page has controls and no protocol settings.
Errors and a job's warnings both go through here, so the page never names a keyword."""

from __future__ import annotations

import re

from ..common.targets import TARGET_HELP, without_index_advice

#: advice in Python's terms (a keyword to pass) and the page's way of following it (the
#: control to set), in the order they are replaced
PAGE_PHRASES = {
    "pass another contrast, or the target to explain against it (target=...)": "choose "
    "another contrast (rather than), or the label to explain against it (Explain)",
    "explain a contrast with a token method and segments=": "explain a contrast with a "
    "token method and Segments",
    "has no contrast_input=; compare two explanations instead": "has no contrast input "
    "(against the input); explain each text in its own run and compare the two instead",
    # the page offers no plausibility metric (it has no evidence), but the sanity ones
    # explain again under the run's own contrast input
    "explain without contrast_input= to evaluate faithfulness; plausibility metrics read "
    "the scores alone": "explain without a contrast input (against the input) to evaluate "
    "faithfulness; the sanity metrics (sanity_spearman, sanity_top_k) explain again against "
    "the same contrast input",
    "explain without contrast_input= to evaluate faithfulness": "explain without a "
    "contrast input (against the input) to evaluate faithfulness",
    "(pass continuation= to fix the explained text)": "(fix the explained text under "
    "'or explain this continuation')",
    "put the label to evaluate first in target=, or explain them for their prediction": "choose "
    "the label to evaluate under Explain, or explain the prediction",
    # the page's box takes a name as typed (an int, 'all' or a list are Python's)
    f"{TARGET_HELP} (or 'prediction')": "type a label name or a single token, or leave the "
    "box empty to explain the prediction",
    # the page gives its one text's contrast input as a list of one: its box names it
    "contrast_input[0]": "the contrast input (against the input)",
    # the page has no mask position control: [MASK] in the text is its only way
    " (in Python, explain's mask_position= can say where to read instead)": "",
}


def page_named(message: str) -> str:
    """``message`` (the library's) in the page's words: advice naming a keyword names the
    control that sets it (``contrast_input=`` is *against the input*), and a label index's
    advice for Python and the command line is dropped (the page's boxes take names)."""
    message = without_index_advice(message)
    for python, page in PAGE_PHRASES.items():
        message = message.replace(python, page)
    return message


#: a protocol setting a library warning names as its fix: ``Protocol(ratios=...)``,
#: ``Protocol(empty_rationale='score')``
_PROTOCOL_SETTING = re.compile(r"Protocol\((\w+)=([^()]*)\)")


def for_the_page(message: str) -> str:
    """A library warning as the page shows it: advice naming a keyword names the page's
    control (:func:`page_named`), and a ``Protocol(...)`` setting it names as a fix is one
    the page does not offer, so it names the command line's instead."""
    message = page_named(message)
    named = dict((name, value.strip("'\"")) for name, value in _PROTOCOL_SETTING.findall(message))
    if not named:
        return message
    if (page := _unread_page_setting(message, named)) is not None:
        return page
    message = _PROTOCOL_SETTING.sub(
        lambda found: found[1] if found[2] == "..." else f"{found[1]}={found[2]}", message
    )
    settings = " ".join(f"--protocol {name}={value}" for name, value in named.items())
    return (
        f"{message} (the page evaluates with the default protocol; to change "
        f"{' or '.join(named)}, run normxlogit evaluate with {settings})"
    )


#: the protocol settings the page offers, by the control that sets them
_PAGE_SETTINGS = {"unit": "units"}
#: the metrics an unread-settings warning lists: "... read (a, b), so ..."
_UNREAD_METRICS = re.compile(r"\(([^()]*)\), so they change no value")


def _unread_page_setting(message: str, named: dict[str, str]) -> str | None:
    """An unread-settings warning about a setting the page offers (*units*), in the
    page's words: the chosen metrics do not read that control, so it changes none of
    their values; no command-line advice, as the page did use the setting (None: the
    warning is of another kind, or names a setting the page does not offer)."""
    from ..evaluation.unread import UNREAD_START

    found = _UNREAD_METRICS.search(message)
    if (
        not message.startswith(UNREAD_START)
        or found is None
        or not set(named) <= set(_PAGE_SETTINGS)
    ):
        return None
    metrics = [m.strip() for m in found[1].split(",")]
    segment = [m for m in metrics if m.startswith("segment_")]
    other = [m for m in metrics if m not in segment]
    reasons = []
    if segment:
        verb = "works" if len(segment) == 1 else "work"
        reasons.append(f"{', '.join(segment)} always {verb} on segments")
    if other:
        reasons.append(f"{', '.join(other)} do{'es' if len(other) == 1 else ''} not read it")
    controls = " or ".join(_PAGE_SETTINGS[name] for name in named)
    return f"{controls} changes no value of the chosen metrics: {'; '.join(reasons)}"
