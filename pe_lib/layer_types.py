"""Which kind each layer of a model is: transformers' `layer_types`, read from a config.json in either layout.

    layer_types(config)       one label per layer ("full_attention", "sliding_attention", "linear_attention", ...):
                              the config's own list where it has one, else the list its transformers 5.24 config
                              class derives (a rule per model type below; tests/test_layer_types.py builds every
                              config class of transformers without its list and compares)
    layer_count(config)       num_hidden_layers (or num_layers, n_layer, n_layers)

Most published configs written by transformers 5.x list `layer_types`; 4.x configs and new models' checkpoints often
give only the key the config class derives it from, and that key differs per model: a period (Gemma 3's
`sliding_window_pattern`, Qwen3-Next's `full_attention_interval`, AFMoE's `global_attn_every_n_layers`), a list of
layer numbers counted from 1 (Kimi Linear's `linear_attn_config`), a compression ratio per layer (DeepSeek-V4's
`compress_ratios`), or nothing (a fixed pattern in the class's code). A model type without a rule here and without
a list gets Mistral's: every layer slides if `sliding_window` is set, else every layer attends in full.
"""

from collections.abc import Mapping

from . import _validate

_LAYER_COUNT_KEYS = ("num_hidden_layers", "num_layers", "n_layer", "n_layers")
FULL, SLIDING, LINEAR, INDEXED = "full_attention", "sliding_attention", "linear_attention", "indexed_attention"
_QWEN_WINDOWS = ("qwen2", "qwen2_moe", "qwen3", "qwen3_moe", "qwen2_5_vl_text", "qwen2_vl_text", "qwen2_5_omni_text")
_DEEPSEEK_V4_RATIOS = {0: SLIDING, 4: "compressed_sparse_attention", 128: "heavily_compressed_attention"}
# Gemma 4 and its relatives force their last layer to full attention, even where the config lists another type.
_LAST_FULL = ("gemma4_text", "gemma4_unified_text", "diffusion_gemma_text", "embedding_gemma2_text")
# Types whose config class renames a listed "full_attention" (their attention layers all use an indexer).
_FULL_IS_INDEXED = ("glm5_next_text", "qwen4_exp_text")


def layer_count(config):
    count = next((config[key] for key in _LAYER_COUNT_KEYS if config.get(key) is not None), None)
    return _validate.positive_int("num_hidden_layers", count)


def _period(config, key, default):
    """The config's `key` (a period of layers), else the class's default; a clear error for what transformers
    cannot use (EXAONE 4.0 ships the string "LLLG", on which Exaone4Config's (i + 1) % pattern raises TypeError)."""
    value = config.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(
            f"{key}={value!r} without layer_types: transformers 5.24's {config.get('model_type')} config class "
            f"computes (i + 1) % {key} from a positive int and fails on this value; give layer_types"
        )
    return value


def _every(period, *, full=FULL, other=SLIDING, at=lambda i, n, p: (i + 1) % p == 0):
    """A rule: layer i is `full` where at(i, n, period) holds, else `other`."""
    return lambda config, n, p=period: [full if at(i, n, p(config) if callable(p) else p) else other for i in range(n)]


def _key(key, default):
    return lambda config: _period(config, key, default)


def _kimi_linear(config, n):
    """Kimi Linear's checkpoint lists its layers counted from 1; its config class, given no list, puts attention at
    layers 4, 8, ... (counted from 0): one layer late."""
    lists = config.get("linear_attn_config") or {}
    if "full_attn_layers" not in lists or "kda_layers" not in lists:
        return [FULL if i and i % 4 == 0 else LINEAR for i in range(n)]
    types = [None] * n
    for key, label in (("full_attn_layers", FULL), ("kda_layers", LINEAR)):
        for number in lists[key]:
            if not isinstance(number, int) or not 1 <= number <= n:
                raise ValueError(f"linear_attn_config[{key!r}] holds {number!r}: layers are numbered 1..{n}")
            types[number - 1] = label
    if None in types:
        raise ValueError(f"linear_attn_config names no type for layer {types.index(None) + 1} (counted from 1)")
    return types


def _deepseek_v4(config, n):
    ratios = config.get("compress_ratios")
    if ratios is None:  # the class default (DeepSeek-V4-Pro): two heavily compressed layers, then CSA / HCA
        rest = [_DEEPSEEK_V4_RATIOS[4] if i % 2 else _DEEPSEEK_V4_RATIOS[128] for i in range(max(n - 2, 0))]
        return ["heavily_compressed_attention"] * min(n, 2) + rest
    unknown = sorted({r for r in ratios if r not in _DEEPSEEK_V4_RATIOS}, key=str)
    if unknown:
        raise ValueError(f"compress_ratios holds {unknown}: DeepSeek-V4 knows {sorted(_DEEPSEEK_V4_RATIOS)}")
    return [_DEEPSEEK_V4_RATIOS[r] for r in ratios][:n]


def _cohere2_moe(config, n):
    dense = config.get("first_k_dense_replace", 0)
    prefix = _period(config, "prefix_dense_sliding_window_pattern", 1)
    rest = _period(config, "sliding_window_pattern", 4)
    return [FULL if (i + 1) % prefix == 0 else SLIDING for i in range(dense)] + [
        FULL if (i + 1) % rest == 0 else SLIDING for i in range(n - dense)
    ]


def _qwen_window(config, n):
    first = config.get("max_window_layers", n)
    slides = bool(config.get("use_sliding_window")) and config.get("sliding_window") is not None
    return [SLIDING if slides and i >= first else FULL for i in range(n)]


def _exaone4(config, n):
    if config.get("sliding_window") is None:  # the class sets the pattern to 0 and (i + 1) % 0 fails
        raise ValueError(
            "an exaone4 config without sliding_window needs layer_types (transformers 5.24's "
            "Exaone4Config divides by a pattern of 0)"
        )
    return _every(_key("sliding_window_pattern", 4))(config, n)


def rope_switches(config, n):
    """1 where a layer turns q and k (transformers' no_rope_layers, named for what it switches off; Llama 4's class
    default: every no_rope_layer_interval-th layer has no RoPE)."""
    listed = config.get("no_rope_layers")
    if listed:
        return [int(bool(x)) for x in listed]
    interval = _validate.positive_int("no_rope_layer_interval", config.get("no_rope_layer_interval", 4))
    return [int((i + 1) % interval != 0) for i in range(n)]


def _llama4(config, n):
    chunked = config.get("attention_chunk_size") is not None  # the chunked layers are the RoPE layers
    return ["chunked_attention" if rope and chunked else FULL for rope in rope_switches(config, n)]


def _olmo_hybrid(config, n):
    types = [FULL if i % 4 == 3 else LINEAR for i in range(n)]
    return types if FULL in types else [*types[:-1], FULL]


def _pattern(*labels):
    return lambda config, n: [labels[i % len(labels)] for i in range(n)]


def _same(label):
    return lambda config, n: [label] * n


RULES = {  # model_type -> rule(config, n): transformers 5.24's config class, when the config lists no layer_types
    **dict.fromkeys(("gemma2", "gpt_oss", "vaultgemma", "t5_gemma_module"), _every(2)),
    "gemma3_text": _every(_key("sliding_window_pattern", 6)),
    "cohere2": _every(_key("sliding_window_pattern", 4)),
    "cohere2_moe": _cohere2_moe,
    **dict.fromkeys(
        ("t5gemma2_text", "t5gemma2_decoder", "embedding_gemma2_text"), _every(_key("sliding_window_pattern", 6))
    ),
    **dict.fromkeys(("exaone4", "exaone_moe"), _exaone4),
    **dict.fromkeys(("gemma4_text", "gemma4_unified_text", "diffusion_gemma_text"), _every(6)),
    "beam": _every(6, at=lambda i, n, p: (i + 1) % p == 0 or i == n - 1),
    "neomme": _every(6, at=lambda i, n, p: (i + 1) % p == 0 or i == n - 1),
    "afmoe": _every(_key("global_attn_every_n_layers", 4)),
    **dict.fromkeys(("olmo3", "dory"), _every(4)),
    **dict.fromkeys(("gemma3n_text", "kolibri1"), _every(5)),
    "ultrabert": lambda config, n: (
        [SLIDING if w else FULL for w in config["attention_windows"]]
        if config.get("attention_windows")
        else _every(3)(config, n)
    ),
    **dict.fromkeys(("muse_glimmer_text", "muse_spark_text"), _every(4, at=lambda i, n, p: (n - 1 - i) % p == 0)),
    "mimo_v2_flash": _every(6, at=lambda i, n, p: i == 0 or (i + 1) % p == 0),
    "flint": _every(4, at=lambda i, n, p: i < 2 or i % p == 1 or i == n - 1),
    **dict.fromkeys(("granite_swa", "granitemoe_swa", "cwm"), _every(4, at=lambda i, n, p: i % p == 0)),
    **dict.fromkeys(
        ("modernbert", "modernbert-decoder"),
        _every(_key("global_attn_every_n_layers", 3), at=lambda i, n, p: i % p == 0),
    ),
    **dict.fromkeys(("inkling2_text", "inkling2_loop_text"), _every(6, full="hybrid", other="hybrid_sliding")),
    "inkling_text": lambda config, n: (
        ["hybrid_sliding" if i in set(config["local_layer_ids"]) else "hybrid" for i in range(n)]
        if config.get("local_layer_ids") is not None
        else _every(6, full="hybrid", other="hybrid_sliding")(config, n)
    ),
    "dots1": lambda config, n: [
        SLIDING if config.get("sliding_window") is not None and i >= config.get("max_window_layers", 62) else FULL
        for i in range(n)
    ],
    "dots3_note_text": lambda config, n: [
        (FULL if config.get("use_dsa") is False else INDEXED)
        if not config.get("use_sliding_window", True) or i < 2 or i % 4 == 1
        else SLIDING
        for i in range(n)
    ],
    **dict.fromkeys(_QWEN_WINDOWS, _qwen_window),
    "llama4_text": _llama4,
    # hybrids of linear attention (or convolutions) and attention
    **dict.fromkeys(
        ("qwen3_next", "qwen3_5_text", "qwen3_5_moe_text"), _every(_key("full_attention_interval", 4), other=LINEAR)
    ),
    "qwen4_exp_text": _every(_key("full_attention_interval", 4), full=INDEXED, other=LINEAR),
    "bailing_hybrid": _every(_key("layer_group_size", 6), other=LINEAR),
    "minimax": _every(2, full=LINEAR, other=FULL),
    "olmo_hybrid": _olmo_hybrid,
    "kimi_linear": _kimi_linear,
    "glm5_next_text": _every(4, full=INDEXED, other=LINEAR, at=lambda i, n, p: i % p == 3),
    "granitemoehybrid": _same(LINEAR),
    "lara_mini": _pattern(LINEAR, SLIDING, LINEAR, FULL, SLIDING),
    "lfm3": lambda config, n: [FULL if i % 4 == 2 else SLIDING if i % 4 == 0 and i > 0 else "conv" for i in range(n)],
    # one type in every layer
    **dict.fromkeys(
        ("deepseek_v32", "axk2", "glm_moe_dsa", "mistral_large4_text", "hy_v4", "hy_v4_vl_text"), _same(INDEXED)
    ),
    **dict.fromkeys(("cohere_compass_text", "laguna", "mellum"), _same(FULL)),
    "zaya": _same("hybrid"),
    "unlimited_ocr_text": lambda config, n: (
        ["reference_sliding_attention" if config.get("sliding_window") is not None else FULL] * n
    ),
    "deepseek_v4": _deepseek_v4,
}


def layer_types(config):
    """transformers' layer_types for a config (a dict with its model_type, aliases read): see the module docstring."""
    if not isinstance(config, Mapping):
        raise TypeError(f"config must be a dict (a model's config.json, loaded), got {type(config).__name__}")
    n, kind = layer_count(config), config.get("model_type")
    if config.get("layer_types") is not None:
        types = list(config["layer_types"])
    elif kind in RULES:
        types = RULES[kind](config, n)
    else:
        types = [SLIDING if config.get("sliding_window") is not None else FULL] * n
    if kind in _LAST_FULL and types:
        types[-1] = FULL
    if kind in _FULL_IS_INDEXED:
        types = [INDEXED if t == FULL else t for t in types]
    if len(types) != n:
        raise ValueError(f"layer_types has {len(types)} entries for num_hidden_layers={n}")
    return types
