"""pe_lib.colours and the course's palette: series apart under colour-vision deficiency, text at 4.5:1."""

import ipywidgets as widgets
import matplotlib as mpl
import matplotlib.pyplot as plt
import numpy as np
import pytest

from pe_lib import colours, figures
from pe_lib.explorer import explorer_classes, slider_values

TAB10 = [f"tab:{name}" for name in ("blue", "orange", "green", "red", "purple")]


@pytest.fixture(params=[False, True], ids=["notebook", "lecture"])
def style(request):
    with mpl.rc_context():
        figures.use_style(lecture=request.param)
        yield request.param


def test_contrast_ratio_is_wcags():
    assert colours.contrast_ratio("black", "white") == pytest.approx(21.0)
    assert colours.contrast_ratio("white", "white") == pytest.approx(1.0)
    assert colours.contrast_ratio("#767676", "white") == pytest.approx(4.54, abs=0.01)  # the lightest AA grey
    assert colours.contrast_ratio((0, 0, 0, 0.5), "white") == pytest.approx(
        colours.contrast_ratio("#808080", "white"), abs=0.05
    )


def test_simulation_is_colorspacious_and_keeps_greys():
    grey = colours.simulate(["0.5"], "deuteranopia")
    assert np.allclose(grey, 0.5, atol=0.01)
    red_green = colours.cvd_distances(["tab:red", "tab:green"])
    assert red_green["normal"][0] > 20 and red_green["deuteranopia"][0] < 10  # the classic confusion, caught
    with pytest.raises(ValueError, match="vision must be one of"):
        colours.simulate(["red"], "achromatopsia")
    with pytest.raises(ValueError, match="at least two colours, got 1"):
        colours.cvd_distances(["red"])


def test_the_palette_stays_apart_for_every_vision_and_on_white():
    found = colours.cvd_distances(figures.PALETTE)
    smallest = {vision: round(distance, 1) for vision, (distance, _) in found.items()}
    print(f"\nsmallest CAM02-UCS distance in the palette: {smallest}")
    assert min(smallest.values()) >= colours.MIN_DELTA_E, smallest
    assert smallest["tritanopia"] == pytest.approx(11.7, abs=0.1)
    for colour in figures.PALETTE:
        assert colours.contrast_ratio(colour, "white") >= 3.0, colour  # WCAG 1.4.11, lines and bars
    # matplotlib's default fails, which is why the course has its own
    tab10 = colours.cvd_distances(TAB10)
    assert tab10["deuteranopia"][0] < 10 and tab10["protanopia"][0] < 5


def test_every_meaning_has_one_distinct_colour(style):
    methods = [figures.COLOURS[name] for name in ("sinusoidal", "learned", "rope", "alibi", "t5", "problem")]
    assert len(set(methods)) == len(methods)
    rgb = [mpl.colors.to_rgb(colour) for colour in methods]
    assert min(distance for distance, _ in colours.cvd_distances(rgb).values()) >= colours.MIN_DELTA_E


def test_text_contrast_in_both_styles(style):
    fig, ax = plt.subplots(figsize=figures.style_figsize(6, 3))
    for index in range(len(figures.PALETTE)):
        ax.plot(np.arange(5), np.arange(5) * (index + 1), label=f"series {index}")
    ax.set(title="title", xlabel="x", ylabel="y")
    ax.legend()
    ax.text(0.1, 0.9, "a note", transform=ax.transAxes)
    fig.suptitle("suptitle")
    assert colours.figure_problems(fig) == []
    ratios = [
        colours.contrast_ratio(mpl.rcParams[key], "white") for key in ("text.color", "xtick.color", "axes.labelcolor")
    ]
    assert min(ratios) >= colours.MIN_TEXT_CONTRAST


def test_figure_problems_finds_confusable_series_and_faint_text():
    fig, ax = plt.subplots()
    ax.plot([0, 1], [0, 1], color="tab:red", label="bad")
    ax.plot([0, 1], [1, 0], color="tab:green", label="good")
    ax.text(0.5, 0.5, "faint", color="0.7")
    problems = colours.figure_problems(fig)
    assert any("'bad' and 'good'" in problem and "deuteranopia" in problem for problem in problems), problems
    assert any("'faint': contrast" in problem for problem in problems), problems


def _states(explorer):
    """(control, value) pairs that reach each control's ends (and a middle option) one at a time."""
    for name, control in explorer.controls.items():
        if isinstance(control, widgets.SelectionSlider | widgets.Dropdown | widgets.ToggleButtons):
            options = slider_values(control)
            values = [options[0], options[len(options) // 2], options[-1]]
        elif isinstance(control, widgets.IntSlider | widgets.FloatSlider):
            values = [control.min, control.max]
        elif isinstance(control, widgets.Checkbox):
            values = [not control.value]
        else:
            continue  # a text box: any text, no colour of its own
        yield from ((name, value) for value in values)


@pytest.mark.slow
@pytest.mark.parametrize("cls", explorer_classes(), ids=lambda cls: cls.__name__)
def test_every_explorer_state_passes_the_colour_checks(cls, style):
    """Each control at its ends (selections: first, middle, last), the others at their start, in both styles;
    each distinct state checked once (a control that starts at an end gives the start state again)."""
    explorer = cls()
    start = explorer.values()
    problems = colours.figure_problems(explorer.figure)
    moved = None  # the control away from its start: put back in the same update that moves the next one
    for name, value in _states(explorer):
        if value == start[name]:
            continue  # the start state (a control that starts at an end), checked above
        back = {moved: start[moved]} if moved is not None and moved != name else {}
        explorer.update(**back, **{name: value})  # one frame a state, the others at their start
        assert explorer.values() == {**start, name: value}
        problems += [f"{name}={value!r}: {problem}" for problem in colours.figure_problems(explorer.figure)]
        moved = name
    explorer.close()
    assert not problems, problems
