"""torch.compile on tpu: the "tpu" Dynamo backend (backend.py) and its registration.

`import torch` registers "tpu" in torch._dynamo's backend list without importing Dynamo: when the
registry module loads, a hook registers the backend (a lazy function that imports backend.py on
first use). The default `torch.compile(model)` builds Inductor's wrapper, and torch registers
Inductor's Pallas code generator for every device named "tpu", which needs jax; graphs holding
tpu tensors are routed from that wrapper to the tpu backend instead."""

import importlib.abc
import importlib.util
import sys
import warnings

import torch

_REGISTRY = "torch._dynamo.backends.registry"
_warned = False


def tpu(gm, example_inputs, **kwargs):
    """The "tpu" backend (imports the compiler on first use)."""
    from .backend import tpu_backend

    return tpu_backend(gm, example_inputs, **kwargs)


def _register(registry):
    if "tpu" not in registry._COMPILER_FNS:
        registry.register_backend(compiler_fn=tpu, name="tpu")


class _Loader(importlib.abc.Loader):
    def __init__(self, inner):
        self.inner = inner

    def create_module(self, spec):
        return self.inner.create_module(spec)

    def exec_module(self, module):
        self.inner.exec_module(module)
        _register(module)


class _RegistryHook(importlib.abc.MetaPathFinder):
    """Registers the backend right after torch._dynamo.backends.registry is imported."""

    def find_spec(self, name, path, target=None):
        if name != _REGISTRY:
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(name)
        if spec is not None and spec.loader is not None:
            spec.loader = _Loader(spec.loader)
        return spec


def _route_default_compile():
    """Make torch.compile's default (Inductor) backend hand graphs on tpu to the tpu backend."""
    cls = getattr(torch, "_TorchCompileInductorWrapper", None)
    if cls is None or getattr(cls.__call__, "_torchtpu", False):
        return
    inductor_call = cls.__call__

    def __call__(self, model_, inputs_, *args, **kwargs):
        from .backend import _has_tpu_tensor

        if _has_tpu_tensor(model_, inputs_):
            global _warned
            if not _warned:
                _warned = True
                warnings.warn("torch.compile: graphs on tpu are compiled by torchtpu's \"tpu\" backend (Inductor's "
                              "Pallas code generator for tpu needs jax); pass backend=\"tpu\" to choose it explicitly",
                              stacklevel=2)
            return tpu(model_, inputs_)
        return inductor_call(self, model_, inputs_, *args, **kwargs)

    __call__._torchtpu = True
    cls.__call__ = __call__


def install():
    """Register the backend and the default-compile route (idempotent)."""
    _route_default_compile()
    registry = sys.modules.get(_REGISTRY)
    if registry is not None:
        _register(registry)
    elif not any(isinstance(f, _RegistryHook) for f in sys.meta_path):
        sys.meta_path.insert(0, _RegistryHook())
