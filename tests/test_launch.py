"""engines/launch.py: the command that makes a "holds" true, flag for flag as the pinned engines spell them."""

from __future__ import annotations

from gpumem.catalog.inputs import load_catalog
from gpumem.engines import launch as engine
from gpumem.engines.launch import Settings, Workload

from .project import CATALOGS

CATALOG = load_catalog(CATALOGS)
RULES = CATALOG.rules.deployment
assert RULES is not None
FORMATS, KV = RULES.weight_formats, RULES.kv_formats
DEFAULT = Settings(0.92)


def command(model: str, weights: str, kv: str, work: Workload, settings: Settings = DEFAULT) -> engine.Launch:
    return engine.launch(CATALOG.model(model), FORMATS[weights], KV[kv], work, settings, "0.33.0")


def test_vllm_serve_sets_every_limit_the_sizing_assumed():
    done = command("qwen2.5-72b", "awq", "fp8", Workload(4, 8192, 8))
    assert done.text == (
        "vllm serve Qwen/Qwen2.5-72B-Instruct-AWQ --tensor-parallel-size 4 --max-model-len 8192 "
        "--gpu-memory-utilization 0.92 --max-num-seqs 8 --kv-cache-dtype fp8"
    )
    assert (done.engine, done.version, done.missing, done.download) == ("vllm", "0.33.0", "", "")
    assert done.argv[:3] == ("vllm", "serve", "Qwen/Qwen2.5-72B-Instruct-AWQ")


def test_the_release_checkpoint_comes_from_the_models_source():
    done = command("llama-3.1-8b", "bf16", "bf16", Workload(1, 8192, 1))
    assert (
        done.text
        == "vllm serve meta-llama/Llama-3.1-8B --tensor-parallel-size 1 --max-model-len 8192 --gpu-memory-utilization 0.92 --max-num-seqs 1"
    )


def test_fp8_is_made_from_the_bf16_checkpoint_at_load_time_and_nf4_is_not():
    fp8 = command("llama-3.1-8b", "fp8", "bf16", Workload(1, 4096, 2))
    assert fp8.argv[2] == "meta-llama/Llama-3.1-8B"
    assert fp8.argv[-2:] == ("--quantization", "fp8")
    nf4 = command("llama-3.1-8b", "nf4", "bf16", Workload(1, 4096, 2))
    assert "--quantization" not in nf4.argv and nf4.missing == nf4.argv[2]  # vLLM 0.33.0 has no bitsandbytes method
    official = command("qwen3-8b", "fp8", "bf16", Workload(1, 4096, 2))
    assert "--quantization" not in official.argv  # a pre-quantized checkpoint carries its own


def test_a_checkpoint_the_catalog_does_not_name_is_what_the_reader_supplies():
    done = command("llama-3.1-8b", "gptq", "bf16", Workload(2, 4096, 1))
    assert done.missing == "<GPTQ 4-bit checkpoint of Llama 3.1 8B>"
    assert done.text.startswith("vllm serve '<GPTQ 4-bit checkpoint of Llama 3.1 8B>' --tensor-parallel-size 2 ")


def test_engine_settings_given_are_on_the_command():
    done = command("llama-3.1-8b", "bf16", "bf16", Workload(1, 8192, 4), Settings(0.95, batch_tokens=2048, eager=True))
    assert done.argv[5:] == (
        "--max-model-len", "8192", "--gpu-memory-utilization", "0.95", "--max-num-seqs", "4",
        "--max-num-batched-tokens", "2048", "--enforce-eager",
    )  # fmt: skip


def test_llama_server_holds_every_slot_at_its_context():
    done = engine.launch(CATALOG.model("qwen3-32b"), FORMATS["q4_k_m"], KV["q8_0"], Workload(2, 8192, 4), DEFAULT, "0c1e57098")
    assert done.text == (
        "llama-server -m Qwen3-32B-Q4_K_M.gguf -c 32768 -ngl all -fa on --parallel 4 --tensor-split 1,1 "
        "--cache-type-k q8_0 --cache-type-v q8_0"
    )
    assert (done.engine, done.version, done.download, done.missing) == ("llama.cpp", "0c1e57098", "Qwen/Qwen3-32B-GGUF", "")


def test_llama_server_without_a_named_file_names_what_to_supply():
    done = engine.launch(CATALOG.model("llama-3.1-8b"), FORMATS["q4_k_m"], KV["bf16"], Workload(1, 8192, 1), DEFAULT, "b1")
    assert done.argv == (
        "llama-server",
        "-m",
        "<GGUF Q4_K_M file of Llama 3.1 8B>",
        "-c",
        "8192",
        "-ngl",
        "all",
        "-fa",
        "on",
        "--parallel",
        "1",
    )
    assert done.missing == "<GGUF Q4_K_M file of Llama 3.1 8B>"
