"""Any model's positions from its config: the auditor's per-layer figure, the atlas, a paste-a-config explorer
(used in notebook 09's last section).

The auditor is pe_lib.audit (python -m pe_lib.audit), the atlas pe_lib.atlas; this module draws them.
"""

import html
import json

import ipywidgets as widgets
import matplotlib.pyplot as plt
import numpy as np
from matplotlib.patches import Patch

from . import _validate, atlas, audit, layer_schemes
from .data import load_json
from .explorer import Explorer
from .figures import COLOURS, style_figsize

# One colour per scheme (figures.COLOURS: a method keeps its colour in every chapter), grey for none / unknown.
SCHEME_COLOURS = {"learned": COLOURS["learned"], "sinusoidal": COLOURS["sinusoidal"], "rope": COLOURS["rope"],
                  "alibi": COLOURS["alibi"], "relative_bias": COLOURS["t5"], "conv": "0.6", "none": COLOURS["none"],
                  "unknown": "0.8"}  # fmt: skip
SCHEME_LABELS = {"learned": "learned table", "sinusoidal": "sinusoidal table", "rope": "RoPE", "alibi": "ALiBi",
                 "relative_bias": "relative bias", "conv": "convolution", "none": "none (no attention over positions)",
                 "unknown": "not classified"}  # fmt: skip
VARIANT_HATCHES = {"full": "", "partial": "//", "proportional": "xx", "mrope": "..", "axial": "--", "unspecified": "oo"}
ATTENTION_MARKERS = {"full": "o", "sliding": "^", "chunked": "s", "linear/recurrent": "|"}


def examples():
    """{name: config.json excerpt} of the published configs the atlas spot-checks, oldest first (the explorer's)."""
    checks = sorted(load_json(atlas.SPOT_CHECKS_FILE)["checks"], key=lambda check: check["released"])
    return {check["name"]: check["config"] for check in checks if check["config"]}


def _released():
    return {check["name"]: check["released"] for check in load_json(atlas.SPOT_CHECKS_FILE)["checks"]}


def atlas_figure(data=None):
    """Two panels: how many model types of transformers use each scheme (RoPE split by variant), and the
    spot-checked published models by release year (the only dates the data have)."""
    data = atlas.load_atlas() if data is None else data
    fig, (left, right) = plt.subplots(1, 2, figsize=style_figsize(11.0, 4.8), layout="constrained",
                                      gridspec_kw={"width_ratios": [1.0, 1.15]})  # fmt: skip
    counts = atlas.counts(data)
    order = [s for s in ("rope", "learned", "sinusoidal", "relative_bias", "conv", "alibi", "none", "unknown")]
    variants = atlas.counts(data, key="variant")
    for row, scheme in enumerate(order):
        if scheme != "rope":
            left.barh(row, counts.get(scheme, 0), color=SCHEME_COLOURS[scheme], edgecolor="0.2")
            continue
        start = 0
        for variant in atlas.ROPE_VARIANTS:
            width = variants.get(variant, 0)
            left.barh(row, width, left=start, color=COLOURS["rope"], hatch=VARIANT_HATCHES[variant], edgecolor="0.15")
            start += width
    for row, scheme in enumerate(order):
        left.text(counts.get(scheme, 0) + 6, row, f"{counts.get(scheme, 0)}", va="center", fontsize="small")
    left.set_yticks(range(len(order)), [SCHEME_LABELS[s] for s in order])
    left.invert_yaxis()
    left.set_xlabel(f"model types in transformers {data['transformers_version']} (config class defaults)")
    left.set_title(f"{len(data['models'])} model types, by position scheme", fontsize="medium")
    handles = [Patch(facecolor=COLOURS["rope"], hatch=VARIANT_HATCHES[v], edgecolor="0.15",
                     label=f"RoPE {v} ({variants.get(v, 0)})") for v in atlas.ROPE_VARIANTS]  # fmt: skip
    left.legend(handles=handles, fontsize="small", loc="lower right")
    _years(right)
    return fig


def year_rows():
    """[(name, year, row label, scheme)] of the spot-checked models, row label saying which kind of positions."""
    rows = []
    for check in load_json(atlas.SPOT_CHECKS_FILE)["checks"]:
        facts = atlas.published_facts(check)
        scheme = facts["scheme"]
        label = SCHEME_LABELS[scheme]
        if scheme == "rope":
            plan = layer_schemes.layer_plan(check["config"]) if check["config"].get("num_hidden_layers") else []
            ropes = [layer.rope for layer in plan if layer.rope is not None]
            fractions = facts.get("fraction") if isinstance(facts.get("fraction"), list) else [facts.get("fraction", 1)]
            if len({layer_schemes.layer_kind(layer) for layer in plan}) > 1 or len({r.base for r in ropes}) > 1:
                label = "RoPE, layers differ"
            elif any(r.mrope_section for r in ropes):
                label = "M-RoPE"
            elif min(fractions) < 1:
                label = "RoPE, partial"
            else:
                label = "RoPE, whole head"
        rows.append((check["name"], check["released"], label, scheme))
    return rows


_YEAR_ROWS = ("learned table", "relative bias", "ALiBi", "RoPE, partial", "RoPE, whole head", "M-RoPE",
              "RoPE, layers differ")  # fmt: skip


def _years(ax):
    rows = year_rows()
    seen = {}
    for _, year, label, scheme in sorted(rows, key=lambda r: (r[1], r[0])):
        y = _YEAR_ROWS.index(label)
        offset = seen.get((year, y), 0)
        seen[(year, y)] = offset + 1
        ax.scatter(year + 0.12 * offset, y, s=46, color=SCHEME_COLOURS[scheme], edgecolor="0.1", zorder=3,
                   marker="o" if scheme == "rope" else "s")  # fmt: skip
    ax.set_yticks(range(len(_YEAR_ROWS)), _YEAR_ROWS)
    years = [r[1] for r in rows]
    ax.set_xticks(range(min(years), max(years) + 1))
    ax.set_xlim(min(years) - 0.5, max(years) + 0.9)
    ax.set_ylim(-0.6, len(_YEAR_ROWS) - 0.4)
    ax.set_xlabel("release year (cited)")
    ax.set_title(f"the {len(rows)} spot-checked published models, by year", fontsize="medium")


def layer_figure(report, ax=None):
    """One marker per layer of an audit report: its RoPE base (log scale; marker: the attention), a grey cross
    for a layer without RoPE, a bar for the share of the head that turns (bottom panel)."""
    rows = report["layers"]
    if ax is None:
        fig, (top, bottom) = plt.subplots(2, 1, figsize=style_figsize(8.0, 4.6), layout="constrained", sharex=True,
                                          gridspec_kw={"height_ratios": [2.2, 1.0]})  # fmt: skip
    else:
        top, bottom = ax
        fig = top.figure
    _draw_layers(top, bottom, rows, report.get("model_type") or "config")
    return fig


def _draw_layers(top, bottom, rows, name):
    top.clear()
    bottom.clear()
    index = np.arange(len(rows))
    bases = np.array([row["rope"]["base"] if row["rope"] else np.nan for row in rows])
    kinds = [row["attention"].split(" (")[0] for row in rows]
    finite = bases[np.isfinite(bases)]
    floor = finite.min() / 10 if finite.size else 1e3
    for kind, marker in ATTENTION_MARKERS.items():
        chosen = np.array([k == kind for k in kinds])
        roped = chosen & np.isfinite(bases)
        if roped.any():
            top.scatter(index[roped], bases[roped], marker=marker, color=COLOURS["rope"], edgecolor="0.1", s=34,
                        zorder=3, label=f"RoPE, {kind} attention")  # fmt: skip
        bare = chosen & ~np.isfinite(bases)
        none_label = "no RoPE (NoPE)" if finite.size else f"no RoPE: {rows[0]['positions'].split(' (')[0]}"
        if bare.any():
            top.scatter(
                index[bare],
                np.full(bare.sum(), floor),
                marker="x" if kind != "linear/recurrent" else "|",
                color=COLOURS["none"],
                s=40,
                zorder=3,
                label="linear / recurrent layer" if kind == "linear/recurrent" else none_label,
            )
    marked = set()
    for i, row in enumerate(rows):  # name each scaling once, beside its first layer
        rope = row["rope"]
        if (
            rope
            and rope["rope_type"] not in ("default", "proportional")
            and (rope["base"], rope["rope_type"]) not in marked
        ):
            marked.add((rope["base"], rope["rope_type"]))
            factor = rope["scaling"].get("factor")
            top.annotate(f"{rope['rope_type']}" + (f" x{factor:g}" if factor else ""), (i, rope["base"]),
                         xytext=(4, 6), textcoords="offset points", fontsize="small")  # fmt: skip
    top.set_yscale("log")
    top.set_ylabel("RoPE base")
    top.set_title(f"{name}: {len(rows)} layers", fontsize="medium")
    top.legend(fontsize="small", loc="upper left", ncols=2, framealpha=0.9)
    if finite.size:
        top.set_ylim(floor / 3, finite.max() * 30)
    fractions = [row["rope"]["fraction"] if row["rope"] else 0.0 for row in rows]
    bottom.bar(index, fractions, color=COLOURS["rope"], edgecolor="0.15", width=0.8,
               hatch=None if len(rows) > 60 else "")  # fmt: skip
    bottom.set_ylim(0, 1.05)
    bottom.set_ylabel("share turned")
    bottom.set_xlabel("layer")


class ConfigExplorer(Explorer):
    """Paste a config.json (or pick a published one): the auditor's report as text and its per-layer figure.

    After each update: `self.report` (the audit dict, or None), `self.text` (the report or the error message).
    """

    def __init__(self, *, example="Gemma 3 4B", config=""):
        names, years = list(examples()), _released()
        example = _validate.one_of("example", example, names)
        if not isinstance(config, str):
            raise TypeError(f"config must be a str (a config.json's text), got {type(config).__name__}")
        fig, (top, bottom) = plt.subplots(2, 1, figsize=style_figsize(8.0, 4.6), layout="constrained", sharex=True,
                                          gridspec_kw={"height_ratios": [2.2, 1.0]})  # fmt: skip
        self._axes = (top, bottom)
        self.report_box = widgets.HTML()
        controls = {
            "example": widgets.SelectionSlider(
                options=[(f"{n} ({years[n]})", n) for n in names], value=example, description="published"
            ),  # fmt: skip
            "config": widgets.Textarea(
                value=config,
                placeholder="paste a config.json here (it wins over the list)",
                description="config",
                continuous_update=False,
                layout=widgets.Layout(width="34em", height="6em"),
            ),  # fmt: skip
        }
        super().__init__(fig, controls)
        self.widget.children = (*self.widget.children, self.report_box)

    def draw(self, example, config):
        if getattr(self, "_shown", None) == (example, config):
            return self._key  # the same config again: the artists as they are
        self._shown = (example, config)
        source = "pasted config" if config.strip() else f"{example} (published config.json excerpt)"
        try:
            parsed = audit.parse_config(config, "the pasted text") if config.strip() else examples()[example]
            self.report = audit.audit(parsed, source=source)
            self.text = audit.format_report(self.report)
            _draw_layers(*self._axes, self.report["layers"], self.report["model_type"] or "pasted config")
        except (ValueError, TypeError) as error:
            self.report, self.text = None, f"refused: {error}"
            for axes in self._axes:
                axes.clear()
            self._axes[0].text(0.01, 0.5, "refused (see the text below)", transform=self._axes[0].transAxes)
        # The scrolling box is the <pre> itself, with tabindex 0, so that keyboard users can scroll it too.
        self.report_box.value = (
            "<pre class='pe-explorer-report' tabindex='0' role='region' aria-label='the auditor report' "
            "style='max-height: 22em; overflow: auto; "
            f"line-height: 1.2'>{html.escape(self.text)}</pre>"
        )
        self._key = source + json.dumps(self.report is None)  # each config its own look: its ticks, its limits
        return self._key

    def animated_artists(self):
        top, bottom = self._axes
        legend = [top.get_legend()] if top.get_legend() else []
        return (*top.collections, *top.texts, *bottom.patches, *legend)

    def finding(self):
        if self.report is None:
            return self.text
        groups = "; ".join(f"layers {g['layers']}: {g['attention']}, {g['positions']}" for g in self.report["groups"])
        return f"{self.report['num_layers']} layers. {groups}. {len(self.report['warnings'])} warnings"

    def _repr_mimebundle_(self, **kwargs):
        bundle = super()._repr_mimebundle_(**kwargs)
        if "text/html" in bundle and not self.closed:
            bundle["text/html"] += self.report_box.value  # the report, also where no kernel runs
        return bundle
