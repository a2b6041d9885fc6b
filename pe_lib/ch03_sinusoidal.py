"""The sinusoidal encoding, derived (used in notebook 03).

Its figures, its explorers and the graders of its exercises.
"""

import ipywidgets as widgets
import matplotlib.pyplot as plt
import numpy as np

from . import _validate, encodings
from .explorer import Explorer
from .figures import floats, new_axes, style_figsize
from .grading import Feedback, as_numbers, hint_level, run_safely, tolerance_for, with_hints


def dimension_waves(table, columns, *, title, positions=None, step=False, curve=None, xlabel="position", ax=None):
    """Chosen columns of a (n, d) table as curves against position, stacked one above the other.

    Each column gets its own lane, labelled "dim j" on the y axis; step=True draws staircases
    (for binary bits), otherwise lines. curve=(fine_positions, fine_table) draws the columns of
    fine_table as the lines and the table's own rows as dots on them: a position signal exists
    only at whole positions, and a line through 64 samples of a fast wave looks jagged.
    """
    table = floats(table)
    columns = [int(c) for c in columns]
    x = np.arange(table.shape[0]) if positions is None else floats(positions)
    fig, ax = new_axes(ax)
    values = table[:, columns]
    low, high = (float(values.min()), float(values.max())) if values.size else (0.0, 1.0)
    if curve is not None:
        fine_x, fine_table = floats(curve[0]), floats(curve[1])
        low, high = min(low, float(fine_table[:, columns].min())), max(high, float(fine_table[:, columns].max()))
    span = max(high - low, 1e-9)
    lane = 1.35 * span
    for lane_index, column in enumerate(columns):
        offset = lane * (len(columns) - 1 - lane_index)
        y = (table[:, column] - low) + offset
        if step:
            ax.step(x, y, where="post")
        elif curve is not None:
            (line,) = ax.plot(fine_x, (fine_table[:, column] - low) + offset, lw=1)
            ax.plot(x, y, "o", ms=2.5, color=line.get_color())
        else:
            ax.plot(x, y)
        ax.axhline(offset + (0.0 - low if low < 0 < high else 0.0), color="0.8", lw=0.6, zorder=0)
    ax.set_yticks([lane * (len(columns) - 1 - k) + span / 2 for k in range(len(columns))])
    ax.set_yticklabels([f"dim {c}" for c in columns])
    ax.set(title=title, xlabel=xlabel)
    ax.grid(False, axis="y")
    return fig


def wavelength_ladder(wavelengths, *, title, base=10000.0, ax=None):
    """Wavelength (positions per turn) of each sin/cos pair on a log scale, with 2*pi and base*2*pi marked."""
    wavelengths = floats(wavelengths)
    fig, ax = new_axes(ax)
    ax.semilogy(np.arange(wavelengths.size), wavelengths, "o", ms=3, label="pair i")
    ax.minorticks_off()
    ax.axhline(2 * np.pi, color="tab:green", ls="--", label="2π (pair 0)")
    ax.axhline(base * 2 * np.pi, color="tab:red", ls="--", label=f"{base:g}·2π")
    ax.set(title=title, xlabel="pair index i (columns 2i, 2i+1)", ylabel="wavelength (positions, log scale)")
    ax.legend(loc="lower right")
    return fig


def dimension_profile(values, *, title, ylabel, xlabel="dimension", log=False, ax=None):
    """One number per dimension (column) as bars, e.g. how much each column changes per step."""
    values = floats(values)
    fig, ax = new_axes(ax)
    ax.bar(np.arange(values.size), values, width=0.85, color="tab:blue")
    if log:
        ax.set_yscale("log")
        ax.minorticks_off()  # minor log ticks cost more to draw than the bars
    ax.set(title=title, xlabel=xlabel, ylabel=ylabel)
    return fig


def pair_circle(table, pair, *, title, positions=None, annotate=(), ax=None):
    """The (sin, cos) columns 2i, 2i+1 of a table as points on the unit circle, coloured by position.

    Each position is a point; moving k positions on turns every point by the same angle.
    annotate: positions to label on the figure.
    """
    table = floats(table)
    x = np.arange(table.shape[0]) if positions is None else floats(positions)
    fig, ax = new_axes(ax)
    turn = np.linspace(0, 2 * np.pi, 200)
    ax.plot(np.sin(turn), np.cos(turn), color="0.8", lw=1, zorder=0)
    points = ax.scatter(table[:, 2 * pair], table[:, 2 * pair + 1], c=x, cmap="viridis", s=18, zorder=2)
    fig.colorbar(points, ax=ax, label="position")
    for position in annotate:
        row = int(np.argmin(np.abs(x - position)))
        ax.annotate(
            f"p={position:g}",
            (table[row, 2 * pair], table[row, 2 * pair + 1]),
            xytext=(4, 4),
            textcoords="offset points",
            fontsize=9,
        )
    ax.set_aspect("equal")
    ax.set(
        title=title,
        xlabel=f"column {2 * pair} (sin)",
        ylabel=f"column {2 * pair + 1} (cos)",
        xlim=(-1.25, 1.25),
        ylim=(-1.25, 1.25),
    )
    return fig


def offset_fit_residuals(offsets, residuals, *, title, ax=None):
    """Relative residual of a least-squares fit PE(p+k) ≈ PE(p) A against the offset k, one curve per fit.

    residuals: dict label -> array like offsets. Log y axis, so 1e-14 and 0.5 fit on one figure.
    """
    offsets = floats(offsets)
    fig, ax = new_axes(ax)
    for label, values in residuals.items():
        ax.semilogy(offsets, np.maximum(floats(values), 1e-17), "o-", label=label)
    ax.minorticks_off()
    ax.set(title=title, xlabel="offset k (positions)", ylabel="relative residual (log scale)")
    ax.legend()
    return fig


def distance_by_offset(offsets, distances, *, title, neighbour=None, ax=None):
    """||PE(p) - PE(p+k)|| against the offset k, one curve per label (e.g. per base).

    distances: dict label -> array like offsets. neighbour: dict label -> distance at k = 1,
    drawn as dashed lines; points of a curve under its dashed line (k >= 2) are collisions, marked with dots.
    """
    offsets = floats(offsets)
    fig, ax = new_axes(ax)
    for label, values in distances.items():
        values = floats(values)
        (line,) = ax.plot(offsets, values, lw=1, label=label)
        if neighbour is not None and label in neighbour:
            ax.axhline(neighbour[label], color=line.get_color(), ls="--", lw=1)
            hits = (values < neighbour[label]) & (offsets >= 2)
            if np.any(hits):
                ax.plot(offsets[hits], values[hits], "o", color="crimson", ms=6, label=f"collision ({label})")
    ax.set(title=title, xlabel="offset k (positions)", ylabel="distance between rows p and p+k")
    ax.legend(loc="lower center", ncol=3, fontsize="small")
    return fig


def layout_comparison(interleaved, concatenated, *, title):
    """The same encoding in the two layouts side by side, on one colour scale."""
    fig, axes = plt.subplots(1, 2, figsize=style_figsize(9.0, 3.6), sharey=True)
    fig.subplots_adjust(left=0.08, right=0.87, bottom=0.14, top=0.82, wspace=0.08)
    names = ("interleaved (the paper)", "concatenated [sin | cos]")
    for ax, table, name in zip(axes, (interleaved, concatenated), names, strict=True):
        image = ax.imshow(floats(table), aspect="auto", interpolation="nearest", vmin=-1, vmax=1)
        ax.set(title=name, xlabel="dimension")
        ax.grid(False)
    axes[0].set_ylabel("position")
    fig.colorbar(image, cax=fig.add_axes((0.89, 0.14, 0.02, 0.68)), label="value")
    fig.suptitle(title)
    return fig


class CollisionExplorer(Explorer):
    """Why 10000? The encoding table and the distances from one row to every other, per base and d_model.

    Left: the table of positions 0..n-1. Right: ||PE(position) - PE(q)|| for every q, with the
    distance between neighbouring rows dashed. Red dots are collisions: rows at least `gap`
    positions away that are closer than a neighbour. After each update, `collisions` holds
    their positions and `longest_wavelength` the slowest pair's wavelength.
    """

    BASES = (2, 5, 10, 30, 100, 1000, 10000, 100000)
    D_MODELS = (4, 8, 16, 32, 64, 128)
    MAX_N = 8192  # each frame recomputes an (n, d_model) table: 74 ms at n 8192 and d_model 128

    def __init__(self, *, n=2048, base=10000, d_model=16, position=0, gap=2):
        self.n = _validate.int_in_range("n", n, 1, self.MAX_N)
        self.gap = _validate.positive_int("gap", gap)
        if self.n < self.gap + 2:
            raise ValueError(
                f"n must be at least gap + 2 = {self.gap + 2} (a row, its neighbour, a far row), got n={n}"
            )
        for name, value, options in (("base", base, self.BASES), ("d_model", d_model, self.D_MODELS)):
            if value not in options:
                raise ValueError(f"{name} must be one of the slider's values {options}, got {value!r}")
        position = _validate.int_in_range("position", position, 0, self.n - 1)
        self.collisions = np.array([], dtype=int)
        self.longest_wavelength = float("nan")
        figure, (self._left, right) = plt.subplots(
            1, 2, figsize=style_figsize(10.0, 3.8), width_ratios=[1.0, 1.7], layout="constrained"
        )
        self._image = self._left.imshow(
            np.zeros((self.n, 2)), aspect="auto", interpolation="nearest", vmin=-1, vmax=1, cmap="RdBu_r"
        )
        figure.colorbar(self._image, ax=self._left, label="value", ticks=[-1, 0, 1])
        self._row = self._left.axhline(position, color="gold", lw=2)
        self._left.set(title="the table", xlabel="dimension", ylabel="position", yticks=np.arange(0, self.n, 512))
        self._left.locator_params(axis="x", nbins=4, integer=True)
        self._left.grid(False)
        (self._curve,) = right.plot(np.arange(self.n), np.zeros(self.n), lw=0.8)
        self._neighbour = right.axhline(1.0, color="0.4", ls="--", lw=1)  # the distance between neighbours
        (self._hits,) = right.plot([], [], "o", color="crimson", ms=4)  # collisions
        self._here = right.axvline(position, color="k", lw=1)
        right.set(xlim=(0, self.n - 1), xlabel="other position q", ylabel="‖PE(position) − PE(q)‖")
        right.locator_params(axis="y", nbins=4)
        # Few tick labels and no legend: text is most of the cost of a PNG render.
        self._right = right
        controls = {
            "base": widgets.SelectionSlider(options=self.BASES, value=base, description="base"),
            "d_model": widgets.SelectionSlider(options=self.D_MODELS, value=d_model, description="d_model"),
            "position": widgets.IntSlider(value=position, min=0, max=self.n - 1, description="position"),
        }
        super().__init__(figure, controls)

    def draw(self, base, d_model, position):
        table = encodings.sinusoidal_encoding(self.n, d_model, base=base)
        self._image.set_data(table)
        self._image.set_extent((-0.5, d_model - 0.5, self.n - 0.5, -0.5))
        self._row.set_ydata([position, position])
        distance = np.linalg.norm(table - table[position], axis=1)
        neighbour = float(np.linalg.norm(table[1] - table[0]))
        far = np.abs(np.arange(self.n) - position) >= self.gap
        self.collisions = np.flatnonzero(far & (distance < neighbour))
        self.longest_wavelength = float(encodings.wavelengths(d_model, base=base)[-1])
        self._curve.set_ydata(distance)
        self._neighbour.set_ydata([neighbour, neighbour])
        self._hits.set_data(self.collisions, distance[self.collisions])
        self._here.set_xdata([position, position])
        # The largest possible distance, sqrt(2 d_model), as the top: fixed while base and position move.
        self._right.set_ylim(0, 1.05 * np.sqrt(2 * d_model))
        nearest = np.flatnonzero(far)[np.argmin(distance[far])]
        self._right.set_title(
            f"base {base:g}, d_model {d_model}: slowest wavelength {self.longest_wavelength:,.0f}\n"
            f"collisions (red): {self.collisions.size}; nearest far row: q={nearest} at {distance[nearest]:.2f}",
            fontsize="small",
        )
        return d_model  # sets the table's columns and the distance axis: one background per d_model

    def animated_artists(self):
        return (self._image, self._row, self._curve, self._neighbour, self._hits, self._here, self._right.title)


_TABLE_TOLERANCE = 1e-3  # lets a float32 (torch) answer pass; every typical mistake is off by far more


def _sinusoid_table(positions, rates, *, swap=False, layout="interleaved"):
    """A table with angle p * rates[j] in column j; sin in even columns and cos in odd ones (swapped if swap)."""
    angles = np.asarray(positions, dtype=np.float64)[:, None] * rates
    even = np.arange(rates.size) % 2 == 0
    table = np.where(even != swap, np.sin(angles), np.cos(angles))
    if layout == "concatenated":
        table = np.concatenate([table[:, 0::2], table[:, 1::2]], axis=1)
    return table


def _typical_mistakes(positions, d_model, base=10000.0):
    """(table, symptom, own hint tiers) for the usual ways a sinusoidal table goes wrong, most specific first."""
    column = np.arange(d_model)
    i = column // 2  # the pair index of each column
    right = base ** (-2 * i / d_model)
    positions = np.asarray(positions, dtype=np.float64)
    interleave = "Column 2i holds the sine, column 2i+1 the cosine of the same angle p * w_i."
    return [
        (
            # The book chapter's bug: its own tiers are the general ones of check_chapter_fix.
            _sinusoid_table(positions, np.pi * i * right),
            "columns 0 and 1 never change (always 0 and 1), and every other pair turns too fast "
            "(pair 1 about 3.1 times, pair 2 about 6.3 times, pair 3 about 9.4 times).",
            (),
        ),
        (
            _sinusoid_table(positions, i * right),
            "you removed π but kept the factor i//2: the first pair is still frozen at (0, 1).",
            (
                "What does the factor i//2 make of the rate of pair 0?",
                "Drop `np.arange(d_model) // 2 *` as well: the rate alone is 1 / 10000**(2i/d_model).",
            ),
        ),
        (
            _sinusoid_table(positions, right, swap=True),
            "your sin and cos columns are swapped: row 0 should start 0, 1, 0, 1, ... and yours starts 1, 0, 1, 0.",
            ("sin 0 = 0 and cos 0 = 1: which of the two belongs in column 0?", interleave),
        ),
        (
            _sinusoid_table(positions, right, layout="concatenated"),
            "you built the concatenated layout [all sines | all cosines] (tensor2tensor, the TensorFlow tutorial); "
            "the paper interleaves them.",
            ("Which columns do your sines fill, and which ones should they fill?", interleave),
        ),
        (
            _sinusoid_table(positions, base ** (-column / d_model)),
            "each column uses its own index j in the exponent (10000**(j/d_model)), so a sin/cos pair does not "
            "share one angle.",
            (
                "Columns 2i and 2i+1 are the two coordinates of one pendulum: should their angles differ?",
                "Use the pair's even index 2i in the exponent, 10000**(2*(j//2)/d_model).",
            ),
        ),
        (
            _sinusoid_table(positions, base ** (-i / d_model)),
            "the exponent uses i where the formula has 2i: 10000**(i/d_model) turns every pair too fast.",
            (
                "Print your exponents next to 2i/d_model for i = 0, 1, 2: where do they part?",
                "torch.arange(0, d_model, 2) already gives 2i; with arange(d_model // 2) multiply by 2.",
            ),
        ),
        (
            _sinusoid_table(positions, base ** (-4 * i / d_model)),
            "the exponent is doubled (4i/d_model): every pair after the first turns too slowly.",
            (
                "Print your exponents next to 2i/d_model for i = 0, 1, 2: where do they part?",
                "arange(0, d_model, 2) already gives 2i: do not multiply it by 2 again.",
            ),
        ),
        (
            _sinusoid_table(positions, base ** (2 * i / d_model)),
            "the minus sign is missing: your frequencies grow to almost 10000 instead of shrinking to almost 1/10000.",
            (
                "Should the slow pairs be at the start or at the end of the row?",
                "div_term = exp(-2i·ln(10000)/d_model): the minus makes it 1/10000**(2i/d_model).",
            ),
        ),
        (
            _sinusoid_table(positions, np.exp(-2 * i * np.log10(base) / d_model)),
            "you used log10(10000) = 4 where the formula needs the natural log ln(10000) ≈ 9.21.",
            (
                "exp undoes the natural log, not log10: which log belongs inside exp(...)?",
                "Use math.log or np.log (natural), not math.log10 or np.log10.",
            ),
        ),
        (
            _sinusoid_table(positions + 1, right),
            "your positions start at 1; the formula counts from position 0 (row 0 is sin 0 = 0, cos 0 = 1, ...).",
            ("np.arange(n) gives 0 .. n-1: where does your 1 .. n come from?",),
        ),
    ]


def _diagnose(exercise, table, positions, d_model, what, tolerance=_TABLE_TOLERANCE):
    """Compare a learner's table (rows = positions) with the reference; None if right, else a Feedback.

    tolerance: how far a correct answer may be off (grading.tolerance_for: wider for half precision).
    """
    reference = encodings.sinusoidal_encoding(np.asarray(positions, dtype=np.float64), d_model)
    if table is None:
        return Feedback(exercise, False, f"{what} must return numbers (a NumPy array or a torch tensor)")
    if table.shape != reference.shape:
        if table.shape == reference.shape[::-1]:
            return Feedback(
                exercise,
                False,
                f"{what} returned shape {table.shape}, the transpose of the expected {reference.shape}: "
                "rows are positions, columns dimensions",
            )
        return Feedback(exercise, False, f"{what} returned shape {table.shape}, expected {reference.shape}")
    if not np.all(np.isfinite(table)):
        return Feedback(exercise, False, f"{what} returned NaN or infinite values")
    if np.allclose(table, reference, atol=tolerance, rtol=0):
        return None
    if not np.any(table):
        row = min(1, len(positions) - 1)  # position 1 shows every kind of column moving
        start = ", ".join(f"{value:.4f}" for value in reference[row, :4])
        return Feedback(
            exercise, False, f"{what} returned only zeros; at position {positions[row]:g} the row should start {start}"
        )
    for mistake, symptom, hints in _typical_mistakes(positions, d_model):
        if np.allclose(table, mistake, atol=tolerance, rtol=0):
            return Feedback(exercise, False, symptom, hints)
    wrong = np.abs(table - reference) > tolerance
    row, column = np.argwhere(wrong)[0]
    kind = "sin" if column % 2 == 0 else "cos"
    return Feedback(
        exercise,
        False,
        f"first wrong value at position {positions[row]:g}, column {column} (a {kind} column, pair i={column // 2}) "
        f"with d_model={d_model}: expected {reference[row, column]:.4f}, got {table[row, column]:.4f}",
    )


_TABLE_HINTS = (
    "Every row is one position p, every pair of columns (2i, 2i+1) one pendulum turning at its own rate w_i. "
    "Can you build all the angles p * w_i at once, from a column of positions and a row of rates?",
    "div_term = exp(-2i·ln(10000)/d_model) for 2i = 0, 2, 4, ... (np.arange(0, d_model, 2)); "
    "angles = positions[:, None] * div_term has shape (n, d_model/2). The even columns take the sines of "
    "those angles, the odd columns the cosines.",
    "Sines into the even columns, cosines into the odd ones:\n"
    "    pos = np.arange(n)[:, None]\n"
    "    div_term = np.exp(np.arange(0, d_model, 2) * -np.log(10000.0) / d_model)\n"
    "    table = np.zeros((n, d_model))\n"
    "    table[:, 0::2] = np.sin(pos * div_term)\n"
    "    table[:, 1::2] = np.cos(pos * div_term)\n"
    "    return table",
)


def check_sinusoidal_table(function, *, hint=0):
    """Grade `function(n, d_model) -> (n, d_model)`, the paper's encoding of positions 0..n-1 (even d_model).

    hint: 0 for the verdict alone, 1..3 for more and more direct hints (3: the formula).
    """
    shown = hint_level(hint, _TABLE_HINTS)
    return with_hints(_check_sinusoidal_table(function), _TABLE_HINTS, shown)


def _check_sinusoidal_table(function):
    exercise = "sinusoidal table"
    # One pair, an odd number of pairs, a single row, and rows far enough for slow pairs to move.
    for n, d_model in ((50, 16), (9, 6), (1, 4), (300, 2), (97, 64)):
        value, failure = run_safely(exercise, function, n, d_model)
        if failure is not None:
            return failure
        what = f"sinusoidal_table({n}, {d_model})"
        failure = _diagnose(exercise, as_numbers(value), np.arange(n), d_model, what, tolerance_for(value))
        if failure is not None:
            return failure
    return Feedback(exercise, True, "your table matches pe_lib.sinusoidal_encoding for several n and d_model")


_CHAPTER_HINTS = (
    "Look at line 1. It should compute each column's rate, 1 / 10000**(2i/d_model) with i = j // 2, and "
    "nothing more. What else multiplies the rate there?",
    "Line 1 multiplies the rate by np.arange(d_model) // 2 * np.pi: that is 0 for the first pair, which "
    "therefore never moves, and π·i for pair i. Remove both factors.",
    "Line 1, fixed (the rate and nothing more):\n"
    "    angle_rads = 1 / np.power(10000, 2 * (np.arange(d_model) // 2) / np.float32(d_model))",
)


def check_chapter_fix(function, *, hint=0):
    """Grade `function(position, d_model) -> (d_model,)`, the book chapter's snippet, corrected (one row).

    hint: 0 for the verdict alone, 1..3 for more and more direct hints (3: the corrected line).
    """
    shown = hint_level(hint, _CHAPTER_HINTS)
    return with_hints(_check_chapter_fix(function), _CHAPTER_HINTS, shown)


def _check_chapter_fix(function):
    exercise = "spot the bug"
    positions = np.array([0, 1, 2, 5, 13, 40, 99])
    for d_model in (8, 6, 20):
        rows, tolerance = [], _TABLE_TOLERANCE
        for position in positions:
            value, failure = run_safely(exercise, function, int(position), d_model)
            if failure is not None:
                return failure
            row = as_numbers(value)
            if row is None or row.shape != (d_model,):
                got = "no numbers" if row is None else f"shape {row.shape}"
                return Feedback(
                    exercise,
                    False,
                    f"your function must return one vector of shape ({d_model},) for d_model={d_model}, got {got}",
                )
            rows.append(row)
            tolerance = max(tolerance, tolerance_for(value))
        failure = _diagnose(exercise, np.stack(rows), positions, d_model, "your function", tolerance)
        if failure is not None:
            return failure
    return Feedback(
        exercise,
        True,
        "bug fixed: every pair now turns at its own frequency 10000**(-2i/d_model), and the first pair moves",
    )


_LAYOUT_HINTS = (
    "perm[c] names the interleaved column that lands in place c of the result. Which interleaved columns "
    "hold the sines, and which the cosines?",
    "Interleaved is sin0 cos0 sin1 cos1 ...; concatenated is sin0 sin1 ... followed by cos0 cos1 .... So "
    "the result takes the sine columns 0, 2, 4, ... first, then the cosine columns 1, 3, 5, ....",
    "The even columns, then the odd ones (np.r_ joins the two ranges):\n    return np.r_[0:d_model:2, 1:d_model:2]",
)


def _layout_column(column, d_model, layout):
    """What a column of a layout holds, e.g. 'the cos of pair 0' (an odd d_model has one more sine)."""
    if layout == "interleaved":
        kind, pair = ("sin", "cos")[column % 2], column // 2
    else:
        sines = (d_model + 1) // 2
        kind, pair = ("sin", column) if column < sines else ("cos", column - sines)
    return f"the {kind} of pair {pair}"


def check_layout_permutation(function, *, hint=0):
    """Grade `function(d_model) -> perm` with interleaved[:, perm] == concatenated for every position.

    hint: 0 for the verdict alone, 1..3 for more and more direct hints (3: the formula).
    """
    shown = hint_level(hint, _LAYOUT_HINTS)
    return with_hints(_check_layout_permutation(function), _LAYOUT_HINTS, shown)


def _check_layout_permutation(function):
    exercise = "layout permutation"
    for d_model in (2, 8, 10, 64):
        value, failure = run_safely(exercise, function, d_model)
        if failure is not None:
            return failure
        perm = as_numbers(value)
        if perm is None or perm.shape != (d_model,):
            got = "no numbers" if perm is None else f"shape {perm.shape}"
            return Feedback(exercise, False, f"return one column index per dimension, shape ({d_model},), got {got}")
        if not np.array_equal(np.sort(perm), np.arange(d_model)):
            return Feedback(
                exercise,
                False,
                f"for d_model={d_model} your indices are not a permutation of "
                f"0..{d_model - 1}: each column must appear exactly once",
            )
        perm = perm.astype(int)
        interleaved = encodings.sinusoidal_encoding(12, d_model)
        concatenated = encodings.sinusoidal_encoding(12, d_model, layout="concatenated")
        if np.allclose(interleaved[:, perm], concatenated):
            continue
        if np.allclose(concatenated[:, perm], interleaved):
            return Feedback(
                exercise,
                False,
                "that permutation goes the other way: concatenated[:, perm] gives the interleaved table",
                (
                    "Your perm says where each interleaved column goes; the exercise asks, for each place c, "
                    "which interleaved column comes from. How do you turn one into the other?",
                    "Invert your permutation (np.argsort(perm)), or build perm place by place.",
                ),
            )
        # Measured: the first place that holds the wrong column, and what it should hold.
        place = int(np.argmax(~np.all(np.isclose(interleaved[:, perm], concatenated), axis=0)))
        return Feedback(
            exercise,
            False,
            f"for d_model={d_model}, interleaved[:, perm] is not the concatenated table: its column {place} is "
            f"interleaved column {perm[place]} ({_layout_column(perm[place], d_model, 'interleaved')}), where "
            f"the concatenated table has {_layout_column(place, d_model, 'concatenated')}",
        )
    return Feedback(
        exercise,
        True,
        "interleaved[:, perm] == concatenated: the two layouts are one fixed permutation of columns apart",
    )
