"""Figures set their labels' math as a paper does (issue 50, a newcomer: "math as raw text"): the labels are
written once in the tables' ASCII (``loss f(x_k)``) and typeset when a figure is built (``signsim.render.mathtext``).
The expected strings below are written by hand; matplotlib's own mathtext parser checks that each one renders."""

from __future__ import annotations

import re

import pytest
from matplotlib.mathtext import MathTextParser

from signsim import history
from signsim.render import figures
from signsim.render.mathtext import typeset

PARSER = MathTextParser("path")

CASES = {
    "iteration k": "iteration $k$",
    "loss f(x_k)": "loss $f(x_{k})$",
    "||grad f(x_k)||_2": r"${\|\nabla f(x_{k})\|_{2}}$",
    "||x_k - x*||_2": r"${\|x_{k} - x^{*}\|_{2}}$",
    "test loss f_test(x_k) on the held-out samples": r"test loss $f_{\mathrm{test}}(x_{k})$ on the held-out samples",
    "success probability rho_i": r"success probability $\rho_{i}$",
    "E<g, sign g_hat> (rho-norm)": r"$E\langle g, \mathrm{sign}\, \hat{g}\rangle$ ($\rho$-norm)",
    "B_S^T = n E[A] / E[C] (over the transformation)": "$B_{S}^{T}$ = n E[A] / E[C] (over the transformation)",
    "fraction of Byzantine workers b / M": "fraction of Byzantine workers $b$ / $M$",
    "ssdm (mean), M = 8, lr = 0.01, beta = 0.9, gaussian:1":
        r"ssdm (mean), $M$ = 8, lr = 0.01, $\beta$ = 0.9, gaussian:1",
    "||w_S - w_S'||_2 (mean over pairs)": r"${\|w_{S} - w_{S}'\|_{2}}$ (mean over pairs)",
}
#: text with no math: unchanged (a user's --label with an underscore, a stage spec, a unit in parentheses)
PLAIN = ("training accuracy", "run_1 of my sweep", "top-k:3 + ef, lr = 0.1", "time (s): simulated",
         "bits communicated (up + down)", "docs/theory.md §14", "signsgd-vote", "already $x$ typeset_here")


@pytest.mark.parametrize("text", sorted(CASES))
def test_each_label_is_typeset_as_written_here_and_renders(text):
    assert typeset(text) == CASES[text]
    PARSER.parse(CASES[text])  # (raises on mathtext matplotlib cannot render)
    assert typeset(CASES[text]) == CASES[text]  # typeset once: a second pass changes nothing


@pytest.mark.parametrize("text", PLAIN)
def test_text_without_math_is_left_as_written(text):
    assert typeset(text) == text


def _raw_math(text: str) -> list[str]:
    """What looks like math outside $...$: a subscript, a norm, a Greek letter's name as a word."""
    outside = " ".join(text.split("$")[0::2])
    return re.findall(r"\b[A-Za-z]+_[A-Za-z0-9]+|\|\||\b(?:rho|sigma|beta|gamma|tau|kappa|lambda)\b", outside)


def test_every_label_a_figure_can_show_is_typeset_and_renders():
    labels = [c.label for c in history.COLUMNS] + list(figures.X_AXES.values()) + [v[2] for v in
                                                                                   figures.Y_AXES.values()]
    for text in labels:
        shown = typeset(text)
        assert not _raw_math(shown), (text, shown)
        if "$" in shown:
            PARSER.parse(shown)


def test_a_built_figure_shows_no_raw_math_and_bits_in_engineering_ticks():
    import signsim

    run = signsim.run(problem="quadratic", iters=30, track_spb=10)
    fig = run.figure()
    texts = [t for ax in fig.axes for t in (ax.get_xlabel(), ax.get_ylabel())]
    texts += [t.get_text() for legend in fig.legends for t in legend.get_texts()]
    assert any("$" in t for t in texts)
    for text in texts:
        assert not _raw_math(text), text
    one = run.figure(x="bits", y="loss")
    ax = one.get_axes()[0]
    one.canvas.draw()
    ticks = [t.get_text() for t in ax.get_xticklabels() if t.get_text()]
    assert ax.xaxis.get_offset_text().get_text() == ""  # no "1e6" above the axis
    assert any(re.fullmatch(r"\d+(\.\d+)?k", t) for t in ticks), ticks


@pytest.mark.parametrize("text", ["top-k(10%)", "f(x_1_2)", "||x_1_2||_2", "p(\"x\")", "f(#1)", "deadline 0.25 s",
                                  "results/b", "/tmp/x_train.npy"])
def test_a_label_the_rules_cannot_set_is_shown_as_written_and_still_renders(text):
    """A review: a legend labelled ``top-k(10%)`` made savefig raise; a unit or a path was set as math."""
    from signsim.render.mathtext import renderable

    shown = renderable(text)
    assert shown == text or "$" in shown
    if "$" in shown:
        PARSER.parse(shown)
    assert renderable("deadline 0.25 s") == "deadline 0.25 s" and renderable("results/b") == "results/b"


def test_a_figure_with_such_a_legend_saves(tmp_path):
    from signsim.render import canvas
    from signsim.render.mathtext import typeset_figure

    fig, ax = canvas.subplots(figsize=(4, 3))
    ax.plot([0, 1], [0, 1], label="top-k(10%)")
    ax.plot([0, 1], [1, 0], label="rho_i of run_1")
    ax.legend()
    typeset_figure(fig)
    fig.savefig(tmp_path / "f.png")
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["top-k(10%)", r"$\rho_{i}$ of run_1"]
