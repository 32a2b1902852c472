"""A local checkpoint read from its headers (catalog/checkpoint.py) and `gpumem estimate --checkpoint`,
on small files the tests make: safetensors written byte by byte as the format lays them out (and by the
safetensors library), GGUF by the gguf package's writer."""

from __future__ import annotations

import dataclasses
import json
import shutil
import struct
from pathlib import Path

import numpy as np
import pytest
from gguf import GGMLQuantizationType, GGUFWriter, LlamaFileType
from safetensors.numpy import save_file

from gpumem.catalog.checkpoint import Tensor, read_checkpoint
from gpumem.catalog.validate import Invalid
from gpumem.engines import deployment
from gpumem.figures import calculator as compute_calculator

from .conftest import edit
from .javascript import preset_folder
from .project import CATALOGS
from .test_calculator import CATALOG, SHOP, raw_state
from .test_estimate import estimate, gpumem

BYTES = {"BF16": 2, "F16": 2, "F32": 4, "F8_E4M3": 1, "I32": 4, "U8": 1}

# A small Llama as config.json gives it, and the tensors transformers saves for it.
TINY = {
    "model_type": "llama",
    "hidden_size": 256,
    "intermediate_size": 512,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "vocab_size": 512,
    "max_position_embeddings": 4096,
    "tie_word_embeddings": False,
    "torch_dtype": "bfloat16",
}


def tiny_shapes() -> dict[str, list[int]]:
    hidden, mlp, kv = 256, 512, 2 * 64
    shapes = {"model.embed_tokens.weight": [512, hidden], "model.norm.weight": [hidden], "lm_head.weight": [512, hidden]}
    for layer in range(2):
        at = f"model.layers.{layer}."
        shapes |= {
            at + "self_attn.q_proj.weight": [hidden, hidden],
            at + "self_attn.k_proj.weight": [kv, hidden],
            at + "self_attn.v_proj.weight": [kv, hidden],
            at + "self_attn.o_proj.weight": [hidden, hidden],
            at + "mlp.gate_proj.weight": [mlp, hidden],
            at + "mlp.up_proj.weight": [mlp, hidden],
            at + "mlp.down_proj.weight": [hidden, mlp],
            at + "input_layernorm.weight": [hidden],
            at + "post_attention_layernorm.weight": [hidden],
        }
    return shapes


TINY_ELEMENTS = 2 * 512 * 256 + 256 + 2 * (2 * 256 * 256 + 2 * 128 * 256 + 3 * 512 * 256 + 2 * 256)  # 1,443,072


def safetensors_file(path: Path, tensors: dict[str, tuple[str, list[int]]]) -> Path:
    """A safetensors file as the format lays it out: the header's length (8 bytes, little-endian), the
    header (JSON: each tensor's dtype, shape and byte range), then the data (zeros here)."""
    header, offset = {}, 0
    for name, (dtype, shape) in tensors.items():
        size = int(np.prod(shape)) * BYTES[dtype]
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + size]}
        offset += size
    raw = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(raw)) + raw + bytes(offset))
    return path


def test_a_safetensors_file_gives_each_tensor_s_dtype_elements_and_bytes(tmp_path):
    path = safetensors_file(tmp_path / "model.safetensors", {"embed": ("BF16", [128, 64]), "norm": ("F32", [64])})
    checkpoint = read_checkpoint(path)
    assert checkpoint.tensors == (Tensor("embed", "BF16", 8192, 16384), Tensor("norm", "F32", 64, 256))
    assert (checkpoint.bytes, checkpoint.elements, checkpoint.format) == (16640, 8256, "bf16")
    assert checkpoint.dtypes == {"BF16": (1, 16384), "F32": (1, 256)}
    assert read_checkpoint(tmp_path) == checkpoint  # the folder that holds it


def test_the_format_is_the_dtype_holding_the_most_bytes_and_packed_integers_name_none(tmp_path):
    save_file({"a": np.zeros((32, 8), np.float16), "b": np.zeros((4,), np.float32)}, str(tmp_path / "half.safetensors"))
    half = read_checkpoint(tmp_path / "half.safetensors")
    assert (half.bytes, half.format, half.dtypes) == (528, "fp16", {"F16": (1, 512), "F32": (1, 16)})
    fp8 = safetensors_file(tmp_path / "fp8.safetensors", {"w": ("F8_E4M3", [64, 64]), "w_scale": ("F32", [64]), "norm": ("BF16", [64])})
    assert read_checkpoint(fp8).format == "fp8"
    gptq = safetensors_file(tmp_path / "gptq.safetensors", {"qweight": ("I32", [8, 64]), "scales": ("F16", [2, 64])})
    assert (read_checkpoint(gptq).bytes, read_checkpoint(gptq).format) == (2304, None)


def test_an_index_reads_the_headers_of_its_shards_beside_it(tmp_path):
    safetensors_file(tmp_path / "model-00001-of-00002.safetensors", {"a": ("BF16", [16, 16])})
    safetensors_file(tmp_path / "model-00002-of-00002.safetensors", {"b": ("BF16", [16]), "c": ("F32", [4])})
    weight_map = {"a": "model-00001-of-00002.safetensors", "b": "model-00002-of-00002.safetensors", "c": "model-00002-of-00002.safetensors"}
    index = tmp_path / "model.safetensors.index.json"
    index.write_text(json.dumps({"metadata": {"total_size": 999}, "weight_map": weight_map}))
    checkpoint = read_checkpoint(tmp_path)
    assert (checkpoint.path, checkpoint.bytes, [t.name for t in checkpoint.tensors]) == (index, 560, ["a", "b", "c"])
    index.write_text(json.dumps({"weight_map": {**weight_map, "d": "model-00002-of-00002.safetensors"}}))
    with pytest.raises(Invalid) as error:
        read_checkpoint(index)
    assert str(error.value) == f"{index}: weight_map: d is in no shard (model-00002-of-00002.safetensors lacks it)"


def test_an_index_without_its_shards_gives_its_total_size(tmp_path):
    index = tmp_path / "model.safetensors.index.json"
    index.write_text(
        json.dumps({"metadata": {"total_size": 16060522496}, "weight_map": {"a": "model-1.safetensors", "b": "model-2.safetensors"}})
    )
    checkpoint = read_checkpoint(index)
    assert (checkpoint.bytes, checkpoint.tensors, checkpoint.named, checkpoint.format) == (16060522496, (), 2, None)
    index.write_text(json.dumps({"weight_map": {"a": "model-1.safetensors"}}))
    with pytest.raises(Invalid) as error:
        read_checkpoint(index)
    message = f"{index}: metadata.total_size: expected the checkpoint's bytes, got null, and model-1.safetensors is not beside it"
    assert str(error.value) == message
    index.write_text(json.dumps({"weight_map": {"a": "../elsewhere.safetensors"}}))
    with pytest.raises(Invalid) as error:
        read_checkpoint(index)
    assert str(error.value) == f"{index}: weight_map: expected shard files beside the index, got ../elsewhere.safetensors"


def test_what_is_not_a_checkpoint_is_named(tmp_path):
    for name in ("a.safetensors", "b.safetensors"):
        safetensors_file(tmp_path / name, {"w": ("BF16", [2])})
    cases = {
        tmp_path: f"{tmp_path}: 2 .safetensors files and no model.safetensors.index.json (a.safetensors, b.safetensors): pass one file",
        tmp_path / "none": f"{tmp_path / 'none'}: no such file or folder",
    }
    (tmp_path / "empty").mkdir()
    cases[tmp_path / "empty"] = f"{tmp_path / 'empty'}: no model.safetensors.index.json, .safetensors or .gguf file"
    (tmp_path / "weights.bin").write_bytes(b"\0" * 8)
    cases[tmp_path / "weights.bin"] = (
        f"{tmp_path / 'weights.bin'}: expected a .safetensors or .gguf file, or a model.safetensors.index.json"
    )
    for path, message in cases.items():
        with pytest.raises(Invalid) as error:
            read_checkpoint(path)
        assert str(error.value) == message
    short = tmp_path / "empty/short.safetensors"
    short.write_bytes(b"\x10\0\0\0\0\0\0\0{}")  # a header's length past the file's end
    with pytest.raises(Invalid) as error:
        read_checkpoint(short)
    assert str(error.value).startswith(f"{short}: not a safetensors file (")
    short.write_bytes(b"\x02\0\0\0\0\0\0\0{}")
    with pytest.raises(Invalid) as error:
        read_checkpoint(short)
    assert str(error.value) == f"{short}: its header names no tensor"


def gguf_file(path: Path, file_type: LlamaFileType | None, tensors: dict[str, list[int]]) -> Path:
    """A GGUF file from gguf-py's writer: 2-D tensors in Q4_K (256 weights in 144 bytes), 1-D ones in F32."""
    writer = GGUFWriter(str(path), "llama")
    if file_type is not None:
        writer.add_file_type(file_type)
    for name, shape in tensors.items():
        if len(shape) == 2:
            writer.add_tensor(name, np.zeros((shape[0], shape[1] // 256 * 144), np.uint8), raw_dtype=GGMLQuantizationType.Q4_K)
        else:
            writer.add_tensor(name, np.zeros(shape, np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


def test_a_gguf_file_gives_its_quantization_and_each_tensor_s_bytes(tmp_path):
    path = gguf_file(
        tmp_path / "tiny.gguf", LlamaFileType.MOSTLY_Q4_K_M, {"blk.0.attn_q.weight": [256, 512], "blk.0.attn_norm.weight": [512]}
    )
    checkpoint = read_checkpoint(path)
    assert checkpoint.tensors == (Tensor("blk.0.attn_q.weight", "Q4_K", 131072, 73728), Tensor("blk.0.attn_norm.weight", "F32", 512, 2048))
    assert (checkpoint.bytes, checkpoint.format) == (75776, "q4_k_m")
    untyped = gguf_file(tmp_path / "untyped.gguf", None, {"w": [256]})
    with pytest.raises(Invalid) as error:
        read_checkpoint(untyped)
    assert str(error.value) == f"{untyped}: general.file_type: expected the file's quantization, got nothing"
    other = gguf_file(tmp_path / "iq2.gguf", LlamaFileType.MOSTLY_IQ2_XXS, {"w": [256]})
    with pytest.raises(Invalid) as error:
        read_checkpoint(other)
    expected = "MOSTLY_Q8_0, MOSTLY_Q6_K, MOSTLY_Q5_K_M, MOSTLY_Q4_K_M, MOSTLY_Q4_0, MOSTLY_Q3_K_M, MOSTLY_Q2_K, MOSTLY_MXFP4_MOE"
    assert str(error.value) == f"{other}: general.file_type: MOSTLY_IQ2_XXS is not a GGUF type gpumem counts (expected one of {expected})"
    (tmp_path / "broken.gguf").write_bytes(b"GGUF")
    with pytest.raises(Invalid) as error:
        read_checkpoint(tmp_path / "broken.gguf")
    assert str(error.value).startswith(f"{tmp_path / 'broken.gguf'}: not a GGUF file (")


@pytest.fixture
def tiny(tmp_path: Path) -> Path:
    """A folder with the tiny Llama's config.json and its checkpoint in BF16."""
    (tmp_path / "config.json").write_text(json.dumps(TINY))
    safetensors_file(tmp_path / "model.safetensors", {name: ("BF16", shape) for name, shape in tiny_shapes().items()})
    return tmp_path


def test_estimate_weighs_the_weights_the_checkpoint_s_headers_give(tiny):
    done = estimate("--config", str(tiny / "config.json"), "--checkpoint", str(tiny), "--json")
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert (data["weights"], data["weights_bytes"], data["weights_bytes_per_gpu"]) == ("bf16", 2 * TINY_ELEMENTS, 2 * TINY_ELEMENTS)
    path = str(tiny / "model.safetensors")
    assert data["checkpoint"] == {
        "path": path,
        "bytes": 2886144,
        "tensors": 21,
        "elements": 1443072,
        "dtypes": {"BF16": {"tensors": 21, "bytes": 2886144}},
    }
    text = estimate("--config", str(tiny / "config.json"), "--checkpoint", str(tiny)).stdout.splitlines()
    assert text[1:3] == [
        "  weights      0.0 GB (0.0 GiB) in all, 0.0 GB (0.0 GiB) per GPU",
        f"               read from the headers of {path}: 2,886,144 bytes in 21 tensors of 1,443,072 elements: BF16 21 (2,886,144 bytes)",
    ]


def test_estimate_takes_a_gguf_checkpoint_s_format_and_refuses_another(tiny):
    shapes = {name.replace("model.", ""): shape for name, shape in tiny_shapes().items()}
    path = gguf_file(tiny / "tiny-Q4_K_M.gguf", LlamaFileType.MOSTLY_Q4_K_M, shapes)
    done = estimate("--config", str(tiny / "config.json"), "--checkpoint", str(path), "--json")
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert (data["weights"], data["weights_bytes"], data["checkpoint"]["dtypes"]) == (
        "q4_k_m",
        read_checkpoint(path).bytes,
        {"Q4_K": {"tensors": 16, "bytes": (TINY_ELEMENTS - 5 * 256) // 256 * 144}, "F32": {"tensors": 5, "bytes": 5 * 256 * 4}},
    )
    assert data["weights_bytes"] == 816128
    refused = estimate("--config", str(tiny / "config.json"), "--checkpoint", str(path), "--weights", "q8_0")
    assert (refused.returncode, refused.stderr) == (
        1,
        f"--weights: q8_0 is not the checkpoint's format: the headers of {path} show q4_k_m\n1 problem found; nothing was written.\n",
    )


def test_estimate_refuses_a_checkpoint_of_another_model_and_fine_tuning(tiny):
    done = estimate("--model", "llama-3.1-8b", "--checkpoint", str(tiny))
    said = f"{tiny / 'model.safetensors'} holds 1,443,072 weights and Llama 3.1 8B has 8,030,261,248"
    assert (done.returncode, done.stderr) == (
        1,
        f"--checkpoint: {said}: the checkpoint of another model? (at most 2% apart)\n1 problem found; nothing was written.\n",
    )
    tuned = estimate("--config", str(tiny / "config.json"), "--checkpoint", str(tiny), "--mode", "lora")
    assert tuned.returncode == 2
    assert "--checkpoint weighs the weights a server loads: it serves, not --mode lora" in tuned.stderr
    missing = estimate("--config", str(tiny / "config.json"), "--checkpoint", str(tiny / "absent"))
    assert (missing.returncode, missing.stderr) == (
        1,
        f"--checkpoint: {tiny / 'absent'}: no such file or folder\n1 problem found; nothing was written.\n",
    )


AWQ_70B = "      awq: {repo: hugging-quants/Meta-Llama-3.1-70B-Instruct-AWQ-INT4, "
GIVEN = 41_000_000_000  # a made-up size for the fixture's Llama 3.1 70B AWQ repository (its counted weights: 39,765,832,864 bytes)


def test_a_catalog_checkpoint_s_bytes_are_its_weights_in_its_format_alone(tmp_path):
    shutil.copytree(CATALOGS, tmp_path / "catalogs")
    edit(tmp_path / "catalogs/models.yaml", AWQ_70B, AWQ_70B + f"bytes: {GIVEN}, ")
    asked = ("--catalogs", str(tmp_path / "catalogs"), "--model", "llama-3.1-70b", "--json")
    awq = json.loads(gpumem("estimate", *asked, "--weights", "awq").stdout)
    assert (awq["weights_bytes"], "checkpoint" in awq) == (GIVEN, False)
    assert json.loads(gpumem("estimate", *asked, "--weights", "gptq").stdout)["weights_bytes"] == 39765832864


def test_calculator_js_weighs_a_preset_s_checkpoint_as_python_does_while_the_form_keeps_its_parameters(scripts, built_site):
    """The preset file with the bytes added to its AWQ repository, as figures/calculator_data writes them; then
    the same form with another parameter count, which weighs the weights by their bits again."""
    model = CATALOG.model("llama-3.1-70b")
    weighed = dataclasses.replace(model, repos={**model.repos, "awq": dataclasses.replace(model.repos["awq"], bytes=GIVEN)})
    edited = dataclasses.replace(model, params_b=model.params_b + 1)
    row = json.loads((preset_folder(built_site) / "llama-3.1-70b.json").read_text())
    given = json.loads(json.dumps(row))
    given[-1]["repos"]["awq"].append(GIVEN)
    raw = {**raw_state("llama-3.1-70b", "serve", "awq", "bf16", 4, 8192, None), "gpus": "2"}
    asked = {"raw": raw, "given": given, "row": row, "params": str(edited.params_b)}
    results = scripts.evaluate(JS_WEIGHED, asked)
    for result, expected_model in zip(results, (weighed, edited), strict=True):
        expected = compute_calculator.serving(CATALOG, SHOP, expected_model, "awq", "bf16", 2, 8192, 4).need
        assert result["weights"] == pytest.approx(expected.weights_bytes, rel=1e-12, abs=0)
        assert result["perGpu"] == pytest.approx(expected.total_bytes_per_gpu, rel=1e-12, abs=0)
    assert results[0]["weights"] == GIVEN


JS_WEIGHED = """({raw, given, row, params}) => {
    const data = JSON.parse(document.getElementById("calculator-data").textContent);
    const c = window.gpumemCalculator;
    c.remember(given);
    const found = [raw, {...raw, params}].map(asked => c.serve(data, c.validate(data, asked).state));
    c.remember(row);  // the scripts are the session's: the preset as the build published it again
    return found;
}"""


def test_models_add_drafts_the_checkpoint_s_repository_with_its_bytes(tiny):
    source = "https://huggingface.co/acme/tiny/blob/main/config.json"
    done = gpumem(
        "models",
        "add",
        "--catalogs",
        str(CATALOGS),
        str(tiny / "config.json"),
        "--id",
        "tiny",
        "--source",
        source,
        "--checkpoint",
        str(tiny),
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-3] == f'    repos: {{bf16: {{repo: "acme/tiny", bytes: 2886144, source: "{source}"}}}}'
    gguf = gguf_file(tiny / "tiny-Q4_K_M.gguf", LlamaFileType.MOSTLY_Q4_K_M, {k.replace("model.", ""): v for k, v in tiny_shapes().items()})
    drafted = gpumem(
        "models", "add", "--catalogs", str(CATALOGS), str(tiny / "config.json"), "--checkpoint", str(gguf)
    ).stdout.splitlines()[-3]
    fill = '"TODO: owner/name on Hugging Face"'
    assert (
        drafted
        == f'    repos: {{q4_k_m: {{repo: {fill}, file: "tiny-Q4_K_M.gguf", bytes: 816128, source: "TODO: the page of the checkpoint\'s files"}}}}'
    )
    other = gpumem("models", "add", "--catalogs", str(CATALOGS), str(tiny / "config.json"), "--checkpoint", str(tiny / "absent"))
    assert (other.returncode, other.stderr) == (
        1,
        f"--checkpoint: {tiny / 'absent'}: no such file or folder\n1 problem found; nothing was written.\n",
    )


def test_calculator_js_keeps_at_16_bits_what_a_release_keeps_as_python_does(scripts, built_site):
    """A release that keeps the attention and the routers at 16 bits (repos, kept), on the fixture's Qwen3 30B-A3B
    FP8 repository: the preset row as figures/calculator_data writes it then (0 bytes, then the parameters kept)."""
    model = CATALOG.model("qwen3-30b-a3b")
    kept = dataclasses.replace(model, repos={**model.repos, "fp8": dataclasses.replace(model.repos["fp8"], kept=("attention", "router"))})
    row = json.loads((preset_folder(built_site) / "qwen3-30b-a3b.json").read_text())
    given = json.loads(json.dumps(row))
    given[-1]["repos"]["fp8"] += [0, deployment.kept_params(model, ("attention", "router"))]
    raw = raw_state("qwen3-30b-a3b", "serve", "fp8", "bf16", 1, 8192, None)
    results = scripts.evaluate(JS_WEIGHED, {"raw": raw, "given": given, "row": row, "params": str(model.params_b + 1)})
    expected = compute_calculator.serving(CATALOG, SHOP, kept, "fp8", "bf16", 1, 8192, 1).need
    assert results[0]["weights"] == expected.weights_bytes
    # 48 layers' attention (2 x 2,048 x 32 x 128 + 2 x 2,048 x 4 x 128) and routers (2,048 x 128), one byte more each
    assert expected.weights_bytes - compute_calculator.serving(CATALOG, SHOP, model, "fp8", "bf16", 1, 8192, 1).need.weights_bytes == (
        48 * (2 * 2048 * 32 * 128 + 2 * 2048 * 4 * 128 + 2048 * 128)
    )
