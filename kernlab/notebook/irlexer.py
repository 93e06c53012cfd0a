"""A Pygments lexer for kernlab's IR listings (``kl.source(k, "ir")``).

Listings used to be highlighted as Python, which marks every ``$local``, ``%value`` and
``adj_x?[i]`` with a red error box; a beginner reads that as a broken listing. This lexer
knows the IR's few shapes (``%t3:float32 = mul(%t1, %t2)   # file:line``), never emits an
error token, and is registered under the name ``kernlab-ir`` (the ``pygments.lexers`` entry
point in pyproject.toml), so nbconvert and any Pygments user can pick it up.
"""
from __future__ import annotations

from pygments.lexer import RegexLexer, bygroups, words
from pygments.token import (Comment, Keyword, Name, Number, Operator, Punctuation, String,
                            Text, Whitespace)

__all__ = ["KernlabIRLexer"]

_KEYWORDS = ("kernel", "adjoint", "tangent", "func", "locals", "for", "in", "range", "if", "elif",
             "else", "while", "break", "continue", "return", "push", "pop", "tid")


class KernlabIRLexer(RegexLexer):
    """kernlab's typed IR: one instruction per line, each ending in its source location."""

    name = "kernlab IR"
    aliases = ["kernlab-ir", "kl-ir"]
    filenames = ["*.klir"]
    mimetypes = ["text/x-kernlab-ir"]

    tokens = {
        "root": [
            (r"[ \t]+", Whitespace),
            (r"\n", Whitespace),
            (r"#.*?$", Comment.Single),                      # '# file:line', section marks
            (r"(%)(\w+)(\??)", bygroups(Name.Variable, Name.Variable, Operator)),
            (r"(\$)(\w+)", bygroups(Name.Variable.Global, Name.Variable.Global)),
            (r"(:)(\s*)(array|vec|mat|quat|transform|struct)\b",
             bygroups(Punctuation, Whitespace, Keyword.Type)),
            (r"(:)(\s*)([A-Za-z_]\w*)", bygroups(Punctuation, Whitespace, Keyword.Type)),
            (r"(cast)(<)(\w+)(>)", bygroups(Name.Builtin, Operator, Keyword.Type, Operator)),
            (words(_KEYWORDS, suffix=r"\b"), Keyword),
            (r"(ndim|dtype)(=)", bygroups(Name.Attribute, Operator)),
            (r"[A-Za-z_][\w.]*(?=\s*\()", Name.Function),
            (r"(true|false|True|False|None)\b", Keyword.Constant),
            (r"[-+]?(\d+\.\d*|\.\d+|\d+)([eE][-+]?\d+)?", Number),
            (r"[-+]?(inf|nan)\b", Number),
            (r'"[^"\n]*"', String),
            (r"[A-Za-z_]\w*", Name),
            (r"[=<>!+\-*/%&|^~?]+", Operator),
            (r"[()\[\]{},.:;]", Punctuation),
            (r".", Text),                                    # anything else: plain, never an error
        ],
    }
