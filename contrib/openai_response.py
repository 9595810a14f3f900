"""Reading chat-completion responses: the assistant message as a history entry, and a stream as one completion."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from openai.lib.streaming.chat import ChatCompletionStreamState

from ctxplug.errors import CtxplugError
from ctxplug.messages import Message


def assistant_message(response: Any) -> Message:
    """The first choice's message as an OpenAI-format dict: role, content, and tool calls when there are any.

    Only the fields a request accepts back are kept (not ``refusal``, ``annotations``, parsed arguments), so the
    history replays on any OpenAI-compatible API.
    """
    choices = getattr(response, "choices", None)
    if not choices:
        raise CtxplugError(f"the API answered without a choice (response: {str(response)[:200]})")
    message = choices[0].message
    entry: Message = {"role": "assistant", "content": message.content}
    calls = [
        {"id": call.id, "type": "function",
         "function": {"name": call.function.name, "arguments": call.function.arguments or ""}}
        for call in message.tool_calls or ()
    ]
    if calls:
        entry["tool_calls"] = calls
    return entry


def read_stream(chunks: Iterable[Any], on_chunk: Callable[[Any], None] | None = None) -> Any:
    """Consume a streamed response into one completion, usage included (the last chunk carries it)."""
    state: ChatCompletionStreamState[None] = ChatCompletionStreamState()
    seen = False
    for chunk in chunks:
        state.handle_chunk(chunk)
        seen = True
        if on_chunk is not None:
            on_chunk(chunk)
    if not seen:
        raise CtxplugError("the API closed the stream before sending any chunk")
    return state.get_final_completion()
