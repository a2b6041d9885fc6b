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
            fontsize="small",
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

    def layout_values(self):
        # d_model sets the distance axis (0-3 up to 0-17) and the table's columns: room for every one.
        return [{"d_model": d_model} for d_model in self.D_MODELS]

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
            fontsize="medium",  # the read-out of this explorer: as large as its other text
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


# --- exercise 1: M(k) for the concatenated layout ----------------------------------------------

_ROTATION_HINTS = (
    "The concatenated row is the interleaved row with its entries in another order. If y = x[perm] and "
    "x' = M x, how do you write y' in terms of y?",
    "Reorder both the rows and the columns of pe_lib.relative_rotation(k, d_model) by the permutation that "
    "turns the interleaved layout into the concatenated one (the section on the two layouts).",
    "Rows and columns, by the same permutation:\n"
    "    perm = np.r_[0:d_model:2, 1:d_model:2]\n"
    "    return pe_lib.relative_rotation(k, d_model)[np.ix_(perm, perm)]",
)


def _concatenated_rotation(k, d_model):
    perm = np.r_[0:d_model:2, 1:d_model:2]
    return encodings.relative_rotation(k, d_model)[np.ix_(perm, perm)]


def check_concatenated_rotation(function, *, hint=0):
    """Grade `function(k, d_model) -> (d_model, d_model)` with PE_c(p + k) = M @ PE_c(p), concatenated layout.

    hint: 0 for the verdict alone, 1..3 for more and more direct hints (3: the code).
    """
    shown = hint_level(hint, _ROTATION_HINTS)
    return with_hints(_check_concatenated_rotation(function), _ROTATION_HINTS, shown)


def _check_concatenated_rotation(function):
    exercise = "concatenated rotation"
    positions = np.arange(40)
    for k, d_model in ((3, 8), (1, 2), (-5, 16), (2.5, 10), (40, 64)):
        value, failure = run_safely(exercise, function, k, d_model)
        if failure is not None:
            return failure
        matrix = as_numbers(value)
        if matrix is None or matrix.shape != (d_model, d_model):
            got = "no numbers" if matrix is None else f"shape {matrix.shape}"
            return Feedback(exercise, False, f"return a ({d_model}, {d_model}) matrix for d_model={d_model}, got {got}")
        now = encodings.sinusoidal_encoding(positions, d_model, layout="concatenated")
        later = encodings.sinusoidal_encoding(positions + k, d_model, layout="concatenated")
        tolerance = tolerance_for(value)
        if np.allclose(now @ matrix.T, later, atol=tolerance, rtol=0):
            continue
        where = f"(k={k:g}, d_model={d_model})"
        mistakes = (
            (
                encodings.relative_rotation(k, d_model),
                f"your matrix is the interleaved M(k) {where}: it turns the pairs (0, 1), (2, 3), ..., but in the "
                "concatenated layout column 0 pairs with column d_model/2",
                ("Which column holds the cosine partner of column 0 in the concatenated layout?",),
            ),
            (
                _concatenated_rotation(-k, d_model),
                f"your matrix moves {where} the other way: it maps PE(p) to PE(p - k)",
                ("A rotation's transpose is the rotation the other way: did you transpose somewhere?",),
            ),
        )
        for mistake, symptom, hints in mistakes:
            if np.allclose(matrix, mistake, atol=tolerance, rtol=0):
                return Feedback(exercise, False, symptom, hints)
        error = float(np.abs(now @ matrix.T - later).max())
        return Feedback(
            exercise,
            False,
            f"M @ PE(p) is not PE(p + k) {where}: off by up to {error:.3f} over positions 0..39",
        )
    return Feedback(exercise, True, "PE(p + k) = M @ PE(p) in the concatenated layout, for every k and d_model tried")


# --- exercise 2: tensor2tensor's timing signal -------------------------------------------------


def _timing_signal(positions, d_model, max_timescale, *, steps=None, layout="concatenated", swap=False):
    """tensor2tensor's get_timing_signal_1d (min_timescale 1): rates 1 .. 1/max_timescale, [sin | cos]."""
    pairs = d_model // 2
    steps = max(pairs - 1, 1) if steps is None else steps
    rates = np.exp(-np.arange(pairs) * np.log(max_timescale) / steps)
    angles = np.asarray(positions, dtype=np.float64)[:, None] * rates
    first, second = (np.cos(angles), np.sin(angles)) if swap else (np.sin(angles), np.cos(angles))
    if layout == "interleaved":
        return np.stack([first, second], axis=-1).reshape(len(angles), d_model)
    return np.concatenate([first, second], axis=1)


_TIMING_HINTS = (
    "The d_model/2 rates form a geometric sequence: what are its first and its last term, and how many "
    "equal steps (on a log scale) lie between them?",
    "From 1 for the first pair down to exactly 1/max_timescale for the last: d_model/2 - 1 steps, so "
    "rate_i = max_timescale ** (-i / (d_model/2 - 1)). The paper divides by d_model/2 instead, and its last "
    "rate misses 1/max_timescale. Sines of every pair first, then the cosines.",
    "In NumPy:\n"
    "    pairs = d_model // 2\n"
    "    rates = max_timescale ** (-np.arange(pairs) / max(pairs - 1, 1))\n"
    "    angles = np.arange(n)[:, None] * rates\n"
    "    return np.concatenate([np.sin(angles), np.cos(angles)], axis=1)",
)


def check_timing_signal(function, *, hint=0):
    """Grade `function(n, d_model, max_timescale=1e4) -> (n, d_model)`, tensor2tensor's variant (even d_model).

    hint: 0 for the verdict alone, 1..3 for more and more direct hints (3: the code).
    """
    shown = hint_level(hint, _TIMING_HINTS)
    return with_hints(_check_timing_signal(function), _TIMING_HINTS, shown)


def _check_timing_signal(function):
    exercise = "timing signal"
    for n, d_model, max_timescale in ((50, 16, 1e4), (9, 6, 1e4), (1, 4, 1e4), (120, 8, 100.0), (97, 64, 1e4)):
        value, failure = run_safely(exercise, function, n, d_model, max_timescale)
        if failure is not None:
            return failure
        table, positions = as_numbers(value), np.arange(n)
        where = f"timing_signal({n}, {d_model}, {max_timescale:g})"
        if table is None or table.shape != (n, d_model):
            got = "no numbers" if table is None else f"shape {table.shape}"
            return Feedback(exercise, False, f"{where} must return shape ({n}, {d_model}), got {got}")
        reference, tolerance = _timing_signal(positions, d_model, max_timescale), tolerance_for(value)
        if np.allclose(table, reference, atol=tolerance, rtol=0):
            continue
        pairs = d_model // 2
        last = f"exactly 1/max_timescale = {1 / max_timescale:.3g}"
        mistakes = (
            (
                _timing_signal(positions, d_model, max_timescale, steps=pairs),
                f"{where}: your rates follow the paper, max_timescale**(-2i/d_model); the last pair should turn at "
                f"{last} rad per position, yours at {max_timescale ** (-(pairs - 1) / pairs):.3g}",
                ("How many steps lie between the first rate and the last, for d_model/2 rates?",),
            ),
            (
                _timing_signal(positions, d_model, 1e4) if max_timescale != 1e4 else None,
                f"{where}: your rates ignore max_timescale (you used 10000)",
                ("Which argument sets the slowest rate?",),
            ),
            (
                _timing_signal(positions, d_model, max_timescale, layout="interleaved"),
                f"{where}: you interleaved sin and cos (the paper's layout); tensor2tensor puts every sine first",
                ("Look at row 0: where should its zeros (the sines of angle 0) be?",),
            ),
            (
                _timing_signal(positions, d_model, max_timescale, swap=True),
                f"{where}: the halves are swapped: row 0 should start with zeros (the sines) and end with ones",
                ("sin 0 = 0 and cos 0 = 1: which half does row 0 start with?",),
            ),
        )
        for mistake, symptom, hints in mistakes:
            if mistake is not None and np.allclose(table, mistake, atol=tolerance, rtol=0):
                return Feedback(exercise, False, symptom, hints)
        if not np.any(table):
            return Feedback(exercise, False, f"{where} returned only zeros")
        row, column = np.argwhere(np.abs(table - reference) > tolerance)[0]
        return Feedback(
            exercise,
            False,
            f"{where}: first wrong value at position {row}, column {column}: expected "
            f"{reference[row, column]:.4f}, got {table[row, column]:.4f}",
        )
    return Feedback(
        exercise,
        True,
        "your table matches tensor2tensor's timing signal: the last pair turns at exactly 1/max_timescale",
    )
