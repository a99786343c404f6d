"""The op table's list of aten names (dispatch/gen_aten_names.go) is the installed torch's."""
import pathlib
import re

import torch

ROOT = pathlib.Path(__file__).resolve().parent.parent


def test_generated_aten_names_match_the_installed_torch():
    text = (ROOT / "dispatch" / "gen_aten_names.go").read_text()
    listed = set(re.findall(r'^\t"(aten::[^"]+)",$', text, re.M))
    installed = {n for n in torch._C._dispatch_get_all_op_names() if n.startswith("aten::")}
    assert listed == installed, (
        f"{len(installed - listed)} names missing, {len(listed - installed)} extra: "
        "regenerate with tools/gen_aten_names.py")


def test_op_index_lists_every_rule_with_its_site():
    index = (ROOT / "dispatch" / "OPS.md").read_text()
    rows = re.findall(r"^\| `(aten::[^`]+)` \| ([a-z=-]+) \| `[^`]+` \| (\w+\.go:\d+) \|$", index, re.M)
    names = {name for name, _, _ in rows}
    assert "aten::index_put_" in names and "aten::add.Tensor" in names
    for name, _, site in rows:
        f, line = site.split(":")
        assert (ROOT / "dispatch" / f).exists(), site
