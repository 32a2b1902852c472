"""`gpumem estimate` and `gpumem models add`: the deployment model on the command line."""

from __future__ import annotations

import json
import subprocess

import pytest
from click.testing import CliRunner

from gpumem.cli.main import main

from .project import CATALOGS, REPO

CONFIGS = REPO / "tests/fixtures/hf_configs"


def gpumem(*args: str) -> subprocess.CompletedProcess:
    """`gpumem ARGS` in this process (click's runner: no interpreter to start for each of these tests), its exit code
    and what it wrote to stdout and stderr; an exception the command did not turn into its message fails the test, as
    its traceback would in a terminal. (tests/test_cli.py and tests/test_package.py run the command as a process.)"""
    done = CliRunner().invoke(main, ["--project", str(REPO), *args])
    if done.exception is not None and not isinstance(done.exception, SystemExit):
        raise done.exception
    return subprocess.CompletedProcess(["gpumem", *args], done.exit_code, done.stdout, done.stderr)


def estimate(*args: str) -> subprocess.CompletedProcess:
    return gpumem("estimate", "--catalogs", str(CATALOGS), *args)


def test_json_gives_every_part_in_bytes():
    done = estimate("--model", "llama-3.1-8b", "--json")
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["launch"]["text"] == (
        "vllm serve meta-llama/Llama-3.1-8B --tensor-parallel-size 1 --max-model-len 8192 --gpu-memory-utilization 0.92 --max-num-seqs 1"
    )
    assert {k: v for k, v in data.items() if k not in ("configurations", "launch")} == {
        "model": "llama-3.1-8b",
        "weights": "bf16",
        "kv": "bf16",
        "context": 8192,
        "requests": 1,
        "gpus": 1,
        "weights_bytes": 16_060_522_496,
        "weights_bytes_per_gpu": 16_060_522_496,
        "kv_bytes_per_token_per_gpu": 131_072,
        "kv_cache_bytes_per_gpu": 1_073_741_824,
        "runtime_bytes_per_gpu": 2_471_795_098,
        "cuda_graph_bytes_per_gpu": 386_547_057,  # 0.36 GiB
        "total_bytes_per_gpu": 19_992_606_474,
        "engine": {
            "name": "vllm",
            "version": "0.33.0",
            "gpu_memory_utilization": 0.92,
            "max_num_batched_tokens": 8192,
            "max_num_seqs": 1024,
            "enforce_eager": False,
        },
        "valid_gpu_counts": [1, 2, 4, 8],
    }
    first = data["configurations"][0]
    assert first == {
        "gpu": "rtx-3090",
        "count": 1,
        "price_per_hour": 0.19,
        "total_bytes_per_gpu": 18_646_103_163,
        "budget_bytes_per_gpu": 23_301_482_086,  # 0.92 x 25,327,697,920 bytes, what CUDA reports
        "comfortable": True,
    }
    prices = [c["price_per_hour"] for c in data["configurations"]]
    assert prices == sorted(prices)


def test_per_gpu_figures_under_tensor_parallelism():
    data = json.loads(estimate("--model", "llama-3.1-70b", "--weights", "fp8", "--gpus", "4", "--requests", "8", "--json").stdout)
    assert (data["gpus"], data["kv_bytes_per_token_per_gpu"], data["kv_cache_bytes_per_gpu"]) == (4, 81_920, 81_920 * 8192 * 8)
    assert data["weights_bytes_per_gpu"] == round(data["weights_bytes"] / 4)


def test_a_config_json_is_counted():
    data = json.loads(estimate("--config", str(CONFIGS / "gpt-oss-20b.json"), "--json").stdout)
    assert (data["weights"], data["weights_bytes"], data["kv_bytes_per_token_per_gpu"]) == ("mxfp4", 14_438_087_808, 49_152)


def test_the_text_output_names_the_parts_and_the_cheapest_configuration():
    lines = estimate("--model", "qwen2.5-32b", "--weights", "awq", "--context", "32768", "--requests", "8").stdout.splitlines()
    assert lines[0] == "Qwen2.5 32B (Instruct), AWQ 4-bit weights, BF16 KV cache, 8 request(s) of 32,768 tokens on 1 GPU(s):"
    assert lines[4] == "  CUDA graphs  0.4 GB (0.4 GiB) per GPU (vLLM's estimate, taken from the KV budget)"
    assert lines[5] == "  vLLM 0.33.0: max_num_batched_tokens 8,192, max_num_seqs 1,024, CUDA graphs on"
    assert lines[7] == "Tensor-parallel sizes vLLM accepts: 1, 2, 4 or 8"
    assert lines[8:10] == [
        "Launch on 1 GPU(s) (vLLM 0.33.0):",
        "  vllm serve Qwen/Qwen2.5-32B-Instruct-AWQ --tensor-parallel-size 1 --max-model-len 32768 --gpu-memory-utilization 0.92 "
        "--max-num-seqs 8",
    ]
    assert lines[11] == "  8 x RTX 3090             1.52 USD/h  14.6 GB (13.6 GiB) of 23.3 GB (21.7 GiB)  comfortable"
    assert lines[13] == "  1 x RTX PRO 6000         1.90 USD/h  91.2 GB (85.0 GiB) of 94.4 GB (87.9 GiB)  tight"


@pytest.mark.parametrize(
    "args, message",
    [
        (("--model", "nope"), "--model: unknown model 'nope' (a catalog id, e.g. llama-3.1-8b; or pass --config)"),
        (
            ("--model", "phi-4", "--gpus", "4"),
            "--gpus: vLLM cannot split Phi-4 14B's 40 attention heads and 10 KV heads over 4 GPUs; it accepts 1 or 2",
        ),
        (("--model", "llama-2-7b", "--context", "8192"), "--context: 8,192 tokens is beyond Llama 2 7B's native context of 4,096"),
        (
            ("--model", "llama-3.1-8b", "--weights", "int3"),
            "--weights: unknown weight format 'int3' (expected one of fp32, bf16, fp16, fp8, int8, awq, gptq, nf4, mxfp4, nvfp4, q8_0, q6_k, q5_k_m, q4_k_m, q4_0, q3_k_m, q2_k, gguf_mxfp4)",
        ),
        (
            ("--model", "llama-3.1-8b", "--weights", "q4_k_m", "--kv", "fp8"),
            "--kv: fp8 is vllm's cache format; GGUF Q4_K_M weights run on llama.cpp (use bf16, q8_0 or q4_0)",
        ),
        (("--model", "llama-3.1-8b", "--utilization", "1.5"), "--utilization: expected a fraction between 0 and 1, got 1.5"),
        (("--config", str(REPO / "README.md")), f"{REPO / 'README.md'}:1:1: JSON syntax error: Expecting value"),
    ],
)
def test_bad_requests_are_named_errors(args, message):
    done = estimate(*args)
    assert done.returncode == 1
    assert done.stderr.splitlines()[0] == message
    assert "Traceback" not in done.stderr


def test_a_config_of_another_architecture_names_its_field(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "bert", "hidden_size": 768}))
    done = estimate("--config", str(tmp_path / "config.json"))
    assert done.returncode == 1
    assert done.stderr.splitlines()[0].startswith(f'{tmp_path / "config.json"}: model_type: "bert" is not an architecture gpumem counts')


def filled(draft: str) -> str:
    """A drafted entry with its licence filled in, as its author would."""
    assert (
        '    license: {name: "TODO: the licence\'s name", kind: "TODO: open-source or custom", url: "TODO: the URL of its text"}' in draft
    )
    return (
        draft.replace('"TODO: the licence\'s name"', '"Apache License 2.0"')
        .replace('"TODO: open-source or custom"', "open-source")
        .replace('"TODO: the URL of its text"', "https://www.apache.org/licenses/LICENSE-2.0")
    )


def test_models_add_drafts_an_entry_the_catalog_accepts(tmp_path):
    import shutil

    config = str(CONFIGS / "qwen3-30b-a3b.json")
    done = gpumem("models", "add", config, "--catalogs", str(CATALOGS), "--id", "qwen3-30b-a3b-copy", "--name", "Qwen3 30B copy")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[:6] == [
        '  - id: "qwen3-30b-a3b-copy"',
        '    name: "Qwen3 30B copy"',
        '    family: "qwen3_moe"',
        '    size_label: "31B"',
        "    params_b: 30.532122624",
        "    active_params_b: 3.353032704",
    ]
    assert "    experts: {count: 128, active: 8, intermediate: 768}" in done.stdout
    shutil.copytree(CATALOGS, tmp_path / "catalogs")
    models = tmp_path / "catalogs/models.yaml"
    models.write_text(models.read_text().rstrip("\n") + "\n" + filled(done.stdout))
    checked = gpumem("estimate", "--catalogs", str(tmp_path / "catalogs"), "--model", "qwen3-30b-a3b-copy", "--json")
    assert json.loads(checked.stdout)["weights_bytes"] == 61_064_245_248


# Issue 21: requests no configuration can honour are refused, naming why.


def test_a_speed_for_gpus_that_cannot_hold_the_workload_is_refused():
    done = estimate("--model", "llama-3.1-405b", "--speed", "--gpu", "rtx-3090", "--gpus", "1")
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr.splitlines() == [
        "--gpu: 1 x RTX 3090 cannot hold this workload: it needs 817.4 GB (761.3 GiB) per GPU, and each card gives it "
        "23.3 GB (21.7 GiB) (92% of 25.3 GB (23.6 GiB))",
        "1 problem found; nothing was written.",
    ]


@pytest.mark.parametrize("weights", ["bf16", "q4_k_m"])
def test_more_gpus_than_a_machine_holds_are_refused(weights: str):
    done = estimate("--model", "llama-3.1-8b", "--weights", weights, "--gpus", "1000")
    assert done.returncode == 1
    assert done.stderr.splitlines()[0] == (
        "--gpus: expected at most 16, the most GPUs one machine holds (rules.yaml's max_gpus_per_machine), got 1,000"
    )


def test_a_llamacpp_split_is_worded_as_llamacpp_splits():
    lines = estimate("--model", "llama-3.1-8b", "--weights", "q4_k_m", "--gpus", "3").stdout.splitlines()
    # 0.25 GiB + a compute buffer of 0.16 GB: 4 pipeline copies of the inputs (GGML_SCHED_MAX_COPIES), no NCCL
    assert lines[3] == "  runtime      0.4 GB (0.4 GiB) per GPU (llama.cpp's context and compute buffer)"
    data = json.loads(estimate("--model", "llama-3.1-8b", "--weights", "q4_k_m", "--gpus", "3", "--json").stdout)
    assert data["runtime_bytes_per_gpu"] == 0.25 * 2**30 + 4 * (8192 * 512 * 2 + 512 * 4096 * 4) + 512 * (4096 + 3 * 14336) * 4
    assert (
        lines[5] == "llama.cpp splits the model by layers (its default split mode): any count of GPUs; machines on offer hold 1, 2, 4 or 8"
    )
    assert "vLLM" not in "\n".join(lines)


def test_llamacpp_splits_layers_not_kv_heads():
    """LLAMA_SPLIT_MODE_LAYER: on 3 GPUs the busiest holds 11 of the 32 layers with all 8 KV heads, not 8/3 heads of each."""
    data = json.loads(estimate("--model", "llama-3.1-8b", "--weights", "q4_k_m", "--gpus", "3", "--json").stdout)
    assert data["kv_bytes_per_token_per_gpu"] == 11 * 2 * 8 * 128 * 2
    assert data["kv_cache_bytes_per_gpu"] == 11 * 2 * 8 * 128 * 2 * 8192
    assert data["valid_gpu_counts"] == [1, 2, 4, 8]


ESTIMATED_LINE = (
    "  Architecture estimated from the parameter count: 33 layers, hidden size 4,096, 32 heads of 128, 8 KV heads, "
    "vocabulary 129,664, MLP width 14,336 (layers = 16.710 x P^0.352, hidden = 1965.487 x P^0.325, fitted over 20 catalog "
    "dense models)"
)


def test_a_parameter_count_alone_is_estimated_and_says_so():
    done = estimate("--params", "7")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[:3] == [
        "7B parameters, BF16 weights, BF16 KV cache, 1 request(s) of 8,192 tokens on 1 GPU(s):",
        ESTIMATED_LINE,
        "  weights      14.0 GB (13.0 GiB) in all, 14.0 GB (13.0 GiB) per GPU",
    ]
    assert lines[7] == "  total        18.0 GB (16.8 GiB) per GPU"  # the calculator's 18 GB for ?params=7 (test_calculator_links.py)
    data = json.loads(estimate("--params", "7", "--json").stdout)
    assert data["model"] == "estimated" and data["total_bytes_per_gpu"] == 17_985_347_707
    assert data["estimated_architecture"] == {
        "layers": 33, "heads": 32, "kv_heads": 8, "head_dim": 128, "hidden": 4096, "vocab": 129664, "intermediate": 14336,
    }  # fmt: skip
    tuning = estimate("--params", "7", "--mode", "lora")
    assert tuning.returncode == 0 and tuning.stdout.splitlines()[1] == ESTIMATED_LINE


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--params", "0"), "--params: expected billions of parameters above 0 and at most 5,000, got 0"),
        (("--params", "6000"), "--params: expected billions of parameters above 0 and at most 5,000, got 6000"),
    ],
)
def test_a_parameter_count_out_of_bounds_is_refused(args, message):
    done = estimate(*args)
    assert (done.returncode, done.stderr.splitlines()[0]) == (1, message)


def test_a_parameter_count_and_a_model_are_one_too_many():
    done = estimate("--params", "7", "--model", "llama-3.1-8b")
    assert done.returncode == 2
    assert done.stderr.splitlines()[-1] == "Error: give exactly one of --model ID, --config PATH or --params BILLIONS"


def test_a_catalog_too_small_to_fit_the_rule_says_so():
    # The golden fixture's dense models are of 8.0 and 9.2 billion parameters: no rule spans them (engines/architecture.py).
    done = gpumem("estimate", "--catalogs", str(REPO / "tests/golden/fixture/catalogs"), "--params", "7")
    assert (done.returncode, done.stderr.splitlines()[0]) == (
        1,
        "--params: the catalog's dense models span too few sizes to fit the estimate on (the largest at least twice the smallest)",
    )


def test_the_engine_settings_of_a_logged_run_are_taken():
    """--max-num-seqs, --max-num-batched-tokens and --enforce-eager, as `vllm serve` takes them."""
    data = json.loads(
        estimate("--model", "llama-3.1-8b", "--max-num-seqs", "8", "--max-num-batched-tokens", "4096", "--enforce-eager", "--json").stdout
    )
    assert data["engine"] == {
        "name": "vllm",
        "version": "0.33.0",
        "gpu_memory_utilization": 0.92,
        "max_num_batched_tokens": 4096,
        "max_num_seqs": 8,
        "enforce_eager": True,
    }
    assert data["cuda_graph_bytes_per_gpu"] == 0
    assert data["runtime_bytes_per_gpu"] == round(0.25 * 2**30 + 0.38 * 2**30 + 13.67 * 8 * 128256)
    lines = estimate("--model", "llama-3.1-8b", "--max-num-seqs", "8", "--enforce-eager").stdout.splitlines()
    assert lines[4:6] == [
        "  CUDA graphs  0.0 GB (0.0 GiB) per GPU (vLLM's estimate, taken from the KV budget)",
        "  vLLM 0.33.0: max_num_batched_tokens 8,192, max_num_seqs 8, CUDA graphs off (--enforce-eager)",
    ]


@pytest.mark.parametrize(
    "args, message",
    [
        (("--max-num-seqs", "0"), "--max-num-seqs: expected a positive whole number, got 0"),
        (("--requests", "8", "--max-num-seqs", "4"), "--max-num-seqs: 8 concurrent requests need at least 8 request slots, got 4"),
        (
            ("--max-num-seqs", "40", "--max-num-batched-tokens", "16"),
            "--max-num-batched-tokens: vLLM needs at least --max-num-seqs (40) tokens per step, got 16",
        ),
        (
            ("--mode", "lora", "--enforce-eager"),
            "--enforce-eager: applies to serving only (--mode serve); fine-tuning takes --seq and --micro-batch",
        ),
    ],
)
def test_engine_settings_vllm_refuses_are_named(args, message):
    done = estimate("--model", "llama-3.1-8b", *args)
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr.splitlines() == [message, "1 problem found; nothing was written."]


def test_the_launch_command_is_printed_and_in_the_json():
    lines = estimate("--model", "qwen2.5-72b", "--weights", "awq", "--kv", "fp8", "--gpus", "4", "--requests", "8").stdout.splitlines()
    assert lines[8:10] == [
        "Launch on 4 GPU(s) (vLLM 0.33.0):",
        "  vllm serve Qwen/Qwen2.5-72B-Instruct-AWQ --tensor-parallel-size 4 --max-model-len 8192 --gpu-memory-utilization 0.92 "
        "--max-num-seqs 8 --kv-cache-dtype fp8",
    ]
    data = json.loads(
        estimate("--model", "llama-3.1-8b", "--utilization", "0.95", "--max-num-seqs", "4", "--enforce-eager", "--json").stdout
    )
    assert data["launch"] == {
        "engine": "vllm",
        "version": "0.33.0",
        "argv": [
            "vllm",
            "serve",
            "meta-llama/Llama-3.1-8B",
            "--tensor-parallel-size",
            "1",
            "--max-model-len",
            "8192",
            "--gpu-memory-utilization",
            "0.95",
            "--max-num-seqs",
            "4",
            "--enforce-eager",
        ],  # fmt: skip
        "text": "vllm serve meta-llama/Llama-3.1-8B --tensor-parallel-size 1 --max-model-len 8192 --gpu-memory-utilization 0.95 "
        "--max-num-seqs 4 --enforce-eager",
        "download": "",
        "missing": "",
    }


def test_a_gguf_launch_names_its_download_and_a_missing_checkpoint_is_named():
    lines = estimate("--model", "qwen3-32b", "--weights", "q4_k_m", "--kv", "q8_0", "--gpus", "2", "--requests", "4").stdout.splitlines()
    assert lines[6:9] == [
        "Launch on 2 GPU(s) (llama.cpp 0c1e57098):",
        "  llama-server -m Qwen3-32B-Q4_K_M.gguf -c 32768 -ngl all -fa on --parallel 4 --tensor-split 1,1 --cache-type-k q8_0 --cache-type-v q8_0",
        "  the GGUF file is in https://huggingface.co/Qwen/Qwen3-32B-GGUF",
    ]
    lines = estimate("--model", "llama-3.1-8b", "--weights", "gptq").stdout.splitlines()
    assert lines[10] == "  the catalog names no GPTQ 4-bit checkpoint of Llama 3.1 8B: put its repository or file in its place"
