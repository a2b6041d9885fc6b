"""Notebook 06's exercises: the graders in pe_lib/ch06_pipeline_exercises.py, fed right answers and the
mistakes learners make (also: wrong dtypes, a forward without its dropout, widths written into
the code, inf, a scalar, complex numbers, a transposed result).
"""

import math

import pytest
import torch
from torch import nn

import pe_lib
from pe_lib import ch06_pipeline as ch06
from pe_lib import ch06_pipeline_exercises


def test_the_graders_are_importable_from_the_chapter_module():
    assert ch06.check_batch_first_positional is ch06_pipeline_exercises.check_batch_first_positional
    assert ch06.check_embedding_forward is ch06_pipeline_exercises.check_embedding_forward


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
    class Built(Fixed):
        def __init__(self, emb_size, dropout):
            super().__init__(emb_size, dropout)
            self.train()  # a module starts in train mode; the checker puts it in eval mode for the eval cases

    feedback = ch06.check_batch_first_positional(Built)
    assert feedback.passed, feedback


# --- dropout at every rate, in both modes (issue 28: eval was judged at p = 0 only, train at p = 0.5 only) ----


class FunctionalDropoutAlways(Fixed):
    def forward(self, x):  # F.dropout's training flag defaults to True: it drops in eval mode too
        return nn.functional.dropout(x + self.rows(x).unsqueeze(0), self.dropout.p)


class FunctionalDropoutOwnFlag(Fixed):
    def forward(self, x):
        return nn.functional.dropout(x + self.rows(x).unsqueeze(0), self.dropout.p, training=True)


class DefaultRate(Fixed):
    def __init__(self, emb_size, dropout, maxlen=5000):
        super().__init__(emb_size, dropout, maxlen)
        self.dropout = nn.Dropout()  # PyTorch's default p = 0.5, whatever the argument


class TutorialRate(Fixed):
    def __init__(self, emb_size, dropout, maxlen=5000):
        super().__init__(emb_size, 0.1, maxlen)  # the tutorials' 0.1 written in


class HalfTheRate(Fixed):
    def __init__(self, emb_size, dropout, maxlen=5000):
        super().__init__(emb_size, dropout / 2, maxlen)


class KeepsTheRate(Fixed):  # drops a share 1 - p: keeps and drops swapped
    def __init__(self, emb_size, dropout, maxlen=5000):
        super().__init__(emb_size, 1 - dropout if dropout else 0.0, maxlen)


class NoRescale(Fixed):  # drops at the right rate, never divides by 1 - p
    def forward(self, x):
        full = x + self.rows(x).unsqueeze(0)
        return full * (self.dropout(torch.ones_like(full)) != 0) if self.training else full


@pytest.mark.parametrize(
    ("module_class", "symptom"),
    [
        (FunctionalDropoutAlways, "in eval mode (module.eval()), your output is not x + PE[:seq]: "),
        (FunctionalDropoutOwnFlag, "in eval mode"),
        (DefaultRate, "built with dropout=0 and in train mode, the output is not dropout of x + PE[:seq] at that rate"),
        (TutorialRate, "built with dropout=0 and in train mode"),
        (HalfTheRate, "built with dropout=0.2 and in train mode"),
        (KeepsTheRate, "built with dropout=0.2 and in train mode"),
        (NoRescale, "built with dropout=0.2 and in train mode, the output is not dropout of x + PE[:seq] at that "
         "rate: the entries not dropped are not all (x + PE) / (1 - p) = (x + PE) / 0.8"),
    ],
)  # fmt: skip
def test_batch_first_checker_judges_dropout_at_every_rate_in_both_modes(module_class, symptom):
    feedback = ch06.check_batch_first_positional(module_class)
    assert not feedback.passed and symptom in feedback.message, feedback.message
    assert len(ch06.check_batch_first_positional(module_class, hint=3).hints) == 3


def test_the_dropout_rates_tried_tell_each_one_from_the_default_and_from_none():
    assert 0.0 in ch06_pipeline_exercises._TRAIN_DROPOUTS and 0.5 not in ch06_pipeline_exercises._TRAIN_DROPOUTS
    assert 0 < ch06_pipeline_exercises._EVAL_DROPOUT != 0.5
    # a fair draw of 3,072 entries stays within 0.05 of p at every rate tried (more than 6 standard deviations)
    for p in ch06_pipeline_exercises._TRAIN_DROPOUTS:
        assert 0.05 >= 6 * (p * (1 - p) / (8 * 32 * 12)) ** 0.5


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


# --- the classes of wrong answers that once got "Correct" (issue 21) ---------------------------


class WithoutDropout(SnippetPositionalEncoding):
    def forward(self, x):
        return x + self.rows(x).unsqueeze(0)  # right in eval mode; self.dropout never runs


class DropoutOfTheTokensOnly(SnippetPositionalEncoding):
    def forward(self, x):
        return self.dropout(x) + self.rows(x).unsqueeze(0)


class OwnDropoutRate(Fixed):
    def __init__(self, emb_size, dropout, maxlen=5000):
        super().__init__(emb_size, 0.1, maxlen)  # ignores the rate it is given


class WidthWrittenIn(Fixed):
    def forward(self, x):
        return self.dropout(x + self.rows(x).reshape(1, x.size(1), 12))


class ReturnsHalf(Fixed):
    def forward(self, x):
        return super().forward(x).half()


class ReturnsComplex(Fixed):
    def forward(self, x):
        return super().forward(x).to(torch.complex64)


class ReturnsInf(Fixed):
    def forward(self, x):
        return super().forward(x) * math.inf


class ReturnsScalar(Fixed):
    def forward(self, x):
        return torch.tensor(1.0)


class ReturnsTransposed(Fixed):
    def forward(self, x):
        return super().forward(x).transpose(0, 1)


@pytest.mark.parametrize(
    ("module_class", "symptom"),
    [
        (WithoutDropout, "skips the dropout"),
        (DropoutOfTheTokensOnly, "not dropout of x + PE[:seq]"),
        (OwnDropoutRate, "not dropout of x + PE[:seq] at that rate"),
        (WidthWrittenIn, "RuntimeError"),
        (ReturnsHalf, "torch.float16"),
        (ReturnsComplex, "torch.complex64"),
        (ReturnsInf, "inf or nan"),
        (ReturnsScalar, "has shape ()"),
        (ReturnsTransposed, "has shape (5, 3, 12)"),
    ],
)
def test_batch_first_checker_fails_what_once_passed_or_crashed(module_class, symptom):
    feedback = ch06.check_batch_first_positional(module_class)
    assert not feedback.passed, feedback
    assert symptom in feedback.message, feedback.message
    assert "unsqueeze(0)" not in feedback.message and "size(1)" not in feedback.message  # never the answer


def test_batch_first_checker_passes_faithful_float64_and_functional_dropout():
    class Float64(Fixed):
        def forward(self, x):
            return super().forward(x.double())

    class Functional(Fixed):
        def forward(self, x):
            p = self.dropout.p
            return nn.functional.dropout(x + self.rows(x).unsqueeze(0), p, training=self.training)

    assert ch06.check_batch_first_positional(Float64).passed
    assert ch06.check_batch_first_positional(Functional).passed


def _hard_coded_width(ids, table):
    return table[ids] * 4.0 + _pe(ids.shape[1], 16)  # sqrt(16) and d_model 16 written in


@pytest.mark.parametrize(
    ("function", "symptom"),
    [
        (_hard_coded_width, "RuntimeError"),
        (lambda ids, table: correct_embed(ids, table).half(), "torch.float16"),
        (lambda ids, table: correct_embed(ids, table).bfloat16(), "torch.bfloat16"),
        (lambda ids, table: correct_embed(ids, table).to(torch.complex64), "torch.complex64"),
        (lambda ids, table: correct_embed(ids, table).round().long(), "torch.int64"),
        (lambda ids, table: correct_embed(ids, table) * math.inf, "inf or nan"),
        (lambda ids, table: torch.tensor(0.5), "has shape ()"),
        (lambda ids, table: 0.5, "got float"),
        (lambda ids, table: [["0.5"] * table.shape[1]] * ids.shape[1], "got list"),
        (lambda ids, table: correct_embed(ids, table).transpose(0, 1), "has shape (6, 2, 16)"),
        (lambda ids, table: correct_embed(ids, table)[:, torch.arange(ids.shape[1]).flip(0)], "differs"),
        (lambda ids, table: table[ids - 1] * math.sqrt(table.shape[1]) + _pe(ids.shape[1], table.shape[1]), "differs"),
    ],
)
def test_embedding_checker_fails_what_once_passed_or_crashed(function, symptom):
    feedback = ch06.check_embedding_forward(function)
    assert not feedback.passed, feedback
    assert symptom in feedback.message, feedback.message
    assert "math.sqrt" not in feedback.message and "sinusoidal_encoding(" not in feedback.message


def test_embedding_checker_tries_two_widths_a_single_position_and_the_ends_of_the_table():
    seen = []

    def recording(ids, table):
        seen.append((tuple(ids.shape), table.shape[1], int(ids.min()), int(ids.max()), table.shape[0]))
        return correct_embed(ids, table)

    assert ch06.check_embedding_forward(recording).passed
    assert {width for _, width, *_ in seen} == {16, 10}
    assert any(shape[1] == 1 for shape, *_ in seen) and any(shape[0] != shape[1] for shape, *_ in seen)
    assert all(low == 0 and high == vocab - 1 for _, _, low, high, vocab in seen)
