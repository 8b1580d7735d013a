"""Resources, resource templates, prompts and completions of a `Server`.

```python
@server.resource("notes://today", mime_type="text/markdown")
def today() -> str: ...

@server.resource("notes://day/{date}")        # a template: {date} comes as an argument
def day(date: str) -> str: ...

@server.prompt()
def summarize(topic: str, style: str = "short") -> str: ...

@server.completion
def complete(ref: CompletionRef, argument: str, value: str) -> list[str]: ...
```

The wire shapes are the MCP spec's (camelCase), as msgspec Structs, so a worker sends
them in its frames as they are and the MCP boundary hands them to the official SDK.
"""

from __future__ import annotations

import base64
import inspect
import re
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

import msgspec

from nativemcp.protocol import (
    ContentBlock,
    EmbeddedResource,
    FeatureError,
    ResourceContents,
    TextContent,
    resolved,
)

__all__ = [
    "CompletionRef",
    "GetPromptResult",
    "Prompt",
    "PromptArgument",
    "PromptMessage",
    "Resource",
    "ResourceTemplate",
    "ServerFeatures",
]

F = TypeVar("F", bound=Callable[..., Any])
_META = msgspec.field(default=None, name="_meta")


class _Listed(msgspec.Struct, omit_defaults=True, rename="camel", kw_only=True):
    # What a listed resource and a template share (the spec's BaseMetadata and more).
    name: str
    title: str | None = None
    description: str | None = None
    mime_type: str | None = None
    meta: dict[str, Any] | None = _META


class Resource(_Listed):
    """A resource the server lists (MCP ``Resource``)."""

    uri: str


class ResourceTemplate(_Listed):
    """A family of resources named by a URI template (MCP ``ResourceTemplate``)."""

    uri_template: str


class PromptArgument(msgspec.Struct, omit_defaults=True, kw_only=True):
    """One argument of a prompt."""

    name: str
    description: str | None = None
    required: bool = False


class Prompt(msgspec.Struct, omit_defaults=True, kw_only=True):
    """A prompt the server lists (MCP ``Prompt``)."""

    name: str
    title: str | None = None
    description: str | None = None
    arguments: list[PromptArgument] | None = None


class PromptMessage(msgspec.Struct, kw_only=True):
    """One message of a prompt: a role and one content block."""

    role: Literal["user", "assistant"]
    content: ContentBlock


class GetPromptResult(msgspec.Struct, omit_defaults=True, kw_only=True):
    """A prompt filled in with its arguments (MCP ``GetPromptResult``)."""

    messages: list[PromptMessage]
    description: str | None = None


class CompletionRef(msgspec.Struct, frozen=True, kw_only=True):
    """What a completion request is about: a prompt (by name) or a resource template."""

    type: Literal["ref/prompt", "ref/resource"]
    name: str
    """The prompt's name, or the template's URI template."""


@dataclass(frozen=True, slots=True)
class _ResourceSpec:
    fn: Callable[..., Any]
    definition: Resource | ResourceTemplate
    pattern: re.Pattern[str] | None  # set for templates


@dataclass(frozen=True, slots=True)
class _PromptSpec:
    fn: Callable[..., Any]
    definition: Prompt


_PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")


def _template_pattern(template: str) -> re.Pattern[str]:
    parts: list[str] = []
    last = 0
    for match in _PLACEHOLDER.finditer(template):
        parts.append(re.escape(template[last : match.start()]))
        parts.append(f"(?P<{match.group(1)}>[^/]+)")
        last = match.end()
    parts.append(re.escape(template[last:]))
    return re.compile("".join(parts))


async def _run(fn: Callable[..., Any], kwargs: dict[str, Any]) -> Any:
    return await resolved(fn(**kwargs))


def _contents(uri: str, value: Any, mime_type: str | None) -> list[ResourceContents]:
    if isinstance(value, ResourceContents):
        return [value]
    if isinstance(value, list | tuple) and all(isinstance(v, ResourceContents) for v in value):
        return list(value)
    if isinstance(value, bytes | bytearray | memoryview):
        return [
            ResourceContents(
                uri=uri,
                mime_type=mime_type or "application/octet-stream",
                blob=base64.b64encode(bytes(value)).decode("ascii"),
            )
        ]
    if isinstance(value, str):
        return [ResourceContents(uri=uri, mime_type=mime_type or "text/plain", text=value)]
    # Anything else is data: its JSON form.
    text = msgspec.json.encode(value).decode()
    return [ResourceContents(uri=uri, mime_type=mime_type or "application/json", text=text)]


def _messages(value: Any) -> list[PromptMessage]:
    items: Sequence[Any] = value if isinstance(value, list | tuple) else [value]
    messages: list[PromptMessage] = []
    for item in items:
        if isinstance(item, PromptMessage):
            messages.append(item)
        elif isinstance(item, str):
            messages.append(PromptMessage(role="user", content=TextContent(text=item)))
        elif isinstance(item, ResourceContents):
            messages.append(PromptMessage(role="user", content=EmbeddedResource(resource=item)))
        elif isinstance(item, dict):
            messages.append(msgspec.convert(item, PromptMessage))
        else:
            # A content block (text, image, audio, resource link, embedded resource).
            messages.append(PromptMessage(role="user", content=item))
    return messages


class ServerFeatures:
    """A server's resources, templates, prompts and completion hook."""

    def __init__(self) -> None:
        self.resources: dict[str, _ResourceSpec] = {}
        self.templates: dict[str, _ResourceSpec] = {}
        self.prompts: dict[str, _PromptSpec] = {}
        self.completion: Callable[..., Any] | None = None
        self.listers: list[Callable[[], Any]] = []

    # -- declaring -------------------------------------------------------------------

    def add_resource(
        self,
        fn: Callable[..., Any],
        uri: str,
        *,
        name: str | None,
        title: str | None,
        description: str | None,
        mime_type: str | None,
        meta: dict[str, Any] | None = None,
    ) -> None:
        """Register a resource (or a template, when ``uri`` has ``{placeholders}``);
        ``meta`` is its ``_meta``, on its listing and on the contents a read returns.

        Raises:
            ValueError: the URI is taken, or a template's placeholders are not the
                function's parameters.
        """
        label = name or fn.__name__
        doc = description or inspect.getdoc(fn) or None
        placeholders = _PLACEHOLDER.findall(uri)
        if not placeholders:
            if uri in self.resources:
                raise ValueError(f"resource {uri!r} is declared twice")
            definition: Resource | ResourceTemplate = Resource(
                uri=uri, name=label, title=title, description=doc, mime_type=mime_type, meta=meta
            )
            self.resources[uri] = _ResourceSpec(fn, definition, None)
            return
        params = set(inspect.signature(fn).parameters)
        if set(placeholders) != params:
            raise ValueError(
                f"resource template {uri!r}: placeholders {sorted(placeholders)} must be the "
                f"parameters of {fn.__name__} ({sorted(params)})"
            )
        if uri in self.templates:
            raise ValueError(f"resource template {uri!r} is declared twice")
        definition = ResourceTemplate(
            uri_template=uri,
            name=label,
            title=title,
            description=doc,
            mime_type=mime_type,
            meta=meta,
        )
        self.templates[uri] = _ResourceSpec(fn, definition, _template_pattern(uri))

    def add_prompt(
        self,
        fn: Callable[..., Any],
        *,
        name: str | None,
        title: str | None,
        description: str | None,
    ) -> None:
        """Register a prompt; its parameters are its arguments (strings, per the spec).

        Raises:
            ValueError: the name is taken, or a parameter is ``*args``/``**kwargs``.
        """
        label = name or fn.__name__
        if label in self.prompts:
            raise ValueError(f"prompt {label!r} is declared twice")
        arguments: list[PromptArgument] = []
        for param in inspect.signature(fn).parameters.values():
            if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
                raise ValueError(f"prompt {label!r}: *args/**kwargs are not supported")
            arguments.append(
                PromptArgument(name=param.name, required=param.default is inspect.Parameter.empty)
            )
        definition = Prompt(
            name=label,
            title=title,
            description=description or inspect.getdoc(fn) or None,
            arguments=arguments or None,
        )
        self.prompts[label] = _PromptSpec(fn, definition)

    # -- serving ---------------------------------------------------------------------

    def list_resources(self) -> list[Resource]:
        """The static resources, in declaration order."""
        return [spec.definition for spec in self.resources.values()]  # type: ignore[misc]

    async def all_resources(self) -> list[Resource]:
        """The static resources, then those the listers find now (stored items...)."""
        found = self.list_resources()
        for lister in self.listers:
            found += list(await _run(lister, {}))
        return found

    def list_resource_templates(self) -> list[ResourceTemplate]:
        """The resource templates, in declaration order."""
        return [spec.definition for spec in self.templates.values()]  # type: ignore[misc]

    def list_prompts(self) -> list[Prompt]:
        """The prompts, in declaration order."""
        return [spec.definition for spec in self.prompts.values()]

    async def read_resource(self, uri: str) -> list[ResourceContents]:
        """The contents of ``uri`` (a static resource, or one a template matches).

        Raises:
            FeatureError: no resource or template matches ``uri``.
        """
        spec = self.resources.get(uri)
        kwargs: dict[str, Any] = {}
        if spec is None:
            for candidate in self.templates.values():
                assert candidate.pattern is not None
                match = candidate.pattern.fullmatch(uri)
                if match is not None:
                    spec, kwargs = candidate, match.groupdict()
                    break
        if spec is None:
            known = [*self.resources, *self.templates]
            raise FeatureError(
                f"unknown resource {uri!r}; resources and templates: {', '.join(known) or '(none)'}"
            )
        value = await _run(spec.fn, kwargs)
        contents = _contents(uri, value, spec.definition.mime_type)
        meta = spec.definition.meta
        if meta is None:
            return contents
        # An app's sandbox wishes travel with its HTML: hosts read them from the contents.
        return [
            item if item.meta is not None else msgspec.structs.replace(item, meta=meta)
            for item in contents
        ]

    async def get_prompt(self, name: str, arguments: dict[str, str] | None) -> GetPromptResult:
        """The prompt ``name`` filled in with ``arguments``.

        Raises:
            FeatureError: unknown prompt, a missing required argument or an unknown one.
        """
        spec = self.prompts.get(name)
        if spec is None:
            raise FeatureError(
                f"unknown prompt {name!r}; prompts: {', '.join(self.prompts) or '(none)'}"
            )
        given = dict(arguments or {})
        declared = spec.definition.arguments or []
        missing = [a.name for a in declared if a.required and a.name not in given]
        unknown = sorted(set(given) - {a.name for a in declared})
        if missing or unknown:
            problems = []
            if missing:
                problems.append(f"missing {', '.join(missing)}")
            if unknown:
                problems.append(f"unknown {', '.join(unknown)}")
            raise FeatureError(f"prompt {name!r}: arguments {'; '.join(problems)}")
        value = await _run(spec.fn, given)
        if isinstance(value, GetPromptResult):
            return value
        return GetPromptResult(messages=_messages(value), description=spec.definition.description)

    async def complete(
        self, ref: CompletionRef, argument: str, value: str, context: dict[str, str] | None
    ) -> list[str]:
        """Suggestions for ``argument`` of ``ref`` starting from ``value`` ([] without a hook)."""
        if self.completion is None:
            return []
        params = inspect.signature(self.completion).parameters
        kwargs: dict[str, Any] = {}
        if "context" in params:
            kwargs["context"] = context or {}
        result = await _run(lambda: self.completion(ref, argument, value, **kwargs), {})  # type: ignore[misc]
        return [str(v) for v in result]


CompletionHook = Callable[..., list[str] | Awaitable[list[str]]]
"""``(ref, argument, value[, context=...]) -> list[str]``, sync or async."""
