"""Sources cited in the catalogs: the web addresses and arXiv papers of a source text, as links
with the short labels the pages show. Read by the rules' reader (every address cited must be known)
and by the methodology page's figures, so both read addresses the same way."""

from __future__ import annotations

import re
from dataclasses import dataclass

from gpumem.records.catalog import Rules

# A web address ends before a space, a closing parenthesis, or a trailing full stop, comma or semicolon.
URL = re.compile(r"https?://[^\s)]+[^\s).,;:]")
ARXIV = re.compile(r"arXiv:(\d{4}\.\d{4,5})")
LINKED = re.compile(rf"{URL.pattern}|arXiv:(?P<paper>\d{{4}}\.\d{{4,5}})")


@dataclass(frozen=True)
class Link:
    """A web address and a short text for it: the host and the last part of the path."""

    url: str
    label: str


@dataclass(frozen=True)
class Piece:
    """A stretch of a source text, and the address it names when it is a link ('' otherwise)."""

    text: str
    url: str = ""


@dataclass(frozen=True)
class Source:
    """A rules.yaml block's source text (English data, shown as a quote) and the links in it."""

    block: str
    text: str
    links: tuple[Link, ...]

    @property
    def pieces(self) -> tuple[Piece, ...]:
        """The text cut into plain stretches and links: web addresses and arXiv papers."""
        found, start = [], 0
        for match in LINKED.finditer(self.text):
            if match.start() > start:
                found.append(Piece(self.text[start : match.start()]))
            paper = match.group("paper")
            found.append(Piece(match.group(), f"https://arxiv.org/abs/{paper}" if paper else match.group()))
            start = match.end()
        if start < len(self.text):
            found.append(Piece(self.text[start:]))
        return tuple(found)


def label(url: str) -> str:
    """'arXiv:2305.14314', 'docs.vllm.ai/…/fp8.html', 'aimultiple.com/gpu-index', and on GitHub the project
    first, as its readers name it: 'ggml-org/llama.cpp#4766' (an issue or pull request),
    'vllm-project/vllm/…/cache.py' (a file) or 'XiongjieDai/GPU-Benchmarks-on-LLM-Inference'."""
    paper = re.fullmatch(r"https://arxiv\.org/abs/(\d{4}\.\d{4,5})", url)
    if paper:
        return f"arXiv:{paper.group(1)}"
    host, _, path = url.split("://", 1)[1].partition("/")
    parts = [part for part in path.split("#", 1)[0].split("/") if part]
    if not parts:
        return host
    if host == "github.com" and len(parts) >= 2:
        project = f"{parts[0]}/{parts[1]}"
        if len(parts) == 4 and parts[2] in ("issues", "pull", "discussions") and parts[3].isdigit():
            return f"{project}#{parts[3]}"
        return project if len(parts) == 2 else f"{project}/…/{parts[-1]}"
    if len(parts) == 1:
        return f"{host}/{parts[0]}"
    tail = "/".join(parts[-2:]) if parts[-1].isdigit() else parts[-1]  # an issue or pull request: issues/21
    return f"{host}/…/{tail}"


def links_in(text: str, names: dict[str, str] | None = None) -> tuple[Link, ...]:
    """Every web address in a source text, then every arXiv paper it names as an address, once each,
    labelled by the name readers know it by (rules.yaml references) or else by its address."""
    found = [match.group() for match in URL.finditer(text)]
    found += [f"https://arxiv.org/abs/{number}" for number in ARXIV.findall(text)]
    names = names or {}
    return tuple(Link(url, names.get(url) or label(url)) for url in dict.fromkeys(found))


def source(block: str, text: str, names: dict[str, str] | None = None) -> Source:
    return Source(block, text, links_in(text, names))


@dataclass(frozen=True)
class Citations:
    """Per block of rules.yaml, the papers and pages its source cites: what a "Source:" line links."""

    by_block: dict[str, tuple[Link, ...]]

    def of(self, *blocks: str) -> tuple[Link, ...]:
        """The links of these blocks, each once, in order; a block rules.yaml lacks is an error, not silence."""
        missing = [block for block in blocks if block not in self.by_block]
        if missing:
            raise KeyError(f"no source in rules.yaml for {', '.join(missing)}")
        return tuple(dict.fromkeys(link for block in blocks for link in self.by_block[block]))


def citations(rules: Rules) -> Citations:
    return Citations({block: links_in(text, rules.references) for block, text in rules.sources.items()})
