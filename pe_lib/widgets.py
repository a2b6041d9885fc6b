"""Interactive explorers (ipywidgets) built on pe_lib.plots.

An explorer owns one matplotlib figure and its artists. Moving a control calls `update`,
which changes the artists' data in place and re-renders the figure into an Image widget:
no figure is rebuilt, so an update costs one PNG render (tens of milliseconds).
Display an explorer by leaving it as the last expression of a cell.
"""

import io

import ipywidgets as widgets
import matplotlib.pyplot as plt


class Explorer:
    """Base class: subclasses build `self.figure`, `self.controls` and implement `draw(**values)`."""

    def __init__(self, figure, controls):
        self.figure = figure
        self.controls = dict(controls)
        self.image = widgets.Image(format="png")
        self.image.add_class("pe-explorer-figure")
        plt.close(figure)  # shown through the Image widget only, not again by the inline backend
        for control in self.controls.values():
            control.observe(self._on_change, names="value")
        self.widget = widgets.VBox([widgets.HBox(list(self.controls.values())), self.image])
        self.widget.add_class("pe-explorer")
        self.update()

    def values(self):
        return {name: control.value for name, control in self.controls.items()}

    def draw(self, **values):
        """Change the figure's artists for these control values."""
        raise NotImplementedError

    def update(self, **values):
        """Set controls (if given), redraw the artists and re-render the image; returns the PNG bytes."""
        for name, value in values.items():
            self.controls[name].value = value  # triggers _on_change, which renders
        if not values:
            self._render()
        return self.image.value

    def _on_change(self, _change):
        self._render()

    def _render(self):
        self.draw(**self.values())
        buffer = io.BytesIO()
        self.figure.savefig(buffer, format="png")
        self.image.value = buffer.getvalue()

    def _repr_mimebundle_(self, **kwargs):
        return self.widget._repr_mimebundle_(**kwargs)
