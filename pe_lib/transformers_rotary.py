"""What Hugging Face transformers' own rotary modules compute for a config: the reference the auditor is held to.

    config_defaults(model_type)     the config class's defaults (transformers documents them as its reference
                                    checkpoint), as a config object
    from_dict(config)               a config.json (a dict, either layout) read by transformers' own config class
    reference_frequencies(config)   {label: (inv_freq float64, attention factor)} as the model's text rotary
                                    module holds them: label None for one RoPE for every layer, else the layer
                                    type (or rope label, DeepSeek-V4's "main" / "compress") of each buffer
    pairing(model_type)             which features transformers' rotate_half turns together: "half" (i, i + r/2)
                                    or "interleaved" (2i, 2i + 1), probed on a unit vector
    honours_partial(model_type)     whether the model's default RoPE turns only partial_rotary_factor of the head
    overrides_head_dim(model_type)  whether the config class replaces a config's own head_dim by its rule
    legacy_layout(model_type)       where a class that nests RoPE by layer type puts a config's flat keys
    type_aliases(model_type)        legacy rope_type names the class renames (Phi-3: "su" -> "longrope")

Only the rotary module is built (a few buffers), never a model: cheap for every config class. transformers is
imported here and nowhere in the core, so pe_lib's reader stays usable without it; the tests and the atlas
script call this module. The rules it probes are committed as data (pe_lib/data/rope_rules.json, written by
`python -m pe_lib.atlas`), so the reader knows them without importing transformers.
"""

import contextlib
import copy
import functools
import importlib
import inspect
import io
import logging
import re
import warnings

from .rope_config import LEGACY_THETA_KEYS

# Modules whose rotary embeddings are for other inputs than the language model's tokens.
_NOT_TEXT = ("Vision", "Audio", "DiT", "Talker", "SaProt", "Encoder")


@contextlib.contextmanager
def quiet():
    """Silence transformers' warnings about config keys (the auditor reports those itself)."""
    import transformers

    level = transformers.logging.get_verbosity()
    transformers.logging.set_verbosity_error()
    try:
        with warnings.catch_warnings(), contextlib.redirect_stderr(io.StringIO()):
            warnings.simplefilter("ignore")
            logging.disable(logging.WARNING)
            yield
    finally:
        logging.disable(logging.NOTSET)
        transformers.logging.set_verbosity(level)


def version():
    import transformers

    return transformers.__version__


def config_class(model_type):
    """transformers' config class for `model_type` (ValueError naming the type if it has none)."""
    from transformers import CONFIG_MAPPING

    if model_type not in CONFIG_MAPPING:
        raise ValueError(f"transformers {version()} has no model_type {model_type!r}")
    return CONFIG_MAPPING[model_type]


def config_defaults(model_type):
    """A new instance of the config class with its defaults (a copy: callers may change it)."""
    return copy.deepcopy(_config_defaults(model_type))


@functools.cache
def _config_defaults(model_type):
    # Building a config class runs transformers' validators: 1-6 ms a class, and the atlas asks ~3 times a type.
    with quiet():
        return config_class(model_type)()


def from_dict(config):
    """A config.json (a dict with model_type) read by transformers' own config class (on a copy: the classes
    rewrite nested dicts in place, e.g. Phi-3 sets rope_scaling["rope_type"])."""
    config = copy.deepcopy(dict(config))
    cls = config_class(config.pop("model_type"))
    with quiet():
        return cls(**config)


def _modeling_module(config):
    """The module of the model class transformers builds for this config (a few config types borrow Llama's)."""
    import transformers
    from transformers.models.auto.modeling_auto import MODEL_MAPPING_NAMES

    model_class = MODEL_MAPPING_NAMES.get(getattr(config, "model_type", None))
    name = type(config).__module__.replace(".configuration_", ".modeling_")
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError:
        if not isinstance(model_class, str):
            raise
        return importlib.import_module(getattr(transformers, model_class).__module__)


def _rotary_candidates(config):
    """The *RotaryEmbedding classes of the config's modeling module that take the config, best match first."""
    import torch

    module = _modeling_module(config)
    found = []
    for name, cls in vars(module).items():
        if not (inspect.isclass(cls) and name.endswith("RotaryEmbedding") and issubclass(cls, torch.nn.Module)):
            continue
        parameters = list(inspect.signature(cls.__init__).parameters.values())[1:]
        if not parameters or parameters[0].name != "config":
            continue
        annotation = parameters[0].annotation
        annotation = annotation if isinstance(annotation, str) else getattr(annotation, "__name__", "")
        rank = 0 if annotation == type(config).__name__ else (2 if any(w in name for w in _NOT_TEXT) else 1)
        found.append((rank, name, cls))
    return [cls for _, _, cls in sorted(found, key=lambda item: item[:2])]


def rotary_module(config):
    """The text rotary module transformers builds for `config` (a config object), or None if its module has none."""
    for cls in _rotary_candidates(config):
        try:
            with quiet():
                module = cls(config)
        except Exception:  # noqa: BLE001 - a class for another sub-config: try the next one
            continue
        if any(name.endswith("inv_freq") for name, _ in module.named_buffers()):
            return module
    return None


def reference_frequencies(config):
    """{label: (inv_freq as float64 NumPy, attention factor)} of the text rotary module for `config`, or {}."""
    module = rotary_module(config)
    if module is None:
        return {}
    result = {}
    for name, buffer in module.named_buffers():
        if not name.endswith("inv_freq") or "original" in name or "long" in name:
            continue
        label = None if name == "inv_freq" else name[: -len("_inv_freq")]
        factor = getattr(module, "attention_scaling" if label is None else f"{label}_attention_scaling", 1.0)
        if isinstance(factor, dict):  # some modules keep one factor per layer type in a dict
            factor = factor[label]
        result[label] = (buffer.double().numpy(), float(factor))
    return result


def pairing(model_type):
    """Which features of the checkpoint's q and k the model turns together, or None if it cannot tell.

    "interleaved" (2i, 2i + 1): GPT-J's rotate_every_two, a complex product (Llama 4, DeepSeek-V2), or
    apply_rotary_pos_emb_interleave, which reorders interleaved weights before rotate_half;
    "rope_interleave": interleaved if the config's rope_interleave is true (its default), else half
    (DeepSeek-V3 and the models built on it); "half" (i, i + r/2): rotate_half, probed on a unit vector.
    """
    import torch

    module = _modeling_module(config_defaults(model_type))
    source = inspect.getsource(module)
    if "def apply_rotary_pos_emb_interleave" in source:
        return "rope_interleave" if "config.rope_interleave" in source else "interleaved"
    if "rotate_every_two" in source or "view_as_complex" in source or "def rotate_pairwise" in source:
        return "interleaved"
    rotate = getattr(module, "rotate_half", None)
    if rotate is None:
        return "half" if "torch.chunk(" in source else None  # gpt-oss splits the head into two halves
    unit = torch.zeros(1, 8)
    unit[0, 0] = 1.0
    turned = rotate(unit)[0]
    return "interleaved" if turned[1] != 0 else "half" if turned[4] != 0 else None


def honours_partial(model_type):
    """Whether the default RoPE of `model_type` turns int(head_dim * partial_rotary_factor) features (or None).

    Probed on the class defaults and with the fraction set to 0.5: honoured where some fraction below 1 that the
    built config holds gives fewer frequencies than the whole head has pairs.
    """
    defaults = config_defaults(model_type)
    parameters = dict(defaults.to_dict().get("rope_parameters") or {})
    nested = {key: value for key, value in parameters.items() if isinstance(value, dict)}
    labels = [label for label, values in (nested or {None: parameters}).items()
              if values.get("rope_type", "default") in ("default", "axial")]  # fmt: skip
    if not labels:
        return None
    changed = {**parameters, **{k: {**parameters[k], "partial_rotary_factor": 0.5} for k in labels}} if nested else {
        **parameters, "partial_rotary_factor": 0.5}  # fmt: skip
    with quiet():
        probes = [defaults, type(defaults)(**{**_init_kwargs(defaults), "rope_parameters": changed})]
    seen = []
    for config in probes:
        built = reference_frequencies(config)
        for label in labels:
            values = config.rope_parameters[label] if label is not None else config.rope_parameters
            fraction = values.get("partial_rotary_factor") or 1.0
            try:  # Gemma 4's global layers have their own head size: read it from their layer's config
                layer = (
                    config.per_layer_config[label] if label and getattr(config, "is_heterogeneous", False) else config
                )
                head_dim = getattr(layer, "head_dim", None) or layer.hidden_size // layer.num_attention_heads
            except (AttributeError, ValueError):  # a config without the sizes (BLT's outer config)
                continue
            if built.get(label) is not None and fraction < 1:
                seen.append(len(built[label][0]) < (head_dim + 1) // 2)
    return any(seen) if seen else None


def overrides_head_dim(model_type):
    """Whether the config class replaces a config's own head_dim by its rule (Cohere 2: hidden_size // heads, the
    MLA models: qk_rope_head_dim) rather than filling it in only where the config has none (Llama's `if
    self.head_dim is None`). Probed with a head_dim 4 larger than the class's; None if the class refuses it."""
    defaults = config_defaults(model_type)
    own = getattr(defaults, "head_dim", None)
    probe = (own if isinstance(own, int) else 64) + 4
    try:
        with quiet():
            built = type(defaults)(**{**_init_kwargs(defaults), "head_dim": probe})
    except Exception:  # noqa: BLE001 - the class refuses that size: it cannot tell
        return None
    return getattr(built, "head_dim", None) != probe


_SENTINEL_THETA = 123457.0


def legacy_layout(model_type):
    """For a class whose RoPE is nested by layer type (Gemma 3: full_attention, sliding_attention), where it puts
    the flat keys of a config: {"theta": {key: [labels]}, "rope_scaling": [labels], "rope_parameters": [labels]}
    (Gemma 3: rope_theta and rope_scaling to full_attention only, rope_local_base_freq to sliding_attention, a
    flat 5.x rope_parameters nowhere); None for a class that does not nest. Probed with sentinel values."""
    parameters = config_defaults(model_type).to_dict().get("rope_parameters") or {}
    if not parameters or not all(isinstance(value, dict) or value is None for value in parameters.values()):
        return None

    def labels_where(config, test):
        try:
            built = from_dict({"model_type": model_type, **config}).rope_parameters
        except Exception:  # noqa: BLE001 - the class refuses the probe: it reads none of it
            return []
        return sorted(label for label, value in built.items() if isinstance(value, dict) and test(value))

    def linear(value):
        return value.get("rope_type") == "linear" and value.get("factor") == 7.0

    theta = {}
    for key in LEGACY_THETA_KEYS:
        found = labels_where({key: _SENTINEL_THETA}, lambda value: value.get("rope_theta") == _SENTINEL_THETA)
        if found:
            theta[key] = found
    return {
        "theta": theta,
        "rope_scaling": labels_where({"rope_scaling": {"rope_type": "linear", "factor": 7.0}}, linear),
        "rope_parameters": labels_where({"rope_parameters": {"rope_type": "linear", "factor": 7.0}}, linear),
    }


def type_aliases(model_type):
    """{legacy rope_type: the type the config class turns it into}, e.g. Phi-3's {"su": "longrope", "yarn":
    "longrope"} ("For backward compatibility if previous version used 'su' or 'yarn'"); {} for most classes."""
    source = inspect.getsource(config_class(model_type))
    found = re.search(r'rope_parameters_type in \[([^\]]*)\]:\s*\n\s*self\.rope_parameters\["rope_type"\] = "(\w+)"',
                      source)  # fmt: skip
    if not found:
        return {}
    return {name.strip().strip("\"'"): found.group(2) for name in found.group(1).split(",")}


def _init_kwargs(config):
    values = config.to_dict()
    for key in ("transformers_version", "architectures", "model_type"):
        values.pop(key, None)
    return values
