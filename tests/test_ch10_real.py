"""Notebook 10, section 6 (pe_lib.ch10_real): the three bugs measured on a tiny random Llama, the table, the figure."""

import matplotlib
import pytest
import torch

from pe_lib import accessible, llama
from pe_lib import ch10_real as ch10
from pe_lib.colours import figure_problems

CONFIG = llama.LlamaConfig(vocab_size=97, dim=64, n_layers=2, n_heads=4, n_kv_heads=2, hidden_dim=96, rope_base=1e4)


@pytest.fixture(scope="module")
def model():
    torch.manual_seed(0)
    model = llama.Llama(CONFIG)
    for p in model.parameters():
        torch.nn.init.normal_(p, std=0.3 if p.dim() == 2 else 1.0)  # large enough that positions matter
        if p.dim() == 1:
            p.data = 1 + 0.1 * p.data
    return model.eval().requires_grad_(False)


def _tokens(n, seed):
    return torch.randint(1, CONFIG.vocab_size, (n,), generator=torch.Generator().manual_seed(seed))


def test_left_padded_pads_on_the_left_with_its_mask():
    ids, mask = ch10.left_padded([torch.tensor([5, 6, 7]), torch.tensor([8, 9])], pad_id=0)
    assert ids.tolist() == [[5, 6, 7], [0, 8, 9]] and mask.tolist() == [[1, 1, 1], [0, 1, 1]]
    assert mask.dtype == torch.int64


def test_padding_bug_the_mask_is_what_matters_for_rope(model):
    runs = ch10.padding_bug(model, [_tokens(20, 1), _tokens(12, 2), _tokens(5, 3)], pad_id=0)
    assert list(runs) == [
        "each row alone",
        "no attention_mask",
        "attention_mask, positions 0..n-1",
        "attention_mask + position_ids",
    ]
    alone = runs["each row alone"]
    assert alone.off == 0 and alone.changed == 0
    assert not runs["no attention_mask"].same and runs["no attention_mask"].changed > 0
    assert runs["attention_mask, positions 0..n-1"].same  # a shift: RoPE sees only distances
    assert runs["attention_mask + position_ids"].same
    assert abs(runs["attention_mask + position_ids"].loss - alone.loss) < 1e-4


def test_bfloat16_angles_are_not_exact_under_a_shift(model):
    rows = [_tokens(20, 1), _tokens(12, 2)]
    assert ch10.bfloat16_shift(model, rows, pad_id=0) > 1e-3
    assert ch10.bfloat16_shift(model, [_tokens(20, 1), _tokens(20, 2)], pad_id=0) == 0  # no padding: no shift


def test_packing_bug_only_a_document_mask_keeps_documents_apart(model):
    runs = ch10.packing_bug(model, _tokens(16, 4), _tokens(12, 5))
    assert list(runs) == list(ch10.PACKING_RUNS)
    assert runs["the document alone"].off == 0
    assert runs["resets, no mask, no cache"].same and runs["document mask, positions run on"].same
    assert not runs["neither"].same and not runs["resets + a cache or a mask of ones"].same
    assert set(ch10.TRANSFORMERS_PACKING.values()) == set(ch10.PACKING_RUNS)  # every run has its transformers call


def test_transformers_table_names_each_call():
    runs = {"model(second)": ch10.Run(3.1, 0.0, 0.0), "model(ids, position_ids=resets)": ch10.Run(5.6, 30.3, 0.74)}
    lines = ch10.transformers_table(runs).splitlines()
    assert "transformers" in lines[0] and lines[1].endswith("model(second)") and "< 0.001" in lines[1]
    assert "30.3" in lines[2] and "74%" in lines[2] and lines[2].endswith("model(ids, position_ids=resets)")


@pytest.mark.slow
def test_the_packing_record_is_what_pe_lib_computes_on_its_tokens():
    """The record notebook 10 prints (transformers, measured) against pe_lib's runs on the record's own tokens."""
    from pe_lib import smollm

    recorded, record = ch10.recorded_packing()
    assert record["transformers"] == transformers_version() and len(record["first"]) == len(record["second"]) == 96
    assert set(recorded) == set(ch10.TRANSFORMERS_PACKING)
    real, _ = smollm.load()
    ours = ch10.packing_bug(real, torch.tensor(record["first"]), torch.tensor(record["second"]))
    for call, run in recorded.items():
        mine = ours[ch10.TRANSFORMERS_PACKING[call]]
        assert abs(run.loss - mine.loss) < 1e-3 and run.same == mine.same and abs(run.changed - mine.changed) < 0.02


@pytest.mark.slow
def test_the_packing_record_is_what_transformers_computes_now():
    recorded, record = ch10.recorded_packing()
    measured = ch10.transformers_packing(torch.tensor(record["first"]), torch.tensor(record["second"]))
    assert list(measured) == list(recorded)
    for call, run in measured.items():
        old = recorded[call]
        same_share = abs(run.changed - old.changed) < 1e-6  # the record keeps 6 decimals: 31 of 96 is 0.322917
        assert abs(run.loss - old.loss) < 1e-4 and abs(run.off - old.off) < 1e-2 and same_share, call


def transformers_version():
    import transformers

    return transformers.__version__


def test_yarn_port_bug_compares_each_port_with_transformers_yarn(model):
    ids = _tokens(40, 6)[None]
    scaling = {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 16}
    runs = ch10.yarn_port_bug(model, ids, scaling)
    assert runs["transformers' yarn"].off == 0
    assert runs["no attention factor"].off > 0.01 and runs["the paper's ramp"].off > 1e-4
    with model.use_positions(scaling=scaling):
        expected = llama.next_token_loss(model(ids), ids)
    assert abs(runs["transformers' yarn"].loss - expected) < 1e-5
    assert model.positions.scaling is None  # restored


def test_table_prints_rounding_as_a_bound():
    runs = {"right": ch10.Run(3.14159, 2e-5, 0.0), "bug": ch10.Run(4.5, 21.04, 0.234)}
    lines = ch10.table(runs).splitlines()
    assert "loss" in lines[0] and "< 0.001" in lines[1] and "3.14" in lines[1]
    assert "21.0" in lines[2] and "23%" in lines[2]


def test_bugs_figure_has_a_panel_per_bug_in_the_course_colours():
    right, bug = ch10.Run(3.0, 0.0, 0.0), ch10.Run(3.5, 5.0, 0.3)
    fig = ch10.bugs_figure({"one": {"ref": right, "fix": right, "bug": bug}, "two": {"ref": right, "bug": bug}})
    try:
        assert isinstance(fig, matplotlib.figure.Figure) and len(fig.axes) == 2
        assert figure_problems(fig) == []
        text = accessible.describe(fig)
        assert "'one'" in text and "'two'" in text and "3.5" in text
    finally:
        matplotlib.pyplot.close(fig)


@pytest.mark.parametrize(
    ("call", "error", "words"),
    [
        (lambda m: ch10.left_padded("abc", pad_id=0), TypeError, ["rows", "'abc'"]),
        (lambda m: ch10.left_padded([torch.tensor([1])], pad_id=0), ValueError, ["rows", "at least 2", "(1,)"]),
        (lambda m: ch10.left_padded([torch.tensor([1.0, 2.0])], 0), ValueError, ["rows", "int64", "float32"]),
        (lambda m: ch10.left_padded([torch.tensor([1, 2])], pad_id=-1), ValueError, ["pad_id", "-1"]),
        (lambda m: ch10.yarn_port_bug(m, torch.tensor([[1, 2]]), {"rope_type": "linear"}), ValueError,
         ["scaling", "'yarn'", "linear"]),
        (lambda m: ch10.bugs_figure([]), TypeError, ["panels", "list"]),
    ],
)  # fmt: skip
def test_bad_input_gets_a_clear_error(model, call, error, words):
    with pytest.raises(error) as info:
        call(model)
    for word in words:
        assert word in str(info.value), (word, str(info.value))
