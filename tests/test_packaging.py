"""pyproject.toml: metadata that installs without setuptools warnings."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_the_license_is_an_spdx_string_with_a_setuptools_that_reads_it():
    """A TOML table (``{ text = ... }``) makes setuptools >= 77 warn on every build (twice per
    install); the SPDX string form needs setuptools >= 77 (older ones reject it), so the build
    requirement says so. Checked by hand: ``pip wheel --no-deps`` prints no license warning."""
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert meta["project"]["license"] == "Apache-2.0"
    (req,) = [r for r in meta["build-system"]["requires"] if r.startswith("setuptools")]
    minimum = re.fullmatch(r"setuptools>=(\d+)(\.\d+)*", req.replace(" ", ""))
    assert minimum and int(minimum.group(1)) >= 77, req
