"""Audit a model's positions from its config: what every layer must compute, and the traps on the way.

    python -m pe_lib.audit CONFIG [--json]

CONFIG is a config.json path, "-" for standard input, or a transformers model_type (then its config class's
defaults are read, which transformers documents as its reference checkpoint). For every layer: the attention
(full, sliding with its window, chunked, linear/recurrent) and the positions (RoPE with base, rotated part,
pairing, scaling and M-RoPE sections; ALiBi; relative bias; a learned or sinusoidal table; none), the query
temperature; then the trained context against the configured ceiling, YaRN's attention factor, the warnings
(each with citations and a measured or reported cost) and every key the auditor did not read. Text for people,
--json for tools. A config no reader can trust (unreadable JSON, 4.x and 5.x keys that disagree, a rope_type that
does not exist, a fraction outside (0, 1], rope labels that are no layer type) is refused, naming the key.

audit(config) returns the report as a dict (the --json output); format_report(report) the text. The reader is
pe_lib.rope_config and pe_lib.layer_schemes, whose frequencies equal transformers' own rotary modules.
"""

import argparse
import json
import re
import sys
from collections.abc import Mapping
from pathlib import Path

from . import audit_warnings, layer_schemes, rope_config
from .data import load_json

SUB_CONFIGS = ("text_config", "thinker_config", "language_config", "llm_config", "decoder_config", "decoder")
# Keys the auditor reads (beside rope_parameters' own); every other key is listed as not read.
READ = {"model_type", "rope_parameters", "rope_scaling", "rope_theta", "rotary_emb_base", "rope_local_base_freq",
        "partial_rotary_factor", "rotary_pct", "rotary_dim", "head_dim", "hidden_size", "n_embd", "d_model",
        "num_attention_heads", "n_head", "n_heads", "num_hidden_layers", "num_layers", "n_layer", "n_layers",
        "layer_types", "sliding_window", "sliding_window_pattern", "use_sliding_window", "max_window_layers",
        "attention_chunk_size", "no_rope_layers", "no_rope_layer_interval", "layer_rope_theta", "per_layer_config",
        "global_head_dim", "qk_rope_head_dim", "qk_nope_head_dim", "rope_interleave", "max_position_embeddings",
        "n_positions", "original_max_position_embeddings", "attn_temperature_tuning", "attn_scale", "floor_scale",
        "relative_attention_num_buckets", "relative_attention_max_distance", "position_embedding_type", "alibi",
        "attn_config", "text_config", "vision_config", "audio_config", "architectures", "transformers_version",
        "_name_or_path", "compress_rope_theta"}  # fmt: skip
NOT_POSITIONS = {"chunk_size_feed_forward"}  # names that look like positions and are not
POSITION_LIKE = re.compile(r"rope|rotary|position|pos_|window|chunk|theta|alibi|bucket|relative|nope|mrope|max_seq|"
                           r"n_ctx|seq_len|temperature|scaling_beta")  # fmt: skip


def load_config(source):
    """(config dict, where it came from) for a config.json path, "-" (stdin) or a transformers model_type."""
    if not isinstance(source, str) or not source:
        raise TypeError(f"CONFIG must be a path, '-' or a model_type (a non-empty str), got {source!r}")
    if source == "-":
        return parse_config(sys.stdin.read(), "standard input"), "standard input"
    path = Path(source)
    if path.is_file():
        return parse_config(path.read_text(encoding="utf-8"), str(path)), str(path)
    if path.suffix == ".json" or "/" in source:
        raise ValueError(f"CONFIG {source!r} is no file (give a config.json path, '-' for stdin, or a model_type)")
    from . import transformers_rotary

    try:
        defaults = transformers_rotary.config_defaults(source)
    except ValueError as error:
        raise ValueError(f"CONFIG {source!r} is neither a file nor a model_type transformers knows ({error})") from None
    return defaults.to_dict(), f"transformers {transformers_rotary.version()} {type(defaults).__name__} defaults"


def parse_config(text, where):
    try:
        config = json.loads(text)
    except json.JSONDecodeError as error:
        raise ValueError(
            f"{where} is not readable JSON: {error.msg} at line {error.lineno}, column {error.colno}"
        ) from None
    if not isinstance(config, dict):
        raise ValueError(f"{where} must hold a JSON object (a config.json), got {type(config).__name__}")
    return config


def language_config(config):
    """(the config of the language model, its key path or None, {other sub-config key: its model_type})."""
    if not isinstance(config, Mapping):
        raise TypeError(f"config must be a dict (a model's config.json, loaded), got {type(config).__name__}")
    has_own = any(key in config for key in rope_config.ROPE_KEYS) and config.get("num_hidden_layers") is not None
    others = {k: v.get("model_type") for k, v in config.items() if k.endswith("_config") and isinstance(v, Mapping)}
    if not has_own:
        for key in SUB_CONFIGS:
            sub = config.get(key)
            if isinstance(sub, Mapping):
                inner, path, _ = language_config(sub)
                others.pop(key, None)
                return inner, key if path is None else f"{key}.{path}", others
    return dict(config), None, {k: v for k, v in others.items() if k not in SUB_CONFIGS}


def _scheme_without_rope(config):
    """A description of a non-RoPE config's positions (the same in every layer), from its keys or the atlas."""
    buckets = config.get("relative_attention_num_buckets")
    if buckets:
        reach = config.get("relative_attention_max_distance", 128)
        return (
            f"relative bias: T5 buckets, {buckets} buckets up to distance {reach} (the encoder splits them between "
            f"the two directions, {buckets // 2} each; the decoder's all look back)"
        )
    kind = config.get("position_embedding_type")
    if isinstance(kind, str) and kind.startswith("relative"):
        return f"relative ({kind}), learned distance embeddings"
    if config.get("alibi") or (config.get("attn_config") or {}).get("alibi"):
        return "ALiBi: a per-head linear bias -m * distance, no position table"
    rows = config.get("max_position_embeddings", config.get("n_positions"))
    atlas = {e["model_type"]: e for e in load_json("atlas.json")["models"]}.get(config.get("model_type"), {})
    scheme = atlas.get("scheme")
    if kind == "absolute" or scheme == "learned":
        return f"absolute learned table (max_position_embeddings {rows:,})" if rows else "absolute learned table"
    described = {"alibi": "ALiBi: a per-head linear bias, no position table", "sinusoidal": "absolute sinusoidal table",
                 "conv": "convolutional relative positions", "relative_bias": "relative bias",
                 "none": "none (no attention over positions)"}  # fmt: skip
    if scheme in described:
        return described[scheme] + f" (transformers' modeling code for {config.get('model_type')!r})"
    return "unknown: no RoPE key, and the auditor cannot tell this model_type's positions"


def _rope_text(scheme):
    if scheme is None:
        return "NoPE (q and k not turned)"
    head, rotary = scheme.head_dim, scheme.rotary_dim
    if scheme.proportional:
        part = f"proportional: {scheme.turning_pairs} of {head // 2} pairs turn, exponents 2i/{head}"
        pairs = f"(i, i+{head // 2})"
    else:
        turned = 2 * scheme.turning_pairs  # an odd rotated size turns one feature more (transformers' ceil)
        part = f"all {head} features" if rotary == head else f"first {turned} of {head} features"
        part += f" (rotary size {rotary}: exponents 2i/{rotary})" if rotary % 2 else ""
        pairs = f"(i, i+{scheme.turning_pairs})" if scheme.pairing == "half" else "(2i, 2i+1)"
    pairing = {"half": f"half {pairs}", "interleaved": "interleaved (2i, 2i+1)"}.get(scheme.pairing, "pairing unknown")
    label = f" [{scheme.label}]" if scheme.label and scheme.label not in ("full_attention", "sliding_attention") else ""
    text = f"RoPE{label} base {scheme.base:,.0f}, {part}, {pairing}"
    if scheme.scaling is not None and scheme.rope_type != "proportional":
        keys = {
            k: v for k, v in scheme.scaling.items() if k != "rope_type" and v is not None and not hasattr(v, "shape")
        }
        text += f", {scheme.rope_type} " + " ".join(f"{k}={_num(v)}" for k, v in keys.items())
    if scheme.mrope_section:
        text += f", M-RoPE sections {list(scheme.mrope_section)}" + (" interleaved" if scheme.mrope_interleaved else "")
    return text


def _num(value):
    return f"{value:g}" if isinstance(value, float) else str(value)


def _layer_row(index, layer, fallback):
    attention = layer.attention + (f" (window {layer.window:,})" if layer.window else "") + (
        f" (chunk {layer.chunk:,})" if layer.chunk else "")  # fmt: skip
    rope = layer.rope
    return {
        "layer": index, "layer_type": layer.layer_type, "attention": attention,
        "positions": fallback if fallback and rope is None else _rope_text(rope)
        if layer.attention != "linear/recurrent" else "none (order from the recurrence or kernel)",
        "rope": None if rope is None else {
            "label": rope.label, "base": rope.base, "head_dim": rope.head_dim, "rotary_dim": rope.rotary_dim,
            "fraction": rope.fraction, "pairing": rope.pairing, "rope_type": rope.rope_type,
            "scaling": {k: v for k, v in (rope.scaling or {}).items() if not hasattr(v, "shape")},
            "mrope_section": rope.mrope_section, "attention_factor": rope.attention_factor,
            "frequencies": [float(f) for f in rope.frequencies()],
        },
        "temperature": layer.temperature,
    }  # fmt: skip


def _groups(rows):
    """Rows of identical attention / positions / temperature, with their layers as ranges."""
    groups = {}
    for row in rows:
        groups.setdefault((row["attention"], row["positions"], row["temperature"]), []).append(row["layer"])
    return [{"layers": audit_warnings.ranges(indices), "count": len(indices),
             "attention": a, "positions": p, "temperature": t} for (a, p, t), indices in groups.items()]  # fmt: skip


def _context(config, plan):
    ceiling = config.get("max_position_embeddings", config.get("n_positions"))
    originals = {layer.rope.scaling.get("original_max_position_embeddings") for layer in plan
                 if layer.rope is not None and layer.rope.scaling}  # fmt: skip
    originals.discard(None)
    windows = sorted({layer.window for layer in plan if layer.window})
    trained = min(originals) if originals else None
    note = None
    if trained and ceiling and ceiling > trained:
        note = f"pre-trained at {trained:,} (original_max_position_embeddings), configured to {ceiling:,} by scaling"
    elif ceiling:
        note = f"max_position_embeddings {ceiling:,} is the ceiling; the config does not state the trained length"
    if windows and all(layer.window for layer in plan if layer.attention != "linear/recurrent"):
        note = (note or "") + f"; every attention layer sees at most {windows[-1]:,} tokens back"
    return {"max_position_embeddings": ceiling, "trained_context": trained, "sliding_windows": windows,
            "ceiling_note": note}  # fmt: skip


def _not_read(config):
    rope = rope_config.unknown_keys(config) if any(k in config for k in rope_config.ROPE_KEYS) else {}
    extra = sorted(k for k in config if k not in READ and k not in NOT_POSITIONS)
    extra += sorted(k for k in config if k in NOT_POSITIONS)
    looks = [k for k in extra if POSITION_LIKE.search(k) and k not in NOT_POSITIONS]
    return {"rope": rope, "position_like": looks, "other": [k for k in extra if k not in looks]}


def audit(config, *, source=None):
    """The report for a config.json (a dict): see the module docstring; the same dict --json prints."""
    whole = config
    config, path, others = language_config(config)
    rules = rope_config.model_rules(config.get("model_type"))
    has_rope = any(k in config for k in rope_config.ROPE_KEYS) or bool(rules.get("defaults", {}).get("rope_parameters"))
    fallback = None if has_rope else _scheme_without_rope(config)
    if has_rope:
        unused = rope_config.unused_labels(config)
        plan = layer_schemes.layer_plan(config)
    else:
        unused = ()
        count = next(
            (config[k] for k in ("num_hidden_layers", "num_layers", "n_layer", "n_layers") if config.get(k)), 1
        )
        plan = [layer_schemes.LayerScheme("full_attention", None)] * count
    rows = [_layer_row(i, layer, fallback) for i, layer in enumerate(plan)]
    context = _context(config, plan)
    warnings = audit_warnings.warnings_for(config, plan, context)
    keys = _not_read(config)
    if keys["rope"]:
        listed = "; ".join(f"{where}: {', '.join(k)}" for where, k in keys["rope"].items())
        warnings.append(audit_warnings.warning("unknown_keys", "warning", "rope keys transformers ignores: " + listed))
    if keys["position_like"]:
        warnings.append(audit_warnings.warning("unknown_keys", "warning", "position-like keys the auditor does not "
                                               "read: " + ", ".join(keys["position_like"])))  # fmt: skip
    if unused:
        types = ", ".join(sorted(set(config.get("layer_types") or ())))
        labels = ", ".join(map(repr, unused))
        warnings.append(audit_warnings.warning("unused_labels", "warning", f"rope_parameters[{labels}]"
                                               f": no layer has that type (layer types: {types})"))  # fmt: skip
    factors = sorted({(layer.rope.rope_type, layer.rope.attention_factor) for layer in plan
                      if layer.rope is not None and layer.rope.rope_type in ("yarn", "longrope")})  # fmt: skip
    return {
        "source": source, "model_type": config.get("model_type") or whole.get("model_type"),
        "language_config": path, "other_configs": others,
        "transformers_rules": rope_config.rules_version() if rules else None,
        "num_layers": len(plan), "layers": rows, "groups": _groups(rows), "context": context,
        "attention_factors": factors, "warnings": warnings, "not_read": keys,
    }  # fmt: skip


def format_report(report):
    """The report as text: a table of layer groups, the context, the attention factor, warnings, keys not read."""
    head = f"{report['model_type'] or 'a config without model_type'}"
    lines = [f"Positions of {head} ({report['source'] or 'a dict'})"]
    if report["language_config"]:
        lines.append(f"  the language model is {report['language_config']}; other parts: "
                     + (", ".join(f"{k} ({v})" for k, v in report["other_configs"].items()) or "none"))  # fmt: skip
    if report["transformers_rules"]:
        lines.append(
            f"  read as transformers {report['transformers_rules']} reads this model_type "
            "(rules probed from its code: pe_lib/data/rope_rules.json)"
        )
    width = max([6, *(len(group["layers"]) for group in report["groups"])])
    lines += ["", f"  {'layers':<{width}} {'n':>3}  {'attention':<24} positions"]
    for group in report["groups"]:
        lines.append(f"  {group['layers']:<{width}} {group['count']:>3}  {group['attention']:<24} {group['positions']}")
        if group["temperature"]:
            lines.append(f"  {'':<{width}} {'':>3}  {'':<24} query temperature: {group['temperature']}")
    context = report["context"]
    lines += ["", f"  context: {context['ceiling_note'] or 'no length in the config'}"]
    factors = report["attention_factors"]
    lines.append("  YaRN / LongRoPE attention factor: " + (", ".join(f"{k} {f:.4f} (cos, sin x {f:.4f}: logits x "
                                                                     f"{f * f:.4f})" for k, f in factors)
                                                           if factors else "none (no yarn or longrope)"))  # fmt: skip
    lines += ["", f"  warnings ({len(report['warnings'])}):"]
    for warning in report["warnings"]:
        lines.append(f"  [{warning['severity']}] {warning['id']}: {warning['message']}")
        if warning["cost"]:
            lines.append(f"      cost: {warning['cost']}")
        if warning["citations"]:  # the first; --json lists them all
            lines.append(f"      see: {warning['citations'][0]}")
    other = report["not_read"]["other"]
    lines += ["", f"  keys not read ({len(other)}, none about positions as far as the auditor knows): "
              + (", ".join(other) if other else "none")]  # fmt: skip
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m pe_lib.audit", description=__doc__.splitlines()[0])
    parser.add_argument("config", help="a config.json path, '-' for stdin, or a transformers model_type")
    parser.add_argument("--json", action="store_true", help="print the report as JSON (for tools)")
    args = parser.parse_args(argv)
    try:
        config, source = load_config(args.config)
        report = audit(config, source=source)
    except (ValueError, TypeError) as error:
        print(f"python -m pe_lib.audit: {error}", file=sys.stderr)
        return 2
    print(json.dumps(report, indent=1, default=str) if args.json else format_report(report))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
