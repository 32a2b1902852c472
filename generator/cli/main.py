"""The command line, `gpumem` (and `python -m gpumem`): one click group whose commands parse
options and call one function each.

The pipeline (Jinja, Babel, YAML, the engines) is imported inside the commands that need it, so a
rebuild that finds nothing changed (fingerprint.unchanged) answers with only click loaded.
"""

from __future__ import annotations

import gc
import os
import sys
from pathlib import Path
from typing import Any, NoReturn

import click

from gpumem.errors import BuildError
from gpumem.options import BuildResult, Options, built_line, parallel_jobs, project_options

PATH = click.Path(path_type=Path)
# Set by run(), the `gpumem` command itself: the process ends when the command does (os._exit), so
# a build need not leave the garbage collector as it found it. A command invoked otherwise (click's
# test runner, another program) leaves the collector alone.
ends_the_process = False


def source_options(command):  # noqa: ANN001, ANN201 - a click decorator
    """The options every command that reads the inputs shares."""
    command = click.option("--strict", is_flag=True, help="Treat warnings (an old snapshot) as errors.")(command)
    command = click.option("--prices", type=PATH, help="Price snapshot file (default: the newest in CATALOGS/prices/).")(command)
    command = click.option("--content", type=PATH, help="Content folder (default: the project's content/).")(command)
    command = click.option("--catalogs", type=PATH, help="Folder with models.yaml, gpus.yaml, rules.yaml and prices/.")(command)
    return click.option("--host", type=PATH, help="Folder of the host's own files, copied into the site (default: the project's host/).")(
        command
    )


def build_options(command):  # noqa: ANN001, ANN201 - a click decorator
    """What `build` and `gh-deploy` share besides the inputs: where to write, and how."""
    command = click.option(
        "--jobs", type=click.IntRange(1, 64), help="Rendering processes (default: 2 where fork exists and 2 CPUs are free, else 1)."
    )(command)
    command = click.option("--force", is_flag=True, help="Render every page even when the inputs are unchanged since the last build.")(
        command
    )
    return click.option("--out", type=PATH, help="Output path, a link to the site's current version (default: the project's site/).")(
        command
    )


def options_from(
    catalogs: Path | None, content: Path | None, prices: Path | None, strict: bool, out: Path | None = None, **rest: Any
) -> Options:
    """Options for the project folder the group was given, with any folder pointed elsewhere; a
    BuildError naming each of the paths that cannot be looked up (paths_problems)."""
    project = click.get_current_context().find_root().params.get("project")
    options = project_options(project, catalogs=catalogs, content=content, prices=prices, strict=strict, out=out, **rest)
    given = {"catalogs": catalogs, "content": content, "host": rest.get("host")}
    shown = {role: str(given.get(role) or Path(project or "") / path.name) for role, path in options.sources.items()}
    problems = paths_problems(project, {path: shown[role] for role, path in options.sources.items()}, prices)
    if problems:
        raise BuildError(problems)
    return options


def paths_problems(project: Path | None, sources: dict[Path, str], prices: Path | None) -> list[str]:
    """What stops the inputs' paths from being looked up (a loop of symbolic links, say) or a snapshot
    that is a folder, each as `path: message`; a path that does not exist is left to its reader."""
    if project is not None and (problem := lookup_problem(project)):
        return [f"{project}: {problem}"]  # the folders inside it cannot be looked up either
    problems = [f"{shown}: {problem}" for path, shown in sources.items() if (problem := lookup_problem(path))]
    if prices is not None and (problem := lookup_problem(prices) or ("not a regular file" if prices.is_dir() else "")):
        problems.append(f"{prices}: {problem}")
    return problems


def lookup_problem(path: Path) -> str:
    """Why `path` cannot be looked up ("cannot read: Too many levels of symbolic links"), or "" when it can or is missing."""
    try:
        os.stat(path)
    except FileNotFoundError:
        return ""
    except OSError as error:
        return f"cannot read: {error.strerror}"
    return ""


def built(options: Options) -> BuildResult:
    """`gpumem build` with these options, its warnings and its line said."""
    from gpumem.commands.rebuild import build_if_changed

    result = build_if_changed(options, say)
    warn(result.warnings)
    click.echo(built_line(result))
    return result


def warn(warnings: tuple[str, ...]) -> None:
    for warning in warnings:
        click.echo(warning, err=True)


def say(note: str) -> None:
    """What the writer did besides the build (recovering from a killed one), on stderr."""
    click.echo(note, err=True)


class Shown(click.ClickException):
    """A BuildError as the command line shows it: its lines alone, on stderr, exit code 1."""

    def show(self, file=None) -> None:  # noqa: ANN001 - click's signature
        click.echo(self.format_message(), err=True, file=file)


class Commands(click.Group):
    """gpumem's commands; a BuildError (a plain exception, see errors.py) is shown as click shows its own."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except BuildError as error:
            raise Shown(error.message) from None


@click.group(cls=Commands)
@click.option(
    "--project",
    type=click.Path(path_type=Path, file_okay=False),
    help="Project folder with catalogs/, content/, templates/ and translations/ (default: the current folder).",
)
def main(project: Path | None) -> None:
    """Build the GPU-memory guides from the catalogs, content and a price snapshot."""


@main.command("build")
@source_options
@build_options
def build_command(jobs: int | None, **options: Any) -> None:
    """Build the site as a new version and point the output path at it."""
    if ends_the_process:
        gc.disable()  # for good: the process ends with the build (see run)
    built(options_from(**options, jobs=jobs or parallel_jobs()))


@main.command("gh-deploy")
@source_options
@build_options
@click.option("--remote", default="origin", show_default=True, help="Git remote to push to.")
@click.option("--branch", default="gh-pages", show_default=True, help="Branch that gets the site as its whole content.")
@click.option("--message", default="Site built by gpumem", show_default=True, help="The commit's message.")
def gh_deploy_command(jobs: int | None, remote: str, branch: str, message: str, **options: Any) -> None:
    """Build the site, then commit it to a branch of the project's repository and push it (GitHub Pages)."""
    from gpumem.output.hosting import gh_deploy

    chosen = options_from(**options, jobs=jobs or parallel_jobs())
    built(chosen)
    gh_deploy(Path(os.path.realpath(chosen.out)), chosen.project, remote, branch, message)
    click.echo(f"published {chosen.out} to {remote} {branch}")


@main.command("check")
@source_options
def check_command(**options: Any) -> None:
    """Validate every input and render every page in memory; write nothing."""
    from gpumem.commands.build import check

    inputs = check(options_from(**options))
    warn(inputs.warnings)
    catalog = inputs.catalog
    click.echo(
        f"ok: {len(catalog.models)} models, {len(catalog.gpus)} GPUs, snapshot {catalog.snapshot.name} "
        f"({len(catalog.snapshot.offers)} machines, {catalog.snapshot.gpu_count} GPUs)"
    )


@main.group("prices")
def prices_group() -> None:
    """Import a marketplace export as a snapshot, or compare two snapshots."""


@prices_group.command("import")
@click.argument("file", type=click.Path(path_type=Path, exists=True, dir_okay=False))
@click.option("--taken-at", help="When the export was taken (UTC), e.g. 2026-11-07T09:00:00Z; default: the file's own taken_at field.")
@click.option("--format", "kind", type=click.Choice(["csv", "json"]), help="Default: from the file's extension.")
@click.option("--catalogs", type=PATH, help="Catalogs folder; the snapshot goes to CATALOGS/prices/.")
@click.option("--currency", default="USD", show_default=True, help="Currency of the prices.")
def prices_import(file: Path, taken_at: str | None, kind: str | None, catalogs: Path | None, currency: str) -> None:
    """Validate a CSV or JSON export and write it as CATALOGS/prices/<UTC time>.yaml."""
    from gpumem.commands.prices import import_export

    target = import_export(file, options_from(catalogs, None, None, False).catalogs, kind, taken_at, currency)
    click.echo(f"wrote {target}")


@prices_group.command("diff")
@click.argument("old", type=click.Path(path_type=Path, exists=True, dir_okay=False))
@click.argument("new", type=click.Path(path_type=Path, exists=True, dir_okay=False))
@click.option("--catalogs", type=PATH, help="Catalogs folder with models.yaml, gpus.yaml and rules.yaml.")
def prices_diff(old: Path, new: Path, catalogs: Path | None) -> None:
    """Print what changes between two snapshots: lowest prices, GPUs on offer, guide-table cells."""
    from gpumem.commands.prices_diff import diff

    click.echo(diff(old, new, options_from(catalogs, None, None, False).catalogs))


@main.command("estimate")
@click.option("--model", "model_id", help="A catalog model id.")
@click.option("--config", type=click.Path(path_type=Path, dir_okay=False), help="A Hugging Face config.json instead of a catalog model.")
@click.option("--params", type=float, help="Billions of parameters instead of a model: the architecture is estimated from them.")
@click.option(
    "--checkpoint",
    type=click.Path(path_type=Path),
    help="Serving: a local .safetensors or .gguf file, model.safetensors.index.json or their folder, whose headers weigh the weights.",
)
@click.option(
    "--mode", type=click.Choice(("serve", "full", "lora", "qlora")), default="serve", show_default=True, help="Serve, or fine-tune."
)
@click.option("--gpus", type=int, default=1, show_default=True, help="GPUs the model is split over (tensor parallelism), or trains on.")
@click.option("--weights", help="Serving: weight format (default: the model's release format), e.g. bf16, fp8, awq, q4_k_m.")
@click.option("--kv", help="Serving: KV cache format: bf16 (default), fp8, q8_0, q4_0.")
@click.option("--context", type=int, help="Serving: tokens per request (default: 8,192 or the model's native context if shorter).")
@click.option("--requests", type=int, help="Serving: concurrent requests (default 1).")
@click.option("--utilization", type=float, help="Serving: vLLM's gpu_memory_utilization (default from rules.yaml).")
@click.option("--max-num-seqs", type=int, help="Serving: vLLM's request slots (default: its default for a card of 70 GiB or more).")
@click.option("--max-num-batched-tokens", type=int, help="Serving: vLLM's tokens per step (default: its default for the card).")
@click.option("--enforce-eager", is_flag=True, default=None, help="Serving: vLLM without CUDA graphs (their memory estimate is 0).")
@click.option("--seq", type=int, help="Fine-tuning: tokens per sequence (default 4,096).")
@click.option("--micro-batch", type=int, help="Fine-tuning: sequences per GPU per step (default 1).")
@click.option("--checkpointing", type=click.Choice(("none", "full")), help="Fine-tuning: activation checkpointing (default full).")
@click.option("--flash-attention", type=click.Choice(("on", "off")), help="Fine-tuning: FlashAttention (default on).")
@click.option(
    "--optimizer", type=click.Choice(("adamw", "adamw_8bit", "paged_adamw", "sgd", "adafactor")), help="Fine-tuning (default adamw)."
)
@click.option(
    "--precision", type=click.Choice(("bf16", "mixed", "mixed_hf")), help="Fine-tuning: mixed keeps an FP32 master copy (default for full)."
)
@click.option("--lora-rank", type=int, help="LoRA and QLoRA: the adapters' rank (default 16).")
@click.option(
    "--lora-targets",
    type=click.Choice(("attn", "attn_mlp", "all")),
    help="LoRA and QLoRA: attention, + MLP, or all (+ a MoE's routed experts); default all.",
)
@click.option("--zero", type=click.IntRange(0, 3), help="Fine-tuning: ZeRO stage over --gpus (3 = FSDP's full shard; default 0).")
@click.option("--offload-optimizer", is_flag=True, default=None, help="Fine-tuning: optimizer states in CPU memory.")
@click.option(
    "--fp32-unquantized",
    is_flag=True,
    default=None,
    help="QLoRA: embeddings, norms and head in FP32, as PEFT's prepare_model_for_kbit_training leaves them.",
)
@click.option("--json", "as_json", is_flag=True, help="Print bytes as JSON.")
@click.option("--catalogs", type=PATH, help="Folder with models.yaml, gpus.yaml, rules.yaml and prices/.")
@click.option("--speed", "with_speed", is_flag=True, help="Also print tokens/s and US$ per million tokens per configuration.")
@click.option("--gpu", "gpu_id", help="With --speed: this GPU x --gpus only, on offer or not.")
@click.option("--prompt", type=int, help="With --speed: prompt tokens per request (default 1,000).")
@click.option("--output", type=int, help="With --speed: output tokens per request (default 1,000).")
def estimate_command(
    model_id: str | None,
    config: Path | None,
    mode: str,
    as_json: bool,
    catalogs: Path | None,
    with_speed: bool,
    gpu_id: str | None,
    prompt: int | None,
    output: int | None,
    **options: Any,
) -> None:
    """One workload's memory per GPU, and the cheapest configurations on offer that hold it."""
    from gpumem.commands import estimate, estimate_speed, estimate_training
    from gpumem.engines import speed

    prompt = speed.DEFAULT_PROMPT if prompt is None else prompt
    output = speed.DEFAULT_OUTPUT if output is None else output

    if [model_id, config, options["params"]].count(None) != 2:
        raise click.UsageError("give exactly one of --model ID, --config PATH or --params BILLIONS")
    if gpu_id is not None and not with_speed:
        raise click.UsageError("--gpu picks the configuration --speed reports: give --speed too")
    if options["checkpoint"] is not None and mode != "serve":
        raise click.UsageError(f"--checkpoint weighs the weights a server loads: it serves, not --mode {mode}")
    fields = estimate_training.TRAINING_FLAGS
    training = estimate_training.TrainingRequest(mode, **{name: options.pop(name) for name in fields})
    request = estimate.Request(model=model_id, config=config, **options)
    folder = options_from(catalogs, None, None, False).catalogs
    if mode != "serve":
        if with_speed:
            raise click.UsageError(f"--speed estimates serving, not --mode {mode}: leave one out")
        result = estimate_training.estimate(folder, request, training)
        click.echo(estimate_training.as_json(result) if as_json else estimate_training.as_text(result))
        return
    estimate_training.check_flags(request, training)
    served = estimate.estimate(folder, estimate.Request(model=model_id, config=config, **estimate.serving_defaults(options)))
    if not with_speed:
        click.echo(estimate.as_json(served) if as_json else estimate.as_text(served))
        return
    rows = estimate_speed.speed_rows(served, prompt, output, gpu_id)
    if as_json:
        click.echo(estimate_speed.with_speed_json(estimate.as_json(served), rows))
    else:
        load = estimate_speed.Load(served.requests, prompt, output)
        click.echo(estimate.as_text(served) + "\n" + estimate_speed.speed_text(rows, load))


@main.group("models")
def models_group() -> None:
    """Catalog models."""


@models_group.command("add")
@click.argument("config", type=click.Path(path_type=Path, dir_okay=False))
@click.option("--id", "model_id", help="Catalog id (default: the config's folder name).")
@click.option("--name", help="Display name (default: the id).")
@click.option("--source", help="Where the config was read, e.g. its Hugging Face URL.")
@click.option("--catalogs", type=PATH, help="Folder whose rules.yaml bounds the config's counts (default: the project's catalogs/).")
@click.option(
    "--checkpoint", type=click.Path(path_type=Path), help="Its local checkpoint (as for estimate): the draft gives its exact bytes."
)
def models_add(
    config: Path, model_id: str | None, name: str | None, source: str | None, catalogs: Path | None, checkpoint: Path | None
) -> None:
    """Print a models.yaml entry drafted from a config.json (append it, then fill the licence)."""
    from gpumem.commands.estimate import draft_entry

    folder = options_from(catalogs, None, None, False).catalogs
    click.echo(draft_entry(config, folder, model_id, name, source, checkpoint), nl=False)


@main.command("serve")
@source_options
@click.option("--port", type=int, default=8000, show_default=True, help="Port on 127.0.0.1 (0: any free one).")
def serve_command(port: int, **options: Any) -> None:
    """Preview the site on 127.0.0.1, rebuilding when a source file changes.

    The preview is built in a temporary folder of its own (removed at exit), never in site/.
    """
    if not 0 <= port <= 65535:
        raise BuildError([f"--port: expected a port number from 0 to 65535, got {port}"])
    from gpumem.commands.serve import serve

    serve(options_from(**options), port)


def run() -> NoReturn:
    """The `gpumem` command: click's main, then out without Python's teardown.

    A build leaves hundreds of thousands of objects (the catalog, every page's figures and bytes);
    freeing them one by one, and the garbage collector's pass over them once it runs again, cost
    a tenth of a full build (0.1 s of CPU). Nothing is left to do by then: the output is written and
    closed, the lock released; what the command printed is flushed here. As mypy and Mercurial do,
    the process ends with os._exit. (The collector stays off for the rest of `gpumem build`.)
    """
    global ends_the_process  # noqa: PLW0603 - the one switch, set once at the command's start
    ends_the_process = True
    try:
        main()
        code: object = 0
    except SystemExit as leaving:  # click ends every command this way
        code = leaving.code
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe: nothing more can be said there
            code = code or 1
    if code is None:
        code = 0
    if not isinstance(code, int):
        print(code, file=sys.stderr, flush=True)
        code = 1
    os._exit(code)


if __name__ == "__main__":
    run()
