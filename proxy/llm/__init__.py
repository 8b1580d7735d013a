"""Handing tool results to an LLM provider: messages, streams, history hygiene.

`tool_result_message` turns a `NativeMCPResponse` (or the exception a call raised) into
the tool-result message of OpenAI Chat Completions, OpenAI Responses, Anthropic or
Gemini. It never guesses and never warns: JSON text stays JSON, plain text stays text,
errors keep their code and message, images reach Anthropic as images and everyone else
as a one-line note, UI resources become a one-line summary instead of raw HTML.
`tool_results_turn` gathers one model turn's results into the entries its history takes
(Anthropic and Gemini: one user message holding them all).

`StreamAccumulator` / `parse_stream_chunk` read streamed model output that mixes JSON
envelopes with plain text; `clean_history` drops orphan tool results and unmatched tool
calls; `response_stats` counts tool results by kind. With ``budget=`` a result over that
many tokens is cut at a readable boundary and kept whole (`KeptResults`), for the
``read_result`` tool (`READ_RESULT_TOOL`, answered by `read_result`). `count_tokens`
says what a text costs a model: exact o200k_base counts with the ``tokens`` extra, else
an estimate.

This room is the agent-loop side of `nativemcp.proxy`: it imports only
`nativemcp.protocol` (and, on a kept result's first query, the content store's public
text search, for BM25), and the pool core imports it (for `WorkerPool.tool_definitions`
and `WorkerPool.run_tool_call`).
"""

from nativemcp.protocol import UnknownProviderError as UnknownProviderError

from ._budget import DEFAULT_RESULT_BUDGET as DEFAULT_RESULT_BUDGET
from ._budget import MIN_BUDGET as MIN_BUDGET
from ._budget import RESULTS_URI as RESULTS_URI
from ._history import ResponseStats as ResponseStats
from ._history import clean_history as clean_history
from ._history import response_stats as response_stats
from ._kept import DEFAULT_KEEP_BYTES as DEFAULT_KEEP_BYTES
from ._kept import DEFAULT_KEEP_SECONDS as DEFAULT_KEEP_SECONDS
from ._kept import KeptResult as KeptResult
from ._kept import KeptResults as KeptResults
from ._messages import tool_result_message as tool_result_message
from ._messages import tool_results_turn as tool_results_turn
from ._provider import PROVIDERS as PROVIDERS
from ._provider import Provider as Provider
from ._read_result import READ_RESULT as READ_RESULT
from ._read_result import READ_RESULT_TOOL as READ_RESULT_TOOL
from ._read_result import read_result as read_result
from ._render import EMPTY_RESULT_TEXT as EMPTY_RESULT_TEXT
from ._stream import StreamAccumulator as StreamAccumulator
from ._stream import StreamChunk as StreamChunk
from ._stream import parse_stream_chunk as parse_stream_chunk
from ._tokens import ENCODING as ENCODING
from ._tokens import count_tokens as count_tokens
from ._tokens import exact_counts as exact_counts
from ._tokens import token_note as token_note

__all__ = [
    "DEFAULT_KEEP_BYTES",
    "DEFAULT_KEEP_SECONDS",
    "DEFAULT_RESULT_BUDGET",
    "EMPTY_RESULT_TEXT",
    "ENCODING",
    "MIN_BUDGET",
    "PROVIDERS",
    "READ_RESULT",
    "READ_RESULT_TOOL",
    "RESULTS_URI",
    "KeptResult",
    "KeptResults",
    "Provider",
    "ResponseStats",
    "StreamAccumulator",
    "StreamChunk",
    "UnknownProviderError",
    "clean_history",
    "count_tokens",
    "exact_counts",
    "parse_stream_chunk",
    "read_result",
    "response_stats",
    "token_note",
    "tool_result_message",
    "tool_results_turn",
]
