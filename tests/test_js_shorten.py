"""The published JavaScript made shorter (js_shorten.py): locals renamed, spaces only where tokens need them."""

from __future__ import annotations

import pytest

from gpumem.js_shorten import shorten, shorten_names, tokens


def test_locals_get_the_shortest_free_names_the_most_used_first():
    # Per function, outer ones first: an inner function reuses a short name unless it uses the outer binding.
    source = (
        "(function(){\n"
        "var total=0,items=window.items;\n"
        "function add(value,weight){total+=value*weight;return total;}\n"
        "items.forEach(function(item){add(item.value,item.weight);});\n"
        "window.result={total:total,add:add};\n"
        "})();\n"
    )
    assert shorten_names(source) == (
        "(function(){\n"
        "var a=0,c=window.items;\n"
        "function b(b,c){a+=b*c;return a;}\n"
        "c.forEach(function(a){b(a.value,a.weight);});\n"
        "window.result={total:a,add:b};\n"
        "})();\n"
    )


def test_globals_properties_keys_and_top_level_names_keep_theirs():
    source = "var shared=1;\n(function(a,b){\nvar document=a?{a:b,c:shared}:b;\nreturn [document.c,window.document,b?a:document];\n})();\n"
    # `a` and `c` are kept (a key, a property): the parameter b (the most used) keeps b, a becomes d, document e.
    assert shorten_names(source) == (
        "var shared=1;\n(function(d,b){\nvar e=d?{a:b,c:shared}:b;\nreturn [e.c,window.document,b?d:e];\n})();\n"
    )


def test_a_ternary_inside_an_object_is_not_a_key():
    source = "(function(x,y){return {k:x?y:x,m:y};})();\n"
    assert shorten_names(source) == "(function(a,b){return {k:a?b:a,m:b};})();\n"


def test_regular_expressions_strings_comments_and_catch_parameters():
    source = (
        "(function(text){\n"
        'var half=text.length / 2, clean=text.replace(/text\\/[a-z/]+/g, "text");\n'
        "try { JSON.parse(text); } catch (text2) { return text2 + half; } // text\n"
        "return clean;\n"
        "})();\n"
    )
    assert shorten_names(source) == (
        "(function(a){\n"
        'var c=a.length / 2, b=a.replace(/text\\/[a-z/]+/g, "text");\n'
        "try { JSON.parse(a); } catch (d) { return d + c; } // text\n"
        "return b;\n"
        "})();\n"
    )


@pytest.mark.parametrize(
    "source",
    [
        "(function(){var f=(a)=>a;})();\n",
        "(function(){const a=1;return a;})();\n",
        "(function(){var a=`x`;return a;})();\n",
        "(function(){var a=[...b];return a;})();\n",
        "(function(){var a=b?.c;return a;})();\n",
        "(function(){var a='unclosed;\n})();\n",
        "(function(){var a=1;return {a, b: 2};})();\n",
        "(function(){var a=1;return {get a() { return a; }};})();\n",
    ],
)
def test_syntax_it_does_not_follow_leaves_the_file_as_it_is(source: str):
    assert shorten_names(source) == source


def test_a_division_after_a_name_and_a_pattern_after_an_operator():
    kinds = [kind for kind, _ in tokens("a / b; c = /d/g;") if kind != "space"]
    assert kinds == ["name", "punct", "name", "punct", "name", "punct", "regex", "punct"]


def test_spaces_stay_only_between_two_words_two_signs_or_a_word_and_a_pattern():
    # `of` is a contextual keyword in later JavaScript: kept as it is, like every keyword.
    source = (
        "(function(value){\n"
        "var half = value / 2, back = value - -half; // a comment goes\n"
        'var plus = value + ++half, re = /x/g, of = typeof value === "number";\n'
        "return 1 .toFixed ? [half, back, plus] : re.test(value) && /y/ in of;\n"
        "})();\n"
    )
    assert shorten(source) == (
        "(function(a){\n"
        "var b=a/2,c=a- -b;\n"
        'var d=a+ ++b,e=/x/g,of=typeof a==="number";\n'
        "return 1 .toFixed?[b,c,d]:e.test(a)&&/y/ in of;\n"
        "})();\n"
    )


def test_a_comment_across_lines_keeps_its_line_breaks():
    assert shorten("var a = 1 /* one\n two */\nvar b = 2;\n") == "var a=1\n\nvar b=2;\n"


def test_a_property_named_function_opens_no_function():
    assert shorten_names("(function(first){return window.function(first);})();\n") == "(function(a){return window.function(a);})();\n"
