"""The stubs `describe_tools` renders, from tool definitions alone (no process)."""

from __future__ import annotations

from nativemcp.protocol import Tool
from nativemcp.proxy.codemode import STUB_HEADER, UNTYPED_NOTE, schema_type, tool_stubs

PLAN = {
    "title": "Plan",
    "type": "object",
    "properties": {
        "goal": {"anyOf": [{"type": "string"}, {"type": "null"}]},
        "todos": {"type": "array", "items": {"$ref": "#/$defs/Todo"}},
    },
    "$defs": {
        "Todo": {
            "type": "object",
            "properties": {"id": {"type": "integer"}, "done": {"type": "boolean"}},
        }
    },
}


def test_parameters_are_keywords_required_first_with_defaults_and_safe_names() -> None:
    tool = Tool(
        name="s__find",
        description="Find things.\nMore detail the stub leaves out.",
        input_schema={
            "type": "object",
            "properties": {
                "limit": {"type": "integer", "default": 5},
                "from": {"type": "string"},
                "mode": {"enum": ["a", "b"]},
            },
            "required": ["mode"],
        },
        output_schema={"type": "object", "properties": {"result": {"type": "array"}}},
    )
    stubs = tool_stubs({"s__find": tool})
    assert stubs == (
        STUB_HEADER + 'async def s__find(mode:Literal["a","b"],limit:int=5,from_:str=None)'
        '->list[Any]:"""Find things."""\n'
    )


def test_a_return_type_several_stubs_share_is_written_once_under_its_title() -> None:
    tools = {
        f"p__{verb}": Tool(name=f"p__{verb}", description=f"{verb}", output_schema=PLAN)
        for verb in ("add", "clear")
    }
    stubs = tool_stubs(tools)
    assert "Plan={goal:str|None,todos:list[{id:int,done:bool}]}\n" in stubs
    assert "async def p__add()->Plan:" in stubs
    assert "async def p__clear()->Plan:" in stubs
    assert stubs.count("todos:") == 1


def test_a_shape_taken_and_given_is_named_once_after_the_key_that_holds_it() -> None:
    entity = {
        "type": "object",
        "properties": {"name": {"type": "string"}, "observations": {"type": "array"}},
    }
    listed = {"entities": {"type": "array", "items": entity}}
    entities = {"type": "object", "properties": listed, "required": ["entities"]}
    tools = {
        "m__create": Tool(name="m__create", input_schema=entities, output_schema=entities),
        "m__open": Tool(
            name="m__open",
            description="Open entities.",
            input_schema={"type": "object", "properties": {"name": {"type": "string"}}},
            output_schema={**entities, "properties": {**listed, "total": {}}},
        ),
    }
    stubs = tool_stubs(tools, header=False)
    assert stubs.startswith("Entity={name:str,observations:list[Any]}\n")
    assert "async def m__create(entities:list[Entity])->{entities:list[Entity]}:" in stubs
    assert 'async def m__open(name:str=None)->{entities:list[Entity],total:Any}:"""Open' in stubs
    assert "async def m__create(entities:list[Entity])->{entities:list[Entity]}:...\n" in stubs
    assert stubs.count("observations") == 1


def test_a_short_shape_is_written_out_where_a_name_would_save_nothing() -> None:
    point = {"type": "object", "properties": {"x": {"type": "integer"}}}
    tools = {
        f"s__{verb}": Tool(
            name=f"s__{verb}",
            input_schema={"type": "object", "properties": {"p": point}, "required": ["p"]},
            output_schema=point,
        )
        for verb in ("move", "flip")
    }
    stubs = tool_stubs(tools, header=False)
    assert stubs.count("{x:int}") == 4
    assert "=" not in stubs.replace('"""', "")


def test_a_tool_without_an_output_schema_returns_any_and_the_header_says_what_that_is() -> None:
    stubs = tool_stubs({"t__now": Tool(name="t__now", description="The time")})
    assert stubs == STUB_HEADER + UNTYPED_NOTE + 'async def t__now()->Any:"""The time."""\n'


def test_schema_types_read_as_python() -> None:
    assert schema_type({"type": ["string", "null"]}) == "str|None"
    assert schema_type({"type": "object", "additionalProperties": {"type": "number"}}) == (
        "dict[str,float]"
    )
    assert schema_type({"const": "x"}) == 'Literal["x"]'
    assert schema_type({"type": "object"}) == "dict"
    assert schema_type(None) == "Any"
