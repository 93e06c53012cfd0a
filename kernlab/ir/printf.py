"""``printf`` formats: parsed and checked against the value types once, at compile time.

A kernel's format string never reaches C ``printf`` as the user wrote it. The front end parses
it here, refusing anything that could read past the values or write memory (a conversion
without a value, ``%n``, ``%p``, ``*`` widths, a conversion that does not fit its value's type);
every backend then renders the parsed pieces, converting each value to the exact C type its
conversion reads, so no format can make ``printf`` read the wrong vararg.

The accepted conversions are C's (Warp passes the format to C ``printf``): ``d i`` for
integers and booleans, ``o u x X`` for integers and booleans (printed as unsigned 64-bit),
``c`` for integers, ``e E f F g G`` for floats, ``%%``; and ``s`` (or ``r``), kernlab's
addition, which prints any value as ``print`` shows it. Length modifiers (``l``, ``ll``, ``h``,
``z``...) are accepted and ignored: the value's type decides the width.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

_CONV = re.compile(r"%(?P<flags>[-+ #0]*)(?P<width>\*|\d+)?(?:\.(?P<prec>\*|\d*))?"
                   r"(?P<length>hh|h|ll|l|L|j|z|t|q)?(?P<conv>.?)", re.S)

INT_CONVERSIONS = "di"
UNSIGNED_CONVERSIONS = "ouxX"
FLOAT_CONVERSIONS = "eEfFgG"
SHOW_CONVERSIONS = "sr"


class PrintfFormatError(ValueError):
    """A format the kernel cannot print safely; the front end reports it at the user's line."""


@dataclass(frozen=True)
class Conversion:
    spec: str    # flags, width and precision, as written ("-8.3")
    conv: str    # the conversion letter
    index: int   # which value it prints

    @property
    def kind(self) -> str:
        """How the value is passed: 'int' (long long), 'uint' (unsigned long long), 'char'
        (int), 'double', or 'show' (as ``print`` shows it)."""
        if self.conv in INT_CONVERSIONS:
            return "int"
        if self.conv in UNSIGNED_CONVERSIONS:
            return "uint"
        if self.conv == "c":
            return "char"
        if self.conv in FLOAT_CONVERSIONS:
            return "double"
        return "show"

    def c_spec(self) -> str:
        """The C conversion for the value passed as ``kind`` says."""
        if self.conv in INT_CONVERSIONS + UNSIGNED_CONVERSIONS:
            return f"%{self.spec}ll{self.conv}"
        return f"%{self.spec}{self.conv}"


def _type_word(t) -> str:
    if not t.is_scalar:
        return "vector" if t.is_vector else "matrix" if getattr(t, "is_matrix", False) \
            else str(t)
    return {"f": "float", "b": "bool", "u": "unsigned integer", "i": "integer"}.get(
        t.scalar.kind, str(t))


def _a(word: str) -> str:
    return ("an " if word[0] in "aeiou" else "a ") + word


def _fits(conv: str, t) -> bool:
    if conv in SHOW_CONVERSIONS:
        return True
    if not t.is_scalar:
        return False
    kind = t.scalar.kind
    if conv in INT_CONVERSIONS + UNSIGNED_CONVERSIONS:
        return kind in "iub"
    if conv == "c":
        return kind in "iu"
    return kind == "f"


def parse(fmt: str, types: list) -> list:
    """The pieces of ``fmt`` (literal strings and Conversions), checked against the types of
    the values; PrintfFormatError says what is wrong."""
    pieces: list = []
    pos = 0
    count = 0
    literal = []
    while True:
        k = fmt.find("%", pos)
        if k < 0:
            literal.append(fmt[pos:])
            break
        literal.append(fmt[pos:k])
        m = _CONV.match(fmt, k)
        text, conv = m.group(0), m.group("conv")
        pos = m.end()
        if conv == "%" and text == "%%":
            literal.append("%")
            continue
        if conv == "":
            raise PrintfFormatError(f"the printf format ends inside a conversion ({text!r})")
        if "*" in (m.group("width") or "") + (m.group("prec") or ""):
            raise PrintfFormatError(f"printf conversion {text!r}: a '*' width or precision is "
                                    "not supported; write the number into the format")
        if conv == "n":
            raise PrintfFormatError(f"printf conversion {text!r} writes to memory and is not "
                                    "allowed")
        if conv == "p":
            raise PrintfFormatError(f"printf conversion {text!r} prints a pointer; kernel "
                                    "values have no address to print")
        if conv not in INT_CONVERSIONS + UNSIGNED_CONVERSIONS + FLOAT_CONVERSIONS + \
                SHOW_CONVERSIONS + "c":
            raise PrintfFormatError(f"{text!r} is not a printf conversion kernlab supports "
                                    "(d i o u x X c e E f F g G s %%)")
        if conv in SHOW_CONVERSIONS and text != "%" + conv:
            raise PrintfFormatError(f"printf conversion {text!r}: %{conv} prints a value as "
                                    "print shows it and takes no flags, width or precision; "
                                    "use a numeric conversion such as %8.3f")
        if count >= len(types):
            raise PrintfFormatError(
                f"the printf format has more conversions than values: {text!r} is conversion "
                f"{count + 1} but printf got {len(types)} value(s)")
        t = types[count]
        if not _fits(conv, t):
            want = {**{c: "an integer or bool" for c in INT_CONVERSIONS + UNSIGNED_CONVERSIONS},
                    "c": "an integer", **{c: "a float" for c in FLOAT_CONVERSIONS}}[conv]
            raise PrintfFormatError(
                f"printf conversion {text!r} (value {count + 1}) needs {want}, got "
                f"{_a(_type_word(t))} ({t}); use %s to print any value")
        if literal:
            pieces.append("".join(literal))
            literal = []
        pieces.append(Conversion(m.group("flags") + (m.group("width") or "") +
                                 ("." + m.group("prec") if m.group("prec") is not None
                                  else ""), conv, count))
        count += 1
    if count != len(types):
        raise PrintfFormatError(f"printf got {len(types)} value(s) but its format has {count} "
                                "conversion(s)")
    if literal and "".join(literal):
        pieces.append("".join(literal))
    return pieces


def c_escape_percent(text: str) -> str:
    """A literal piece as it appears inside a C format."""
    return text.replace("%", "%%")


def python_render(pieces: list, values: list, show) -> str:
    """The text C ``printf`` prints for ``pieces`` (the reference interpreter's printf);
    ``show(value)`` is how ``print`` shows a value."""
    out = []
    for p in pieces:
        if isinstance(p, str):
            out.append(p)
            continue
        v = values[p.index]
        kind = p.kind
        if kind == "show":
            out.append(("%" + p.spec + "s") % show(v))
        elif kind == "double":
            out.append(("%" + p.spec + p.conv) % float(v))
        elif kind == "char":
            out.append(("%" + p.spec + "c") % chr(int(v) & 0xFF))
        elif kind == "uint":
            text = ("%" + p.spec + ("d" if p.conv == "u" else p.conv)) % \
                (int(v) & 0xFFFFFFFFFFFFFFFF)
            out.append(text.replace("0o", "0", 1) if p.conv == "o" else text)
        else:
            out.append(("%" + p.spec + "d") % int(v))
    return "".join(out)
