"""The atlas: the position scheme of every architecture transformers knows, read from its config class defaults.

    python -m pe_lib.atlas            regenerate pe_lib/data/atlas.json and pe_lib/data/rope_rules.json
    python -m pe_lib.atlas --check    regenerate in memory and compare with the committed files (exit 1 if not)

transformers documents each config class's defaults as its reference checkpoint's configuration. For every
model_type of CONFIG_MAPPING the script records what the defaults say about positions: the scheme (RoPE and
its variant, learned table, sinusoidal, ALiBi, relative bias, convolutional, none), how it decided (a config
key, a sub-config, or the modeling code), and, for RoPE models, the auditor's per-layer plan (layer kinds,
RoPE or NoPE per layer). rope_rules.json is what the reader (pe_lib.rope_config) needs to know about
transformers per model type: which features pair up, whether the default RoPE honours partial_rotary_factor,
the values its config class fills in. load_atlas() / counts() read the committed file (no transformers import).
Defaults are not checkpoints: data/atlas_spot_checks.json compares them with published config.json files.
"""

import argparse
import dataclasses
import importlib
import inspect
import json
import re
import sys
from collections import Counter
from importlib import resources
from pathlib import Path

from . import layer_schemes, rope_config
from .data import load_json

ATLAS_FILE = "atlas.json"
SPOT_CHECKS_FILE = "atlas_spot_checks.json"
SCHEMES = ("rope", "learned", "sinusoidal", "alibi", "relative_bias", "conv", "none", "unknown")
ROPE_VARIANTS = ("full", "partial", "proportional", "mrope", "axial", "unspecified")
# Modeling-code patterns, tried in this order when the config itself does not say (first match wins).
_CODE_PATTERNS = (
    ("alibi", r"build_alibi|alibi_bias|def _get_alibi|alibi_slopes"),
    ("relative_bias", r"relative_attention_bias|relative_position_bias_table|rel_pos_bias|position_buckets|"
                      r"rel_embeddings|"
                      r"relative_position_index|attention_biases|self\.rpb\b|relative_positional_encoding"),
    ("conv", r"PositionalConvEmbedding|pos_conv_embed"),
    ("sinusoidal", r"[Ss]inusoidal[A-Za-z]*Embedding|def sinusoids\(|get_sinusoid|SinusoidsPositionEmbedding|"
                   r"def positional_encoding|angle_defn"),
    ("learned", r"nn\.Embedding\(\s*(self\.)?(config\.)?(max_position_embeddings|n_positions|max_positions|"
                r"num_positions|"
                r"max_source_positions|max_target_positions|n_ctx)|(position_embeddings|pos_embed|position_embedding|"
                r"wpe|embed_positions)\s*=\s*nn\.(Parameter|Embedding)|LearnedPositionalEmbedding|"
                r"PositionalEmbedding\(nn\.Embedding\)"),
    ("rope", r"class \w*Rotary\w*\(|\.rotary_emb\(|freqs_cis"),  # defined and used, not a copied helper
)  # fmt: skip
# Names a config class may alias to its own keys (attribute_map), which the reader must follow.
_ALIASED = ("head_dim", "hidden_size", "num_attention_heads", "num_hidden_layers", "max_position_embeddings",
            "layer_types", "sliding_window", "rope_parameters", "partial_rotary_factor")  # fmt: skip
# Image models whose RoPE turns patch coordinates, not token positions (their per-axis frequencies are not audited).
_VISION_2D = ("eomt_dinov3", "efficientloftr", "llama4_vision_model")
_SUB_CONFIGS = ("text_config", "thinker_config", "language_config", "llm_config", "decoder_config", "decoder")
_RECURRENT_HINTS = ("state_size", "ssm_state_size", "mamba_d_state", "rescale_every", "slstm", "mlstm")


def _transformers():
    import transformers

    from . import transformers_rotary

    return transformers, transformers_rotary


def _modeling_source(model_type, config_class):
    """The text of the modeling file next to the config class's (read, not imported: cheap), else of the module of
    the model class transformers maps the type to (a few config types borrow Llama's), else ''."""
    transformers, _ = _transformers()
    from transformers.models.auto.modeling_auto import MODEL_MAPPING_NAMES

    path = Path(inspect.getsourcefile(config_class))
    path = path.with_name(path.name.replace("configuration_", "modeling_"))
    if path.is_file():
        return path.read_text(encoding="utf-8")
    model_class = MODEL_MAPPING_NAMES.get(model_type)
    try:
        return inspect.getsource(importlib.import_module(getattr(transformers, model_class).__module__))
    except (ImportError, OSError, AttributeError, TypeError):  # no such module, or one needing torchaudio
        return ""


def _rope_variant(parameters, model_type=None):
    values = [v for v in parameters.values() if isinstance(v, dict)] or [parameters]
    kinds = {v.get("rope_type", v.get("type", "default")) for v in values}
    if "axial" in kinds:
        return "axial"
    if any(v.get("mrope_section") for v in values) or rope_config.model_rules(model_type).get("mrope_section"):
        return "mrope"
    if "proportional" in kinds:
        return "proportional"
    if any((v.get("partial_rotary_factor") or 1.0) < 1.0 for v in values):
        return "partial"
    return "full"


def _layer_mix(defaults):
    """{kind: count} of the auditor's per-layer plan of the class defaults, or None if it cannot plan them."""
    try:
        plan = layer_schemes.layer_plan(defaults)
    except (TypeError, ValueError, KeyError):
        return None
    return dict(Counter(layer_schemes.layer_kind(layer) for layer in plan))


def classify(model_type):
    """One atlas entry: what transformers' config class defaults for `model_type` say about positions."""
    _, tr = _transformers()
    cls = tr.config_class(model_type)
    entry = {"model_type": model_type, "config_class": cls.__name__}
    try:
        config = tr.config_defaults(model_type)
    except Exception as error:  # noqa: BLE001 - a config class whose defaults do not validate
        return {**entry, "scheme": "unknown", "evidence": f"defaults do not build: {type(error).__name__}"}
    values = config.to_dict()
    subs = [k for k in _SUB_CONFIGS if k in values] + sorted(
        k for k, v in values.items() if k.endswith("_config") and isinstance(v, dict) and k not in _SUB_CONFIGS
    )
    own = values.get("rope_parameters") or any(re.search(r"(num_)?(attention_)?heads?$|n_head", k) for k in values)
    for key in subs if not own or any(k in values for k in _SUB_CONFIGS) else ():
        sub = values.get(key)
        if isinstance(sub, dict) and sub.get("model_type") and sub.get("model_type") != model_type:
            try:
                inner = classify(sub["model_type"])
            except ValueError:
                continue
            keep = ("scheme", "variant", "rope_type", "base", "fraction", "layers", "per_layer_mix", "defaults")
            return {**entry, **{k: inner[k] for k in keep if k in inner}, "evidence": f"{key}: {sub['model_type']}"}
    entry.update(_scheme_of(model_type, cls, values))
    readable = rope_config.read_config(values)
    sizes = {"max_position_embeddings": _first(readable, "max_position_embeddings", "n_positions", "max_seq_len"),
             "head_dim": readable.get("head_dim"), "sliding_window": readable.get("sliding_window")}  # fmt: skip
    entry["defaults"] = {k: v for k, v in sizes.items() if isinstance(v, int) and not isinstance(v, bool)}
    return entry


def _first(config, *keys):
    return next((config[k] for k in keys if config.get(k) is not None), None)


def _scheme_of(model_type, cls, values):
    kind = values.get("position_embedding_type")
    if isinstance(kind, str) and kind.startswith("relative"):
        return {"scheme": "relative_bias", "evidence": f"position_embedding_type = {kind!r}"}
    parameters = values.get("rope_parameters")
    if parameters and kind in (None, "rotary", "rope"):
        return _rope_entry(model_type, values, parameters, "rope_parameters")
    if any(values.get(key) is not None for key in ("rotary_dim", "rotary_pct", "rotary_emb_base")) and kind is None:
        return _rope_entry(model_type, values, {}, "rotary_dim / rotary_pct")
    if values.get("relative_attention_num_buckets"):
        return {"scheme": "relative_bias", "evidence": "relative_attention_num_buckets (T5's buckets)"}
    if values.get("alibi") or (values.get("attn_config") or {}).get("alibi"):
        return {"scheme": "alibi", "evidence": "alibi = True"}
    if kind == "absolute":
        return {"scheme": "learned", "evidence": "position_embedding_type = 'absolute'"}
    source = _modeling_source(model_type, cls)
    for scheme, pattern in _CODE_PATTERNS:
        if re.search(pattern, source):
            found = {"scheme": scheme, "evidence": f"modeling code: /{pattern[:40]}/"}
            return {**found, "variant": "unspecified"} if scheme == "rope" else found
    if any(hint in key for key in values for hint in _RECURRENT_HINTS):
        return {"scheme": "none", "evidence": "recurrent or state-space layers: order from the recurrence"}
    heads = any(re.search(r"(num_)?(attention_)?heads?$|n_head", key) for key in values)
    reason = "no attention heads in the config (a convolutional or recurrent network)" if not heads else (
        "attention, but neither the config nor the modeling code names its positions")  # fmt: skip
    return {"scheme": "none" if not heads else "unknown", "evidence": reason}


def _rope_entry(model_type, values, parameters, evidence):
    entry = {
        "scheme": "rope",
        "variant": _rope_variant(parameters, model_type) if parameters else "full",
        "evidence": evidence,
    }
    if entry["variant"] == "axial":
        return entry
    try:
        labels = rope_config.rope_layer_types(values) or (None,)
        schemes = [rope_config.rope_from_config(values, label) for label in labels]
    except (TypeError, ValueError, KeyError) as error:
        return {**entry, "reader": f"refused: {error}"}
    schemes = [s for s in schemes if s is not None]
    if schemes:
        entry.update(rope_type=sorted({s.rope_type for s in schemes}), base=sorted({s.base for s in schemes}),
                     fraction=sorted({round(s.fraction, 4) for s in schemes}))  # fmt: skip
        if entry["variant"] == "full" and min(entry["fraction"]) < 1:
            entry["variant"] = "partial"
    mix = _layer_mix(values)
    if mix is not None:
        entry["layers"] = mix
        entry["per_layer_mix"] = len(mix) > 1 or len({s.base for s in schemes}) > 1
    return entry


def rules_for(model_type):
    """What rope_config needs to know about transformers for a RoPE `model_type` (see rope_config.model_rules)."""
    _, tr = _transformers()
    cls = tr.config_class(model_type)
    defaults = tr.config_defaults(model_type)
    fields = {f.name: f.default for f in dataclasses.fields(cls)} if dataclasses.is_dataclass(cls) else {}
    keep = ("head_dim", "hidden_size", "num_attention_heads", "max_position_embeddings", "qk_rope_head_dim")
    filled = {}
    try:  # what a flat rope dict without rope_theta / partial_rotary_factor gets from the class
        probe = tr.from_dict({"model_type": model_type, "rope_parameters": {"rope_type": "default"}}).rope_parameters
        filled = {k: probe[k] for k in ("rope_theta", "partial_rotary_factor") if isinstance(probe.get(k), float)}
    except Exception:  # noqa: BLE001, S110 - the class refuses a flat dict: nothing to fill
        pass
    rules = {
        "pairing": tr.pairing(model_type),
        "honours_partial": tr.honours_partial(model_type),
        "defaults": {
            **{k: fields[k] for k in keep if isinstance(fields.get(k), int) and not isinstance(fields[k], bool)},
            **filled,
            "rope_parameters": defaults.to_dict().get("rope_parameters"),
        },
    }
    labels = getattr(cls, "_rope_type_labels", None)
    if labels:
        rules["labels"] = list(labels)
    aliases = {k: v for k, v in (getattr(cls, "attribute_map", None) or {}).items() if k in _ALIASED}
    if aliases:
        rules["attribute_map"] = aliases
    source = inspect.getsource(cls)
    forced = re.search(r"self\.head_dim = (self\.\w+(?: [+] self\.\w+)*|"
                       r"self\.hidden_size // self\.num_attention_heads)$",
                       source, re.M)  # fmt: skip
    if forced:
        rules["head_dim_rule"] = forced.group(1).replace("self.", "").replace(" ", "")
    rotary = inspect.getsource(tr.rotary_module(defaults).__class__) if tr.rotary_module(defaults) else ""
    if "inv_freq_3d" in rotary:
        rules["frequency_order"] = "ernie_3d"  # ERNIE 4.5 VL: height/width pairs de-interleaved, time pairs last
    if model_type in _VISION_2D:
        rules["vision_2d"] = True
    section = re.search(r'rope_parameters\.get\("mrope_section",\s*(\[[\d,\s]+\])\)', _modeling_source(model_type, cls))
    if section:  # M-RoPE whose modeling code supplies the sections a config leaves out (Qwen2-VL: [16, 24, 24])
        rules["mrope_section"] = json.loads(section.group(1))
    return rules


def build():
    """(atlas, rules) regenerated from the installed transformers."""
    transformers, tr = _transformers()
    from transformers import CONFIG_MAPPING

    version, entries, rules = transformers.__version__, [], {}
    with tr.quiet():
        for model_type in sorted(CONFIG_MAPPING.keys()):
            try:
                parameters = tr.config_defaults(model_type).to_dict().get("rope_parameters")
            except Exception:  # noqa: BLE001 - reported in the atlas entry
                continue
            if parameters and _rope_variant(parameters) != "axial":
                rules[model_type] = rules_for(model_type)
        rules = {"transformers_version": version, "about": _RULES_ABOUT, "models": rules}
        rope_config.use_rules(rules)  # the atlas reads every config with the rules just probed
        entries = [classify(model_type) for model_type in sorted(CONFIG_MAPPING.keys())]
    return {"transformers_version": version, "about": _ABOUT, "models": entries}, rules


_ABOUT = ("The position scheme of every model_type in transformers' CONFIG_MAPPING, read from its config class "
          "defaults by `python -m pe_lib.atlas` (see pe_lib/atlas.py); `checked` marks the entries compared with a "
          "published config.json in atlas_spot_checks.json.")  # fmt: skip
_RULES_ABOUT = ("What transformers does per RoPE model_type, probed by running it (pe_lib/transformers_rotary.py): "
                "pairing, whether the default RoPE honours partial_rotary_factor, class defaults; read by "
                "pe_lib.rope_config.")  # fmt: skip


def load_atlas():
    """The committed atlas: {"transformers_version", "about", "models": [entry, ...]}, entries marked `checked`."""
    atlas = load_json(ATLAS_FILE)
    checked = {fact["model_type"] for fact in load_json(SPOT_CHECKS_FILE)["checks"]}
    for entry in atlas["models"]:
        entry["checked"] = entry["model_type"] in checked
    return atlas


def published_facts(check):
    """The facts a spot check records: its `published` values, else those its config.json excerpt states."""
    if check.get("published"):
        return dict(check["published"])
    config = check["config"]
    labels = rope_config.rope_layer_types(config) or (None,)
    schemes = [s for s in (rope_config.rope_from_config(config, label) for label in labels) if s is not None]
    facts = {"scheme": "rope", "base": sorted({s.base for s in schemes}),
             "rope_type": sorted({s.rope_type for s in schemes}),
             "fraction": sorted({round(s.fraction, 4) for s in schemes}),
             "max_position_embeddings": _first(config, "max_position_embeddings", "n_positions"),
             "sliding_window": config.get("sliding_window")}  # fmt: skip
    return facts


def spot_check(atlas=None):
    """Each spot check against the atlas entry (config class defaults) of its model_type.

    Returns (rows, summary): rows of {name, model_type, field, published, default, same}; summary {field:
    (same, compared)} over the fields both sides state (scheme, base, fraction, rope_type,
    max_position_embeddings, sliding_window).
    """
    atlas = load_atlas() if atlas is None else atlas
    entries = {entry["model_type"]: entry for entry in atlas["models"]}
    rows, summary = [], {}
    for check in load_json(SPOT_CHECKS_FILE)["checks"]:
        entry, facts = entries[check["model_type"]], published_facts(check)
        defaults = {
            **entry.get("defaults", {}),
            **{k: entry.get(k) for k in ("scheme", "base", "fraction", "rope_type")},
        }
        for field in ("scheme", "base", "fraction", "rope_type", "max_position_embeddings", "sliding_window"):
            published, default = facts.get(field), defaults.get(field)
            if field in ("base", "fraction", "rope_type") and published is not None and not isinstance(published, list):
                published = [published]
            if published is None and field != "sliding_window":
                continue
            same = published == default
            rows.append({"name": check["name"], "model_type": check["model_type"], "field": field,
                         "published": published, "default": default, "same": same})  # fmt: skip
            done, total = summary.get(field, (0, 0))
            summary[field] = (done + same, total + 1)
    return rows, summary


def counts(atlas=None, key="scheme"):
    """{value: number of model types} for one field of the atlas entries (scheme, variant, per_layer_mix)."""
    atlas = load_atlas() if atlas is None else atlas
    return dict(Counter(entry.get(key) for entry in atlas["models"] if key in entry))


def dump(value):
    """The committed text of a generated file (sorted keys: transformers' nested dicts come in varying order)."""
    return json.dumps(value, indent=1, sort_keys=True, ensure_ascii=False) + "\n"


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m pe_lib.atlas", description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare with the committed files, write nothing")
    args = parser.parse_args(argv)
    atlas, rules = build()
    folder = resources.files("pe_lib.data")
    stale = []
    for name, value in ((ATLAS_FILE, atlas), (rope_config.RULES_FILE, rules)):
        path = folder.joinpath(name)
        if args.check:
            if not path.is_file() or path.read_text(encoding="utf-8") != dump(value):
                stale.append(name)
        else:
            with open(str(path), "w", encoding="utf-8") as handle:
                handle.write(dump(value))
    if stale:
        print(f"differs from transformers {atlas['transformers_version']}: {', '.join(stale)}", file=sys.stderr)
        return 1
    print(f"{len(atlas['models'])} model types, {len(rules['models'])} RoPE rules (transformers "
          f"{atlas['transformers_version']}){'' if args.check else ': written'}")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
