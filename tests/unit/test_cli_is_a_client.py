"""The command-line tools are a pure client of the console's API: they import none of the
server's packages (only infra/, the low-level adapters), nor Django or PySpark, so they can be
installed alone (cli/pyproject.toml)."""

import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
CLI = ROOT / "cli" / "isthmus_cli"
SERVER = {
    "replication",
    "console",
    "spark_jobs",
    "devstack",
    "django",
    "pyspark",
    "celery",
}
TOOLS = {"cluster_links", "mirrors", "replica_status", "configs"}


def test_no_cli_module_names_a_server_package_even_in_a_function():
    for path in CLI.glob("*.py"):
        imported = set()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                imported |= {alias.name.split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                imported.add(node.module.split(".")[0])
        assert not imported & SERVER, f"{path.name} imports {sorted(imported & SERVER)}"


def test_importing_every_cli_module_loads_no_server_package():
    script = f"""
import importlib, pkgutil, sys
import isthmus_cli
names = sorted(m.name for m in pkgutil.iter_modules(isthmus_cli.__path__))
for name in names:
    importlib.import_module("isthmus_cli." + name)
loaded = sorted({{m.split(".")[0] for m in sys.modules}} & set({sorted(SERVER)!r}))
assert not loaded, "importing isthmus_cli loaded " + ", ".join(loaded)
print(",".join(names))
"""
    result = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    assert TOOLS | {"common"} <= set(result.stdout.strip().split(","))
