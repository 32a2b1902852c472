"""gpus.yaml's speed facts: form factor, GPU-to-GPU link and dense throughput are data, checked per field."""

from __future__ import annotations

from pathlib import Path

from gpumem.commands.build import gather
from gpumem.records.catalog import FormFactor, Link

from . import test_validate
from .conftest import NOW, edit, line_of
from .project import fixture_options
from .test_validate import problems

GPUS = Path("catalogs/gpus.yaml")
root = test_validate.root  # the copied inputs as the working folder
RTX_3090_LINK = '    link: {kind: "nvlink-bridge", generation: "3", gb_s: 112.5, gpus: 2}\n'
KUBESIMPLIFY = "https://github.com/kubesimplify/website/blob/8b1d2a5c3e94d3fad7aebfef7cecfa10b6bcc21b/content/blog/running-a-single-llm-across-two-gpus-with-vllm.md"


def test_every_gpu_states_its_form_factor_link_and_throughput_as_data():
    gpus = {gpu.id: gpu for gpu in gather(fixture_options(), now=NOW).catalog.gpus}
    assert gpus["rtx-3090"].form_factor == FormFactor("pcie", 4, 3)
    assert gpus["rtx-3090"].link == Link("nvlink-bridge", "3", 112.5, 2)
    assert gpus["h100-sxm"].link == Link("nvlink", "4", 900.0)
    assert gpus["h100-sxm"].dense_tflops == {"bf16": 989.5, "fp8": 1979.0, "int8": 1979.0}
    assert gpus["mi300x"].link == Link("infinity-fabric", "", 896.0)
    assert all(gpu.dense_tflops["bf16"] > 0 and gpu.throughput_source.startswith("https://") for gpu in gpus.values())
    assert all(gpu.fp8 == ("fp8" in gpu.dense_tflops) for gpu in gpus.values())


def test_a_bridge_states_how_many_gpus_it_joins(root):
    edit(root / GPUS, RTX_3090_LINK, '    link: {kind: "nvlink-bridge", generation: "3", gb_s: 112.5}\n')
    line = line_of(root / GPUS, 'kind: "nvlink-bridge", generation: "3", gb_s: 112.5}')
    assert problems(root) == [f"catalogs/gpus.yaml:{line}: rtx-3090: link.gpus: missing field (expected a positive integer)"]


def test_peer_access_over_pcie_is_data_with_its_source():
    """link.p2p: two RTX PRO 6000 reach each other's memory, two RTX 5090 do not, and the RTX 6000 Ada's is not known."""
    gpus = {gpu.id: gpu for gpu in gather(fixture_options(), now=NOW).catalog.gpus}
    pro, rtx5090 = gpus["rtx-pro-6000-blackwell"].link, gpus["rtx-5090"].link
    assert (pro.p2p, pro.p2p_source) == (True, KUBESIMPLIFY)
    assert (rtx5090.p2p, rtx5090.p2p_source) == (False, "https://github.com/noonghunna/club-3090/issues/1130")
    assert (gpus["rtx-6000-ada"].link.p2p, gpus["rtx-3090"].link.p2p) == (None, None)


def test_peer_access_belongs_to_pcie_cards_and_names_its_source(root):
    edit(
        root / GPUS,
        RTX_3090_LINK,
        '    link: {kind: "nvlink-bridge", generation: "3", gb_s: 112.5, gpus: 2, p2p: true, p2p_source: "https://example.org/p2p"}\n',
    )
    edit(
        root / GPUS,
        '    link: {kind: "pcie", generation: "5", gb_s: 128, p2p: false, p2p_source: "https://github.com/noonghunna/club-3090/issues/1130"}\n',
        '    link: {kind: "pcie", generation: "5", gb_s: 128, p2p: false}\n',
    )
    bridge, pcie = line_of(root / GPUS, "gpus: 2, p2p: true"), line_of(root / GPUS, "gb_s: 128, p2p: false}")
    assert problems(root) == [
        f"catalogs/gpus.yaml:{bridge}: rtx-3090: link.p2p: peer access over PCIe is stated for PCIe cards only, got kind nvlink-bridge",
        f"catalogs/gpus.yaml:{pcie}: rtx-5090: link.p2p_source: missing field (expected a URL)",
    ]


def test_a_link_kind_and_generation_are_checked(root):
    edit(root / GPUS, RTX_3090_LINK, '    link: {kind: "nvswitch", generation: 3, gb_s: 112.5}\n')
    line = line_of(root / GPUS, 'kind: "nvswitch"')
    assert problems(root) == [
        f"catalogs/gpus.yaml:{line}: rtx-3090: link.kind: unknown link kind 'nvswitch' (expected infinity-fabric, nvlink, nvlink-bridge or pcie)",
        f'catalogs/gpus.yaml:{line}: rtx-3090: link.generation: expected a generation number in quotes like "4", got 3',
    ]


def test_slots_belong_to_pcie_cards_and_fp8_to_the_throughput(root):
    edit(
        root / GPUS,
        '    form_factor: {kind: "sxm", pcie_gen: 5}\n    link: {kind: "nvlink", generation: "4", gb_s: 900}\n    fp8: true\n',
        '    form_factor: {kind: "sxm", pcie_gen: 5, slots: 2}\n    link: {kind: "nvlink", generation: "4", gb_s: 900}\n    fp8: true\n',
        count=1,
    )
    edit(
        root / GPUS,
        "    dense_tflops: {bf16: 71, fp16: 142, int8: 284}\n",
        "    dense_tflops: {bf16: 71, fp16: 142, fp8: 142, int8: 284}\n",
    )
    slots = line_of(root / GPUS, 'kind: "sxm", pcie_gen: 5, slots: 2')
    fp8 = line_of(root / GPUS, "fp8: false")
    assert problems(root) == [
        f"catalogs/gpus.yaml:{fp8}: rtx-3090: fp8: false, but dense_tflops gives an fp8 rate",
        f"catalogs/gpus.yaml:{slots}: h100-sxm: form_factor.slots: only a PCIe card has slots, got kind sxm",
    ]


def test_dense_throughput_needs_bf16_and_knows_its_precisions(root):
    edit(root / GPUS, "    dense_tflops: {bf16: 71, fp16: 142, int8: 284}\n", "    dense_tflops: {int8: 284, fp6: 10}\n")
    line = line_of(root / GPUS, "dense_tflops: {int8: 284, fp6: 10}")
    assert problems(root) == [
        f"catalogs/gpus.yaml:{line}: rtx-3090: dense_tflops.fp6: unknown field (did you mean 'fp16'?)",
        f"catalogs/gpus.yaml:{line}: rtx-3090: dense_tflops.bf16: missing field (expected a positive number)",
    ]
