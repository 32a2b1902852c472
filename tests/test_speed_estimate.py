"""`gpumem estimate --speed`: tokens per second and US$ per million tokens on the command line."""

from __future__ import annotations

import json

from .test_estimate import estimate


def test_one_configuration_gives_the_issue_fields():
    """Llama 3.1 8B in BF16 on one H100 SXM at US$2.07/h: the same figures as tests/test_speed.py."""
    done = estimate("--model", "llama-3.1-8b", "--speed", "--gpu", "h100-sxm", "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["speed"] == [
        {
            "gpu": "h100-sxm",
            "count": 1,
            "decode_tokens_per_s_per_request": 115.509,
            "aggregate_tokens_per_s": 115.242,
            "ttft_s": 0.02867,
            "price_per_hour": 2.07,
            "usd_per_million_output_tokens": 4.98949,
            "usd_per_million_input_tokens": 0.011507,
        }
    ]


def test_a_gpu_not_on_offer_has_speed_but_no_cost():
    done = estimate("--model", "llama-3.1-8b", "--speed", "--gpu", "l4", "--json")
    assert done.returncode == 0, done.stderr
    (row,) = json.loads(done.stdout)["speed"]
    assert sorted(row) == ["aggregate_tokens_per_s", "count", "decode_tokens_per_s_per_request", "gpu", "ttft_s"]


def test_every_configuration_that_holds_it_gets_a_speed_line():
    done = estimate("--model", "llama-3.1-8b", "--speed", "--prompt", "500", "--output", "200")
    assert done.returncode == 0, done.stderr
    text = done.stdout
    assert "Speed at 1 request(s) of 500 prompt and 200 output tokens" in text
    holds = text.split("cheapest first:\n", 1)[1].split("\nSpeed at", 1)[0].splitlines()
    speeds = text.split("see docs/measurements/speed.md):\n", 1)[1].splitlines()
    assert len(speeds) == len(holds) > 0
    assert all("USD/M output" in line for line in speeds)


def test_bad_speed_options_are_named():
    done = estimate("--model", "llama-3.1-8b", "--speed", "--gpu", "h900", "--prompt", "9000")
    assert done.returncode == 1
    assert done.stderr.splitlines()[:2] == [
        "--prompt + --output: 10,000 tokens is more than the 8,192 of --context",
        "--gpu: unknown GPU 'h900' (a catalog id, e.g. rtx-3090)",
    ]
    assert "give --speed too" in estimate("--model", "llama-3.1-8b", "--gpu", "l4").stderr
