"""The ASCII math of signsim's labels (``loss f(x_k)``, ``||grad f(x_k)||_2``, ``success probability rho_i``), as
the tables print it, typeset for a figure in matplotlib's mathtext (``loss $f(x_k)$``, ``$\\|\\nabla f(x_k)\\|_2$``,
``success probability $\\rho_i$``). One rule set, applied to every axis label, colour-bar label and legend entry
of a figure when it is built (``signsim.render.figures.styled``), so that a label is written once, in the words
the tables use, and a figure shows it as a paper would.

What is math: a norm ``||...||_p``; a function of a point ``f(x_k)``, ``f_test(x_k)``; an expectation
``E<a, b>``; a subscripted or starred symbol (``rho_i``, ``B_S``, ``x*``, ``gamma_0``, ``min_i``); a Greek letter's
name standing as a word (``rho-norm``); a one-letter symbol ending the label or standing before a parenthesis,
an ``=`` or a ``/`` (``iteration k``, ``workers M (...)``, ``b / M``). Text that holds a ``$`` already is left as it
is; everything else is kept as written.
"""

from __future__ import annotations

import re

#: Greek letters by the names the labels use
GREEK = ("alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta", "kappa", "lambda", "mu", "nu", "xi",
         "pi", "rho", "sigma", "tau", "phi", "chi", "psi", "omega")
#: operators written as words
OPERATORS = {"min": r"\min", "max": r"\max", "grad": r"\nabla", "sign": r"\mathrm{sign}\,"}

_GREEK = "|".join(GREEK)
_WORD = rf"(?:{_GREEK}|[A-Za-z])"
#: a symbol: a letter, a Greek name or min/max, with a subscript (rho_i, B_S, w_S', f_test), a superscript
#: (B_S^T) or a star (x*)
_SYMBOL = rf"(?:{_GREEK}|min|max|[A-Za-z])(?:_[A-Za-z0-9]+'?)?(?:\^[A-Za-z0-9]+|\*)?"
_NORM = re.compile(r"\|\|([^|]+)\|\|_([A-Za-z0-9]+)")
_EXPECT = re.compile(r"\bE<([^<>]+)>")
_CALL = re.compile(rf"\b({_SYMBOL})\(([^()]*)\)")
_SUBSCRIPTED = re.compile(rf"(?<![\w$\\]){_SYMBOL}(?![\w(])")
_LETTER = re.compile(r"(?<![\w$\\:.\-/])(?<!\d )([A-Za-z])(?=$| \(| =| /|,)")


def _inner(expr: str) -> str:
    """An expression inside math: its symbols and operators in mathtext."""
    out = []
    for token in re.split(r"(\s+|[-+,/()<>])", expr):
        if not token or token.isspace():
            out.append(" " if token else "")
            continue
        out.append(_symbol(token))
    return "".join(out).strip()


def _symbol(token: str) -> str:
    """One symbol (``rho_i``, ``x*``, ``g_hat``, ``grad``) in mathtext; anything else unchanged."""
    if token in OPERATORS:
        return OPERATORS[token]
    m = re.fullmatch(r"([A-Za-z]+)_hat", token)
    if m:
        return rf"\hat{{{_symbol(m[1])}}}"
    m = re.fullmatch(r"([A-Za-z]+)(?:_([A-Za-z0-9]+)('?))?(?:\^([A-Za-z0-9]+)|(\*))?", token)
    if not m:
        return token
    base, sub, prime, sup, star = m.groups()
    if base in GREEK:
        head = "\\" + base
    elif base in OPERATORS:
        head = OPERATORS[base]
    elif len(base) == 1:
        head = base
    else:
        head = rf"\mathrm{{{base}}}"
    if sub:
        head += "_{" + (sub if len(sub) == 1 or sub.isdigit() else rf"\mathrm{{{sub}}}") + "}"
    if prime:
        head += "'"
    if sup or star:
        head += "^{" + (sup or "*") + "}"
    return head


def typeset(text: str) -> str:
    """``text`` with its math in mathtext (the module's docstring says what is math); unchanged when it holds a
    ``$`` already or no math."""
    if not text or "$" in text:
        return text
    text = _NORM.sub(lambda m: f"${{\\|{_inner(m[1])}\\|_{{{m[2]}}}}}$", text)
    text = _EXPECT.sub(lambda m: rf"$E\langle {_inner(m[1])}\rangle$", text)
    text = _outside_math(text, lambda part: _CALL.sub(lambda m: f"${_symbol(m[1])}({_inner(m[2])})$", part))
    text = _outside_math(text, lambda part: _SUBSCRIPTED.sub(_subscripted, part))
    text = _outside_math(text, lambda part: re.sub(rf"\b({_GREEK})\b", lambda m: f"$\\{m[1]}$", part))
    text = _outside_math(text, lambda part: _LETTER.sub(lambda m: f"${m[1]}$", part))
    return text.replace("$$", "")  # (two pieces of math side by side: one)


def _subscripted(m: re.Match) -> str:
    token = m[0]
    if not re.search(r"[_^*]", token) and token not in GREEK:
        return token  # a plain word
    return f"${_symbol(token)}$"


def _outside_math(text: str, change) -> str:
    """``change`` applied to the parts of ``text`` outside ``$...$``."""
    parts = text.split("$")
    return "$".join(change(p) if i % 2 == 0 else p for i, p in enumerate(parts))


def renderable(text: str) -> str:
    """``typeset(text)`` when matplotlib can render it, else ``text`` as written (a label holding ``%``, ``#`` or a
    path whose math the rules cannot set)."""
    shown = typeset(text)
    if shown == text:
        return text
    from matplotlib.mathtext import MathTextParser

    try:
        MathTextParser("path").parse(shown)
    except ValueError:
        return text
    return shown


def typeset_figure(fig) -> None:
    """Typeset every axis label, colour-bar label and legend entry of ``fig`` (``renderable``) in place."""
    for ax in fig.axes:
        ax.set_xlabel(renderable(ax.get_xlabel()))
        ax.set_ylabel(renderable(ax.get_ylabel()))
        legend = ax.get_legend()
        for t in legend.get_texts() if legend is not None else ():
            t.set_text(renderable(t.get_text()))
    for legend in fig.legends:
        for t in legend.get_texts():
            t.set_text(renderable(t.get_text()))
