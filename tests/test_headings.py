"""pages/headings.py: section headings linked to themselves, and the list of a page's sections."""

from gpumem.pages.headings import with_headings_linked

HOLDER = '<details class="contents"><summary>On this page</summary><!--contents--></details>\n'


def test_a_heading_with_an_id_becomes_a_link_to_itself_and_one_without_or_with_a_link_stays():
    page = '<h1>Title</h1>\n<h2 id="a">A &amp; b</h2>\n<h3 id="b">B <code>x</code></h3>\n<h2>No id</h2>\n<h2 id="c"><a href="/x/">Linked</a></h2>\n'
    assert with_headings_linked(page) == (
        '<h1>Title</h1>\n<h2 id="a"><a href="#a">A &amp; b</a></h2>\n<h3 id="b"><a href="#b">B <code>x</code></a></h3>\n'
        '<h2>No id</h2>\n<h2 id="c"><a href="/x/">Linked</a></h2>\n'
    )


def test_the_holder_lists_the_h2_sections_after_it_without_their_markup():
    page = f'<h1>T</h1>\n{HOLDER}<h2 id="one">One <code>1</code></h2>\n<h3 id="sub">Sub</h3>\n<h2 id="two">Two</h2>\n<h2 id="three">Three</h2>\n'
    assert with_headings_linked(page) == (
        '<h1>T</h1>\n<details class="contents"><summary>On this page</summary><ol><li><a href="#one">One 1</a></li>'
        '<li><a href="#two">Two</a></li><li><a href="#three">Three</a></li></ol></details>\n'
        '<h2 id="one"><a href="#one">One <code>1</code></a></h2>\n<h3 id="sub"><a href="#sub">Sub</a></h3>\n'
        '<h2 id="two"><a href="#two">Two</a></h2>\n<h2 id="three"><a href="#three">Three</a></h2>\n'
    )


def test_a_page_of_fewer_than_three_sections_loses_the_holder():
    page = f'<h1>T</h1>\n{HOLDER}<h2 id="one">One</h2>\n<h2 id="two">Two</h2>\n'
    assert with_headings_linked(page) == '<h1>T</h1>\n<h2 id="one"><a href="#one">One</a></h2>\n<h2 id="two"><a href="#two">Two</a></h2>\n'
