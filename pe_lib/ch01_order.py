"""The order problem: self-attention is permutation-equivariant (used in notebook 01).

Its figures, its explorers and the graders of its exercises.
"""

import weakref

import ipywidgets as widgets
import matplotlib.pyplot as plt
import numpy as np

from . import _validate, attention, encodings
from .explorer import Explorer
from .figures import floats, style_figsize
from .grading import Feedback, as_numbers, hint_level, run_safely, with_hints
from .text import measured

_SLANTED = {"rotation": 45, "ha": "right", "rotation_mode": "anchor"}  # x tick labels: words side by side


def _word_ticks(ax, rows, cols=None):
    """Label the rows (and columns) of an image with words, one tick per cell."""
    ax.set_yticks(range(len(rows)), labels=list(rows))
    if cols is not None:
        ax.set_xticks(range(len(cols)), labels=list(cols), **_SLANTED)


def attention_heatmap(weights, tokens, *, title, keys=None, ax=None, annotate=True, vmax=1.0):
    """Attention weights, shape (queries, keys), with the words as tick labels; each row sums to 1.

    Row i is where query word i looks; colour is the weight (0..vmax) of each key word.
    """
    weights = floats(weights)
    keys = list(tokens if keys is None else keys)
    if weights.ndim != 2 or weights.shape != (len(tokens), len(keys)):
        raise ValueError(
            f"weights must have shape (len(tokens), len(keys)) = ({len(tokens)}, {len(keys)}), got {weights.shape}"
        )
    if ax is None:
        fig, ax = plt.subplots(figsize=style_figsize(5.5, 4.5))
        fig.subplots_adjust(left=0.22, right=0.95, bottom=0.2, top=0.92)  # fixed: no layout engine (faster)
    fig = ax.figure
    image = ax.imshow(weights, vmin=0.0, vmax=vmax, cmap="viridis", interpolation="nearest")
    fig.colorbar(image, ax=ax, label="attention weight")
    _word_ticks(ax, tokens, keys)
    ax.set(title=title, xlabel="key (word attended to)", ylabel="query (word attending)")
    ax.grid(False)
    if annotate:
        for (row, col), value in np.ndenumerate(weights):
            colour = "black" if value > 0.6 * vmax else "white"
            ax.text(col, row, f"{value:.2f}", ha="center", va="center", fontsize="small", color=colour)
    return fig


def permutation_panels(x, y, x_perm, y_perm, tokens, tokens_perm, *, name="attention", figsize=(9.0, 5.0)):
    """Equivariance at a glance: X and f(X) on top, PX and f(PX) below, rows labelled by word.

    Shared colour scales per column, so a row that keeps its colours has kept its values.
    """
    arrays = [floats(a) for a in (x, y, x_perm, y_perm)]
    rows = (tokens, tokens, tokens_perm, tokens_perm)
    for label, array, words in zip(("x", "y", "x_perm", "y_perm"), arrays, rows, strict=True):
        if array.ndim != 2 or array.shape[0] != len(words):
            raise ValueError(f"{label} must have one row per word ({len(words)}), got shape {array.shape}")
    # Constrained layout: the long right-hand title must not run under the colour bar, in either style.
    fig, axes = plt.subplots(2, 2, figsize=style_figsize(*figsize), sharex="col", layout="constrained")
    titles = [
        ("input X", f"{name}(X)"),
        ("P X (rows reordered)", f"{name}(P X)  =  P {name}(X)"),
    ]
    for col, label in enumerate(("embedding value", "output value")):
        pair = (arrays[col], arrays[col + 2])
        limit = max(float(np.max(np.abs(a))) for a in pair) or 1.0
        for row, (array, words) in enumerate(zip(pair, (tokens, tokens_perm), strict=True)):
            ax = axes[row, col]
            image = ax.imshow(array, vmin=-limit, vmax=limit, cmap="RdBu_r", aspect="auto", interpolation="nearest")
            _word_ticks(ax, words)
            ax.set(title=titles[row][col], xlabel="dimension" if row == 1 else "")
            ax.grid(False)
        fig.colorbar(image, ax=axes[:, col], label=label)
    fig.suptitle("Permute the input rows and the output rows move with them")
    return fig


def _sentence_words(text, max_words):
    """Lower-case words of a typed sentence (punctuation dropped), at most max_words of them."""
    words = [word.strip(".,;:!?\"'()").lower() for word in str(text).split()]
    return [word for word in words if word][:max_words]


_LABEL_CHARACTERS = 10  # a longer typed word is cut on the figure's axes (the full word is still used)


def _label(word):
    """A word as a tick label: at most _LABEL_CHARACTERS characters, cut with an ellipsis."""
    return word if len(word) <= _LABEL_CHARACTERS else word[: _LABEL_CHARACTERS - 1] + "…"


def _following_the_sentence(explorer_ref):
    """A sentence-box callback: the rotate slider offers 0 .. n-1 for a sentence of n words (no re-render)."""

    def on_change(change):
        explorer = explorer_ref()
        if explorer is not None and not explorer.closed:
            explorer._fit_rotate_slider(change["new"])

    return on_change


def notebook_setup():
    """What notebook 01 gives the order explorer: (embeddings, w_q, w_k, w_v, sentences).

    A 7-word vocabulary with random 8-dimensional embeddings and random attention weights (seed 0).
    """
    rng = np.random.default_rng(0)
    vocab = ["the", "dog", "bit", "man", "lion", "kills", "tiger"]
    embeddings = dict(zip(vocab, rng.normal(size=(len(vocab), 8)), strict=True))
    w_q, w_k, w_v = (rng.normal(scale=0.5, size=(8, 8)) for _ in range(3))
    sentences = ["the dog bit the man", "the man bit the dog", "Lion kills Tiger", "Tiger kills Lion"]
    return embeddings, w_q, w_k, w_v, sentences


class OrderExplorer(Explorer):
    """Type or pick a sentence, reorder it, fade positional encoding in: what does attention see?

    Left: attention weights of the reordered sentence from word embeddings alone; middle: the
    same with `pe_strength * sinusoidal_encoding` added to the embeddings; right: for each word,
    how far its output vector moved compared with the sentence before reordering (with the
    current positional-encoding strength). Without positions every bar is zero: attention
    gives each word the same output whatever the order.

    embeddings: dict word -> vector (d_model,); words not in it get a fixed pseudo-random
    vector of the same scale (so any typed sentence works). w_q, w_k: (d_model, d_k);
    w_v: (d_model, d_v). `state` holds the numbers behind the current figure.
    """

    def __init__(
        self, embeddings=None, w_q=None, w_k=None, w_v=None, *, sentences=None, max_words=8, rotate=2, pe_strength=0.0
    ):
        given = {"embeddings": embeddings, "w_q": w_q, "w_k": w_k, "w_v": w_v, "sentences": sentences}
        if all(value is None for value in given.values()):
            embeddings, w_q, w_k, w_v, sentences = notebook_setup()
        missing = [name for name, value in given.items() if value is None]
        if 0 < len(missing) < len(given):
            raise TypeError(
                f"{', '.join(missing)} missing: pass embeddings, w_q, w_k, w_v and sentences together, "
                "or none of them for the notebook's"
            )
        if isinstance(sentences, str) or not sentences:
            raise ValueError(f"sentences must be a list of at least one sentence to start from, got {sentences!r}")
        for sentence in sentences:
            if not isinstance(sentence, str) or not _sentence_words(sentence, 1):
                raise ValueError(f"every sentence must hold at least one word, got {sentence!r}")
        if not isinstance(embeddings, dict) or not embeddings:
            raise ValueError(f"embeddings must be a dict word -> vector with at least one word, got {embeddings!r}")
        self.max_words = _validate.int_in_range("max_words", max_words, 2, 12)
        rotate = _validate.int_in_range("rotate", rotate, 0, self.max_words - 1)
        first = len(_sentence_words(sentences[0], self.max_words))
        rotate %= first  # the same rotation: the slider offers 0 .. n-1 for n words
        pe_strength = _validate.fraction("pe_strength", pe_strength)
        self.embeddings = {
            str(word).lower(): _validate.real_array(f"embeddings[{word!r}]", vector, ndim=1)
            for word, vector in embeddings.items()
        }
        shapes = {vector.shape for vector in self.embeddings.values()}
        if len(shapes) != 1 or len(next(iter(shapes))) != 1:
            raise ValueError(f"embeddings must map words to 1-D vectors of one length, got shapes {sorted(shapes)}")
        self.d_model = next(iter(shapes))[0]
        self.scale = float(np.std(np.stack(list(self.embeddings.values()))))
        self.weights = tuple(
            _validate.real_array(name, w, ndim=2) for name, w in (("w_q", w_q), ("w_k", w_k), ("w_v", w_v))
        )
        # The weights must fit the embeddings: check once here, not in every slider callback.
        attention.self_attention(np.zeros((1, self.d_model)), *self.weights)
        self.state = {}
        self._words, self._shown = None, None  # the words on the bars' and on the heatmaps' axes
        figure = plt.figure(figsize=style_figsize(11.0, 3.6), layout="constrained")
        grid = figure.add_gridspec(1, 3, width_ratios=[1, 1.2, 1.4])
        self.axes = [figure.add_subplot(grid[0, i]) for i in range(3)]
        self.images = []
        for ax in self.axes[:2]:
            image = ax.imshow(np.zeros((2, 2)), vmin=0.0, vmax=1.0, cmap="viridis", interpolation="nearest")
            ax.set(xlabel="key (word attended to)")
            ax.grid(False)
            self.images.append(image)
        self.axes[0].set_title("attention: words only")
        colorbar = figure.colorbar(self.images[1], ax=self.axes[1], label="attention weight")
        colorbar.locator = plt.MaxNLocator(4)
        self.axes[0].set_ylabel("query (word attending)")
        self.bars = self.axes[2].bar(range(self.max_words), np.zeros(self.max_words), color="tab:orange")
        self.axes[2].set(ylabel="|output - output before|", xlabel="word (original order)")
        # Up to 5 ticks whatever the panel's size: the room kept for their labels holds when the layout changes.
        self.axes[2].yaxis.set_major_locator(plt.MaxNLocator(5, steps=[1, 2, 2.5, 5, 10]))
        self.note = self.axes[2].text(
            0.98, 0.97, "", transform=self.axes[2].transAxes, ha="right", va="top", fontsize="small"
        )
        controls = {
            "sentence": widgets.Combobox(
                value=sentences[0],
                options=list(sentences),
                ensure_option=False,
                continuous_update=False,
                description="sentence",
                placeholder="type words, e.g. the dog bit the man",
            ),
            "rotate": widgets.IntSlider(value=rotate, min=0, max=first - 1, description="rotate by"),
            "pe_strength": widgets.FloatSlider(
                value=pe_strength, min=0.0, max=1.0, step=0.05, description="PE strength", readout_format=".2f"
            ),
        }
        self._last_words = _sentence_words(sentences[0], self.max_words)
        # Registered before the explorer's own callback: the slider's range is right when the figure is drawn.
        controls["sentence"].observe(_following_the_sentence(weakref.ref(self)), names="value")
        super().__init__(figure, controls)

    def layout_values(self):
        # The offered sentences in every order: their words on the axes, the bars' range. A typed
        # sentence whose words need more room gets a new layout when it is first shown.
        return [
            {"sentence": sentence, "rotate": rotate}
            for sentence in self.controls["sentence"].options
            for rotate in range(len(_sentence_words(sentence, self.max_words)))
        ]

    def _fit_rotate_slider(self, sentence):
        """Let the rotate slider offer 0 .. n-1 for the n words of `sentence` (no render: the caller renders)."""
        words = _sentence_words(sentence, self.max_words) or self._last_words
        slider = self.controls["rotate"]
        holding, self._holding = self._holding, True  # a value clamped to the new range renders nothing yet
        try:
            slider.max = len(words) - 1
        finally:
            self._holding = holding

    def vector(self, word):
        """The embedding of a word; unknown words get a fixed vector seeded by the word itself."""
        if word not in self.embeddings:
            rng = np.random.default_rng(list(word.encode("utf-8")))  # the word's bytes seed its vector
            self.embeddings[word] = rng.normal(scale=self.scale, size=self.d_model)
        return self.embeddings[word]

    def compute(self, words, rotate, pe_strength):
        """Attention weights and per-word output shifts for `words` moved left by `rotate` places."""
        n = len(words)
        order = np.roll(np.arange(n), -(rotate % n))  # new position j holds the word from order[j]
        x = np.stack([self.vector(word) for word in words])
        positions = pe_strength * encodings.sinusoidal_encoding(n, self.d_model)
        before, _ = attention.self_attention(x + positions, *self.weights)
        _, weights_plain = attention.self_attention(x[order], *self.weights)
        after, weights_pe = attention.self_attention(x[order] + positions, *self.weights)
        shift = np.zeros(n)
        shift[order] = np.linalg.norm(after - before[order], axis=1)  # back to the original word order
        return {
            "words": list(words),
            "order": order,
            "shown": [words[i] for i in order],
            "weights_plain": weights_plain,
            "weights_pe": weights_pe,
            "shift": shift,
        }

    def largest_shift(self, words):
        """The largest output change over every rotation and every PE strength the slider offers.

        The bar panel's y axis is fixed to it for the whole sentence, so the bars visibly grow
        as positions fade in (an axis that followed the bars would hide that).
        """
        strengths = np.linspace(0.0, 1.0, 21)  # the slider's steps of 0.05
        return max(
            float(self.compute(words, rotate, strength)["shift"].max())
            for rotate in range(len(words))
            for strength in strengths
        )

    def draw(self, sentence, rotate, pe_strength):
        words = _sentence_words(sentence, self.max_words)
        message = ""
        if not words:
            words, message = self._last_words, "type at least one word; showing the last sentence"
        elif len(str(sentence).split()) > self.max_words:
            message = f"only the first {self.max_words} words are used"
        self._last_words = words
        state = self.compute(words, rotate, pe_strength)
        self.state = state
        n, shown = len(words), state["shown"]
        if words != self._words:  # a new sentence: the bars' words and their y range, fixed from now on
            self._words = words
            ax = self.axes[2]
            ax.set_xlim(-0.5, n - 0.5)
            ax.set_xticks(range(n), labels=[_label(word) for word in words], **_SLANTED)
            ax.set_ylim(0.0, max(1.0, 1.15 * self.largest_shift(words)))
        if shown != self._shown:  # the words moved: new tick labels on the heatmaps
            self._shown = shown
            labels = [_label(word) for word in shown]
            for ax in self.axes[:2]:
                ax.set_xlim(-0.5, n - 0.5)
                ax.set_ylim(n - 0.5, -0.5)
                _word_ticks(ax, labels, labels)
            self.axes[1].tick_params(labelleft=False)  # same rows as the left panel
            self.axes[2].set_title(f"output change, rotated by {rotate % n}")
        for image, key in zip(self.images, ("weights_plain", "weights_pe"), strict=True):
            image.set_data(state[key])  # on the fixed scale 0..1 of a weight
            image.set_extent((-0.5, n - 0.5, n - 0.5, -0.5))
        self.axes[1].set_title(f"attention: words + {pe_strength:.2f} x PE")
        for index, bar in enumerate(self.bars):
            bar.set_visible(index < n)
            bar.set_height(state["shift"][index] if index < n else 0.0)
        largest = f"largest change {measured(state['shift'].max())}"
        self.note.set_text(f"{largest}\n{message}" if message else largest)
        return tuple(words), tuple(shown)  # the axes' words and ranges: one background per word order

    def animated_artists(self):
        # pe_strength changes only the weights, the middle title, the bars and the note.
        return (*self.images, self.axes[1].title, *self.bars, self.note)


_PERMUTATION_HINTS = (
    "Row i of P @ x is the sum over j of P[i, j] * x[j]. Which single row of x should row i of the "
    "result be, and what must row i of P look like to pick exactly that row?",
    "Row i of P holds one 1 and zeros elsewhere, and the 1 sits in column order[i]. Rows like that are "
    "rows of the identity matrix, taken in a new order.",
    "P[i, order[i]] = 1 for every i and 0 elsewhere: the identity's rows in the given order.\n"
    "    return np.eye(len(order))[order]",
)


def check_permutation_matrix(permutation_matrix, *, hint=0):
    """Grade `permutation_matrix(order) -> P`, the (n, n) matrix with P @ x == x[order].

    Row i of P picks row order[i] of x: P[i, order[i]] = 1, every other entry 0. Orders with
    3-cycles are used, so the transpose (which undoes the permutation) is caught.
    hint: 0 for the verdict alone, 1..3 for more and more direct hints (3: the formula).
    """
    shown = hint_level(hint, _PERMUTATION_HINTS)
    return with_hints(_check_permutation_matrix(permutation_matrix), _PERMUTATION_HINTS, shown)


def _check_permutation_matrix(permutation_matrix):
    exercise = "permutation matrix"
    orders = [[2, 0, 1], [1, 3, 0, 2], [0, 1, 2, 3], [3, 0, 4, 1, 2], [0]]
    x = np.random.default_rng(101).normal(size=(5, 3))
    for order in orders:
        n = len(order)
        value, failure = run_safely(exercise, permutation_matrix, list(order))
        if failure is not None:
            return failure
        matrix = as_numbers(value)
        if matrix is None or matrix.ndim == 0:
            return Feedback(exercise, False, f"return the matrix P as a NumPy array, got {value!r} for order={order}")
        expected = np.eye(n)[order]
        if matrix.shape != (n, n):
            symptom = f"for order={order}, P must have shape ({n}, {n}), got {matrix.shape}"
            if matrix.ndim == 1:
                symptom += " (a 1-D answer is an order, not a matrix)"
            return Feedback(exercise, False, symptom)
        if np.allclose(matrix, expected):
            continue
        if np.allclose(matrix, expected.T):
            return Feedback(
                exercise,
                False,
                f"for order={order} your P is transposed: it sends row i to place order[i], the inverse "
                "permutation, so P @ x is not x[order]",
                (
                    "Row i of P @ x is the row of x that row i of P points at. Should row i of P point at the "
                    "row that goes to place i, or at the place where row i goes?",
                ),
            )
        if np.allclose(matrix, np.eye(n)):
            return Feedback(exercise, False, f"for order={order} you returned the identity: P @ x would be x unchanged")
        binary = np.isin(matrix, (0.0, 1.0)).all()
        if not (binary and (matrix.sum(axis=1) == 1).all() and (matrix.sum(axis=0) == 1).all()):
            return Feedback(
                exercise,
                False,
                f"for order={order} P is not a permutation matrix: every row and every column needs exactly one 1, "
                f"zeros elsewhere",
            )
        moved = (matrix @ x[:n]).round(3)
        return Feedback(
            exercise,
            False,
            f"for order={order} P @ x puts the rows in the wrong order (row 0 of P @ x should be row {order[0]} of "
            f"x; yours has row {int(np.argmax(matrix[0]))} there, {moved[0].tolist()})",
        )
    return Feedback(exercise, True, "P @ x == x[order] for every order tried, including 3-cycles and the identity")


def _equivariance_cases():
    """(name, function, order, expected answer, why) for check_equivariance_test, on fixed inputs."""
    rng = np.random.default_rng(2024)
    n, d = 5, 4
    w_q, w_k, w_v = (rng.normal(scale=0.8, size=(d, d)) for _ in range(3))
    positions = encodings.sinusoidal_encoding(n, d)

    def attend(x):
        return attention.self_attention(x, w_q, w_k, w_v)[0]

    def attend_with_positions(x):
        return attention.self_attention(x + positions, w_q, w_k, w_v)[0]

    def mean_everywhere(x):
        return np.repeat(x.mean(axis=0, keepdims=True), len(x), axis=0)

    def small_ramp(x):  # differs from an equivariant answer by 0.01 to 0.04: too little for atol=1
        return x + 0.01 * np.arange(len(x))[:, None]

    def ramp(x):  # with an order that keeps row 0 in place, row 0 alone looks equivariant
        return x + np.arange(len(x))[:, None]

    def turn_by_place(x):  # each row keeps its length (norm) but turns by an angle set by its place, like RoPE
        return np.stack([row @ encodings.relative_rotation(p, d) for p, row in enumerate(x)])

    cycle, swap, keeps_first = [2, 0, 1, 4, 3], [1, 0, 2, 3, 4], [0, 2, 1, 4, 3]
    return rng.normal(size=(n, d)), [
        ("self-attention", attend, cycle, True, "shuffling the words shuffles its output rows the same way"),
        ("self-attention (a swap)", attend, swap, True, "shuffling the words shuffles its output rows"),
        ("np.tanh", np.tanh, cycle, True, "it acts on each row alone"),
        ("mean of the rows, copied to every row", mean_everywhere, cycle, True, "its rows are all equal and unchanged"),
        ("self-attention after adding positions", attend_with_positions, cycle, False, "positions stay put"),
        ("a running sum (like an RNN)", lambda x: np.cumsum(x, axis=0), cycle, False, "each row sums its prefix"),
        ("row reversal", lambda x: x[::-1], cycle, False, "it moves rows by where they are, not what they hold"),
        ("adding 0.01 x the row's place", small_ramp, cycle, False, "the added 0.01 x place stays with the places"),
        ("adding the row's place, order keeping row 0", ramp, keeps_first, False, "only row 0 stays where it was"),
        ("turning each row by its place", turn_by_place, cycle, False, "the angle goes with the place, not the row"),
    ]


_EQUIVARIANCE_HINTS = (
    "Shuffle the words and self-attention's output rows do not stay where they were: they move. "
    "So what should f(x[order]) be compared with?",
    "Equivariance means the output rows move with the input rows: shuffle the output f(x) by the same "
    "`order` before comparing, and compare the floats up to rounding.",
    "Compare f(x[order]) with f(x)[order], up to rounding:\n    return bool(np.allclose(f(x[order]), f(x)[order]))",
)


def check_equivariance_test(is_permutation_equivariant, *, hint=0):
    """Grade `is_permutation_equivariant(f, x, order) -> bool`: does f(x[order]) equal f(x)[order]?

    The learner's test is run on equivariant functions (self-attention, tanh, a mean copied
    to every row) and on ones that are not (attention with positions, a running sum, row
    reversal). The pattern of answers identifies the usual mistakes: testing invariance
    instead, permuting the other way, and comparing floats with ==.
    hint: 0 for the verdict alone, 1..3 for more and more direct hints (3: the formula).
    """
    shown = hint_level(hint, _EQUIVARIANCE_HINTS)
    return with_hints(_check_equivariance_test(is_permutation_equivariant), _EQUIVARIANCE_HINTS, shown)


def _check_equivariance_test(is_permutation_equivariant):
    exercise = "equivariance test"
    x, cases = _equivariance_cases()
    answers = []
    for name, function, order, _, _ in cases:
        value, failure = run_safely(exercise, is_permutation_equivariant, function, x.copy(), list(order))
        if failure is not None:
            if "IndexError" in failure.message:
                return Feedback(
                    exercise,
                    False,
                    f"{failure.message} - your test reorders the columns of x; order has one entry per row",
                    (
                        "x has shape (n, d) and order has n entries. Which axis does order number, and which "
                        "axis does your indexing reorder?",
                        "x[order] reorders the rows; x[:, order] would reorder the columns.",
                    ),
                )
            return failure
        if not isinstance(value, (bool, np.bool_)):
            return Feedback(
                exercise,
                False,
                f"return a single True or False, got {type(value).__name__} for {name}",
                (
                    "Comparing two arrays with == gives one True or False per entry. How do you turn that "
                    "into one answer for the whole array?",
                    "np.allclose(a, b) compares two whole arrays and answers with one bool.",
                ),
            )
        answers.append(bool(value))
    right = [answer == expected for answer, (_, _, _, expected, _) in zip(answers, cases, strict=True)]
    if all(right):
        return Feedback(
            exercise,
            True,
            "your test says True for self-attention, tanh and a copied mean, and False for attention with "
            "positions, a running sum, row reversal and three near misses (off by 0.01, right in row 0 only, "
            "right in length only)",
        )
    said = dict(zip((case[0] for case in cases), answers, strict=True))
    invariance = not said["self-attention"] and not said["self-attention (a swap)"] and not said["np.tanh"]
    if invariance and said["mean of the rows, copied to every row"]:
        # The stub's mistake: name it (invariance) and what it gets wrong, not the comparison that fixes it.
        return Feedback(
            exercise,
            False,
            "your test compares f(x[order]) with f(x) unshuffled: that is invariance, 'the output does not "
            "change at all'. It says False for self-attention and tanh, yet both are equivariant",
        )
    if not said["self-attention"] and said["self-attention (a swap)"] and not said["np.tanh"]:
        return Feedback(
            exercise,
            False,
            "you permute the rows the other way (or twice): that agrees for a swap but not for a 3-cycle",
            (
                "A swap is its own inverse; a 3-cycle is not. Which side of your comparison uses the inverse "
                "order (np.argsort(order), or indexing twice)?",
                "Use the same index array on both sides: the input rows by x[order], the output rows by [order].",
            ),
        )
    if not said["self-attention"] and said["np.tanh"]:
        return Feedback(
            exercise,
            False,
            "self-attention fails your test only by rounding (~1e-16: its sums run in another order)",
            (
                "Two float computations of the same maths can differ in the last digit. Which comparison "
                "forgives that and nothing more?",
                "Compare floats with np.allclose, not == or np.array_equal.",
            ),
        )
    # Near misses: the test tells clear cases apart but lets one of these through.
    near_miss = not said["row reversal"] and not said["a running sum (like an RNN)"]
    if near_miss and said["adding the row's place, order keeping row 0"] and not said["adding 0.01 x the row's place"]:
        return Feedback(
            exercise,
            False,
            "your test passed a function whose output is right in row 0 only",
            (
                "Does your test stop after the first row, with a `return` inside the loop?",
                "Compare every row: np.allclose on the two whole arrays, no loop needed.",
            ),
        )
    if near_miss and said["turning each row by its place"] and not said["adding 0.01 x the row's place"]:
        return Feedback(
            exercise,
            False,
            "your test passed a function that keeps each row's length but turns its direction: comparing norms "
            "(lengths) is not enough",
            (
                "Two vectors of the same length can point different ways. What must you compare to tell them apart?",
                "Compare the rows themselves, every entry, not their norms.",
            ),
        )
    if near_miss and said["adding 0.01 x the row's place"]:
        return Feedback(
            exercise,
            False,
            "your test passed a function that is off by 0.01 to 0.04: its tolerance is too loose",
            (
                "Rounding makes differences of about 1e-16; a real difference here is 0.01. Which tolerance "
                "tells those apart?",
                "np.allclose with its default tolerances forgives rounding and still catches 0.01.",
            ),
        )
    name, _, order, expected, why = next(case for case, ok in zip(cases, right, strict=True) if not ok)
    return Feedback(
        exercise,
        False,
        f"for {name} with order={order} your test says {not expected}, but it should say {expected}: {why}",
    )
