"""Transcribe InferenceX benchmark records into a serving speed draft (issue 24; not read by the build).

Input: a JSON array in the shape of SemiAnalysisAI/InferenceX-app's API fixture
packages/app/cypress/fixtures/api/benchmarks.json (one object per run: hardware, framework, model,
precision, spec_method, disagg, is_multinode, prefill_tp, prefill_ep, prefill_dp_attention,
num_prefill_gpu, isl, osl, conc, image, metrics {...}, date, run_url).

Output: a YAML draft in the schema of tests/measurements/speed.yaml (see speed_serving.yaml's meta):
one `aggregate` point per kept run (output tokens/s of the whole configuration), one `ttft` point
where median_ttft is given, one `decode` point where concurrency is 1 and median_tpot is given.

    python catalogs/measurements/drafts/inferencex.py benchmarks.json \
        [--out catalogs/measurements/drafts/speed_inferencex.yaml] [--commit SHA] [--input-note TEXT]

What the fields mean (read from the source's code, quoted in CONVENTIONS): metrics are per GPU,
output_tput_per_gpu = output_throughput / tp, latencies in seconds, intvty = 1000 / tpot_ms.
Standard library and PyYAML only; reads nothing under catalogs/ (the id maps are written here).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import yaml

HERE = Path(__file__).resolve().parent
OUT = HERE / "speed_inferencex.yaml"
COMMIT = "3a600f1d9ce155536d52e2f58f744f27a301aac9"
URL = "https://github.com/SemiAnalysisAI/InferenceX-app/blob/{commit}/packages/app/cypress/fixtures/api/benchmarks.json"
FLAG = "(not in the catalog; flagged)"

# InferenceX hardware key -> catalogs/gpus.yaml id, and a note where the key does not name the form factor.
GPUS: dict[str, tuple[str, str]] = {
    "b200": ("b200", ""),
    "b300": ("b300", ""),
    "gb200": ("gb200", ""),
    "gb300": ("gb300", ""),
    "mi300x": ("mi300x", ""),
    "mi325x": ("mi325x", ""),
    "mi355x": ("mi355x", ""),
    "h100": ("h100-sxm", "hardware 'h100' does not name the form factor; InferenceX runs 8-GPU HGX nodes, taken as SXM"),
    "h200": ("h200-sxm", "hardware 'h200' does not name the form factor; InferenceX runs 8-GPU HGX nodes, taken as SXM"),
}
# InferenceX model key -> (checkpoint words, catalogs/models.yaml id or None).
MODELS: dict[str, tuple[str, str | None]] = {
    "dsr1": ("DeepSeek-R1-0528 (DeepSeek-V3 architecture; InferenceX key dsr1)", "deepseek-v3"),
    "gptoss": ("gpt-oss-120b (InferenceX key gptoss)", "gpt-oss-120b"),
    "gptoss120b": ("gpt-oss-120b (InferenceX key gptoss120b)", "gpt-oss-120b"),
    "llama70b": ("Llama-3.3-70B-Instruct (InferenceX key llama70b)", "llama-3.3-70b"),
    "qwen3.5": ("Qwen3.5-397B-A17B (InferenceX key qwen3.5)", "qwen3.5-397b-a17b"),
    "glm5": ("GLM-5 (InferenceX key glm5)", "glm-5"),
    "minimaxm2.5": ("MiniMax-M2.5 (InferenceX key minimaxm2.5)", "minimax-m2.5"),
}
ENGINES = {"sglang": "sglang", "vllm": "vllm", "trt": "trt-llm", "atom": "atom"}
AMD = {"mi300x", "mi325x", "mi355x"}
# Fields copied into each point's quote, in this order, verbatim from the record.
QUOTED = (
    "hardware", "framework", "model", "precision", "spec_method", "disagg", "is_multinode", "prefill_tp",
    "prefill_ep", "prefill_dp_attention", "num_prefill_gpu", "isl", "osl", "conc", "image",
)  # fmt: skip

CONVENTIONS = [
    "schema of tests/measurements/speed.yaml: aggregate = output tokens/s of the whole configuration at `concurrency`, "
    "ttft = seconds (output_tokens 0), decode = 1000 / TPOT in ms at concurrency 1",
    "metrics are per GPU of the tensor-parallel group: InferenceX's utils/process_result.py writes "
    "'output_tput_per_gpu': float(bmk_result['output_throughput']) / tp_size and 'tput_per_gpu': "
    "float(bmk_result['total_token_throughput']) / tp_size (https://github.com/SemiAnalysisAI/InferenceX/blob/"
    "00e51cc732ac86d693bcd4b89c8364306dbfbf3f/utils/process_result.py#L26-L27), so the configuration's output "
    "tokens/s = output_tput_per_gpu x prefill_tp, written in measured_as",
    "tput_per_gpu is input + output tokens: the app's packages/app/src/components/calculator/types.ts:12 says "
    "'tokens/sec/gpu total (tput_per_gpu = y in interactivity chart)' and :13 'outputThroughput: number; // output "
    "tokens/sec/gpu'; only output_tput_per_gpu is used here (InferenceX-app at 77ca49a6)",
    "latencies are seconds and interactivity = 1 / TPOT: process_result.py#L34-L37 stores every *_ms field / 1000.0 "
    "under the name without _ms and 'intvty' = 1000.0 / tpot_ms; the app's .claude/skills/inferencex-data/SKILL.md "
    "says 'All latency values in seconds'; packages/app/src/components/calculator/types.ts:11 'interactivity: number; "
    "// tokens/sec/user (median_intvty = x in interactivity chart)'",
    "engine version = the tag of the record's `image` (Docker image of the serving framework; '#' in a stored image "
    "stands for '/', packages/db/src/etl/benchmark-mapper.ts:181); records with image null are left (version unknown)",
    "weights: precision fp8 -> fp8, bf16 -> bf16, fp4 -> mxfp4 on AMD GPUs and for gpt-oss (native MXFP4 experts), "
    "nvfp4 for other models on NVIDIA GPUs (the record names no checkpoint; inferred, said in notes)",
    "prompt_tokens / output_tokens are the run's nominal isl / osl (InferenceX's random dataset); the ratio "
    "input_tput_per_gpu / output_tput_per_gpu in each quote shows the lengths actually served",
    "gpus = prefill_tp, the divisor of process_result.py. Where num_prefill_gpu is prefill_tp x prefill_ep (the "
    "app's default when a result names no GPU count, packages/db/src/etl/benchmark-mapper.ts:147 and :158 at "
    "77ca49a6), e.g. tp 4 ep 4 stored as 16 GPUs on a single 8-GPU node, the point is kept with tp GPUs and flagged "
    "doubtful; any other num_prefill_gpu leaves the run",
    "a run is kept only when input_tput_per_gpu + output_tput_per_gpu equals tput_per_gpu (relative 1e-6): output "
    "is then a share of the total written by the same division, and a mistyped figure shows",
    "quote: the record's fields as a compact JSON object (re-serialized; keys and values as the record has them, "
    "the metrics reduced to those the point uses)",
    "runs with speculative decoding (spec_method not none) and disaggregated or multi-node runs are rejected; "
    "ttft at concurrency above 1 is flagged doubtful (requests queue behind other prefills)",
]


def fail(path: str, where: str, field: str, why: str) -> None:
    """Stop with a message naming the file, the record and the field."""
    sys.exit(f"{path}: {where}: {field}: {why}")


def version_of(image: str) -> str:
    """The image tag: 'lmsysorg/sglang:v0.5.9-cu130' -> 'v0.5.9-cu130'."""
    image = image.replace("#", "/")
    return image.rsplit(":", 1)[1] if ":" in image.rsplit("/", 1)[-1] else image


def weights_of(precision: str, hardware: str, model: str) -> tuple[str, str]:
    """A rules.yaml weight format id and a note when it was inferred."""
    if precision != "fp4":
        return precision, ""
    if hardware in AMD or model.startswith("gptoss"):
        return "mxfp4", "precision 'fp4' read as MXFP4 (AMD GPU or gpt-oss; checkpoint not named in the record)"
    return "nvfp4", "precision 'fp4' read as NVFP4 (NVIDIA GPU; checkpoint not named in the record)"


def why_left(row: dict[str, Any]) -> str | None:
    """Why a record gives no point ('rejected: ...' or 'left: ...'), or None when it is kept."""
    if row.get("spec_method") not in (None, "none"):
        return "rejected: speculative decoding"
    if row.get("disagg") or row.get("is_multinode"):
        return "rejected: disaggregated prefill/decode or multi-node"
    if not row.get("image"):
        return "left: image null (engine version not stated)"
    tp, ep = row.get("prefill_tp"), row.get("prefill_ep") or 1
    if row.get("num_prefill_gpu") not in (tp, tp * ep if isinstance(tp, int) and isinstance(ep, int) else tp):
        return "left: num_prefill_gpu is neither prefill_tp nor prefill_tp x prefill_ep"
    if row.get("prefill_dp_attention"):
        return "left: data-parallel attention (per-GPU divisor not certain)"
    metrics = row.get("metrics") or {}
    if "output_tput_per_gpu" not in metrics:
        return "left: no output_tput_per_gpu (only input + output tput_per_gpu)"
    parts = [metrics.get(key) for key in ("input_tput_per_gpu", "output_tput_per_gpu", "tput_per_gpu")]
    if all(isinstance(part, int | float) for part in parts) and abs(parts[0] + parts[1] - parts[2]) > 1e-6 * parts[2]:
        return "left: input_tput_per_gpu + output_tput_per_gpu differs from tput_per_gpu"
    return None


def points_of(row: dict[str, Any], url: str, path: str, where: str) -> list[dict[str, Any]]:
    """The points of one kept record."""
    for key in ("hardware", "framework", "model", "precision", "prefill_tp", "isl", "osl", "conc", "date", "run_url"):
        if key not in row:
            fail(path, where, key, "missing")
    metrics = row["metrics"]
    hw, tp, conc = str(row["hardware"]), int(row["prefill_tp"]), int(row["conc"])
    gpu, gpu_note = GPUS.get(hw, (f"{hw} {FLAG}", ""))
    model, model_id = MODELS.get(str(row["model"]), (f"{row['model']} (InferenceX key; not in the catalog)", None))
    engine = ENGINES.get(str(row["framework"]), str(row["framework"]))
    weights, weights_note = weights_of(str(row["precision"]), hw, str(row["model"]))
    ep = int(row.get("prefill_ep") or 1)
    run = str(row["run_url"]).split("/runs/")[-1].split("/")[0]
    base = f"inferencex-{engine}-{hw}-{row['model']}-{row['precision']}-tp{tp}-ep{ep}-{row['isl']}-{row['osl']}-c{conc}"
    quoted = {key: row[key] for key in QUOTED if key in row}
    notes = [
        f"InferenceX run {row['run_url']} of {row['date']}; image {row['image']}; {tp} GPUs in one node (is_multinode "
        f"false), expert parallel {ep}",
        *(note for note in (gpu_note, weights_note) if note),
    ]
    common = {
        "engine": engine,
        "version": version_of(str(row["image"])),
        "gpu": gpu,
        "gpus": tp,
        "tensor_parallel": tp,
        "expert_parallel": ep,
        "model": model,
        "model_id": model_id,
        "weights": weights,
        "kv": None,
        "concurrency": conc,
    }
    out = []

    def point(check: str, output_tokens: int, measured: float, measured_as: str, keys: tuple[str, ...]) -> None:
        metric = {key: metrics[key] for key in keys if key in metrics}
        quote = json.dumps({**quoted, "metrics": metric, "date": row["date"]}, separators=(",", ":"))
        entry = {"id": f"{base}-{row['date']}-r{run}-{check}", **common, "prompt_tokens": int(row["isl"])}
        entry |= {"output_tokens": output_tokens, "check": check, "measured": measured, "measured_as": measured_as}
        entry |= {"quote": quote, "url": url, "notes": "; ".join(notes)}
        if int(row.get("num_prefill_gpu") or tp) != tp:
            entry["notes"] += (
                f"; Doubtful: num_prefill_gpu {row['num_prefill_gpu']} is the app's tp x ep default, more GPUs than one "
                f"node holds; process_result.py divides by tp, so {tp} GPUs are taken"
            )
            entry["doubtful"] = True
        if check == "ttft" and conc > 1:
            entry["notes"] += f"; Doubtful: TTFT at concurrency {conc} includes queueing behind other prefills"
            entry["doubtful"] = True
        out.append(entry)

    per_gpu = float(metrics["output_tput_per_gpu"])
    total = round(per_gpu * tp, 1)
    point(
        "aggregate",
        int(row["osl"]),
        total,
        f"output_tput_per_gpu {metrics['output_tput_per_gpu']} x {tp} GPUs (prefill_tp) = {total} output tokens/s",
        ("output_tput_per_gpu", "input_tput_per_gpu", "tput_per_gpu"),
    )
    if isinstance(metrics.get("median_ttft"), int | float) and metrics["median_ttft"] > 0:
        ttft = round(float(metrics["median_ttft"]), 4)
        point("ttft", 0, ttft, f"median_ttft {metrics['median_ttft']} s (stored in seconds) = {ttft} s", ("median_ttft",))
    if conc == 1 and isinstance(metrics.get("median_tpot"), int | float) and metrics["median_tpot"] > 0:
        decode = round(1.0 / float(metrics["median_tpot"]), 2)
        as_ = f"1000 / median_tpot {metrics['median_tpot']} s x 1000 ms = {decode} tokens/s"
        point("decode", int(row["osl"]), decode, as_, ("median_tpot", "median_intvty"))
    return out


def draft(rows: list[Any], path: str, commit: str, note: str) -> dict[str, Any]:
    """The whole draft (meta and points) for the records of one file."""
    url = URL.format(commit=commit)
    points: list[dict[str, Any]] = []
    reasons: dict[str, int] = {}
    for number, row in enumerate(rows, 1):
        where = f"record {number}"
        if not isinstance(row, dict):
            fail(path, where, "(record)", f"expected an object, got {type(row).__name__}")
        if not isinstance(row.get("metrics"), dict):
            fail(path, where, "metrics", "missing or not an object")
        reason = why_left(row)
        if reason:
            reasons[reason] = reasons.get(reason, 0) + 1
        else:
            points += points_of(row, url, path, where)
    seen: set[str] = set()
    for entry in points:
        if entry["id"] in seen:
            sys.exit(f"{path}: id: {entry['id']} made twice (two records of the same run and settings)")
        seen.add(entry["id"])
    kept = len(rows) - sum(reasons.values())
    meta = {
        "what": "InferenceX (SemiAnalysis) per-run serving results transcribed by inferencex.py for issue 24. Research "
        "draft, not read by the build.",
        "input": note or path,
        "records": len(rows),
        "kept": kept,
        "not_kept": dict(sorted(reasons.items())),
        "conventions": CONVENTIONS,
        "sources": [
            url,
            "https://github.com/SemiAnalysisAI/InferenceX/blob/00e51cc732ac86d693bcd4b89c8364306dbfbf3f/utils/process_result.py",
        ],
    }
    return {"meta": meta, "points": points}


def main(argv: list[str] | None = None) -> None:
    """Read the JSON named on the command line and write the draft."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("json", help="benchmarks.json (or an excerpt in its shape)")
    parser.add_argument("--out", default=str(OUT))
    parser.add_argument("--commit", default=COMMIT, help="InferenceX-app commit the records were read at")
    parser.add_argument("--input-note", default="", help="what the input is (written to meta.input)")
    args = parser.parse_args(argv)
    try:
        rows = json.loads(Path(args.json).read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as error:
        sys.exit(f"{args.json}: {error}")
    if not isinstance(rows, list):
        fail(args.json, "top level", "(array)", f"expected a JSON array, got {type(rows).__name__}")
    result = draft(rows, args.json, args.commit, args.input_note)
    header = "# InferenceX per-run serving results (draft for issue 24; not read by the build). Made by inferencex.py.\n"
    text = yaml.safe_dump(result, sort_keys=False, allow_unicode=True, width=120)
    Path(args.out).write_text(header + text, encoding="utf-8")
    print(f"{args.out}: {len(result['points'])} points from {result['meta']['kept']} of {len(rows)} records")


if __name__ == "__main__":
    main()
