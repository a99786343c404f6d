"""torchtpu: PyTorch's tpu device."""


def _autoload():
    pass
