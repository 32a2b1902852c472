"""The InferenceX speed draft (catalogs/measurements/drafts/speed_inferencex.yaml) and the script that writes it."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from types import ModuleType

import pytest
import yaml

from .test_speed_drafts_serving import problems

ROOT = Path(__file__).resolve().parent.parent
DRAFTS = ROOT / "catalogs" / "measurements" / "drafts"
RUN = "https://github.com/SemiAnalysisAI/InferenceX/actions/runs/{}/attempts/1"


def faults(points: list[dict], gpus: set[str], models: set[str]) -> list[str]:
    """The serving draft's checks, and an https url and notes on every point."""
    found = problems(points, gpus, models)
    for point in points:
        if not str(point.get("url", "")).startswith("https://"):
            found.append(f"{point.get('id')}: url: expected an https address, got {point.get('url')!r}")
        if not str(point.get("notes") or "").strip():
            found.append(f"{point.get('id')}: notes: empty")
    return found


@pytest.mark.shipped_data
def test_every_point_is_complete_and_quoted() -> None:
    draft = yaml.safe_load((DRAFTS / "speed_inferencex.yaml").read_text(encoding="utf-8"))
    gpus = {gpu["id"] for gpu in yaml.safe_load((ROOT / "catalogs" / "gpus.yaml").read_text())["gpus"]}
    models = {model["id"] for model in yaml.safe_load((ROOT / "catalogs" / "models.yaml").read_text())["models"]}
    assert faults(draft["points"], gpus, models) == []
    assert (draft["meta"]["records"], draft["meta"]["kept"], len(draft["points"])) == (90, 90, 180)


def test_faults_wants_https_and_notes() -> None:
    point = {"id": "a", "check": "ttft", "measured": 1.0, "url": "http://x", "quote": "q", "gpu": "b200", "notes": ""}
    found = faults([point], {"b200"}, set())
    assert found[-2:] == ["a: url: expected an https address, got 'http://x'", "a: notes: empty"]


def script() -> ModuleType:
    """inferencex.py, loaded from its file."""
    spec = importlib.util.spec_from_file_location("inferencex_draft", DRAFTS / "inferencex.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def record(**changes: object) -> dict:
    """One record in the shape of benchmarks.json (H200, SGLang, 8 GPUs, 1k/1k at concurrency 4)."""
    base = {
        "hardware": "h200",
        "framework": "sglang",
        "model": "dsr1",
        "precision": "fp8",
        "spec_method": "none",
        "disagg": False,
        "is_multinode": False,
        "prefill_tp": 8,
        "prefill_ep": 1,
        "prefill_dp_attention": False,
        "num_prefill_gpu": 8,
        "isl": 1024,
        "osl": 1024,
        "conc": 4,
        "image": "lmsysorg/sglang:v0.5.9-cu130",
        "metrics": {"median_ttft": 0.25, "tput_per_gpu": 100.5, "input_tput_per_gpu": 50.25, "output_tput_per_gpu": 50.25},
        "date": "2026-03-25",
        "run_url": RUN.format(111),
    }
    return base | changes


@pytest.mark.shipped_data
def test_script_turns_records_into_exact_points(tmp_path: Path) -> None:
    b300 = record(
        hardware="b300",
        precision="fp4",
        prefill_tp=4,
        prefill_ep=4,
        num_prefill_gpu=16,
        conc=1,
        metrics={
            "median_ttft": 0.2,
            "median_tpot": 0.008,
            "tput_per_gpu": 30.0,
            "input_tput_per_gpu": 15.0,
            "output_tput_per_gpu": 15.0,
        },
        run_url=RUN.format(222),
    )
    rows = [
        record(),
        b300,
        record(spec_method="mtp"),
        record(image=None),
        record(metrics={"median_ttft": 0.1, "tput_per_gpu": 100.0, "input_tput_per_gpu": 50.0, "output_tput_per_gpu": 49.0}),
    ]
    source, out = tmp_path / "benchmarks.json", tmp_path / "draft.yaml"
    source.write_text(json.dumps(rows), encoding="utf-8")
    script().main([str(source), "--out", str(out), "--commit", "c" * 40, "--input-note", "five records"])
    draft = yaml.safe_load(out.read_text(encoding="utf-8"))

    assert draft["meta"]["input"] == "five records"
    assert (draft["meta"]["records"], draft["meta"]["kept"]) == (5, 2)
    assert draft["meta"]["not_kept"] == {
        "left: image null (engine version not stated)": 1,
        "left: input_tput_per_gpu + output_tput_per_gpu differs from tput_per_gpu": 1,
        "rejected: speculative decoding": 1,
    }
    points = draft["points"]
    assert faults(points, {"h200-sxm", "b300"}, {"deepseek-v3"}) == []
    assert [(p["id"], p["measured"], p.get("doubtful", False)) for p in points] == [
        ("inferencex-sglang-h200-dsr1-fp8-tp8-ep1-1024-1024-c4-2026-03-25-r111-aggregate", 402.0, False),
        ("inferencex-sglang-h200-dsr1-fp8-tp8-ep1-1024-1024-c4-2026-03-25-r111-ttft", 0.25, True),
        ("inferencex-sglang-b300-dsr1-fp4-tp4-ep4-1024-1024-c1-2026-03-25-r222-aggregate", 60.0, True),
        ("inferencex-sglang-b300-dsr1-fp4-tp4-ep4-1024-1024-c1-2026-03-25-r222-ttft", 0.2, True),
        ("inferencex-sglang-b300-dsr1-fp4-tp4-ep4-1024-1024-c1-2026-03-25-r222-decode", 125.0, True),
    ]
    first = points[0]
    assert (first["engine"], first["version"], first["gpu"], first["gpus"], first["model_id"]) == (
        "sglang",
        "v0.5.9-cu130",
        "h200-sxm",
        8,
        "deepseek-v3",
    )
    assert (first["weights"], first["concurrency"], first["prompt_tokens"], first["output_tokens"]) == ("fp8", 4, 1024, 1024)
    assert first["measured_as"] == "output_tput_per_gpu 50.25 x 8 GPUs (prefill_tp) = 402.0 output tokens/s"
    assert first["url"] == (
        f"https://github.com/SemiAnalysisAI/InferenceX-app/blob/{'c' * 40}/packages/app/cypress/fixtures/api/benchmarks.json"
    )
    assert json.loads(first["quote"])["metrics"] == {
        "output_tput_per_gpu": 50.25,
        "input_tput_per_gpu": 50.25,
        "tput_per_gpu": 100.5,
    }
    assert [p["weights"] for p in points[2:]] == ["nvfp4"] * 3
    assert points[1]["output_tokens"] == 0
    assert points[4]["measured_as"] == "1000 / median_tpot 0.008 s x 1000 ms = 125.0 tokens/s"
    assert "num_prefill_gpu 16 is the app's tp x ep default" in points[2]["notes"]


@pytest.mark.shipped_data
def test_script_names_the_file_when_the_top_level_is_no_array(tmp_path: Path) -> None:
    source = tmp_path / "bad.json"
    source.write_text('{"hardware": "h200"}', encoding="utf-8")
    with pytest.raises(SystemExit) as stop:
        script().main([str(source), "--out", str(tmp_path / "out.yaml")])
    assert str(stop.value) == f"{source}: top level: (array): expected a JSON array, got dict"
