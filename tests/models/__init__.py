"""The model zoo: real models trained on CPU and tpu (see harness.py). A package, so that its conftest and
modules do not shadow tests/conftest.py, which the other suites import by name."""
