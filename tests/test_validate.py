"""Bad input: every problem named by file, line, id and field, all at once, nothing written."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from gpumem.commands.build import gather
from gpumem.errors import BuildError

from .conftest import NOW, SNAPSHOT, edit, line_of, options_for
from .project import REPO, fixture_options

MODELS = Path("catalogs/models.yaml")
GPUS = Path("catalogs/gpus.yaml")
RULES = Path("catalogs/rules.yaml")
PRICES = Path("catalogs/prices") / SNAPSHOT


@pytest.fixture
def root(inputs: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The copy of the inputs, as the working folder, so errors show short paths."""
    monkeypatch.chdir(inputs)
    return inputs


def problems(root: Path) -> list[str]:
    with pytest.raises(BuildError) as raised:
        gather(options_for(root), now=NOW)
    return raised.value.lines


@pytest.mark.shipped_data
def test_the_project_inputs_are_valid():
    """The project's own catalogs and snapshot validate (whatever they hold today)."""
    inputs = gather(options_for(REPO))  # today: a newer snapshot must never look "from the future"
    assert inputs.catalog.models and inputs.catalog.gpus and inputs.catalog.snapshot.offers


def test_the_fixture_inputs_are_valid():
    inputs = gather(fixture_options(), now=NOW)
    assert len(inputs.catalog.models) == 28
    assert len(inputs.catalog.gpus) == 26
    assert len(inputs.catalog.snapshot.offers) == 188
    assert inputs.catalog.snapshot.gpu_count == 619


def test_yaml_syntax_error_keeps_pyyaml_line_and_column(root):
    edit(root / MODELS, "    layers: 32\n", "    layers: [32\n")
    line = line_of(root / MODELS, "layers: [32")
    assert problems(root) == [
        f"catalogs/models.yaml:{line + 1}:11: YAML syntax error: did not find expected ',' or ']' "
        f"(while parsing a flow sequence started on line {line})"
    ]


def test_missing_field(root):
    edit(root / MODELS, "    head_dim: 128\n", "")
    assert problems(root) == ["catalogs/models.yaml:9: llama-3.1-8b: head_dim: missing field (expected a positive integer)"]


def test_word_where_a_number_belongs(root):
    edit(root / MODELS, "    kv_heads: 8\n", "    kv_heads: eight\n")
    assert problems(root) == ["catalogs/models.yaml:17: llama-3.1-8b: kv_heads: expected a positive integer, got 'eight'"]


@pytest.mark.parametrize(("value", "shown"), [("0", "0"), ("-70.5", "-70.5")])
def test_zero_or_negative_number(root, value, shown):
    edit(root / MODELS, "    params_b: 70.553706496\n", f"    params_b: {value}\n")
    line = line_of(root / MODELS, f"params_b: {value}")
    assert problems(root) == [f"catalogs/models.yaml:{line}: llama-3.1-70b: params_b: expected a positive number, got {shown}"]


def test_duplicate_id(root):
    edit(root / MODELS, "  - id: llama-3.2-1b\n", "  - id: llama-3.1-8b\n")
    line = (root / MODELS).read_text().splitlines().index("  - id: llama-3.1-8b", 9) + 1
    assert problems(root) == [f"catalogs/models.yaml:{line}: llama-3.1-8b: id: duplicate id 'llama-3.1-8b' (first on line 9)"]


def test_unknown_key_suggests_the_field(root):
    edit(root / GPUS, "    memory_gb: 24\n", "    memory_gb: 24\n    memroy_gb: 24\n")
    line = line_of(root / GPUS, "memroy_gb")
    assert problems(root) == [f"catalogs/gpus.yaml:{line}: rtx-3090: memroy_gb: unknown field (did you mean 'memory_gb'?)"]


def test_unknown_gpu_in_an_offer(root):
    first = (root / PRICES).read_text().split("gpu: ", 2)[1].split(",")[0]
    edit(root / PRICES, f"gpu: {first},", "gpu: h900,")
    line = line_of(root / PRICES, "gpu: h900,")
    machine = (root / PRICES).read_text().splitlines()[line - 1].split("machine: ")[1].split(",")[0]
    assert problems(root) == [f"catalogs/prices/{SNAPSHOT}:{line}: {machine}: gpu: unknown GPU 'h900' (not in gpus.yaml)"]


def test_kv_heads_must_divide_heads(root):
    edit(root / MODELS, "    heads: 64\n    kv_heads: 8\n", "    heads: 64\n    kv_heads: 7\n")
    line = line_of(root / MODELS, "kv_heads: 7")
    assert problems(root) == [f"catalogs/models.yaml:{line}: llama-3.1-70b: kv_heads: 7 does not divide heads (64)"]


def test_unknown_precision_name(root):
    edit(root / RULES, "serving_precisions: [bf16, fp8, int4]", "serving_precisions: [bf16, fp6, int4]")
    line = line_of(root / RULES, "serving_precisions:")
    assert problems(root) == [
        f"catalogs/rules.yaml:{line}: rules: serving_precisions: unknown precision 'fp6' (expected bf16, fp32, fp8 or int4)"
    ]


def test_unparseable_snapshot_time(root):
    edit(root / PRICES, "taken_at: 2026-10-31T16:52:00Z", "taken_at: last Friday")
    assert problems(root) == [
        f"catalogs/prices/{SNAPSHOT}:5: snapshot: taken_at: expected a UTC time like 2026-10-31T16:52:00Z, got 'last Friday'"
    ]


def test_snapshot_with_no_offers(root):
    text = (root / PRICES).read_text()
    (root / PRICES).write_text(text[: text.index("offers:")] + "offers: []\n")
    line = line_of(root / PRICES, "offers: []")
    assert problems(root) == [f"catalogs/prices/{SNAPSHOT}:{line}: snapshot: offers: no offers (a snapshot needs at least one)"]


def test_unquoted_norway_is_caught(root):
    text = (root / PRICES).read_text()
    line = next(n for n, t in enumerate(text.splitlines(), 1) if "- {machine:" in t)
    edit(root / PRICES, 'country: "', "country: NO, x: ", 1)
    machine = text.splitlines()[line - 1].split("machine: ")[1].split(",")[0]
    assert problems(root) == [
        f"catalogs/prices/{SNAPSHOT}:{line}: {machine}: x: unknown field "
        "(expected one of: machine, gpu, gpus, price_per_gpu_hour, country, form_factor, interconnect)",
        f"catalogs/prices/{SNAPSHOT}:{line}: {machine}: country: expected text, got False",
    ]


def test_every_problem_of_every_file_at_once(root):
    edit(root / MODELS, "    kv_heads: 8\n", "    kv_heads: eight\n")
    edit(root / MODELS, '    license: {name: "Llama 2 Community License", kind: custom, url: https://www.llama.com/llama2/license/}\n', "")
    edit(root / GPUS, "    memory_gb: 24\n", "    memory_gb: -24\n")
    edit(root / PRICES, "currency: USD", "currency: dollars")
    got = problems(root)
    assert [line.split(": ", 1)[0].split(":")[0] for line in got] == [
        "catalogs/models.yaml",
        "catalogs/models.yaml",
        "catalogs/gpus.yaml",
        f"catalogs/prices/{SNAPSHOT}",
    ]
    assert got[1].endswith("llama-2-7b: license: missing field (expected name, kind and url)")
    assert got[3].endswith("snapshot: currency: expected a three-letter currency code like USD, got 'dollars'")


def test_content_placeholder_error_names_file_and_line(root):
    edit(root / "content/en/home.md", "{{ stamp.date }}", "{{ f.date(snapshot.taken_when) }}")
    from gpumem.commands.build import check

    with pytest.raises(BuildError) as raised:
        check(options_for(root), now=NOW)
    line = line_of(root / "content/en/home.md", "taken_when")
    assert raised.value.lines == [
        f"content/en/home.md:{line}: template: 'gpumem.records.catalog.Snapshot object' has no attribute 'taken_when'"
    ]


def test_cli_reports_problems_with_exit_1_no_traceback_and_site_untouched(root):
    site = root / "site"
    build = [
        sys.executable,
        "-m",
        "gpumem.cli.main",
        "--project",
        str(REPO),
        "build",
        "--catalogs",
        "catalogs",
        "--content",
        "content",
        "--out",
        "site",
    ]
    first = subprocess.run(build, cwd=root, capture_output=True, text=True)
    assert first.returncode == 0, first.stderr
    before = {p: p.read_bytes() for p in site.rglob("*") if p.is_file()}
    edit(root / MODELS, "    kv_heads: 8\n", "    kv_heads: eight\n")
    edit(root / "content/es/guide-memory.md", "Empieza por", "Comienza por")
    failed = subprocess.run(build, cwd=root, capture_output=True, text=True)
    assert failed.returncode == 1
    assert failed.stdout == ""
    assert failed.stderr == (
        "catalogs/models.yaml:17: llama-3.1-8b: kv_heads: expected a positive integer, got 'eight'\n1 problem found; nothing was written.\n"
    )
    assert "Traceback" not in failed.stderr
    assert {p: p.read_bytes() for p in site.rglob("*") if p.is_file()} == before


def test_content_front_matter_is_checked(root):
    page = root / "content/en/guide-memory.md"
    edit(
        page,
        "  - q: Why does fine-tuning need so much more memory than serving?\n    a: |",
        "  - q: Why does fine-tuning need so much more memory than serving?\n    answer: |",
    )
    edit(page, "title: How much GPU memory", "titel: How much GPU memory")
    line = line_of(page, "answer: |")
    assert problems(root) == [
        "content/en/guide-memory.md:2: guide-memory: titel: unknown field (did you mean 'title'?)",
        "content/en/guide-memory.md:2: guide-memory: title: missing field (expected text)",
        f"content/en/guide-memory.md:{line - 1}: guide-memory: faq[4].a: missing field (expected text)",
        f"content/en/guide-memory.md:{line}: guide-memory: faq[4].answer: unknown field (expected one of: q, a)",
    ]


def test_a_language_needs_a_known_code(root):
    site = root / "content/site.yaml"
    edit(site, "  - {code: de, name: Deutsch}", "  - {code: de, name: Deutsch}\n  - {code: xx, name: Nowhere}")
    line = line_of(site, "code: xx")
    assert (
        problems(root)[0]
        == f"content/site.yaml:{line}: site: languages.code: unknown language code 'xx' (expected one Babel knows, like es or pt-BR)"
    )


def test_a_language_needs_its_interface_strings(root):
    import yaml

    site = root / "content/site.yaml"
    config = yaml.safe_load(site.read_text())
    config["languages"].append({"code": "it", "name": "Italiano"})
    for routes in config["routes"].values():
        routes["it"] = routes["en"]
    site.write_text(yaml.safe_dump(config, allow_unicode=True))
    for page in (root / "content/en").iterdir():
        (root / "content/it").mkdir(exist_ok=True)
        (root / "content/it" / page.name).write_text(page.read_text())
    assert problems(root) == [
        f"{REPO}/translations/it/LC_MESSAGES/messages.po: missing: every language needs its interface strings (see docs/user-guide/content.md#add-a-language)"
    ]


def test_the_marketplace_names_its_home_and_a_rent_template(root):
    site = root / "content/site.yaml"
    edit(site, "  name: Arrakis\n", "  name: ''\n")
    edit(site, "home_url: https://arrakis.example.org/", "home_url: ftp://arrakis.example.org/")
    edit(site, "rent?gpu={gpu}&count={count}", "rent?gpu={gpu}&n={counts}")
    name = line_of(site, "  name: ''")
    assert problems(root) == [
        f"content/site.yaml:{name}: site: marketplace.name: expected text, got ''",
        f"content/site.yaml:{line_of(site, 'home_url:')}: site: marketplace.home_url: expected a URL starting with https://, "
        "got 'ftp://arrakis.example.org/'",
        f"content/site.yaml:{line_of(site, 'rent_url:')}: site: marketplace.rent_url: unknown placeholder '{{counts}}' in "
        "'https://arrakis.example.org/rent?gpu={gpu}&n={counts}' (expected only {gpu} and {count})",
    ]


def test_the_rent_template_needs_the_gpu_and_the_count(root):
    site = root / "content/site.yaml"
    edit(site, "rent?gpu={gpu}&count={count}", "rent?gpu={gpu}")
    assert problems(root) == [
        f"content/site.yaml:{line_of(site, 'rent_url:')}: site: marketplace.rent_url: expected a URL with {{count}} where the GPU "
        "and the count go, got 'https://arrakis.example.org/rent?gpu={gpu}'"
    ]


def test_the_marketplace_is_required_and_has_only_its_fields(root):
    site = root / "content/site.yaml"
    edit(site, "  home_url: https://arrakis.example.org/\n", "  home: https://arrakis.example.org/\n")
    line = line_of(site, "marketplace:")
    assert problems(root) == [
        f"content/site.yaml:{line + 1}: site: marketplace.home_url: missing field (expected a URL)",
        f"content/site.yaml:{line + 2}: site: marketplace.home: unknown field (did you mean 'home_url'?)",
    ]
    text = site.read_text()
    site.write_text(text[: text.index("marketplace:")])
    assert problems(root) == [f"content/site.yaml:{line_of(site, 'base_url:')}: site: marketplace: missing field"]


def test_the_rent_address_of_a_configuration():
    from gpumem.records.catalog import Marketplace

    market = Marketplace("Arrakis", "https://arrakis.example.org/", "https://arrakis.example.org/rent?gpu={gpu}&count={count}")
    assert market.rent("h100-sxm", 4) == "https://arrakis.example.org/rent?gpu=h100-sxm&count=4"
    assert market.rent("a/b c", 1) == "https://arrakis.example.org/rent?gpu=a%2Fb%20c&count=1"


LLAMA_2_LICENSE = '{name: "Llama 2 Community License", kind: custom, url: https://www.llama.com/llama2/license/}'


@pytest.mark.parametrize(
    ("written", "expected"),
    [
        (
            '"Qwen License (license: other, name qwen)"',
            ["license: expected a mapping of fields, got 'Qwen License (license: other, name qwen)'"],
        ),
        (
            '{name: "Qwen License (license: other)", kind: custom, url: https://example.org/LICENSE}',
            [
                "license.name: expected the licence's name alone (a note about it belongs in the entry's notes), got 'Qwen License (license: other)'"
            ],
        ),
        (
            '{name: "Llama 2 Community License", kind: open-weights, url: https://www.llama.com/llama2/license/}',
            ["license.kind: unknown licence kind 'open-weights' (expected custom or open-source)"],
        ),
        (
            '{name: "Llama 2 Community License", kind: custom, url: www.llama.com, note: x}',
            [
                "license.note: unknown field (expected one of: name, kind, url)",
                "license.url: expected a URL starting with https://, got 'www.llama.com'",
            ],
        ),
        ("{kind: custom, url: https://www.llama.com/llama2/license/}", ["license.name: missing field (expected text)"]),
    ],
)
def test_a_licence_is_a_name_a_kind_and_a_link(root, written, expected):
    edit(root / MODELS, f"    license: {LLAMA_2_LICENSE}\n", f"    license: {written}\n")
    line = line_of(root / MODELS, f"    license: {written}")
    assert problems(root) == [f"catalogs/models.yaml:{line}: llama-2-7b: {message}" for message in expected]


def test_an_old_weight_name_maps_to_a_known_format(root):
    edit(root / RULES, "old_weights: {int4: awq}", "old_weights: {int4: awq4}")
    line = line_of(root / RULES, "int4: awq4")
    assert problems(root) == [
        f"catalogs/rules.yaml:{line}: rules: calculator.old_weights.int4: unknown weight format 'awq4' (expected awq, bf16, fp16, fp32, "
        "fp8, gguf_mxfp4, gptq, int8, mxfp4, nf4, nvfp4, q2_k, q3_k_m, q4_0, q4_k_m, q5_k_m, q6_k or q8_0)"
    ]


VLLM_COMMIT = "4ba787ec9"


def test_the_pins_are_read():
    engines = gather(fixture_options(), now=NOW).catalog.rules.engines
    assert sorted(engines) == ["llama.cpp", "vllm"]
    assert (engines["vllm"].version, engines["vllm"].commit) == ("0.33.0", VLLM_COMMIT)
    assert (engines["llama.cpp"].version, engines["llama.cpp"].commit) == ("0c1e57098", "0c1e57098")
    assert "pip download vllm==0.33.0 --no-deps" in engines["vllm"].source


@pytest.mark.parametrize("commit", ["4ba787", "G4ba787ec9", "4BA787EC9", "4ba787ec9" + "0" * 32])
def test_a_commit_must_be_7_to_40_hex_digits(root, commit):
    edit(root / RULES, f"commit: {VLLM_COMMIT}", f"commit: {commit}")
    line = line_of(root / RULES, f"commit: {commit}")
    assert problems(root) == [
        f"catalogs/rules.yaml:{line}: rules: engines.vllm.commit: expected a commit of 7 to 40 lowercase hex digits, got '{commit}'"
    ]


def test_an_unknown_engine_is_named(root):
    edit(root / RULES, "  llama.cpp:\n    version:", "  sglang:\n    version:")
    assert problems(root) == [
        f"catalogs/rules.yaml:{line_of(root / RULES, '  vllm:')}: rules: engines.llama.cpp: missing field",
        f"catalogs/rules.yaml:{line_of(root / RULES, '  sglang:')}: rules: engines.sglang: unknown field (expected one of: vllm, llama.cpp)",
    ]


def with_architecture(root: Path, lines: str, marker: str) -> int:
    """Llama 3.1 8B's attention line (32 layers) replaced by `lines`; the line holding `marker`."""
    edit(root / MODELS, "    attention: {kind: full}\n    vocab: 128256\n", f"{lines}    vocab: 128256\n")
    return line_of(root / MODELS, marker)


def test_a_hybrid_s_state_block_is_read_and_checked(root):
    state = "    state: {kind: rwkv, layers: 32, conv: 0, recurrent: 4096, recurrent_bytes: 3}\n"
    line = with_architecture(root, "    attention: {kind: full}\n" + state, "kind: rwkv")
    assert problems(root) == [
        f"catalogs/models.yaml:{line}: llama-3.1-8b: state.kind: unknown state kind 'rwkv' (expected gated-deltanet, kda, lightning or mamba2)",
        f"catalogs/models.yaml:{line}: llama-3.1-8b: state.layers: 32 leaves no attention layer of 32",
        f"catalogs/models.yaml:{line}: llama-3.1-8b: state.conv: expected a positive integer, got 0",
        f"catalogs/models.yaml:{line}: llama-3.1-8b: state.recurrent_bytes: expected 2 (16 bits) or 4 (32 bits), got 3",
    ]


def test_a_hybrid_s_mlp_only_layers_must_leave_attention_layers(root):
    """Nemotron-H's MLP and MoE blocks hold neither attention nor a state: with the state layers they leave the rest."""
    state = "    state: {kind: mamba2, layers: 16, conv: 8, recurrent: 64, mlp_layers: 16}\n"
    line = with_architecture(root, "    attention: {kind: full}\n" + state, "kind: mamba2")
    assert problems(root) == [
        f"catalogs/models.yaml:{line}: llama-3.1-8b: state.mlp_layers: 16 state and 16 MLP-only layers leave no attention layer of 32"
    ]
    edit(root / MODELS, "mlp_layers: 16}", "mlp_layers: 15}")
    model = next(m for m in gather(options_for(root), now=NOW).catalog.models if m.id == "llama-3.1-8b")
    assert (model.arch.state.mlp_layers, model.arch.attention_layers) == (15, 1)


def test_a_q_and_k_norm_over_every_head_is_the_only_one_models_yaml_names(root):
    """MiniMax M2's config says qk_norm_type per_layer (engines/speed.allreduces counts its all-reduce); a per-head
    norm changes no figure, so models.yaml names no other, and only a full-attention block takes it."""
    edit(root / MODELS, "attention: {kind: full}", "attention: {kind: full, qk_norm: per_head}", count=1)
    line = line_of(root / MODELS, "qk_norm: per_head")
    assert problems(root) == [
        f"catalogs/models.yaml:{line}: llama-3.1-8b: attention.qk_norm: unknown qk_norm 'per_head' (expected per_layer)"
    ]
    edit(root / MODELS, "qk_norm: per_head", "qk_norm: per_layer")
    model = next(m for m in gather(options_for(root), now=NOW).catalog.models if m.id == "llama-3.1-8b")
    assert model.arch.attention.qk_norm == "per_layer"


def test_an_expert_s_projections_and_a_layer_s_blocks_are_checked(root):
    """Nemotron-H's ungated experts (projections: 2) and its one-mixer layers (blocks_per_layer: 1); nothing else."""
    edit(
        root / MODELS,
        "intermediate: 6144\n    experts: {count: 128, active: 8, intermediate: 768}",
        "intermediate: 6144\n    blocks_per_layer: 3\n    experts: {count: 128, active: 8, intermediate: 768, projections: 4}",
    )
    blocks, experts = line_of(root / MODELS, "blocks_per_layer: 3"), line_of(root / MODELS, "projections: 4")
    assert problems(root) == [
        f"catalogs/models.yaml:{blocks}: qwen3-30b-a3b: blocks_per_layer: expected 1 or 2, got 3",
        f"catalogs/models.yaml:{experts}: qwen3-30b-a3b: experts.projections: expected 2 or 3, got 4",
    ]


def test_chunked_attention_names_its_local_layers(root):
    line = with_architecture(root, "    attention: {kind: chunked, window: 8192}\n", "kind: chunked")
    assert problems(root) == [
        f"catalogs/models.yaml:{line}: llama-3.1-8b: attention.sliding_layers: missing field (expected a positive integer)"
    ]
