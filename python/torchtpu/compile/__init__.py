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
_OPTIMIZER = "torch._dynamo.variables.optimizer"
_DYNAMO = "torch._dynamo"
_FAKE_IMPLS = "torch._subclasses.fake_impls"
_warned = False


def tpu(gm, example_inputs, **kwargs):
    """The "tpu" backend (imports the compiler on first use)."""
    from .backend import tpu_backend

    return tpu_backend(gm, example_inputs, **kwargs)


def _register(registry):
    if "tpu" not in registry._COMPILER_FNS:
        registry.register_backend(compiler_fn=tpu, name="tpu")


class _Loader(importlib.abc.Loader):
    def __init__(self, inner, then):
        self.inner, self.then = inner, then

    def create_module(self, spec):
        return self.inner.create_module(spec)

    def exec_module(self, module):
        self.inner.exec_module(module)
        self.then(module)


class _ModuleHook(importlib.abc.MetaPathFinder):
    """Calls then(module) right after the module named name is imported."""

    def __init__(self, name, then):
        self.name, self.then = name, then

    def find_spec(self, name, path, target=None):
        if name != self.name:
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(name)
        if spec is not None and spec.loader is not None:
            spec.loader = _Loader(spec.loader, self.then)
        return spec


def _capturable_on_tpu(module):
    """Let Dynamo keep an optimizer's step counts on tpu, as it does for CUDA and XPU.

    Tracing an optimizer whose state is new, Dynamo makes the step counts device tensors
    (capturable) only for CUDA and XPU parameters; elsewhere they are CPU tensors, and a graph
    with CPU inputs cannot be one tpu program (it runs eagerly). Parameters all on tpu get the
    CUDA treatment. A torch without that check is left alone.
    """
    cls = getattr(module, "OptimizerVariable", None)
    check = getattr(cls, "_safe_to_set_capturable", None)
    if check is None or getattr(check, "_torchtpu", False):
        return

    def _safe_to_set_capturable(self, group):
        params = group.get("params", [])
        if params and all(getattr(p, "device", None) is not None and p.device.type == "tpu" for p in params):
            return "capturable" in group and all(p not in self.value.state for p in params)
        return check(self, group)

    _safe_to_set_capturable._torchtpu = True
    cls._safe_to_set_capturable = _safe_to_set_capturable


def _step_ends(dynamo):
    from .. import step

    step.use_dynamo(dynamo)


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


def _fake_layouts(module):
    from . import fake_layouts

    fake_layouts.install(module)


def install():
    """Register the backend, the default-compile route, the optimizer rule, the step ends of
    compiled optimizer steps and tpu's layouts of fake convolutions (idempotent)."""
    _route_default_compile()
    hooks = ((_REGISTRY, _register), (_OPTIMIZER, _capturable_on_tpu), (_DYNAMO, _step_ends),
             (_FAKE_IMPLS, _fake_layouts))
    for name, then in hooks:
        module = sys.modules.get(name)
        if module is not None:
            then(module)
        elif not any(isinstance(f, _ModuleHook) and f.name == name for f in sys.meta_path):
            sys.meta_path.insert(0, _ModuleHook(name, then))
