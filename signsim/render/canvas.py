"""The figures signsim draws: matplotlib Figures that pyplot does not manage, so that drawing one never selects
or changes the backend of the interpreter (a notebook's inline backend, a script's own plots), and that show
themselves in Jupyter and IPython (as PNG) without ``%matplotlib inline``. signsim's style applies to these
figures only, while they are built and drawn; the caller's rcParams are left as they were."""

from __future__ import annotations

import io

import matplotlib
import matplotlib.figure

#: signsim's style (rcParams), for its own figures only
STYLE = {"figure.dpi": 100, "axes.grid": True, "grid.alpha": 0.3, "legend.fontsize": 8, "axes.titlesize": 10,
         "axes.labelsize": 9}


class Figure(matplotlib.figure.Figure):
    """A figure in signsim's style, outside pyplot. Jupyter and IPython display it from ``_repr_png_`` (a
    figure pyplot does not manage otherwise shows as text unless pyplot's inline backend was loaded first)."""

    def draw(self, renderer):
        with matplotlib.rc_context(STYLE):  # ticks and grid lines made lazily at draw time take the style too
            super().draw(renderer)

    def _repr_png_(self) -> bytes:
        buffer = io.BytesIO()
        self.savefig(buffer, format="png")
        return buffer.getvalue()


def style():
    """A context in which signsim's style is in effect (the caller's rcParams restored afterwards)."""
    return matplotlib.rc_context(STYLE)


def subplots(nrows: int = 1, ncols: int = 1, *, figsize: tuple[float, float], **kwargs):
    """A new :class:`Figure` on an Agg canvas, with constrained layout, and its axes, as ``pyplot.subplots``
    returns them (``squeeze``, ``sharey`` and the like are passed on to ``Figure.subplots``)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    with style():
        fig = Figure(figsize=figsize, layout="constrained")
        FigureCanvasAgg(fig)  # this figure's canvas (a renderer to draw and measure with), not a backend
        return fig, fig.subplots(nrows, ncols, **kwargs)
