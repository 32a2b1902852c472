"""What llama.cpp reserves on a GPU for its compute graph (its "compute buffer"), in bytes.

Pure arithmetic on an architecture, read from the code of the commit rules.yaml pins (`engines:
llama.cpp`, 0c1e57098; every link below is at that commit). No library computes this, hence by hand.

llama-server reserves, at start-up, the buffers of a worst-case graph: one micro-batch of
min(n_ctx, n_ubatch) tokens that outputs min(tokens, n_outputs_max) rows of logits
(src/llama-context.cpp#L628-L674), and llama-server sets n_outputs_max to its slots, --parallel, when
no draft model is used (tools/server/server-context.cpp#L41-L53 and #L994-L997,
common/speculative.cpp#L2586-L2595). ggml's graph allocator gives each tensor memory when it is
computed and takes it back after its last reader; only a few element-wise operations reuse their
input's memory, and neither matrix products, the gated activations nor flash attention are among
them (ggml/src/ggml-alloc.c#L22-L51 and #L600-L690). So the buffer is the largest set of tensors alive
at one time, on each GPU for the layers it holds:

- the attention mask, alive through every layer: n_kv cells x tokens, 16-bit with flash attention,
  32-bit without (src/llama-graph.cpp#L29-L46); the context is padded to 256 cells
  (src/llama-context.cpp#L290-L296), and a sliding-window cache has its own, smaller mask;
- within a layer (src/models/llama.cpp#L126-L222), the residual stream, 32-bit, beside either the
  attention's query, key, value and output (src/llama-graph.cpp#L2616-L2680; without flash attention
  the scores of every head, heads x n_kv x tokens) or the feed-forward's gate, up and gated product
  (src/llama-graph.cpp#L1842-L1866; for experts, each of the tokens' chosen experts,
  src/llama-graph.cpp#L2236-L2318);
- on the GPU that holds the output layer, once the mask is freed, the logits of the outputs and
  their last hidden state (the rows src/llama-graph.cpp#L2494-L2514 selects).

With every layer offloaded to several GPUs in layer split mode, pipeline parallelism is on
(src/llama-context.cpp#L428-L457) and each GPU keeps GGML_SCHED_MAX_COPIES (4,
ggml/CMakeLists.txt#L188) copies of its inputs, the mask and the hidden state it receives, which the
allocator may never reuse (ggml/src/ggml-backend.cpp#L1375-L1433).

Left out: positions and row indices (4 bytes a token), norms computed in place, and the allocator's
alignment. Checked against public logs of older builds (catalogs/measurements/serving.yaml, check
`compute`), which reserved logits for the whole micro-batch: `outputs` is a parameter for that reason.
`compute_bytes` is remembered (functools.cache, its arguments frozen records) and emptied with the
deployment engine's calls (deployment.forget).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

from gpumem.records.catalog import Architecture

F32_BYTES = 4  # activations, logits and the mask without flash attention
F16_BYTES = 2  # the mask with flash attention
CELL_PAD = 256  # llama.cpp pads the context and each cache to a multiple of 256 cells
FEED_FORWARD_TENSORS = 3  # alive together in a feed-forward: gate, up and their gated product


@dataclass(frozen=True)
class Graph:
    """The graph llama.cpp reserves for: cells per sequence (-c over the slots), sequences (slots), the
    micro-batch (n_ubatch), output rows, whether flash attention is on, and the input copies pipeline
    parallelism keeps (1 without it)."""

    context: int
    sequences: int
    ubatch: int
    outputs: int
    flash_attention: bool = True
    copies: int = 1

    @property
    def tokens(self) -> int:
        """The micro-batch of the worst-case graph: min(n_ctx, n_ubatch)."""
        return min(self.context * self.sequences, self.ubatch)


def server_graph(context: int, requests: int, ubatch: int, copies: int) -> Graph:
    """llama-server's graph for `requests` slots of `context` tokens (-c context x requests, --parallel
    requests, -fa on): one output row per slot."""
    return Graph(context, requests, ubatch, requests, True, copies)


def padded(cells: int) -> int:
    return math.ceil(cells / CELL_PAD) * CELL_PAD


def sliding_cells(arch: Architecture, context: int, ubatch: int) -> int:
    """Cells of a sliding-window cache for one sequence: the window plus one micro-batch, padded, never
    more than the whole cache (src/llama-kv-cache-iswa.cpp#L73)."""
    return padded(min(padded(context), arch.attention.window + ubatch))


def mask_bytes(arch: Architecture, graph: Graph) -> int:
    """Every sequence's cells for each token of the micro-batch, and the same for a sliding-window cache."""
    cells = padded(graph.context)
    if arch.attention.windowed:
        cells += sliding_cells(arch, graph.context, graph.ubatch)
    return cells * graph.tokens * (F16_BYTES if graph.flash_attention else F32_BYTES)


def attention_elements(arch: Architecture, graph: Graph) -> int:
    """Per token, the attention's live tensors beside the residual stream: the norm's output with the
    query, key and value, then the query with the output (and, without flash attention, every head's
    scores over the cells between them). MLA's query and output are in its latent space."""
    heads = arch.heads
    if arch.attention.kind == "mla":
        latent = arch.attention.kv_lora_rank
        query, output = heads * (latent + arch.attention.qk_rope_head_dim), heads * latent
        projections = arch.hidden + query + latent + arch.attention.qk_rope_head_dim
    else:
        query = output = heads * arch.head_dim
        projections = arch.hidden + query + 2 * arch.kv_heads * arch.head_dim
    scores = 0 if graph.flash_attention else heads * padded(graph.context)
    return max(projections, query + scores + output)


def feed_forward_elements(arch: Architecture) -> int:
    """Per token, the feed-forward's live tensors beside the residual stream: gate, up and their gated
    product, for a dense layer or each chosen expert (whose outputs, one per expert, are summed after)."""
    experts = arch.experts
    dense = FEED_FORWARD_TENSORS * arch.intermediate if experts is None or experts.dense_layers else 0
    if experts is None:
        return dense
    chosen = experts.active * experts.intermediate
    routed = max(FEED_FORWARD_TENSORS * chosen, chosen + experts.active * arch.hidden)
    return max(dense, routed)


@functools.cache
def compute_bytes(arch: Architecture, graph: Graph, output_layer: bool = True) -> int:
    """The compute buffer of one GPU (the one holding the output layer unless `output_layer` is False):
    the larger of a layer's live set and the output's. Without pipeline copies the mask is freed before
    the output; the copies are never freed."""
    tokens = graph.tokens
    hidden = tokens * arch.hidden * F32_BYTES
    layer = tokens * max(attention_elements(arch, graph), feed_forward_elements(arch)) * F32_BYTES
    output = min(graph.outputs, tokens) * (arch.vocab + arch.hidden) * F32_BYTES if output_layer else 0
    mask = mask_bytes(arch, graph)
    kept = graph.copies * (mask + hidden) if graph.copies > 1 else 0
    return max((kept or mask) + hidden + layer, kept + output)
