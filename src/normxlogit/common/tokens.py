"""The readable text of tokens: what every view shows instead of the raw pieces.

Pure Python (no torch), so explanations loaded from files render without a model.
"""

from __future__ import annotations

import re
from collections.abc import Sequence


def _byte_level_alphabet() -> dict[str, int]:
    """Byte-level BPE's printable stand-in for each byte (GPT-2's ``bytes_to_unicode``),
    reversed: ``{"Ġ": 0x20, "Ċ": 0x0A, ...}``."""
    printable = [*range(ord("!"), ord("~") + 1), *range(0xA1, 0xAD), *range(0xAE, 0x100)]
    shown, extra = {}, 0
    for byte in range(256):
        if byte in printable:
            shown[chr(byte)] = byte
        else:
            shown[chr(256 + extra)] = byte
            extra += 1
    return shown


_BYTE_LEVEL = _byte_level_alphabet()
_BYTE_LEVEL_CHAR = {byte: char for char, byte in _BYTE_LEVEL.items()}
_BYTE_TOKEN = re.compile(r"<0x([0-9A-Fa-f]{2})>")


def is_byte_level(tokenizer) -> bool:
    """Whether ``tokenizer`` is byte-level BPE (GPT-2, LLaMA-3, Qwen, SmolLM2): its vocabulary
    spells bytes, not characters, so ``é`` there is the byte 0xE9 alone."""
    backend = getattr(tokenizer, "backend_tokenizer", None)
    decoder = getattr(backend, "decoder", None)
    return type(decoder).__name__ == "ByteLevel" or hasattr(tokenizer, "byte_decoder")


def splits_a_character(tokenizer, token: str) -> bool:
    """Whether the byte-level vocabulary entry spelled ``token`` holds bytes that are no
    text on their own (part of a character): the entry ``é`` is the byte 0xE9, while the
    text é is the two bytes C3 A9, so a typed ``é`` does not mean that entry."""
    if not is_byte_level(tokenizer) or not all(c in _BYTE_LEVEL for c in token):
        return False
    try:
        bytes(_BYTE_LEVEL[c] for c in token).decode("utf-8")
    except UnicodeDecodeError:
        return True
    return False


def byte_token_spelling(tokenizer, name: str) -> str | None:
    """The byte-level vocabulary spelling of a byte named as the views show it
    (``<0xE9>`` for the entry ``é``), else None: how such a byte is still named."""
    match = _BYTE_TOKEN.fullmatch(name)
    if match is None or not is_byte_level(tokenizer):
        return None
    return _BYTE_LEVEL_CHAR[int(match.group(1), 16)]


#: how an output id the tokenizer has no entry for is named (a padded vocabulary's rows)
_ID_NAME = "<id {}>"
_ID_NAMED = re.compile(r"<id (\d+)>")


def token_names(tokenizer, ids: Sequence[int]) -> list[str]:
    """``tokenizer.convert_ids_to_tokens(ids)``, with ``<id 50260>`` for an id it has no
    entry for: many checkpoints give the output layer more rows than the tokenizer has
    tokens (a padded vocabulary), and a model can predict or generate those ids."""
    ids = [int(i) for i in ids]
    names = tokenizer.convert_ids_to_tokens(ids) if ids else []
    return [
        name if isinstance(name, str) else _ID_NAME.format(i)
        for i, name in zip(ids, names, strict=True)
    ]


#: how the views draw invisible characters (``render.colors.display_text``), so a name
#: copied from a view (the page's ``↵``, a control character's ``<U+0019>``) reads back
SHOWN_CHARACTERS = {"\n": "\u21b5", "\t": "\u21e5", "\r": "\u240d"}
SPACE_SHOWN = "\u2423"
_SHOWN_UNIT = re.compile(r"<U\+([0-9A-Fa-f]{4,6})>|[\u21b5\u21e5\u240d]")


def typed_view_text(name: str) -> str | None:
    """The text a view's drawing of a token stands for (``↵`` a newline, ``<U+0019>``
    that control character, ``␣␣`` two spaces), or None where ``name`` holds no such
    drawing (it is then read as typed)."""
    if name and set(name) == {SPACE_SHOWN}:
        return " " * len(name)
    if not _SHOWN_UNIT.search(name):
        return None
    back = {shown: character for character, shown in SHOWN_CHARACTERS.items()}

    def character(found: re.Match) -> str:
        code = found.group(1)
        return back[found.group(0)] if code is None else _code_point(int(code, 16))

    try:
        return _SHOWN_UNIT.sub(character, name)
    except ValueError:  # a code point no text holds: the name is read as typed
        return None


def _code_point(code: int) -> str:
    """The character ``<U+XXXX>`` names; ValueError where no text can hold it: past
    U+10FFFF, or a surrogate (U+D800..U+DFFF), which UTF-8 and so no tokenizer encodes
    (the views never draw one)."""
    if 0xD800 <= code <= 0xDFFF:
        raise ValueError(f"U+{code:04X} is a surrogate, no character")
    return chr(code)


def named_id(name: str) -> int | None:
    """The id a :func:`token_names` placeholder (``<id 50260>``) stands for, else None."""
    match = _ID_NAMED.fullmatch(name)
    return int(match.group(1)) if match else None


class TokenTexts:
    """The readable text of each token, for display (``Explanation.token_texts``).

    ``ĠParis`` is `` Paris``, ``Ċ`` a newline, ``▁the`` `` the``; WordPiece keeps its
    ``##`` pieces. Byte-level BPE (GPT-2, LLaMA-3, Qwen, SmolLM2) and SentencePiece byte
    fallback (``<0xE5>``) split a character of several bytes (CJK, emoji) over several
    tokens: the character is shown on the token where its first byte is, and a token that
    only continues a character started before it is shown as ``""``. Joined, the texts
    give the decoded text. Bytes that are not UTF-8 at all (a text cut inside a character)
    are shown as ``<0xE5>``.
    """

    def __init__(self, tokenizer):
        self.tokenizer = tokenizer
        self.byte_level = is_byte_level(tokenizer)
        try:
            self.added = set(tokenizer.get_added_vocab())
        except (AttributeError, NotImplementedError):
            self.added = set(getattr(tokenizer, "all_special_tokens", ()))
        self._texts: dict[str, str] = {}

    @classmethod
    def guess(cls, tokens: Sequence[str], special: Sequence[bool] = ()) -> list[str]:
        """Texts of ``tokens`` without their tokenizer (explanations saved before
        ``token_texts`` existed): byte-level if a token holds ``Ġ`` or ``Ċ``."""
        guesser = cls(None)
        guesser.added = {t for t, s in zip(tokens, special, strict=False) if s}
        guesser.byte_level = any(
            ("\u0120" in t or "\u010a" in t) for t in tokens if t not in guesser.added
        )
        return guesser(tokens)

    def __call__(self, tokens: Sequence[str]) -> list[str]:
        """Display text of each token of a sequence (characters split over tokens joined)."""
        texts: list[str] = []
        run: list[bytes] = []  # consecutive tokens that are raw bytes
        for token in tokens:
            raw = self._bytes(token)
            if raw is None:
                texts.extend(_split_bytes(run))
                run = []
                texts.append(self._text(token))
            else:
                run.append(raw)
        texts.extend(_split_bytes(run))
        return texts

    def one(self, token: str) -> str:
        """Display text of a token on its own (a predicted token, a target)."""
        return self([token])[0]

    def _bytes(self, token: str) -> bytes | None:
        if token in self.added:
            return None
        if self.byte_level:
            if all(c in _BYTE_LEVEL for c in token):
                return bytes(_BYTE_LEVEL[c] for c in token)
            return None
        match = _BYTE_TOKEN.fullmatch(token)
        return bytes([int(match.group(1), 16)]) if match else None

    def _text(self, token: str) -> str:
        if token in self._texts:
            return self._texts[token]
        if token in self.added:
            text = token
        elif self.tokenizer is None:
            text = token.replace("\u2581", " ")
        else:
            try:
                text = self.tokenizer.convert_tokens_to_string([token])
            except Exception:  # a tokenizer that cannot decode one token: show it as is
                text = token
            if not isinstance(text, str):
                text = token
            if token.startswith("\u2581") and not text.startswith(" "):
                text = " " + text  # SentencePiece decoders strip the first token's space
        self._texts[token] = text
        return text


def _split_bytes(pieces: list[bytes]) -> list[str]:
    """Text of each byte piece: every character on the piece holding its first byte."""
    if not pieces:
        return []
    try:
        return [piece.decode("utf-8") for piece in pieces]
    except UnicodeDecodeError:
        pass
    data = b"".join(pieces)
    owner = [index for index, piece in enumerate(pieces) for _ in piece]
    texts = [""] * len(pieces)
    offset = 0
    while offset < len(data):
        lead = data[offset]
        size = 1 if lead < 0x80 else 2 if lead < 0xE0 else 3 if lead < 0xF0 else 4
        unit = data[offset : offset + size]
        try:
            shown = unit.decode("utf-8") if lead < 0x80 or lead >= 0xC0 else None
        except UnicodeDecodeError:
            shown = None
        if shown is None:
            shown, size = f"<0x{lead:02X}>", 1
        texts[owner[offset]] += shown
        offset += size
    return texts
