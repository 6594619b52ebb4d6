"""examples/python/mp2.py at a small size: its energy agrees with numpy.einsum's."""
import os
import pathlib
import subprocess
import sys

EXAMPLE = pathlib.Path(__file__).resolve().parents[2] / "examples" / "python" / "mp2.py"


def test_mp2_example_agrees_with_numpy():
    result = subprocess.run(
        [sys.executable, str(EXAMPLE), "--nocc", "4", "--nvirt", "12", "--naux", "30"],
        capture_output=True, text=True, env=dict(os.environ), timeout=300,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    energy = float(next(l for l in lines if l.strip().startswith("energy")).split()[1])
    reference = float(next(l for l in lines if "numpy.einsum" in l).split()[1])
    assert energy < 0  # a correlation energy
    assert abs(energy - reference) <= 1e-10 * abs(reference)
    assert "agree" in result.stdout


def test_mp2_example_refuses_bad_sizes():
    result = subprocess.run([sys.executable, str(EXAMPLE), "--nocc", "0"], capture_output=True, text=True,
                            env=dict(os.environ), timeout=60)
    assert result.returncode == 2 and "positive" in result.stderr
