"""PyTorch's device-generic tests on tpu: the runner is tests/device_generic/run.py."""
