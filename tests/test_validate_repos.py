"""Bad input in a model's published checkpoints (models.yaml `repos`): each problem named by file, line, id and field."""

from __future__ import annotations

from pathlib import Path

from gpumem.commands.build import gather

from .conftest import NOW, edit, line_of
from .project import fixture_options
from .test_validate import MODELS, problems, root

__all__ = ["root"]  # the fixture, shared with test_validate


def changed(root: Path, old: str, new: str) -> int:
    """Replace `old` by `new` in the copy's models.yaml; the line `new` is on."""
    edit(root / MODELS, old, new)
    return line_of(root / MODELS, new.strip())


def test_a_repository_is_checked(root):
    line = changed(root, "      awq: {repo: Qwen/Qwen2.5-7B-Instruct-AWQ,", "      awq: {repo: Qwen2.5-7B-Instruct-AWQ,")
    assert problems(root) == [
        f"catalogs/models.yaml:{line}: qwen2.5-7b: repos.awq.repo: expected a Hugging Face repository as owner/name, "
        "got 'Qwen2.5-7B-Instruct-AWQ'"
    ]


def test_a_checkpoint_s_bytes_are_a_positive_whole_number(root):
    awq = "      awq: {repo: hugging-quants/Meta-Llama-3.1-70B-Instruct-AWQ-INT4, "
    line = changed(root, awq, awq + "bytes: 4.1e10, ")
    assert problems(root) == [f"catalogs/models.yaml:{line}: llama-3.1-70b: repos.awq.bytes: expected a positive integer, got '4.1e10'"]
    edit(root / MODELS, "bytes: 4.1e10,", "bytes: 1000000000000001,")
    assert problems(root) == [f"catalogs/models.yaml:{line}: llama-3.1-70b: repos.awq.bytes: expected at most 1e+15, got 1000000000000001"]


def test_a_repository_needs_a_known_format_and_a_gguf_file(root):
    edit(root / MODELS, "      awq: {repo: Qwen/Qwen2.5-7B-Instruct-AWQ,", "      awq4: {repo: Qwen/Qwen2.5-7B-Instruct-AWQ,")
    edit(root / MODELS, "file: Qwen3-8B-Q8_0.gguf,", "file: Qwen3-8B-Q8_0.bin,")
    awq4, q8 = line_of(root / MODELS, "      awq4:"), line_of(root / MODELS, "Qwen3-8B-Q8_0.bin")
    found = problems(root)
    assert found[0] == (
        f"catalogs/models.yaml:{awq4}: qwen2.5-7b: repos.awq4: unknown weight format 'awq4' (expected awq, bf16, fp16, fp32, fp8, "
        "gguf_mxfp4, gptq, int8, mxfp4, nf4, nvfp4, q2_k, q3_k_m, q4_0, q4_k_m, q5_k_m, q6_k or q8_0)"
    )
    assert found[1:] == [
        f"catalogs/models.yaml:{q8}: qwen3-8b: repos.q8_0.file: expected a GGUF file name ending in .gguf, got 'Qwen3-8B-Q8_0.bin'"
    ]


def test_the_release_repository_comes_from_the_source():
    models = {m.id: m for m in gather(fixture_options(), now=NOW).catalog.models}
    assert models["llama-3.1-8b"].repos["bf16"].repo == "meta-llama/Llama-3.1-8B"
    assert models["llama-3.1-8b"].repos["bf16"].source == "https://huggingface.co/meta-llama/Llama-3.1-8B/blob/main/config.json"
    assert models["gpt-oss-20b"].repos["mxfp4"].repo == "openai/gpt-oss-20b"
    assert (models["qwen3-8b"].repos["q4_k_m"].repo, models["qwen3-8b"].repos["q4_k_m"].file) == (
        "Qwen/Qwen3-8B-GGUF",
        "Qwen3-8B-Q4_K_M.gguf",
    )
    assert sum(len(m.repos) for m in models.values()) == 43


def test_a_release_keeping_attention_at_16_bits_is_refused_for_full_layers_of_their_own_size(root):
    """kept_params counts every attention layer at one size: Gemma 4's full layers of their own are refused."""
    edit(
        root / MODELS,
        "    attention: {kind: sliding, window: 1024, sliding_layers: 52}\n",
        "    attention: {kind: sliding, window: 1024, sliding_layers: 52, global_kv_heads: 4, global_head_dim: 256}\n",
    )
    gemma = "      bf16: {repo: google/gemma-3-27b-it, source: https://huggingface.co/google/gemma-3-27b-it"
    line = changed(root, gemma + "}\n", gemma + ", kept: [attention]}\n") - 1
    assert problems(root) == [
        f"catalogs/models.yaml:{line}: gemma-3-27b: repos: kept: attention is counted for layers of one size, "
        "not Gemma 4's full layers of their own"
    ]


def test_a_release_keeping_all_but_the_routed_experts_says_so_alone(root):
    fp8 = "      fp8: {repo: Qwen/Qwen3-30B-A3B-FP8, source: https://huggingface.co/Qwen/Qwen3-30B-A3B-FP8"
    line = changed(root, fp8 + "}", fp8 + ", kept: [non_experts, router]}")
    assert problems(root) == [
        f"catalogs/models.yaml:{line}: qwen3-30b-a3b: repos.fp8.kept: expected a list of attention and router, each once, "
        "or non_experts alone, got ['non_experts', 'router']"
    ]


def test_a_release_keeping_all_but_the_routed_experts_needs_experts(root):
    awq = "      awq: {repo: Qwen/Qwen2.5-7B-Instruct-AWQ, source: https://huggingface.co/Qwen/Qwen2.5-7B-Instruct-AWQ"
    line = changed(root, awq + "}", awq + ", kept: [non_experts]}") - 1
    assert problems(root) == [
        f"catalogs/models.yaml:{line}: qwen2.5-7b: repos: kept: non_experts is every weight but the routed experts, and the model has none"
    ]
