"""Notebook 06 (the embedding pipeline): plots, explorers and exercise checkers added for it."""

import math

import ipywidgets
import matplotlib
import numpy as np
import pytest
import torch
from test_figures import text_problems
from torch import nn

import pe_lib
from pe_lib import analysis, figures
from pe_lib import ch06_pipeline as ch06
from pe_lib.explorer import Explorer


def _labelled(ax):
    return ax.get_title() and ax.get_xlabel() and ax.get_ylabel()


# --- plots -------------------------------------------------------------------------------


def test_heatmap_row_shares_one_symmetric_colour_scale():
    panels = {"a": np.array([[1.0, -2.0], [0.5, 0.0]]), "b": np.array([[3.0, 0.0], [0.0, 0.0]])}
    fig = ch06.heatmap_row(panels, title="stages", row_labels=["x", "y"])
    image_axes = [ax for ax in fig.axes if ax.images]
    assert len(image_axes) == 2 and len(fig.axes) == 3  # two panels and one colour bar
    for ax in image_axes:
        assert ax.images[0].get_clim() == (-3.0, 3.0)
    assert [ax.get_title() for ax in image_axes] == ["a", "b"]
    assert [t.get_text() for t in image_axes[0].get_yticklabels()] == ["x", "y"]
    assert fig._suptitle.get_text() == "stages"


def test_heatmap_row_needs_a_panel():
    with pytest.raises(ValueError, match="panels"):
        ch06.heatmap_row({}, title="nothing")


def test_norms_versus_d_model_draws_one_labelled_line_per_kind():
    fig = ch06.norms_versus_d_model([16, 64], {"token": [1.0, 1.0], "PE": [2.83, 5.66]})
    ax = fig.axes[0]
    assert len(ax.lines) == 2 and _labelled(ax)
    assert ax.get_xscale() == "log" and ax.get_yscale() == "log"
    assert [line.get_label() for line in ax.lines] == ["token", "PE"]


def test_near_orthogonality_has_histograms_and_angles():
    cosines = {16: np.random.default_rng(0).normal(0, 0.25, 100), 64: np.zeros(10)}
    angles = {16: np.array([30.0, 10.0]), 64: np.array([80.0])}
    fig = ch06.near_orthogonality(cosines, angles)
    left, right = fig.axes
    assert _labelled(left) and _labelled(right)
    assert len(left.patches) == 2  # one step histogram per d_model
    assert list(right.lines[0].get_ydata()) == [10.0, 30.0]  # sorted, smallest first


@pytest.mark.parametrize("lecture", [False, True], ids=["notebook-style", "lecture-style"])
def test_near_orthogonality_titles_fit_side_by_side(lecture):
    rng = np.random.default_rng(0)
    with matplotlib.rc_context():
        figures.use_style(lecture=lecture)
        cosines = {d: rng.normal(0, d**-0.5, 200) for d in (16, 64, 512)}
        angles = {d: rng.uniform(60, 90, 8) for d in (16, 64, 512)}
        assert text_problems(ch06.near_orthogonality(cosines, angles), inside=False) == []


def test_readback_accuracy_plots_both_curves():
    fig = ch06.readback_accuracy([8, 64], [0.2, 1.0], [0.3, 1.0])
    ax = fig.axes[0]
    assert len(ax.lines) == 2 and _labelled(ax)
    assert list(ax.lines[0].get_ydata()) == [0.2, 1.0]


def test_segment_embeddings_shows_rows_and_norms():
    segment = np.array([[3.0, 4.0], [3.0, 5.0]])
    position = np.array([[0.0, 1.0], [0.0, 2.0], [0.0, 4.0]])
    fig = ch06.segment_embeddings(segment, position)
    left, right = fig.axes
    assert _labelled(left) and right.get_title() and right.get_ylabel()
    assert len(left.lines) == 3
    heights = [bar.get_height() for bar in right.patches]
    assert heights == pytest.approx([5.0, math.sqrt(34), 1.0, 7 / 3, 1.5])


# --- widgets -------------------------------------------------------------------------------


def test_norm_share_explorer_updates_its_figure():
    explorer = ch06.NormShareExplorer(d_models=(16, 64, 512), d_model=512)
    assert isinstance(explorer, Explorer)
    assert isinstance(explorer.controls["d_model"], ipywidgets.SelectionSlider)
    before = explorer.update(d_model=512)
    after = explorer.update(d_model=16)
    assert before != after and bytes(after).startswith(b"\x89PNG")
    token, position = explorer.norms(16, analysis.TOKEN_INITS[0], True)
    assert [bar.get_height() for bar in explorer.bars] == pytest.approx([token, position])
    assert position == pytest.approx(math.sqrt(8))
    assert "d_model=16" in explorer.title.get_text()
    assert explorer.update(scale=False) != after


def test_norm_share_explorer_shares():
    explorer = ch06.NormShareExplorer(d_models=(64, 512))
    pe_lib_init, default_init, xavier_init = analysis.TOKEN_INITS
    assert explorer.share(512, pe_lib_init, True) == pytest.approx(1 / 3, abs=0.03)
    assert explorer.share(512, pe_lib_init, False) > 0.99
    assert explorer.share(512, default_init, True) < 0.01
    assert explorer.share(512, default_init, False) == pytest.approx(1 / 3, abs=0.03)
    assert explorer.share(64, xavier_init, True) > 0.9
    explorer.update(init=default_init)
    assert list(explorer.curve.get_ydata()) == pytest.approx([explorer.share(d, default_init, True) for d in (64, 512)])


def _sentence(seq=6, d_model=16):
    return np.random.default_rng(1).normal(size=(seq, d_model)).astype(np.float32)


def test_dropout_explorer_output_is_real_dropout():
    x = _sentence()
    explorer = ch06.DropoutExplorer(x)
    y = explorer.output(0.5)
    kept = y != 0
    assert torch.allclose(y[kept], 2 * torch.from_numpy(x)[kept])
    assert 0.3 < (~kept).float().mean().item() < 0.7
    assert torch.equal(explorer.output(0.0), torch.from_numpy(x))
    assert torch.equal(explorer.output(0.3), explorer.output(0.3))  # fixed seed: the same mask every time


def test_dropout_explorer_leaves_torch_random_state_alone():
    explorer = ch06.DropoutExplorer(_sentence())
    state = torch.get_rng_state()
    explorer.output(0.4)
    explorer.update(p=0.6)
    assert torch.equal(state, torch.get_rng_state())


def test_dropout_explorer_updates_its_figure():
    explorer = ch06.DropoutExplorer(_sentence(), p=0.1)
    assert isinstance(explorer.controls["p"], ipywidgets.FloatSlider)
    before = explorer.update(p=0.1)
    after = explorer.update(p=0.7)
    assert before != after
    assert "p = 0.70" in explorer.title.get_text()
    assert np.array_equal(explorer.heat.get_array(), explorer.output(0.7).numpy())


def test_dropout_explorer_rejects_a_batch():
    with pytest.raises(ValueError, match=r"\(seq, d_model\)"):
        ch06.DropoutExplorer(np.zeros((2, 3, 4)))


# --- exercises: batch-first positional encoding -----------------------------------------------


class SnippetPositionalEncoding(nn.Module):
    """The PyTorch snippet's module (sequence-first table (maxlen, 1, d), sliced by x.size(0))."""

    def __init__(self, emb_size, dropout, maxlen=5000):
        super().__init__()
        den = torch.exp(-torch.arange(0, emb_size, 2) * math.log(10000) / emb_size)
        pos = torch.arange(0, maxlen).reshape(maxlen, 1)
        table = torch.zeros((maxlen, emb_size))
        table[:, 0::2] = torch.sin(pos * den)
        table[:, 1::2] = torch.cos(pos * den)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("pos_embedding", table.unsqueeze(-2))

    def forward(self, x):
        return self.dropout(x + self.pos_embedding[: x.size(0), :])

    def rows(self, x):
        return self.pos_embedding[: x.size(1), 0]


class Fixed(SnippetPositionalEncoding):
    def forward(self, x):
        return self.dropout(x + self.rows(x).unsqueeze(0))


class KeepsLayout(SnippetPositionalEncoding):
    def forward(self, x):
        return x + self.pos_embedding[: x.size(1)]


class Unchanged(SnippetPositionalEncoding):
    def forward(self, x):
        return x


class StartsAtOne(SnippetPositionalEncoding):
    def forward(self, x):
        return x + self.pos_embedding[1 : x.size(1) + 1, 0]


class Swapped(SnippetPositionalEncoding):
    def forward(self, x):
        rows = self.rows(x)
        return x + torch.stack([rows[:, 1::2], rows[:, 0::2]], dim=-1).reshape(rows.shape)


class Concatenated(SnippetPositionalEncoding):
    def forward(self, x):
        rows = self.rows(x)
        return x + torch.cat([rows[:, 0::2], rows[:, 1::2]], dim=-1)


class Scaled(SnippetPositionalEncoding):
    def forward(self, x):
        return x + 2 * self.rows(x)


class Broadcasts(SnippetPositionalEncoding):
    def forward(self, x):
        return x.unsqueeze(0) + self.rows(x)[:, None, None, :][:1]


class ReturnsArray(Fixed):
    def forward(self, x):
        return super().forward(x).numpy()


class NoisyTail(Fixed):
    def forward(self, x):
        out = super().forward(x)
        out[..., -1] += 0.5
        return out


def test_batch_first_checker_passes_correct_modules():
    assert ch06.check_batch_first_positional(Fixed).passed
    assert ch06.check_batch_first_positional(lambda d, p: pe_lib.SinusoidalPositionalEncoding(d, dropout=p))


def test_batch_first_checker_switches_dropout_off():
    feedback = ch06.check_batch_first_positional(lambda d, p: Fixed(d, 0.5))
    assert feedback.passed, feedback  # the checker puts the module in eval mode


@pytest.mark.parametrize(
    ("module_class", "hint"),
    [
        (SnippetPositionalEncoding, "by batch index"),
        (KeepsLayout, "(maxlen, 1, d)"),
        (Unchanged, "no positions were added"),
        (StartsAtOne, "start at 1"),
        (Swapped, "sin and cos columns are swapped"),
        (Concatenated, "concatenated layout"),
        (Scaled, "instead of PE itself"),
        (Broadcasts, "broadcast"),
        (ReturnsArray, "must return a torch tensor"),
        (NoisyTail, "differs from x + PE[:seq]"),
    ],
)
def test_batch_first_checker_names_the_mistake(module_class, hint):
    feedback = ch06.check_batch_first_positional(module_class)
    assert not feedback.passed
    assert hint in feedback.message, feedback.message
    assert str(feedback).startswith("[batch-first positional encoding] Not yet: ")
    assert len(ch06.check_batch_first_positional(module_class, hint=3).hints) == 3


def test_batch_first_checker_reports_a_failing_constructor():
    def broken(emb_size, dropout):
        raise NotImplementedError("write me")

    feedback = ch06.check_batch_first_positional(broken)
    assert not feedback.passed and "NotImplementedError: write me" in feedback.message


# --- exercises: embedding forward ---------------------------------------------------------------


def _pe(seq, d_model):
    return torch.from_numpy(pe_lib.sinusoidal_encoding(seq, d_model)).float()


def correct_embed(ids, table):
    return table[ids] * math.sqrt(table.shape[1]) + _pe(ids.shape[1], table.shape[1])


def test_embedding_checker_passes_the_reference_and_float64():
    assert ch06.check_embedding_forward(correct_embed).passed
    assert ch06.check_embedding_forward(lambda ids, table: correct_embed(ids, table.double())).passed


def _batch_index(ids, table):
    return table[ids] * math.sqrt(table.shape[1]) + _pe(ids.shape[0], table.shape[1])[:, None]


@pytest.mark.parametrize(
    ("function", "hint"),
    [
        (lambda ids, table: table[ids] + _pe(ids.shape[1], table.shape[1]), "forgot to multiply"),
        (lambda ids, table: correct_embed(ids, table) * math.sqrt(table.shape[1]) ** 0, None),
        (
            lambda ids, table: (table[ids] + _pe(ids.shape[1], table.shape[1])) * math.sqrt(table.shape[1]),
            "you scaled the sum",
        ),
        (lambda ids, table: table[ids] * table.shape[1] + _pe(ids.shape[1], table.shape[1]), "multiplied by d_model"),
        (lambda ids, table: table[ids] / math.sqrt(table.shape[1]) + _pe(ids.shape[1], table.shape[1]), "divided"),
        (lambda ids, table: table[ids], "token vectors alone"),
        (lambda ids, table: table[ids] * math.sqrt(table.shape[1]), "no positions were added"),
        (_batch_index, "by batch index"),
        (
            lambda ids, table: table[ids] * math.sqrt(table.shape[1]) + _pe(ids.shape[1] + 1, table.shape[1])[1:],
            "start at 1",
        ),
        (lambda ids, table: correct_embed(ids, table)[0], "expected (2, 6, 16)"),
        (lambda ids, table: correct_embed(ids, table).tolist(), "return a torch tensor"),
        (lambda ids, table: correct_embed(ids, table) + 0.1, "differs from the reference by up to 0.1"),
    ],
)
def test_embedding_checker_names_the_mistake(function, hint):
    feedback = ch06.check_embedding_forward(function)
    if hint is None:  # multiplying by 1 changes nothing: still correct
        assert feedback.passed
        return
    assert not feedback.passed
    assert hint in feedback.message, feedback.message
    assert len(ch06.check_embedding_forward(function, hint=3).hints) == 3


@pytest.mark.parametrize(
    ("check", "answer", "level", "fix"),
    [
        (ch06.check_batch_first_positional, SnippetPositionalEncoding, 2, "token_embedding.size(1)"),
        (ch06.check_batch_first_positional, SnippetPositionalEncoding, 3, ".unsqueeze(0))"),
        (ch06.check_batch_first_positional, KeepsLayout, 2, "(1, seq, d)"),
        (ch06.check_batch_first_positional, Broadcasts, 2, "slicing by x.size(1)"),
        (ch06.check_batch_first_positional, Scaled, 1, "unscaled"),
        (ch06.check_embedding_forward, lambda ids, table: table[ids], 2, "by sqrt(d_model)"),
        (ch06.check_embedding_forward, lambda ids, table: table[ids], 3, "math.sqrt(d_model) + pe"),
        (
            ch06.check_embedding_forward,
            lambda ids, table: (table[ids] + _pe(ids.shape[1], table.shape[1])) * math.sqrt(table.shape[1]),
            1,
            "Which part does the scale belong to",
        ),
        (ch06.check_embedding_forward, _batch_index, 1, "along which axis"),
    ],
)
def test_the_fix_of_a_mistake_waits_for_its_hint_tier(check, answer, level, fix):
    for below in range(level):
        assert fix not in str(check(answer, hint=below))
    assert fix in str(check(answer, hint=level))


def test_embedding_checker_reports_an_exception():
    def stub(ids, table):
        raise NotImplementedError("scale and add positions")

    feedback = ch06.check_embedding_forward(stub)
    assert not feedback.passed and "NotImplementedError: scale and add positions" in feedback.message


def test_embedding_checker_leaves_torch_random_state_alone():
    state = torch.get_rng_state()
    ch06.check_embedding_forward(correct_embed)
    ch06.check_batch_first_positional(Fixed)
    assert torch.equal(state, torch.get_rng_state())
