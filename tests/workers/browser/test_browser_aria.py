"""Playwright's AI snapshot YAML parsed and compacted, without a browser.

The inputs are snapshots as Playwright writes them, escaping included
(``yamlEscapeKeyIfNeeded``: a key in single quotes; ``yamlEscapeValueIfNeeded``: a
value in JSON-like double quotes with ``\\xNN`` escapes).
"""

from __future__ import annotations

from nativemcp.workers.browser._aria import (
    clickable_refs,
    compact,
    count_interactive,
    diff_lines,
    parse_snapshot,
    refs_of,
    render,
)

SNAPSHOT = """\
- generic [active] [ref=e1]:
  - heading "Sign up" [level=2] [ref=e2]
  - 'link "a: b" [ref=e3] [cursor=pointer]':
    - /url: /x?a=1
  - button "-x" [ref=e4]
  - textbox "Name" [ref=e5]:
    - /placeholder: Your name
  - paragraph [ref=e6]: "Line one: \\"two\\"\\ttab \\x01"
  - text: Name
  - generic [ref=e7] [cursor=pointer]: Clickable div
  - list [ref=e8]:
    - listitem [ref=e9]:
      - link "Roadmap" [ref=e10] [cursor=pointer]:
        - /url: /roadmap
  - combobox "Role" [ref=e11]:
    - option "Dev" [selected]
    - option "Ops"
  - table [ref=e12]:
    - rowgroup [ref=e13]:
      - row "Ada 36" [ref=e14]:
        - cell "Ada" [ref=e15]
        - cell "36" [ref=e16]
  - checkbox "Agree" [checked] [ref=e17]
"""


def test_keys_and_values_are_unescaped_as_playwright_escapes_them() -> None:
    (root,) = parse_snapshot(SNAPSHOT)
    link = root.children[1]
    assert (link.role, link.name, link.ref, link.url) == ("link", "a: b", "e3", "/x?a=1")
    assert root.children[2].name == "-x"
    assert root.children[3].placeholder == "Your name"
    assert root.children[4].text == 'Line one: "two"\ttab \x01'
    assert root.children[5].role == "text" and root.children[5].name == "Name"


def test_compact_keeps_refs_on_interactive_elements_only_and_dissolves_wrappers() -> None:
    yaml = SNAPSHOT
    tree = compact(parse_snapshot(yaml), clickable_refs(yaml))
    assert refs_of(tree) == ["e3", "e4", "e5", "e7", "e10", "e11", "e17"]
    assert count_interactive(tree) == {
        "link": 2,
        "button": 1,
        "textbox": 1,
        "generic": 1,
        "combobox": 1,
        "checkbox": 1,
    }
    lines = render(tree)
    assert lines == [
        "## Sign up",
        'link "a: b" [ref=e3]',
        'button "-x" [ref=e4]',
        'textbox "Name" [ref=e5] placeholder="Your name"',
        'Line one: "two"\ttab \x01',
        "Name",
        "generic [ref=e7]: Clickable div",
        '- link "Roadmap" [ref=e10]',
        'combobox "Role" [ref=e11]: Dev*, Ops',
        "| Ada | 36 |",
        'checkbox "Agree" [ref=e17] [checked]',
    ]


def test_a_label_that_repeats_its_fields_name_is_left_out() -> None:
    yaml = '- text: Email\n- textbox "Email" [ref=e2]\n- text: Email me\n'
    assert render(compact(parse_snapshot(yaml), frozenset())) == [
        'textbox "Email" [ref=e2]',
        "Email me",
    ]


def test_diff_lines_reports_what_appeared_and_went_indentation_aside() -> None:
    before = ["# Title", "  button [ref=e1]", "old text"]
    after = ["# Title", "  button [ref=e1]", "  new text", "more"]
    assert diff_lines(before, after) == (["new text", "more"], ["old text"])
