"""`gpumem estimate --mode full|lora|qlora`: the training engine on the command line."""

from __future__ import annotations

import json

import pytest

from .test_estimate import estimate

TRAINING = ("--model", "llama-3.1-8b")


def test_json_gives_every_part_in_bytes():
    done = estimate(*TRAINING, "--mode", "qlora", "--json")
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert {k: v for k, v in data.items() if k != "configurations"} == {
        "model": "llama-3.1-8b",
        "mode": "qlora",
        "seq": 4096,
        "micro_batch": 1,
        "checkpointing": "full",
        "flash_attention": "on",
        "optimizer": "adamw",
        "precision": "bf16",
        "lora_rank": 16,
        "lora_targets": ["q", "k", "v", "o", "gate", "up", "down"],
        "zero": 0,
        "gpus": 1,
        "offload_optimizer": False,
        "fp32_unquantized": False,
        "trainable_params": 41_943_040,
        # NF4 with double quantization (4.127 bits) for the linear layers, 16-bit embeddings and head, 16-bit adapters
        "weights_bytes_per_gpu": 5_785_827_393,
        "gradients_bytes_per_gpu": 2 * 41_943_040,
        "optimizer_bytes_per_gpu": 4 * 41_943_040,
        # 32 layers x 2 x 4,096 x 4,096 + one layer's 34 x 4,096 x 4,096 + 14 x 4,096 x 128,256 logits
        "activations_bytes_per_gpu": 8_998_879_232,
        # 3 layers' linear weights dequantized to 16 bits: 3 x 218,103,808 x 2
        "dequantized_bytes_per_gpu": 1_308_622_848,
        "runtime_bytes_per_gpu": 268_435_456,
        "total_bytes_per_gpu": 16_613_423_169,
        # 15 % of what torch allocates (the total less the 268,435,456 bytes of CUDA context)
        "reserve_bytes_per_gpu": 2_451_748_157,
        "footprint_bytes_per_gpu": 19_065_171_326,
        "fit_rule": {"allocator_reserve": 0.15, "comfortable_free": 0.1},
    }
    assert data["configurations"][0] == {
        "gpu": "rtx-3090",
        "count": 1,
        "price_per_hour": 0.19,
        "card_bytes": 25_327_697_920,
        "fit": "comfortable",
    }
    prices = [c["price_per_hour"] for c in data["configurations"]]
    assert prices == sorted(prices) and len(prices) == 11


def test_full_fine_tuning_sharded_with_zero_3():
    data = json.loads(estimate("--model", "llama-3.1-70b", "--mode", "full", "--zero", "3", "--gpus", "8", "--json").stdout)
    params = 70_553_706_496
    assert (data["precision"], data["trainable_params"]) == ("mixed", params)
    assert data["gradients_bytes_per_gpu"] == 2 * params / 8
    assert data["optimizer_bytes_per_gpu"] == 12 * params / 8
    assert data["total_bytes_per_gpu"] == 160_313_267_354
    assert [(c["gpu"], c["count"]) for c in data["configurations"]] == [("b300", 8), ("b200", 8)]


def test_qlora_as_peft_prepares_it():
    plain = json.loads(estimate(*TRAINING, "--mode", "qlora", "--json").stdout)
    upcast = json.loads(estimate(*TRAINING, "--mode", "qlora", "--fp32-unquantized", "--json").stdout)
    assert (
        upcast["weights_bytes_per_gpu"] - plain["weights_bytes_per_gpu"] == 2 * 2 * 128256 * 4096
    )  # embeddings and head: 2 more bytes each
    # the FP32 residual stream: each layer's checkpointed input and the recomputed layer's two norm inputs take 2 more bytes per element
    assert upcast["activations_bytes_per_gpu"] - plain["activations_bytes_per_gpu"] == (32 * 2 + 4) * 4096 * 4096


def test_text_names_every_part():
    done = estimate(*TRAINING, "--mode", "lora", "--lora-targets", "attn", "--optimizer", "adamw_8bit", "--checkpointing", "none",
                    "--flash-attention", "off", "--seq", "2048", "--micro-batch", "2")  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[:11] == [
        "Llama 3.1 8B, lora (rank 16 on q, k, v, o), 2 x 2,048 tokens, checkpointing none, FlashAttention off, adamw_8bit (bf16), one GPU:",
        "  weights      16.1 GB (15.0 GiB) per GPU",
        "  gradients    0.0 GB (0.0 GiB) per GPU (13,631,488 trainable parameters)",
        "  optimizer    0.0 GB (0.0 GiB) per GPU",
        "  activations  68.6 GB (63.8 GiB) per GPU",  # 32 x (34 x 4,096 x 4,096 + 5 x 32 x 2,048^2 x 2) + logits
        "  runtime      0.3 GB (0.2 GiB) per GPU (CUDA context)",
        "  total        85.0 GB (79.1 GiB) per GPU",
        "  reserve      12.7 GB (11.8 GiB) per GPU (the caching allocator: 15% of what torch allocates)",
        "  footprint    97.7 GB (91.0 GiB) per GPU",
        "Training fit rule: a card holds the run when the footprint fits its memory; comfortable when 10% of the memory stays free, "
        "tight otherwise.",
        "Configurations of 1 GPU(s) on offer whose cards hold it, cheapest first:",
    ]
    # 97.7 GB of 102.6 GB leaves 4.8 %: tight
    assert done.stdout.splitlines()[11:13] == [
        "  1 x RTX PRO 6000         1.90 USD/h  102.6 GB (95.6 GiB) per card, tight",
        "  1 x H200                 3.44 USD/h  150.0 GB (139.7 GiB) per card, comfortable",
    ]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--mode", "serve", "--seq", "2048"), "--seq: applies to fine-tuning only (--mode full, lora or qlora)"),
        (("--micro-batch", "4"), "--micro-batch: applies to fine-tuning only (--mode full, lora or qlora)"),
        (
            ("--mode", "lora", "--context", "4096"),
            "--context: applies to serving only (--mode serve); fine-tuning takes --seq and --micro-batch",
        ),
        (
            ("--mode", "full", "--lora-rank", "8"),
            "--lora-rank: full fine-tuning trains every weight; LoRA options apply to --mode lora or qlora",
        ),
        (("--mode", "full", "--zero", "3"), "ZeRO-3 on one GPU shards nothing: train on 2 GPUs or more, or without ZeRO"),
        (("--mode", "lora", "--lora-rank", "5000"), "LoRA rank 5000 is outside 1 to the hidden size (4,096)"),
        (
            ("--mode", "qlora", "--precision", "mixed"),
            "QLoRA keeps its base in 4 bits and trains adapters only: an FP32 master copy of the weights is full fine-tuning's setting (use bf16 precision)",
        ),
        (
            ("--mode", "lora", "--optimizer", "paged_adamw", "--offload-optimizer"),
            "paged_adamw already pages its states to CPU memory: do not also offload them",
        ),
        (("--mode", "lora", "--micro-batch", "0"), "--micro-batch: expected a positive whole number, got 0"),
        (("--mode", "lora", "--fp32-unquantized"), "only QLoRA has unquantized weights to keep in FP32 beside a 4-bit base"),
    ],
)
def test_bad_combinations_exit_1_with_one_message(args, message):
    done = estimate(*TRAINING, *args)
    assert done.returncode == 1
    assert done.stderr == f"{message}\n1 problem found; nothing was written.\n"
    assert done.stdout == ""


def test_qlora_text_counts_the_dequantized_copies():
    lines = estimate(*TRAINING, "--mode", "qlora").stdout.splitlines()
    assert lines[5] == "  dequantized  1.3 GB (1.2 GiB) per GPU (16-bit copies of the 4-bit weights)"
    assert lines[-11] == "  1 x RTX 3090             0.19 USD/h  25.3 GB (23.6 GiB) per card, comfortable"
