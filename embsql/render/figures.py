"""What every figure of a report shares: the Plot record (a figure and where it goes), the list
that a notebook shows as images, the PNG encoding and the check that matplotlib is there.

matplotlib (a dependency) is imported only when a figure is asked for.  The figures are built on
``matplotlib.figure.Figure`` directly, never through pyplot: that needs no display and no backend
switch (savefig renders with Agg), leaves the user's pyplot state alone, and lets the figures be
garbage-collected.
"""

from __future__ import annotations

import base64
import html
import io
import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeGuard

if TYPE_CHECKING:   # matplotlib is imported when a figure is drawn, not when embsql is imported
    from matplotlib.figure import Figure


@dataclass(frozen=True)
class Plot:
    """One figure and where it belongs in a report."""

    anchor: str           # "summary", "verdict" or the name of the section it illustrates
    caution_from: str     # the section whose caution applies to the figure ("" for none)
    caption: str          # what is drawn, in words (the interval, what was left out)
    figure: Figure


class Figures(list["Figure"]):
    """A list of matplotlib Figures that a notebook shows as images (one PNG each), with no
    ``%matplotlib`` magic: Jupyter calls ``_repr_mimebundle_`` on the value of a cell."""

    def __init__(self, figures: Iterable[Figure] = ()) -> None:
        super().__init__(figures)

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, str]:
        if not self:
            return {"text/plain": "no figures (the report has none of the tables they are drawn from)"}
        pngs = [png_bytes(figure) for figure in self]
        images = "".join(
            f'<figure style="margin:0 0 14px"><img alt="{html.escape(figure_title(f))}" width="{w}" '
            f'src="data:image/png;base64,{base64.b64encode(png).decode("ascii")}"></figure>'
            for f, png, w in zip(self, pngs, (round(f.get_size_inches()[0] * 96) for f in self)))
        return {"text/plain": repr(self), "text/html": f"<div>{images}</div>",
                "image/png": base64.b64encode(pngs[0]).decode("ascii")}

    def __repr__(self) -> str:
        titles = "; ".join(figure_title(f) for f in self)
        return f"{len(self)} figure{'s' if len(self) != 1 else ''}: {titles}"


def png_bytes(figure: Figure, dpi: int = 160) -> bytes:
    """A figure as PNG (160 dpi: sharp text on high-density screens)."""
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=dpi, facecolor="white")
    return buffer.getvalue()


def figure_title(figure: Figure) -> str:
    """The figure's title, or the first panel's, or "figure"."""
    suptitle = figure.get_suptitle()
    if suptitle:
        return suptitle
    return next((ax.get_title() for ax in figure.axes if ax.get_title()), "figure")


def require_matplotlib() -> type[Figure]:
    """matplotlib's Figure class, or ModuleNotFoundError saying how to install matplotlib."""
    try:
        from matplotlib.figure import Figure
    except ImportError as error:   # a None in sys.modules raises here too
        raise ModuleNotFoundError("embsql's plots need matplotlib, which is not installed: "
                                  "pip install matplotlib", name="matplotlib") from error
    return Figure


def new_figure(**options: Any) -> Figure:
    """``matplotlib.figure.Figure(**options)`` (see require_matplotlib)."""
    return require_matplotlib()(**options)


def matplotlib_available() -> bool:
    try:
        require_matplotlib()
    except ImportError:
        return False
    return True


def finite(value: object) -> TypeGuard[float]:
    """A real, finite number (not a bool, None, NaN or an infinity)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
