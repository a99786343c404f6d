"""Stand-ins that let PyTorch 2.6's test files import under the installed torch.

The downloaded test files name a few testing internals that later releases renamed or removed; apply() puts a
small equivalent back under the old name before the files are imported. Each stand-in is listed, with why it is
right, in the docstring of tests/device_generic/run.py.
"""
import importlib.machinery
import sys
import types
import unittest


def _tf32_is_not_fp32():
    """Returns False: the old helper answered whether a CUDA device computes float32 matmuls in TF32, and this
    machine has no CUDA device."""
    return False


def _bf32_on_and_off(bf32_precision=1e-2):
    """Returns the decorator the old name made: the test runs once as written and, on a CPU whose oneDNN
    computes float32 in bfloat16, once more with that reduced precision and the given tolerance. Its successor
    reduced_f32_on_and_off does the same and may add a TF32 run, again only on CPU."""
    from torch.testing._internal.common_mkldnn import reduced_f32_on_and_off

    return reduced_f32_on_and_off(bf32_precision=bf32_precision)


def _skip_without_hypothesis(*args, **kwargs):
    """Returns a decorator that makes a property-based test skip itself: hypothesis is not installed."""

    def wrap(fn):
        def skipped(self, *a, **k):
            raise unittest.SkipTest("hypothesis is not installed")

        skipped.__name__ = fn.__name__
        return skipped

    return wrap


def _inert(name):
    """Returns a callable that builds nothing, for every public name a stand-in module is asked for."""
    if name.startswith("_"):
        raise AttributeError(name)
    return lambda *args, **kwargs: None


def _hypothesis_modules():
    """Returns stand-in modules for hypothesis and torch's hypothesis_utils whose names build inert values."""
    hyp = types.ModuleType("hypothesis")
    hyp.__spec__ = importlib.machinery.ModuleSpec("hypothesis", None)
    hyp.given = _skip_without_hypothesis
    hyp.__getattr__ = _inert
    hu = types.ModuleType("torch.testing._internal.hypothesis_utils")
    hu.__spec__ = importlib.machinery.ModuleSpec(hu.__name__, None)
    hu.__getattr__ = _inert
    return hyp, hu


def apply():
    """Puts every stand-in in place; names the installed torch still has are left alone."""
    # Dynamo looks up the modules it knows by name when it is first imported; it is imported here, before the
    # hypothesis stand-in exists, so that its tables describe the real environment.
    import torch._dynamo  # noqa: F401
    from torch.testing._internal import common_cuda, common_mkldnn, common_nn

    if not hasattr(common_cuda, "tf32_is_not_fp32"):
        common_cuda.tf32_is_not_fp32 = _tf32_is_not_fp32
    if not hasattr(common_mkldnn, "bf32_on_and_off"):
        common_mkldnn.bf32_on_and_off = _bf32_on_and_off
    if not hasattr(common_nn, "new_module_tests"):
        common_nn.new_module_tests = common_nn.get_new_module_tests()
    try:
        import hypothesis  # noqa: F401
    except ImportError:
        hyp, hu = _hypothesis_modules()
        sys.modules["hypothesis"] = hyp
        sys.modules["torch.testing._internal.hypothesis_utils"] = hu
