"""The README's example runs as written."""

from __future__ import annotations

import contextlib
import io
import pathlib
import re
import sys
import types

README = pathlib.Path(__file__).resolve().parents[2] / "README.md"


def test_the_first_python_example_in_the_readme_runs_and_prints_the_llm_text() -> None:
    match = re.search(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), re.DOTALL)
    assert match is not None, "README.md has no ```python block"
    # Run it as its own module, as a reader would: without this file's
    # `from __future__ import annotations`, and findable by msgspec in sys.modules.
    code = compile(match.group(1), str(README), "exec", dont_inherit=True)
    module = types.ModuleType("readme_example")
    sys.modules[module.__name__] = module
    printed = io.StringIO()
    try:
        with contextlib.redirect_stdout(printed):
            exec(code, module.__dict__)
    finally:
        del sys.modules[module.__name__]
    assert "report.md" in printed.getvalue()
