"""The order problem: self-attention is permutation-equivariant (used in notebook 01).

Its figures and its explorer; the graders of its exercises are in ch01_order_exercises.
"""

import weakref

import ipywidgets as widgets
import matplotlib.pyplot as plt
import numpy as np

from . import _validate, attention, encodings
from .explorer import Explorer
from .figures import COLOURS, floats, order_shift_bars, style_figsize
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


# Notebook 01's models: colour says whether a model has positions (the sinusoid's blue, or the grey of none),
# the hatch says which model it is (figures.COLOURS).
MODEL_HATCHES = {"self-attention": "", "MultiheadAttention": "//", "GRU": ".."}


def model_shift_bars(words, shifts, *, title):
    """figures.order_shift_bars in notebook 01's colours: a label "<model>" or "<model> + PE" (MODEL_HATCHES).

    Models with positions (+ PE) in the sinusoid's colour, models without them in the grey of "no positions";
    each model has its hatch, so colour is not the only cue.
    """
    models = {label: label.removesuffix(" + PE") for label in shifts}
    unknown = sorted(label for label, model in models.items() if model not in MODEL_HATCHES)
    if unknown:
        raise ValueError(
            f"shifts must be labelled by a model in {sorted(MODEL_HATCHES)}, optionally + ' + PE', got {unknown}"
        )
    fig = order_shift_bars(words, shifts, title=title)
    ax = fig.axes[0]
    for container, (label, model) in zip(ax.containers, models.items(), strict=True):
        colour = COLOURS["sinusoidal"] if label.endswith(" + PE") else COLOURS["none"]
        for bar in container:
            bar.set(facecolor=colour, hatch=MODEL_HATCHES[model], edgecolor="white", linewidth=0)
    ax.legend(fontsize="small")  # again: a legend copies its entries' looks when it is made
    return fig


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

    UNCHANGED = 1e-6  # an output change this small is rounding (it reads "< 1e-06"): the output did not change

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
        # What positions change: the sinusoid's colour (figures.COLOURS).
        self.bars = self.axes[2].bar(range(self.max_words), np.zeros(self.max_words), color=COLOURS["sinusoidal"])
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

    def finding(self):
        state, values = self.state, self.values()
        shift = state["shift"]
        rotate, strength = values["rotate"] % len(state["words"]), values["pe_strength"]
        largest = measured(shift.max())
        sentence = " ".join(state["shown"])
        if rotate == 0:
            return f"'{sentence}', not reordered: no word's output changes (largest change {largest})"
        if strength == 0:
            return (
                f"'{sentence}' (rotated by {rotate}) without positions: the attention weights move with the words "
                f"and no word's output changes (largest change {largest})"
            )
        # A word whose output moved by no more than rounding has not changed (e.g. "the the the", rotated).
        changed = int(np.sum(shift > self.UNCHANGED))
        if changed == shift.size:
            moved = f"every word's output changes (smallest change {measured(shift.min())}, largest {largest})"
        elif changed == 0:
            moved = f"no word's output changes (largest change {largest})"
        else:
            moved = f"{changed} of {shift.size} words' outputs change (largest change {largest})"
        return f"'{sentence}' (rotated by {rotate}) with PE strength {strength:.2f}: {moved}"

    def animated_artists(self):
        # pe_strength changes only the weights, the middle title, the bars and the note.
        return (*self.images, self.axes[1].title, *self.bars, self.note)
