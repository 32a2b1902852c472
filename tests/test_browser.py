"""The built pages in Debian's Chromium, read the way a person reads them."""

from __future__ import annotations

from playwright.sync_api import Browser, Page, expect


def test_spanish_guide_shows_the_70b_4_bit_cell(page: Page, site_url: str):
    page.goto(f"{site_url}/es/guias/memoria-gpu/")
    expect(page).to_have_title("¿Cuánta memoria de GPU necesita tu modelo?")
    table = page.get_by_role("table", name="Memoria para servir un modelo (pesos + 20 %) y la configuración de GPU más pequeña")
    row = table.get_by_role("row").filter(has=page.get_by_role("rowheader", name="70B Llama 3.3 70B Instruct"))
    cell = row.get_by_role("cell").nth(2)
    expect(cell.locator(".need")).to_have_text("42\xa0GB")
    expect(cell.locator(".config")).to_have_text("1 × L40S, RTX A6000 o RTX 6000 Ada")
    expect(cell.locator(".price")).to_have_text("L40S desde 0,44\xa0US$ por GPU-hora")


def test_language_switcher_lands_on_the_same_guide(page: Page, site_url: str):
    page.goto(f"{site_url}/es/guias/memoria-gpu/")
    page.locator(".languages > summary").click()  # the language choice folds behind the current language's name
    page.get_by_role("navigation", name="Idioma").get_by_role("link", name="English").click()
    expect(page).to_have_url(f"{site_url}/en/guides/gpu-memory/")
    expect(page.get_by_role("heading", level=1)).to_have_text("How much GPU memory does your model need?")


def test_a_reader_goes_from_the_home_page_to_renting_a_configuration(page: Page, site_url: str):
    """Home -> the models index -> Qwen2.5 32B's page -> the calculator prefilled for it -> the cheapest
    comfortable configuration -> its rent link, in Spanish and in English."""
    for lang, sections, models, index, opener, rent in (
        ("es", "Secciones", "Modelos", "/es/modelos/", "Abrir la calculadora con Qwen2.5 32B (Instruct)", "Alquilar en Arrakis"),
        ("en", "Sections", "Models", "/en/models/", "Open the calculator with Qwen2.5 32B (Instruct)", "Rent on Arrakis"),
    ):
        page.goto(f"{site_url}/{lang}/")
        page.get_by_role("navigation", name=sections).get_by_role("link", name=models, exact=True).click()
        expect(page).to_have_url(f"{site_url}{index}")
        page.get_by_role("table").get_by_role("link", name="Qwen2.5 32B (Instruct)", exact=True).click()
        expect(page).to_have_url(f"{site_url}{index}qwen2.5-32b/")
        crumbs = page.get_by_role("navigation", name="Ruta de navegación" if lang == "es" else "Breadcrumb")
        expect(crumbs.get_by_role("link")).to_have_count(2)  # the site's home and the models index: none leaves the site
        page.get_by_role("link", name=opener).click()
        expect(page.locator('[name="model"]')).to_have_value("qwen2.5-32b")
        expect(page.locator('[name="gpus"]')).to_have_value("4")
        expect(page.locator('[name="context"]')).to_have_value("8192")
        comfortable = page.locator("#calc-options tr").filter(has=page.locator(".comfortable")).first
        expect(comfortable).to_contain_text("4 × RTX 3090")
        link = comfortable.get_by_role("link", name=rent)
        expect(link).to_have_attribute("href", "https://arrakis.example.org/rent?gpu=rtx-3090&count=4")


HEADERS = (  # a page of each language, the menu's and the sections' names in it
    ("es", "/es/modelos/", "Menú", "Secciones"),
    ("en", "/en/guides/gpu-memory/", "Menu", "Sections"),
    ("pt", "/pt/", "Menu", "Seções"),
    ("fr", "/fr/calculateur/", "Menu", "Rubriques"),
    ("de", "/de/gpus/", "Menü", "Bereiche"),
)


def test_on_a_phone_the_header_is_one_line_and_its_menu_opens_without_javascript(browser: Browser, site_url: str):
    """Issue 25: the site's name, the menu and the language on one line; the h1 within the first 120 px."""
    context = browser.new_context(viewport={"width": 390, "height": 844}, java_script_enabled=False)
    page = context.new_page()
    for lang, path, menu, sections in HEADERS:
        page.goto(f"{site_url}{path}")
        boxes = [page.locator(selector).bounding_box() for selector in (".brand", ".menu > summary", ".languages > summary")]
        assert max(box["y"] for box in boxes) < min(box["y"] + box["height"] for box in boxes), (lang, boxes)  # one line
        assert page.get_by_role("heading", level=1).bounding_box()["y"] <= 120, lang
        nav = page.get_by_role("navigation", name=sections)
        expect(nav).to_be_hidden()
        page.locator(".menu > summary").click()
        expect(page.locator(".menu > summary")).to_have_text(menu)
        expect(nav.get_by_role("link")).to_have_count(9)  # the eight sections and the search page
        expect(nav).to_be_visible()
    context.close()


def test_at_a_desk_the_sections_show_on_one_line_without_a_menu_button(browser: Browser, site_url: str):
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    for lang, path, _, sections in HEADERS:
        page.goto(f"{site_url}{path}")
        expect(page.locator(".menu > summary")).to_be_hidden()
        links = page.get_by_role("navigation", name=sections).get_by_role("link")
        expect(links).to_have_count(9)  # the eight sections and the search page
        boxes = [links.nth(n).bounding_box() for n in range(9)]
        assert max(box["y"] for box in boxes) < min(box["y"] + box["height"] for box in boxes), (lang, boxes)  # one line
    context.close()


# Each text of the page's charts: what it says, the size it is drawn at (its font size in the SVG's units times the
# SVG's scale on screen) and its drawn box.
CHART_TEXTS = """() => [...document.querySelectorAll('svg.chart text')].map(text => {
  const box = text.getBoundingClientRect();
  return [text.textContent, parseFloat(getComputedStyle(text).fontSize) * text.getScreenCTM().a, box.left, box.top, box.right, box.bottom];
})"""
CHARTED = (
    "/es/guias/memoria-gpu/",
    "/en/guides/gpu-memory/",
    "/pt/guias/memoria-gpu/",
    "/fr/guides/memoire-gpu/",
    "/de/ratgeber/gpu-speicher/",
)


def test_chart_labels_are_drawn_at_11_px_or_more_and_never_overlap(browser: Browser, site_url: str):
    """Issue 25: on a phone the charts' labels were drawn at 6.2 px; now a chart keeps 640 px and its figure scrolls."""
    for width in (390, 1280):
        context = browser.new_context(viewport={"width": width, "height": 844})
        page = context.new_page()
        for path in (*CHARTED, "/en/models/llama-3.1-8b/"):
            page.goto(f"{site_url}{path}")
            texts = page.evaluate(CHART_TEXTS)
            assert texts, path
            assert min(size for _, size, *_ in texts) >= 11, (width, path)
            overlapping = [
                (a[0], b[0])
                for n, a in enumerate(texts)
                for b in texts[n + 1 :]
                if a[2] < b[4] and b[2] < a[4] and a[3] < b[5] and b[3] < a[5]
            ]
            assert overlapping == [], (width, path)
        context.close()
