"""The auditor's warnings: position traps that real ports fell into, each with its citation and its cost.

    TRAPS                       id -> Trap(title, citations, cost): the catalogue (README and notebook 09 list it)
    warnings_for(config, plan)  the traps a config (a dict, its language part) and its layer plan can fall into,
                                each as a dict: id, severity, message (about this config), title, citations, cost

A trap's cost is measured where the course can measure it, on SmolLM2-135M (pe_lib.audit_costs, committed in
pe_lib/data/audit_costs.json with how to reproduce it) and quoted from its citation otherwise, saying so. The
citations are issues and pull requests as their threads state them; each was read before it was cited here.
"""

import dataclasses
import math

from .audit_costs import load_costs
from .rope_config import model_rules, reads_rotary_dim, rope_parameters

SEVERITIES = ("error", "warning", "check")  # error: transformers itself differs; warning: a known trap; check: verify


@dataclasses.dataclass(frozen=True)
class Trap:
    title: str
    citations: tuple
    measured: tuple = ()  # audit_costs trap ids whose cost this trap quotes
    reported: str = ""  # a cost quoted from a citation, where the course does not measure one


TRAPS = {
    "base_key_moved": Trap(
        "RoPE base read from the wrong key: a 4.x reader of a 5.x config (rope_theta inside rope_parameters), or a "
        "port that hard-codes 10,000, runs the default base without a word",
        ("DeepSpeed #8341 and #8345: getattr(config, 'rope_theta', default) silently returns the default for every "
         "transformers 5.x checkpoint (injection policy, Inference V2)",
         "DeepSpeed #4442: rope_theta hard-coded to 10,000 in the inference kernel gave CodeLlama (1,000,000) wrong "
         "results", "TransformerEngine #849: inv_freq of RotaryPositionEmbedding hard-coded to 10k"),
        measured=("base_fallback",),
    ),
    "base_missing": Trap(
        "No rope_theta in the config: transformers fills in its config class's default for the model_type, a "
        "generic reader 10,000",
        ("transformers 5.24 RotaryEmbeddingConfigMixin.convert_rope_params_to_dict: rope_theta falls back to the "
         "class's default_theta",),
        measured=("base_fallback",),
    ),
    "pairing": Trap(
        "Feature pairing: interleaved checkpoints (pairs 2i, 2i+1) run by rotate_half code (pairs i, i + d/2) without "
        "the row permutation of W_q, W_k are right at distance 0 and wrong at every other distance",
        ("notebook 09, section 2 (the Llama conversion's permutation)", "transformers' convert_llama_weights_to_hf.py "
         "permute(); DeepseekV3's apply_rotary_pos_emb_interleave (rope_interleave)"),
        measured=("pairing_swapped",),
    ),
    "half_precision": Trap(
        "RoPE angles or frequencies in bfloat16: angles p * theta rounded to bfloat16, or inv_freq cast by "
        "model.to(torch.bfloat16)",
        ("transformers PR #29285 (RoPE under bfloat16 autocast, fixed in 4.38.2)", "transformers #25681 (cos/sin "
         "cache built after casting Llama to half precision)", "transformers #29496 (Mistral in mixed precision: "
         "positions cast to inv_freq's dtype)"),
        measured=("angles_bfloat16", "inv_freq_bfloat16"),
    ),
    "yarn_factor": Trap(
        "YaRN's attention factor (cos and sin times it, so the logits times its square) dropped, taken from the "
        "wrong formula, or applied twice",
        ("vLLM #48351 (replaces #46280): an explicit attention_factor was silently dropped and vLLM fell back to "
         "0.1 ln(factor) + 1", "TensorRT-LLM #16379: attention_factor routed through the log formula twice "
         "(no issue at 256K, larger ones at 1M, per its author)", "sglang #33558: the factor squared "
         "(1.4852 -> 2.2058 at factor 128); GSM8K about +20 points once fixed", "vLLM #48623 (for issue #48621): "
         "mscale / mscale_all_dim ignored, so Ministral 3 ran 1.2773 where transformers computes 1.0"),
        measured=("yarn_factor_dropped", "yarn_factor_twice"),
    ),
    "scaled_local_layers": Trap(
        "Per-layer RoPE: scaling (or a base) meant for some layer types applied to all of them, e.g. Gemma 3's "
        "linear x8 applied to its sliding layers",
        ("vLLM #29111: Gemma 3's sliding layers must use default RoPE at rope_local_base_freq and no scaling; a "
         "regression (#28542) gave wrong perplexity", "TensorRT-LLM #5773: skip RoPE scaling for Gemma 3's local "
         "layers", "mlx-vlm #1709 (the reverse: global layers left unscaled; the argmax flips at 2,916 tokens)",
         "llama.cpp #14367"),
        measured=("scaled_unscaled_layers",),
    ),
    "partial_rotation": Trap(
        "Partial rotation read wrongly: the whole head turned where the config turns a fraction, or the reverse",
        ("transformers #48241 (fixed by #48486): MiniMax-M2's rotary_dim 64 of 128 dropped by the config class, the "
         "whole head turned: mean KL 13.1 against a faithful reference over 2,048 tokens",
         "maxtext #4616: partial_rotary_factor ignored on the M-RoPE path (Qwen3.5)"),
        measured=("half_the_pairs",),
        reported="KL 13.1 (transformers #48241, MiniMax-M2.7, 2,048 tokens)",
    ),
    "proportional": Trap(
        "Proportional RoPE (Gemma 4's global layers) ported as NeoX partial: proportional pairs (i, i + d/2) over the "
        "whole head with exponents 2i/d and the pairs past the fraction at frequency 0; NeoX partial pairs "
        "(i, i + r/2) inside the first r features with exponents 2i/r",
        ("Megatron-Bridge #4195: Gemma 4's global inv_freq built as 64 frequencies, not 256 with zeros: "
         "rotate_half pairs the wrong lanes and the last-token logits diverge from transformers'",
         "pie #603: the two conventions confused the other way (NeoX partial run with the head width's frequencies "
         "and pairing); argmax agreement with mlx-lm at 1,024 tokens 60% -> 92.5% once fixed (Qwen3.5/3.6)"),
        reported="argmax agreement 60% instead of 92.5% at 1,024 tokens with the two conventions swapped (pie #603)",
    ),
    "nope_layers": Trap(
        "Layers without RoPE (NoPE) turned anyway, or RoPE dropped from every layer",
        ("transformers' Cohere2Attention, Llama4TextAttention and SmolLM3Attention turn q, k only in their RoPE "
         "layers", "Yang et al. 2025, 'Rope to Nope and Back Again' (arXiv 2501.18795)"),
        measured=("nope_everywhere",),
    ),
    "left_padding": Trap(
        "Left-padded batches: the attention mask and the position ids must both come from the mask",
        ("Unsloth #3699: batched generation with left padding produced garbage for the padded rows; fixed by "
         "computing position_ids from the attention mask (Unsloth #4100)",),
        measured=("padding_no_mask", "padding_mask_positions_from_pad"),
    ),
    "temperature": Trap(
        "A position-dependent query temperature (Llama 4's NoPE layers, Ministral 3 / Mistral 4's "
        "llama_4_scaling_beta) left out",
        ("vLLM #48623: MistralAttention missed the nested Llama 4 rope fields of Ministral 3's rope_parameters",),
    ),
    "mla_softmax_scale": Trap(
        "DeepSeek-style YaRN: the softmax scale of multi-head latent attention is multiplied by "
        "mscale(factor, mscale_all_dim)^2, on top of the RoPE factor",
        ("Megatron-LM #1429: mscale used instead of mscale_all_dim in MLA's softmax factor",
         "transformers' DeepseekV3Attention"),
    ),
    "transformers_differs": Trap(
        "transformers 5.24 itself turns a different part of the head than the config says",
        ("transformers #48241 (the same defect in MiniMax-M2, fixed there by #48486)",),
        reported="KL 13.1 for the same defect in MiniMax-M2 (transformers #48241)",
    ),
    "ceiling": Trap(
        "max_position_embeddings is a ceiling, not the trained context: the pre-training length is "
        "original_max_position_embeddings where scaling is configured, and a sliding window caps every distance",
        ("notebook 09, section 1 (Mistral 7B v0.1: 32,768 in the config, trained at 8,192, window 4,096)",),
    ),
    "odd_rotary": Trap(
        "An odd rotated size: transformers computes ceil(r/2) frequencies base^(-2i/r) and turns r + 1 features",
        ("transformers 5.24 RotaryEmbeddingConfigMixin.validate_rope: 'an odd partial rotary dim is rounded up'",),
    ),
    "unknown_keys": Trap("Keys transformers does not read for this RoPE (ignored there, listed here)", ()),
    "unused_labels": Trap("rope_parameters entries for layer types no layer has (transformers ignores them)", ()),
    "dynamic_cache": Trap(
        "Dynamic NTK: one forward rescales every position; cached keys keep the rotation they were stored with",
        ("notebook 10, section on context extension (dynamic NTK with a cache)",),
    ),
}  # fmt: skip


def cost_of(trap_id):
    """The trap's cost as text: the measured rows from audit_costs.json, else its reported figure, else ''."""
    trap = TRAPS[trap_id]
    rows = load_costs()["traps"]
    parts = [
        f"SmolLM2-135M, {rows[m]['what']}: KL {rows[m]['kl']:.3f} nats/token from the right run, loss "
        f"{rows[m]['cost']:+.3f}, top-1 changed {rows[m]['argmax_differs']:.0%}"
        for m in trap.measured
    ]
    if trap.reported:
        parts.append(f"reported: {trap.reported}")
    return "; ".join(parts)


def warning(trap_id, severity, message):
    trap = TRAPS[trap_id]
    return {"id": trap_id, "severity": severity, "message": message, "title": trap.title,
            "citations": list(trap.citations), "cost": cost_of(trap_id)}  # fmt: skip


def warnings_for(config, plan, context=None):
    """The warnings for a config (dict, the language model's), its layer plan and its context facts (audit)."""
    found = []
    roped = [layer for layer in plan if layer.rope is not None]
    kind, rules = config.get("model_type"), model_rules(config.get("model_type"))
    if roped:
        found += _base_warnings(config, roped, rules)
        found += _shape_warnings(config, roped, rules, kind)
        found += _scaling_warnings(config, roped)
    types = {layer.layer_type for layer in roped}
    per_type = {(layer.layer_type, layer.rope.base, layer.rope.rope_type) for layer in roped}
    if len(types) > 1 and len({(b, t) for _, b, t in per_type}) > 1:
        detail = "; ".join(sorted(f"{t}: base {b:,.0f}, {s}" for t, b, s in per_type))
        found.append(warning("scaled_local_layers", "warning", f"RoPE differs per layer type ({detail}): give "
                                                               f"each layer its own"))  # fmt: skip
    nope = [i for i, layer in enumerate(plan) if layer.rope is None and layer.attention != "linear/recurrent"]
    if roped and nope:
        found.append(warning("nope_layers", "warning", f"{len(nope)} attention layers turn nothing (NoPE): "
                                                        f"{ranges(nope)}"))  # fmt: skip
    temperatures = {layer.temperature for layer in plan if layer.temperature}
    if temperatures:
        found.append(warning("temperature", "warning", "query temperature: " + "; ".join(sorted(temperatures))))
    if roped or config.get("max_position_embeddings"):
        found.append(warning("left_padding", "check", "batched generation: position ids from the attention mask"))
    if context and context.get("ceiling_note"):
        found.append(warning("ceiling", "check", context["ceiling_note"]))
    return found


def _base_warnings(config, roped, rules):
    found = []
    bases = sorted({layer.rope.base for layer in roped})
    parameters = config.get("rope_parameters")
    in_parameters = isinstance(parameters, dict) and config.get("rope_theta") is None
    if any(base != 1e4 for base in bases):
        where = "inside rope_parameters (5.x): a 4.x reader of rope_theta finds nothing" if in_parameters else (
            "in the config")  # fmt: skip
        found.append(warning("base_key_moved", "warning", f"RoPE base {' and '.join(f'{b:,.0f}' for b in bases)} "
                             f"{where}; a reader that falls back to 10,000 runs another model"))  # fmt: skip
    stated = config.get("rope_theta") is not None or config.get("rotary_emb_base") is not None or _stated_in(parameters)
    if not stated:
        source = f"transformers' config class for {config.get('model_type')!r}" if rules else "the generic default"
        found.append(warning("base_missing", "warning", f"no rope_theta in the config: base {bases[0]:,.0f} comes "
                                                         f"from {source}"))  # fmt: skip
    return found


def _stated_in(parameters):
    if not isinstance(parameters, dict):
        return False
    values = [v for v in parameters.values() if isinstance(v, dict)] or [parameters]
    return all("rope_theta" in v for v in values)


def distinct_schemes(roped):
    """The different RoPE schemes of the layers (one per label, base, type and size), in layer order."""
    found = {}
    for layer in roped:
        s = layer.rope
        found.setdefault((s.label, s.base, s.rope_type, s.rotary_dim, s.head_dim), s)
    return list(found.values())


def _shape_warnings(config, roped, rules, kind):
    found = []
    schemes = distinct_schemes(roped)
    if any(s.pairing == "interleaved" for s in schemes):
        found.append(warning("pairing", "warning", "the checkpoint pairs features (2i, 2i+1): rotate_half code needs "
                                                    "W_q, W_k permuted first"))  # fmt: skip
    if any(s.pairing is None for s in schemes):
        found.append(warning("pairing", "check", "the pairing could not be probed from transformers' code"))
    for s in schemes:
        where = f" ({s.label})" if s.label else ""
        if s.proportional and s.turning_pairs < s.head_dim // 2:
            found.append(
                warning(
                    "proportional",
                    "warning",
                    f"proportional{where}: {s.turning_pairs} of "
                    f"{s.head_dim // 2} pairs (i, i + {s.head_dim // 2}) turn at base^(-2i/{s.head_dim})",
                )
            )
        elif not s.proportional and s.rotary_dim < s.head_dim:
            found.append(
                warning(
                    "partial_rotation",
                    "warning",
                    f"partial{where}: the first {2 * s.turning_pairs} of "
                    f"{s.head_dim} features turn, pairs (i, i + {s.turning_pairs}), base^(-2i/{s.rotary_dim})",
                )
            )
        if not s.proportional and s.rotary_dim % 2:
            found.append(
                warning(
                    "odd_rotary",
                    "check",
                    f"rotated size {s.rotary_dim}{where} is odd: "
                    f"{(s.rotary_dim + 1) // 2} frequencies over {s.rotary_dim}, {s.rotary_dim + 1} features turn",
                )
            )
    legacy = config.get("rotary_dim")
    if legacy is not None and rules and not reads_rotary_dim(kind) and kind not in ("gptj", "codegen"):
        turned = max(s.rotary_dim for s in schemes)
        if turned != legacy:
            found.append(warning("transformers_differs", "error", f"the config says rotary_dim = {legacy}, but "
                                  f"transformers 5.24's {kind} never reads it and turns {turned} of "
                                  f"{max(s.head_dim for s in schemes)} features"))  # fmt: skip
    fractions = [
        v.get("partial_rotary_factor")
        for v in rope_parameters(config).values()
        if v and v.get("rope_type") == "default"
    ]  # other rope types always read the fraction
    if rules and rules.get("honours_partial") is False and any(f is not None and f < 1 for f in fractions):
        found.append(warning("transformers_differs", "error", f"partial_rotary_factor < 1, but transformers 5.24's "
                              f"{kind} ignores it in its default RoPE and turns the whole head"))  # fmt: skip
    return found


def _scaling_warnings(config, roped):
    found = []
    for scheme in distinct_schemes(roped):
        kind, scaling = scheme.rope_type, scheme.scaling or {}
        where = f" ({scheme.label})" if scheme.label else ""
        if kind in ("yarn", "longrope"):
            factor = scheme.attention_factor
            source = "attention_factor given" if scaling.get("attention_factor") is not None else (
                "mscale / mscale_all_dim ratio" if scaling.get("mscale") and scaling.get("mscale_all_dim") else
                "0.1 ln(factor) + 1" if kind == "yarn" else "sqrt(1 + ln s / ln L)")  # fmt: skip
            found.append(warning("yarn_factor", "warning", f"{kind}{where}: cos and sin x {factor:.4f} ({source}), "
                                  f"logits x {factor * factor:.4f}"))  # fmt: skip
            if scaling.get("mscale_all_dim") and (config.get("kv_lora_rank") or config.get("qk_rope_head_dim")):
                mscale = 0.1 * scaling["mscale_all_dim"] * math.log(scaling["factor"]) + 1
                found.append(warning("mla_softmax_scale", "check", f"an MLA model multiplies its softmax scale by "
                                      f"{mscale:.4f}^2 = {mscale * mscale:.4f}"))  # fmt: skip
        if kind == "dynamic":
            found.append(warning("dynamic_cache", "check", "dynamic NTK rescales with the current length"))
    return found


def ranges(indices):
    """'3, 7, 11' or '3-5, 9' for sorted layer indices."""
    runs, start = [], None
    for i, index in enumerate(indices):
        if start is None:
            start = index
        if i + 1 == len(indices) or indices[i + 1] != index + 1:
            runs.append(str(start) if start == index else f"{start}-{index}")
            start = None
    return ", ".join(runs)
