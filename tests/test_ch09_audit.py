"""Notebook 09, section 7 (pe_lib.ch09_audit): the per-layer figure, the atlas figure, the paste-a-config explorer."""

import json

import matplotlib.pyplot as plt
import pytest

from pe_lib import audit
from pe_lib import ch09_audit as ch


def test_examples_are_the_spot_checked_configs():
    examples = ch.examples()
    assert len(examples) >= 20 and "Gemma 3 4B" in examples and "Ministral 3" in examples


def test_layer_figure_one_marker_per_layer():
    report = audit.audit(ch.examples()["Llama 4 Scout"])
    fig = ch.layer_figure(report)
    top, bottom = fig.axes[:2]
    drawn = sum(len(collection.get_offsets()) for collection in top.collections)
    assert drawn == 48 and len(bottom.patches) == 48
    labels = {text.get_text() for text in top.get_legend().get_texts()}
    assert labels == {"RoPE, chunked attention", "no RoPE (NoPE)"}
    plt.close(fig)


def test_atlas_figure_counts_every_model_type():
    fig = ch.atlas_figure()
    left, right = fig.axes[:2]
    assert "822 model types" in left.get_title() and "27 spot-checked" in right.get_title()
    plt.close(fig)


def test_year_rows_sort_the_published_models():
    rows = {name: (year, label) for name, year, label, _ in ch.year_rows()}
    assert rows["GPT-2"] == (2019, "learned table") and rows["Gemma 3 4B"] == (2025, "RoPE, layers differ")
    assert rows["Qwen2-VL 7B"][1] == "M-RoPE" and rows["GPT-NeoX-20B"][1] == "RoPE, partial"


def test_explorer_pasted_text_wins_and_bad_text_is_refused():
    explorer = ch.ConfigExplorer()
    assert explorer.report["num_layers"] == 34 and "sliding (window 1,024)" in explorer.report_box.value
    explorer.update(config=json.dumps({"model_type": "llama", "num_hidden_layers": 3, "head_dim": 64}))
    assert explorer.report["num_layers"] == 3 and "pasted config" in explorer.report["source"]
    explorer.update(config="{not json")
    assert explorer.report is None and "not readable JSON" in explorer.text and "refused" in explorer.finding()
    html = explorer._repr_mimebundle_()["text/html"]
    assert "not readable JSON" in html
    explorer.close()


def test_explorer_arguments():
    with pytest.raises(ValueError, match="example"):
        ch.ConfigExplorer(example="GPT-5")
    with pytest.raises(TypeError, match="config must be a str"):
        ch.ConfigExplorer(config={"model_type": "llama"})
