"""`gpumem prices diff`: what changes from one price snapshot to another, in the lowest price of each GPU,
the GPUs on offer, every recommendation a guide table shows and the cost per million output tokens."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from gpumem.catalog.inputs import load_catalog
from gpumem.engines.sizing import Choice, Fit
from gpumem.figures import shared
from gpumem.figures.apis import usd_per_million
from gpumem.figures.site import SiteFigures, site_figures
from gpumem.pages.formats import Formats
from gpumem.records.catalog import Catalog


@dataclass(frozen=True)
class CellChange:
    """A guide-table cell whose recommendation changes: where it stands, and its text before and after."""

    page: str
    row: str
    column: str
    before: str
    after: str


def _offer_text(choice: Choice, f: Formats) -> str:
    """A recommendation as the diff prints it: count, GPU names and price per hour."""
    best = choice.best
    if best is None:
        return "nothing on offer"
    names = "/".join(o.gpu.name for o in choice.options)
    machines = f"{best.machines} machines of " if best.machines > 1 else ""
    return f"{machines}{best.count} × {names} {f.money(best.price_per_hour)}/h"


def _fit_text(fit: Fit | None, f: Formats) -> str:
    """A deployment recommendation as the diff prints it: count, GPU and price per hour."""
    if fit is None:
        return "nothing on offer"
    config = fit.configuration
    return f"{config.count} × {config.gpu.name} {f.money(config.price_per_hour)}/h"


def table_cells(catalog: Catalog, figures: SiteFigures | None = None) -> dict[tuple[str, str, str], Choice | Fit | None]:
    """Every recommendation a guide table shows, by (page, row, column), with English URLs."""
    figures = figures or site_figures(catalog)
    cells: dict[tuple[str, str, str], Choice | Fit | None] = {}
    for table in (figures.main.serving, figures.main.fine_tuning):
        for row in table.rows:
            for cell in row.cells:
                cells[("/en/guides/gpu-memory/", f"{table.kind} {row.size.label} ({row.model.name})", cell.column)] = cell.choice
    for model, fits in figures.calculator.rows:
        for format_fit in fits:
            cells[("/en/calculator/", model.name, format_fit.fmt.name)] = format_fit.cheapest
    for model_id, page in figures.models.items():
        url = f"/en/models/{model_id}/"
        for need in page.serving:
            cells[(url, "serving", need.key)] = need.choice
        for need in page.fine_tuning:
            cells[(url, "fine-tuning", need.key)] = need.choice
        for context in page.contexts:
            cells[(url, f"{context.tokens} tokens", "1 request")] = context.choice_one
            cells[(url, f"{context.tokens} tokens", f"{page.requests} requests")] = context.choice_many
        for format_fit in page.formats:
            cells[(url, "deployment", format_fit.fmt.name)] = format_fit.cheapest
    return cells


def cost_cells(catalog: Catalog, figures: SiteFigures | None = None) -> dict[tuple[str, str, str], float | None]:
    """The US$ per million output tokens of every deployment row's configuration (the calculator's and the
    model pages'), at the load of the page "Self-hosting or an API?"; None where nothing on offer holds it.
    Keyed as table_cells keys the same rows."""
    figures = figures or site_figures(catalog)
    rows = [("/en/calculator/", model.name, model, fit) for model, fits in figures.calculator.rows for fit in fits]
    for model_id, page in figures.models.items():
        rows += [(f"/en/models/{model_id}/", "deployment", catalog.model(model_id), fit) for fit in page.formats]
    return {
        (page, row, fit.fmt.name): usd_per_million(catalog, model, fit.fmt, fit.cheapest.configuration) if fit.cheapest else None
        for page, row, model, fit in rows
    }


def _cost_text(value: float | None, f: Formats) -> str:
    return "nothing on offer" if value is None else f.money(value, 3)


def cost_changes(before: Catalog, after: Catalog, old: dict, new: dict, f: Formats) -> list[str]:
    """Lines of the diff for the cost per million output tokens: old → new and the change in per cent."""
    setting = after.rules.api_page
    if setting is None:
        return []
    changed = [key for key in old if key in new and _cost_text(old[key], f) != _cost_text(new[key], f)]
    load = f"{setting.concurrency} requests of {setting.prompt_tokens:,} prompt and {setting.output_tokens:,} output tokens"
    lines = [f"Cost per million output tokens at {load}, a roofline estimate ({len(changed)} changed):"]
    for page, row, column in changed:
        was, now = old[(page, row, column)], new[(page, row, column)]
        change = f" ({now / was - 1:+.1%})" if was is not None and now is not None else ""
        lines.append(f"  {page} | {row} | {column}: {_cost_text(was, f)} → {_cost_text(now, f)}{change}")
    return lines


def _cell_text(cell: Choice | Fit | None, f: Formats) -> str:
    return _offer_text(cell, f) if isinstance(cell, Choice) else _fit_text(cell, f)


def diff(old: Path, new: Path, catalogs: Path) -> str:
    """What changes from one snapshot to another: lowest prices, GPUs on offer, table cells."""
    before, after = load_catalog(catalogs, old), load_catalog(catalogs, new)
    f = Formats("en", after.snapshot.currency)
    lines = [f"{before.snapshot.name} → {after.snapshot.name}"]
    old_market, new_market = shared.Shop(before).markets, shared.Shop(after).markets
    names = {g.id: g.name for g in after.gpus}
    changed = [g for g in sorted(set(old_market) & set(new_market)) if old_market[g].lowest_price != new_market[g].lowest_price]
    lines.append(f"Lowest price per GPU-hour ({len(changed)} changed):")
    for g in changed:
        lines.append(f"  {names[g]}: {f.money(old_market[g].lowest_price)} → {f.money(new_market[g].lowest_price)}")
    appear, vanish = sorted(set(new_market) - set(old_market)), sorted(set(old_market) - set(new_market))
    lines.append("GPUs that appear: " + (", ".join(f"{names[g]} (from {f.money(new_market[g].lowest_price)})" for g in appear) or "none"))
    lines.append("GPUs that vanish: " + (", ".join(names[g] for g in vanish) or "none"))
    old_figures, new_figures = site_figures(before), site_figures(after)
    old_cells, new_cells = table_cells(before, old_figures), table_cells(after, new_figures)
    changes = [
        CellChange(page, row, column, _cell_text(old_cells[key], f), _cell_text(new_cells[key], f))
        for key in old_cells
        for page, row, column in [key]
        if key in new_cells and _cell_text(old_cells[key], f) != _cell_text(new_cells[key], f)
    ]
    lines.append(f"Guide-table cells that change ({len(changes)}):")
    lines += [f"  {c.page} | {c.row} | {c.column}: {c.before} → {c.after}" for c in changes]
    lines += cost_changes(before, after, cost_cells(before, old_figures), cost_cells(after, new_figures), f)
    return "\n".join(lines)
