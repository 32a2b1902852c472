"""Table bodies of the model and GPU pages, written in Python: the rows and the cells they share.

The templates keep each table's frame (templates/_macros.html, table_box: its caption and head);
the rows are written here because they are most of a build's rendering: a model page calls some
hundred cell macros and a GPU page one row per catalog model, and each macro call and each
`_()` through Jinja costs more than the text it writes (a model page took 6 ms, a GPU page 5 ms,
30 ms with ten times the catalog). The words are the templates' own, looked up with the page's
gettext functions (babel.cfg extracts them from this file too); every value from the catalogs
goes through MarkupSafe's escape, as Jinja's autoescape would; the bytes are those the macros wrote.
Rows are put together with f-strings of escaped values (Markup.format parses its pattern in Python
at every call, which cost four times as much).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from jinja2 import pass_context
from jinja2.runtime import Context
from markupsafe import Markup
from markupsafe import escape as markup_escape

from gpumem.figures.verdicts import serving_claim
from gpumem.records.engines import RUNTIME_LABELS

if TYPE_CHECKING:
    from gpumem.engines.sizing import Choice
    from gpumem.engines.speed import Speed
    from gpumem.figures.speed import GpuSpeed, ModelSpeed, SpeedRow
    from gpumem.figures.subjects import Fit, GpuFit, GpuPage, ModelPage
    from gpumem.figures.training import Held, ModelTuning, TuningRow
    from gpumem.figures.verdicts import Verdict

Gettext = Callable[..., Markup]
UNSAFE = re.compile(r"[&<>\"']")  # what MarkupSafe's escape replaces
# The need a table cell carries for machines (data-need-gb), in GB: four decimals are 100 kB, far below what any
# figure on the page shows, and a long table is some 300 bytes lighter than with every digit of the float.
NEED_DIGITS = 4


def escape(value: Any) -> str:
    """A value as text safe in HTML, the text MarkupSafe's escape gives: Markup as it is, a string
    with nothing to replace as it is, anything else through escape. Most values are numbers the
    page's Formats wrote, and escape's two Python calls per value were a twentieth of the rendering."""
    if isinstance(value, Markup) or (type(value) is str and UNSAFE.search(value) is None):
        return value
    return markup_escape(value)


class Rows:
    """One page's table rows, in its language: its formats, gettext functions and links."""

    def __init__(self, names: Context | Mapping[str, Any]) -> None:
        """`names`: the page's template context (f, _, ngettext, link, rent, marketplace, page, catalog)."""
        self.f = names["f"]
        self._: Gettext = names["_"]
        self.ngettext: Gettext = names["ngettext"]
        self.link, self.rent = names["link"], names["rent"]
        self.marketplace, self.lang = names["marketplace"].name, names["page"].lang
        self.catalog = names["catalog"]  # read as the template reads it (a build notes what a page reads)
        self._links: dict[tuple[str, int, str], str] = {}  # a page links the same few configurations again and again
        # words shared by the pages of one language within a build (Renderer.language_context)
        self._phrases: dict[tuple[object, ...], str] = names["rows_words"] if "rows_words" in names else {}

    # ---- Cells, as the macros of _macros.html of the same names wrote them ----

    def column_label(self, kind: str, column: str) -> Markup:
        _ = self._
        if kind == "serving":
            labels = {"fp32": _("32-bit (FP32)"), "bf16": _("16-bit (FP16/BF16)"), "fp8": _("8-bit (FP8/INT8)"), "int4": _("4-bit (INT4)")}
        else:
            labels = {"qlora": _("QLoRA"), "lora": _("LoRA"), "full": _("Full fine-tuning"), "full_hf": _("Full fine-tuning (18 bytes)")}
        return labels[column]

    def rent_link(self, gpu_id: str, count: int, claim: str = "") -> Markup:
        """The link that rents count × the GPU; `claim` (figures/verdicts.py serving_claim, training_claim),
        the workload the engines say it holds, goes with it as data-holds."""
        key = (gpu_id, count, claim)
        if key not in self._links:
            text = self._("Rent on %(marketplace)s", marketplace=self.marketplace)
            holds = f' data-holds="{escape(claim)}"' if claim else ""
            self._links[key] = f'<a class="rent"{holds} href="{escape(self.rent(gpu_id, count))}">{text}</a>'
        return Markup(self._links[key])

    def configuration(self, choice: Choice) -> Markup:
        """The smallest configuration that holds a need, every GPU that gives it named."""
        _, f, best = self._, self.f, choice.best
        if best is None and choice.short:
            short = choice.short
            return _(
                "%(needed)s machines of %(count)s × %(gpu)s, more than the %(offered)s on offer",
                needed=f.number(short.machines),
                count=short.count,
                gpu=short.gpu.name,
                offered=f.number(short.offered),
            )
        if best is None:
            return _("no configuration on offer holds it")
        names = f.either(option.gpu.name for option in choice.options)
        if best.machines > 1:
            return _("%(machines)s machines of %(count)s × %(names)s", machines=f.number(best.machines), count=best.count, names=names)
        return _("%(count)s × %(names)s", count=best.count, names=names)

    def price(self, choice: Choice) -> Markup:
        _, f, best = self._, self.f, choice.best
        if best is None:
            return Markup()
        who = best.gpu.name if len(choice.options) > 1 else ""
        price = f.money(best.price_per_hour)
        if best.total_gpus == 1:
            return _("%(gpu)s from %(price)s per GPU-hour", gpu=who, price=price).strip()
        each = f.money(best.price_per_gpu_hour)
        return _("%(gpu)s from %(price)s per hour for the set (%(each)s per GPU-hour)", gpu=who, price=price, each=each).strip()

    def offer(self, choice: Choice, verdict: Verdict | None = None) -> Markup:
        """A rule-of-thumb cell's configuration and price; when the engines say it does not hold at the
        page's setting, the verdict, and the rent link goes to what holds (or is left out)."""
        out = f'<span class="config">{self.configuration(choice)}</span>\n'
        best = choice.best
        if best:
            word = self._("tight")
            tight = f'<span class="tight">{word}</span>' if choice.tight else ""
            rent = verdict.rent if verdict else best
            said = self.verdict(verdict) if verdict and not verdict.holds else ""
            link = self.rent_link(rent.gpu.id, rent.count, verdict.claim if verdict else "") if rent else ""
            out += f'<span class="price">{self.price(choice)}</span>\n{tight}{said}{link}\n'
        return Markup(out)

    def verdict(self, verdict: Verdict) -> str:
        """A rule-of-thumb cell's verdict (verdict_words) in its span."""
        return f'<span class="verdict">{self.verdict_words(verdict)}</span>\n'

    def verdict_words(self, verdict: Verdict) -> Markup:
        """Why a rule-of-thumb cell's configuration does not hold, where it would, and what holds instead."""
        _, f = self._, self.f
        values = {"tokens": f.number(verdict.tokens), "shorter": f.number(verdict.holds_at or 0)}
        if verdict.kind == "serving":
            said = (
                _("By the deployment model it does not hold at %(tokens)s tokens; it holds at %(shorter)s.", **values)
                if verdict.holds_at
                else _("By the deployment model it does not hold at %(tokens)s tokens, nor at a shorter context of these pages.", **values)
            )
        else:
            said = (
                _("By the training engine it does not hold at %(tokens)s tokens per sequence; it holds at %(shorter)s.", **values)
                if verdict.holds_at
                else _("By the training engine it does not hold at %(tokens)s tokens per sequence, nor at a shorter one.", **values)
            )
        instead = verdict.instead
        if instead is None:
            then = _("No configuration on offer holds it.")
        else:
            configuration = _("%(count)s × %(names)s", count=instead.count, names=instead.gpu.name)
            then = _(
                "What holds: %(configuration)s, %(price)s per hour.", configuration=configuration, price=f.money(instead.price_per_hour)
            )
        return Markup(f"{said} {then}")

    @staticmethod
    def need_data(need_gb: float) -> float:
        """The need as a cell's data-need-gb attribute gives it."""
        return round(need_gb, NEED_DIGITS)

    def need_cell(self, need_gb: float, choice: Choice, verdict: Verdict | None = None) -> Markup:
        return Markup(
            f'<td data-need-gb="{self.need_data(need_gb)}"><span class="need">{escape(self.f.gb(need_gb))}</span>\n'
            f"{self.offer(choice, verdict)}</td>"
        )

    def fit_tag(self, comfortable: bool, tokens: int) -> Markup:
        """The fit rule written next to its tag: comfortable holds a few more requests at the same context."""
        _, f = self._, self.f
        values = {"more": f.number(self.catalog.rules.comfortable_requests), "tokens": f.number(tokens)}
        if comfortable:
            text = _("comfortable: also holds %(more)s more requests of %(tokens)s tokens", **values)
            return Markup(f'<span class="comfortable">{text}</span>')
        text = _("tight: holds these requests, not %(more)s more of %(tokens)s tokens", **values)
        return Markup(f'<span class="tight">{text}</span>')

    def fit_offer(self, fit: Fit | None, tokens: int, claim: str = "") -> Markup:
        """The cheapest configuration a deployment fits: GPUs, price per hour, and its tag with the rule."""
        _, f = self._, self.f
        if not fit:
            return _("no configuration on offer holds it")
        config = fit.configuration
        need = f.gb(fit.need.total_bytes_per_gpu / 1e9)
        gpus = _("%(count)s × %(gpu)s, %(need)s per GPU", count=config.count, gpu=config.gpu.name, need=need)
        price = _("%(price)s per hour", price=f.money(config.price_per_hour))
        tag, rent = self.fit_tag(fit.comfortable, tokens), self.rent_link(config.gpu.id, config.count, claim)
        engine = f"\n{self.stand_in(fit.stand_in.label)}" if fit.stand_in else ""
        return Markup(f'<span class="config">{gpus}</span>{engine}\n<span class="price">{price}</span>\n{tag}\n{rent}')

    def stand_in(self, label: str) -> str:
        """Where the format's own engine cannot run it on the card: the llama.cpp format whose figures are shown."""
        _ = self._
        words = _("on llama.cpp with %(format)s weights", format=label)
        return f'<span class="engine">{words}</span>'

    def fit_cell(self, need_gb: float, fit: Fit | None, tokens: int, claim: str = "") -> Markup:
        """The cheapest configuration with its per-GPU need; the one-GPU need when nothing on offer holds it."""
        shown = fit.need.total_bytes_per_gpu / 1e9 if fit else need_gb
        need = "" if fit else f'<span class="need">{escape(self.f.gb(need_gb))}</span>\n'
        return Markup(f'<td data-need-gb="{self.need_data(shown)}">{need}{self.fit_offer(fit, tokens, claim)}</td>')

    # ---- The model page's tables (templates/model.html) ----

    def formats_rows(self, fig: ModelPage) -> Markup:
        gb = self.f.gb
        return _lines(
            f'<tr><th scope="row">{escape(r.fmt.label)}</th>\n<td>{escape(gb(r.need.weights_bytes / 1e9))}</td>\n'
            f"<td>{escape(gb(r.rule_gb))}</td>\n"
            f"{self.fit_cell(r.need_gb, r.cheapest, fig.context, serving_claim(fig.model, r.fmt, 'bf16', fig.context, 1))}\n</tr>"
            for r in fig.formats
        )

    def deployed_rows(self, fig: ModelPage) -> Markup:
        release = fig.formats[0].fmt  # model_page puts the release format first

        def claim(tokens: int, requests: int) -> str:
            return serving_claim(fig.model, release, "bf16", tokens, requests)

        return _lines(
            f'<tr><th scope="row">{escape(self.f.number(r.tokens))}</th>\n'
            f"{self.fit_cell(r.one.total_bytes_per_gpu / 1e9, r.fit_one, r.tokens, claim(r.tokens, 1))}"
            f"{self.fit_cell(r.many.total_bytes_per_gpu / 1e9, r.fit_many, r.tokens, claim(r.tokens, fig.requests))}\n</tr>"
            for r in fig.deployed
        )

    def weights_rows(self, fig: ModelPage) -> Markup:
        serving = {need.key: need for need in reversed(fig.serving)}  # the first of each key, as selectattr gives it
        lines = []
        for need in fig.weights:
            shown = serving.get(need.key)
            cell = self.need_cell(shown.gb, shown.choice, shown.verdict) if shown else "<td>—</td>"
            label, gb = self.column_label("serving", need.key), escape(self.f.gb(need.gb))
            lines.append(f'<tr><th scope="row">{label}</th>\n<td><span class="need">{gb}</span></td>\n{cell}</tr>')
        return _lines(lines)

    def context_rows(self, fig: ModelPage) -> Markup:
        gb = self.f.gb
        return _lines(
            f'<tr><th scope="row">{escape(self.f.number(r.tokens))}</th>\n'
            f"<td>{escape(gb(r.kv_one_gb))}</td><td>{escape(gb(r.kv_many_gb))}</td>\n"
            f"{self.need_cell(r.serving_one.total, r.choice_one, r.verdict_one)}"
            f"{self.need_cell(r.serving_many.total, r.choice_many, r.verdict_many)}\n</tr>"
            for r in fig.contexts
        )

    def tuning_rows(self, fig: ModelPage) -> Markup:
        return _lines(
            f'<tr><th scope="row">{self.column_label("fine_tuning", n.key)}</th>{self.need_cell(n.gb, n.choice, n.verdict)}</tr>'
            for n in fig.fine_tuning
        )

    # ---- Speed tables (templates/_speed.html) ----

    def busy_rate(self, result: Speed | None) -> str:
        value = self._("does not hold them") if result is None else escape(self.f.number(result.aggregate_tokens_per_s, 1))
        return f"<td>{value}</td>"

    def cost(self, result: Speed | None, best: bool) -> str:
        if result is None:
            held = self._("does not hold them")
            return f"<td>{held}</td>"
        if result.usd_per_million_output_tokens is None:
            return "<td>—</td>"
        word = self._("cheapest")
        mark = f' <strong class="cheapest">{word}</strong>' if best else ""
        return f"<td>{escape(self.f.money(result.usd_per_million_output_tokens))}{mark}</td>"

    def speed_model_rows(self, sp: ModelSpeed) -> Markup:
        _, f = self._, self.f
        cheapest_one, cheapest_busy = sp.cheapest_one, sp.cheapest_busy

        def line(r: SpeedRow) -> str:
            c = r.configuration
            name = _("%(count)s × %(gpu)s, %(format)s", count=c.count, gpu=c.gpu.name, format=r.fmt.label) + self.engine_mark(r)
            ttft = _("%(value)s s", value=f.number(r.one.ttft_s, 2))
            return (
                f'<tr><th scope="row">{name} {self.rent_link(c.gpu.id, c.count, r.claim)}</th>\n'
                f"<td>{escape(f.number(r.one.decode_tokens_per_s_per_request, 1))}</td>{self.busy_rate(r.busy)}\n"
                f"<td>{ttft}</td><td>{escape(f.money(c.price_per_hour))}</td>\n"
                f"{self.cost(r.one, r is cheapest_one)}{self.cost(r.busy, r is cheapest_busy)}</tr>"
            )

        return _lines(line(r) for r in sp.rows)

    @staticmethod
    def engine_mark(r: SpeedRow) -> str:
        """The engine a speed row's figures are for (the launch command's), and * where no run of it on that GPU was
        measured (the note under the table says what the mark means)."""
        return f" · {RUNTIME_LABELS[r.engine]}{'*' if r.unmeasured else ''}"

    def speed_gpu_rows(self, sp: GpuSpeed) -> Markup:
        priced = sp.price_per_gpu_hour is not None
        return _lines(
            f'<tr><th scope="row">{escape(r.model.name)} ({escape(r.fmt.label)}){self.engine_mark(r)}</th>'
            f"<td>{escape(self.f.number(r.one.decode_tokens_per_s_per_request, 1))}</td>{self.busy_rate(r.busy)}"
            f"{self.cost(r.busy, False) if priced else ''}</tr>"
            for r in sp.rows
        )

    # ---- The model page's "Fine-tune it" table (templates/_finetune.html) ----

    def config_line(self, held: Held) -> Markup:
        _, config = self._, held.configuration
        if config.count > 1:
            return _("%(count)s × %(gpu)s, sharded with ZeRO-3", count=config.count, gpu=config.gpu.name)
        return _("%(count)s × %(gpu)s", count=config.count, gpu=config.gpu.name)

    def held_offer(self, held: Held) -> Markup:
        price = self._("%(price)s per hour", price=self.f.money(held.configuration.price_per_hour))
        tag = self.training_fit_tag(held)
        return Markup(f'<span class="config">{self.config_line(held)}</span> <span class="price">{price}</span> {tag}')

    def training_fit_tag(self, held: Held) -> Markup:
        """The training fit rule's verdict on one configuration (rules.yaml training_fit): the footprint with the
        allocator's reserve, of the card's memory. The rule itself (the reserve, the free share) is said once, in
        the sentence before the table (_finetune.html fit_rule_sentence), not in every cell: the cells stay narrow."""
        _, f = self._, self.f
        values = dict(footprint=f.gb(held.need.footprint_bytes_per_gpu / 1e9), memory=f.gb(held.configuration.gpu.runtime_bytes / 1e9))
        if held.tight:
            text = _("tight: %(footprint)s of %(memory)s", **values)
            return Markup(f'<span class="tight">{text}</span>')
        text = _("comfortable: %(footprint)s of %(memory)s", **values)
        return Markup(f'<span class="comfortable">{text}</span>')

    def finetune_rows(self, t: ModelTuning) -> Markup:
        _, gb = self._, self.f.gb

        def line(r: TuningRow) -> str:
            need, smallest = r.shown, r.smallest
            on = _("on %(count)s GPUs", count=need.gpus)
            gpus = f" {on}" if need.gpus > 1 else ""
            offer: str = _("no configuration on offer holds it")
            if smallest:
                offer = self.held_offer(smallest)
                if r.cheapest is not None and r.cheapest.configuration != smallest.configuration:
                    cheapest = _("cheapest:")
                    # its own line, as every part of a cell is (td span: display block): no line starting with "; "
                    offer = f"{offer}\n<span>{cheapest}</span>{self.held_offer(r.cheapest)}"  # str, not Markup: no second escaping
            total = need.total_bytes_per_gpu / 1e9
            return (
                f'<tr><th scope="row">{self.column_label("fine_tuning", r.method)}</th><td>{escape(self.f.number(r.micro_batch))}</td>\n'
                f"<td>{escape(gb(need.weights_bytes_per_gpu / 1e9))}</td>"
                f"<td>{escape(gb((need.gradients_bytes_per_gpu + need.optimizer_bytes_per_gpu) / 1e9))}</td>"
                f"<td>{escape(gb(need.activations_bytes_per_gpu / 1e9))}</td>\n"
                f'<td data-need-gb="{self.need_data(total)}"><span class="need">{escape(gb(total))}</span>{gpus}</td>\n'
                f"<td>{offer}</td></tr>"
            )

        return _lines(line(r) for r in t.rows)

    # ---- The GPU page's table of the models that fit (templates/gpu.html) ----

    def gpu_fit(self, fit: GpuFit | None) -> str:
        _, f = self._, self.f
        if not fit:
            missing = _("does not fit")
            return f"<td>{missing}</td>"
        # A GPU page has a cell per catalog model and format, and many cells of a language say the
        # same words around a different need: those words are written once per build and language.
        key = ("gpu_fit", fit.requests, fit.context, fit.max_context, fit.comfortable)
        words = self._phrases.get(key)
        if words is None:
            requests = self.ngettext(
                "%(num)s request of %(tokens)s tokens at once",
                "%(num)s requests of %(tokens)s tokens at once",
                fit.requests,
                num=f.number(fit.requests),
                tokens=f.number(fit.context),
            )
            kind, tag = ("comfortable", _("comfortable")) if fit.comfortable else ("tight", _("tight"))
            longest = _("up to %(tokens)s tokens", tokens=f.number(fit.max_context))
            words = self._phrases[key] = f'<span>{longest}</span>\n<span>{requests}</span>\n<span class="{kind}">{tag}</span>'
        engine = f"\n{self.stand_in(fit.stand_in)}" if fit.stand_in else ""
        return f'<td><span class="need">{escape(f.gb(fit.need_gb))}</span>\n{words}{engine}</td>'

    def gpu_fit_rows(self, fig: GpuPage) -> Markup:
        lines = []
        for row in fig.shown:
            cells = "".join(self.gpu_fit(fit) + "\n" for fit in row.fits)
            address = escape(self.link("model", self.lang, row.model.id))
            lines.append(f'<tr><th scope="row"><a href="{address}">{escape(row.model.name)}</a></th>\n{cells}</tr>')
        return _lines(lines)


def _lines(rows: Iterable[str]) -> Markup:
    """Rows of safe HTML (their values escaped where they were written), one a line."""
    return Markup("\n".join(rows))


@pass_context
def table_rows(context: Context) -> Rows:
    """The page's Rows, for its templates (a global of the Jinja environment: render.Renderer)."""
    return Rows(context)
