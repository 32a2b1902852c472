"""The fields of a Hugging Face config.json, read as Hugging Face writes them, bounded as the calculator bounds them.

One rule for every reader of a config.json (`gpumem models add`, `gpumem estimate --config`, the catalog's measured
configs, and the calculator's script, which reads FIELD_LIMITS and rules.yaml's calculator block from the build's
JSON and words each refusal the same way): a count is a JSON integer (a number with no fractional part, JSON
Schema's `integer`, so 4096.0 is 4096 as JSON.parse reads it, but "3" is text), a switch a JSON boolean, and no
number is larger than rules.yaml's `calculator.max_*` bound for its field. Past those bounds a config describes no
model the engines can size, and the arithmetic would overflow or turn negative.

Hand-written: a JSON Schema validator (jsonschema) could check types and maxima, but not the counts that depend on
each other (dense layers within the layers, one layer type per layer) nor word its errors as the calculator does.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from gpumem.catalog.validate import Invalid

# Each count a config.json gives, and the rules.yaml calculator bound it stays within (a vision tower's fields
# share the names of the language model's, and their bounds).
FIELD_LIMITS = {
    "hidden_size": "max_hidden",
    "num_hidden_layers": "max_layers",
    "vocab_size": "max_vocab",
    "num_attention_heads": "max_heads",
    "num_key_value_heads": "max_heads",
    "head_dim": "max_head_dim",
    "kv_lora_rank": "max_hidden",
    "q_lora_rank": "max_hidden",
    "qk_rope_head_dim": "max_head_dim",
    "qk_nope_head_dim": "max_head_dim",
    "v_head_dim": "max_head_dim",
    "intermediate_size": "max_intermediate",
    "moe_intermediate_size": "max_intermediate",
    "num_local_experts": "max_experts",
    "num_experts": "max_experts",
    "n_routed_experts": "max_experts",
    "num_experts_per_tok": "max_experts",
    "n_shared_experts": "max_experts",
    "num_shared_experts": "max_experts",
    "num_experts_per_token": "max_experts",
    "num_heads": "max_heads",
    "short_conv_kernel_size": "max_head_dim",
    "first_k_dense_replace": "max_layers",
    "max_position_embeddings": "max_context",
    "model_max_length": "max_context",
    "sliding_window": "max_context",
    "sliding_window_pattern": "max_layers",
    "patch_size": "max_hidden",
    "image_size": "max_hidden",
    "linear_num_key_heads": "max_heads",
    "linear_num_value_heads": "max_heads",
    "linear_key_head_dim": "max_head_dim",
    "linear_value_head_dim": "max_head_dim",
    "linear_conv_kernel_dim": "max_head_dim",
    "full_attention_interval": "max_layers",
    "decoder_sparse_step": "max_layers",
    "shared_expert_intermediate_size": "max_intermediate",
    "moe_shared_expert_intermediate_size": "max_intermediate",
    "mamba_num_heads": "max_heads",
    "mamba_head_dim": "max_head_dim",
    "n_groups": "max_heads",
    "ssm_state_size": "max_head_dim",
    "conv_kernel": "max_head_dim",
    "index_n_heads": "max_heads",
    "index_head_dim": "max_head_dim",
    "depth": "max_layers",
    "temporal_patch_size": "max_hidden",
    "in_channels": "max_hidden",
    "spatial_merge_size": "max_hidden",
    "out_hidden_size": "max_hidden",
    "num_position_embeddings": "max_context",
    "attention_chunk_size": "max_context",
    "moe_latent_size": "max_hidden",
    "num_nextn_predict_layers": "max_layers",
    "interleave_moe_layer_step": "max_layers",
    "intermediate_size_mlp": "max_intermediate",
    "num_channels": "max_hidden",
    "projector_input_dim": "max_intermediate",
    "projector_output_dim": "max_intermediate",
    "vision_output_dim": "max_intermediate",
    "global_head_dim": "max_head_dim",
    "num_global_key_value_heads": "max_heads",
    "top_k_experts": "max_experts",
    "position_embedding_size": "max_context",
}
# A number is shown as written up to this many digits (JavaScript's numbers are exact below 2^53), past it by size.
SHOWN_DIGITS = 15
SHOWN_CHARACTERS = 60
LAYER_TYPES = ("full_attention", "sliding_attention")


def shown(value: Any) -> str:
    """A config value in an error, as the calculator's script shows it: JSON, long text cut, big numbers by size."""
    if value is None:
        return "nothing"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        if isinstance(value, float) and not math.isfinite(value) or abs(value) >= 10**SHOWN_DIGITS:
            return f"a number of more than {SHOWN_DIGITS} digits"
        return str(value) if isinstance(value, int) else json.dumps(value)
    if isinstance(value, str):
        if len(value) > SHOWN_CHARACTERS:
            return f"{json.dumps(value[:SHOWN_CHARACTERS], ensure_ascii=False)}… ({len(value):,} characters)"
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, list):
        return f"a list of {len(value):,} items"
    return "an object"


def whole_number(value: Any) -> float | None:
    """A JSON integer as Python's int (4096.0 included), else None; a literal too large for a float (1e400, which
    json reads as infinity and JSON.parse as Infinity) is infinity, beyond every bound."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int) or value == math.inf:
        return value
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        return int(value)
    return None


def count_of(
    config: Mapping[str, Any], name: str, limits: Mapping[str, float], default: int | None = None, *, prefix: str = "", least: int = 1
) -> int:
    """A count of the config (`least` or more, within its field's bound); a missing or wrong one names the field."""
    value = config.get(name, default)
    number = whole_number(value)
    if number is None or number < least:
        expected = "a positive integer" if least else "a whole number of 0 or more"
        raise Invalid(f"{prefix}{name}: expected {expected}, got {shown(value)}")
    limit = int(limits[FIELD_LIMITS[name]])
    if number > limit:
        raise Invalid(f"{prefix}{name}: expected at most {limit:,}, got {shown(value)}")
    return int(number)


def optional_count(config: Mapping[str, Any], name: str, limits: Mapping[str, float]) -> int:
    """A count Hugging Face may leave out or write as null (shared experts, leading dense layers): 0 then."""
    return 0 if config.get(name) is None else count_of(config, name, limits, least=0)


def switch(config: Mapping[str, Any], name: str, default: bool) -> bool:
    """A JSON boolean; "false" is text, not false."""
    value = config.get(name, default)
    if not isinstance(value, bool):
        raise Invalid(f"{name}: expected true or false, got {shown(value)}")
    return value


def layer_types(config: Mapping[str, Any], layers: int, kinds: tuple[str, ...] = LAYER_TYPES) -> list[str] | None:
    """The attention type of each layer, one per layer, when the config lists them."""
    types = config.get("layer_types")
    if types is None:
        return None
    if not isinstance(types, list) or any(item not in kinds for item in types):
        raise Invalid(f"layer_types: expected a list of {' and '.join(map(json.dumps, kinds))}, got {shown(types)}")
    if len(types) != layers:
        raise Invalid(f"layer_types: {len(types):,} entries for num_hidden_layers ({layers:,}): expected one per layer")
    return types


@dataclass(frozen=True)
class Fields:
    """One config's counts, each read and bounded by config_fields (prefix: where a nested block sits)."""

    config: Mapping[str, Any]
    limits: Mapping[str, float]
    prefix: str = ""

    def count(self, name: str, default: int | None = None) -> int:
        return count_of(self.config, name, self.limits, default, prefix=self.prefix)

    def optional(self, name: str) -> int:
        return optional_count(self.config, name, self.limits)

    def get(self, name: str, default: Any = None) -> Any:
        return self.config.get(name, default)
