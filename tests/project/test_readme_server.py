"""The README's server example runs as written, in real worker processes."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

README = Path(__file__).parents[2] / "README.md"


@pytest.mark.real_process
def test_the_readme_server_example_runs(tmp_path: Path) -> None:
    blocks = re.findall(r"```python\n(# greeter\.py\n.*?)```", README.read_text(), re.S)
    assert len(blocks) == 1, "the README has one greeter.py example"
    (tmp_path / "greeter.py").write_text(blocks[0])
    done = subprocess.run(
        [sys.executable, "greeter.py"], cwd=tmp_path, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "Said: Hello, Ada! (1x)"
