"""pages/charts.py: the card lines' labels never overlap, each line staying at its value."""

import re

from gpumem.pages.charts import LABEL_GAP, grouped_bars


def test_card_labels_close_in_value_are_spread_apart_and_their_lines_stay():
    # the axis runs from 10 GB at y 256 to 1,000 GB at y 16, 120 units a decade: 96 GB at 138.1 and 80 GB at 147.6, 9.5
    # apart, so the lower name moves from 151.6 to 13 below the other's baseline (142.1)
    svg = str(grouped_bars("c", "t", [("8B", [16.0]), ("70B", [140.0])], ["BF16"], [("A100 80GB", 80.0), ("RTX PRO 6000", 96.0)], str))
    lines = [float(y) for y in re.findall(r'<line class="card" x1="56" x2="520" y1="([\d.]+)"', svg)]
    labels = re.findall(r'<text class="card-label" x="524" y="([\d.]+)">([^<]+)</text>', svg)
    assert lines == [138.1, 147.6]  # RTX PRO 6000 (96 GB) above A100 80GB, each at its value
    assert labels == [("142.1", "RTX PRO 6000"), ("155.1", "A100 80GB")]
    assert round(float(labels[1][0]) - float(labels[0][0]), 1) == LABEL_GAP


def test_card_labels_far_apart_stay_beside_their_lines():
    # 141 GB at 118.1 and 24 GB at 210.4: each name 4 below its line
    svg = str(grouped_bars("c", "t", [("8B", [16.0])], ["BF16"], [("RTX 3090", 24.0), ("H200", 141.0)], str))
    assert re.findall(r'<text class="card-label" x="524" y="([\d.]+)">', svg) == ["122.1", "214.4"]
