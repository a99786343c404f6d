"""generate() on tpu against CPU eager: greedy decoding must give CPU's tokens; sampling (whose draws come
from the tpu generator, so CPU's tokens are not expected) must give well-formed tokens, the same ones again
under the same seed. Both run in one mode ("strict", "fused", or "compile": strict with the model's forward
wrapped in torch.compile(backend="tpu")) with a cache: None for transformers' default dynamic cache, or
"static" (transformers then compiles the decoding step itself, which the "tpu" backend takes). No op may fall
back to the CPU and no compiled graph may run eagerly."""
import torch

from .harness import to


def _generate(model, prompt, mode, cache_implementation, seed=None, **kw):
    """model.generate on tpu in mode; returns the tokens on CPU and the metrics of the call."""
    if cache_implementation is not None:
        kw["cache_implementation"] = cache_implementation
    torch.tpu.set_mode("strict" if mode == "compile" else mode)
    try:
        # Strict mode's background compiles count when they are taken in: those of earlier calls are taken in
        # before the count starts, and this call's before it ends, whatever the compile pool's timing.
        torch.tpu.await_compiles()
        torch.tpu.reset_metrics()
        if seed is not None:
            torch.manual_seed(seed)
        with torch.no_grad():
            got = model.generate(*to(prompt, "tpu"), **{k: (v.to("tpu") if isinstance(v, torch.Tensor) else v)
                                                        for k, v in kw.items()})
        got = got.cpu()
        torch.tpu.synchronize()
        torch.tpu.await_compiles()
        metrics = torch.tpu.metrics()
    finally:
        torch.tpu.set_mode("strict")
    return got, metrics


def _on_tpu(build, mode):
    torch.manual_seed(0)
    model = build().eval().to("tpu")
    torch._dynamo.reset()
    if mode == "compile":
        model.forward = torch.compile(model.forward, backend="tpu")
    return model


def _no_fallbacks(metrics):
    fallbacks = {k: v for k, v in metrics["cpu_fallbacks"].items() if v}
    assert not fallbacks, f"CPU fallbacks: {fallbacks}"
    assert metrics["compiled_fallbacks"] == 0, metrics["compiled_fallback_reasons"]


def compare_generation(build, prompt, mode, max_new_tokens=8, cache=None, **kw):
    """Greedy generate() on tpu in mode against CPU eager: the tokens must be equal, with no fallback."""
    torch.manual_seed(0)
    model = build().eval()
    ckw = dict(kw, cache_implementation=cache) if cache is not None else kw
    with torch.no_grad():
        want = model.generate(*prompt, max_new_tokens=max_new_tokens, do_sample=False, **ckw)
    got, metrics = _generate(_on_tpu(build, mode), prompt, mode, cache, max_new_tokens=max_new_tokens,
                             do_sample=False, **kw)
    assert torch.equal(got, want), f"tpu tokens {got.tolist()} vs CPU {want.tolist()}"
    _no_fallbacks(metrics)
    if cache == "static":
        # The static cache's decoding step is a compiled graph whose cache position is a 0-dim input: every
        # step replays its program.
        assert metrics["compiled_programs"] >= 1 and metrics["compiled_replays"] >= max_new_tokens - 2, metrics


def check_sampling(build, prompt, mode, vocab, max_new_tokens=8, cache=None, **kw):
    """Sampled generate() on tpu in mode: the prompt comes back first, every new token is in the vocabulary,
    at most max_new_tokens are added, no fallback, and the same seed gives the same tokens again."""
    model = _on_tpu(build, mode)
    runs = []
    for _ in range(2):
        got, metrics = _generate(model, prompt, mode, cache, seed=1234, max_new_tokens=max_new_tokens,
                                 do_sample=True, top_k=20, **kw)
        _no_fallbacks(metrics)
        runs.append(got)
    ids = prompt[0]
    got = runs[0]
    assert got.dtype == ids.dtype and got.shape[0] == ids.shape[0], (got.shape, ids.shape)
    assert ids.shape[1] < got.shape[1] <= ids.shape[1] + max_new_tokens, got.shape
    assert torch.equal(got[:, :ids.shape[1]], ids)
    assert int(got.min()) >= 0 and int(got.max()) < vocab, got.tolist()
    assert torch.equal(runs[1], got), f"same seed, other tokens: {runs[1].tolist()} vs {got.tolist()}"


def compare_decoding_programs(build, prompt, mode, cache=None, short=8, long=24, warm=2, warm_programs=1,
                              long_programs=0, **kw):
    """Greedy generate() on tpu for `short` new tokens `warm` times, then for `long`, each against CPU eager: the
    tokens must be equal, the calls after the first may compile `warm_programs` each, and the longer call must
    compile no program. (In strict mode the second call of a process may
    compile one program the first did not need: the first call runs the prefill as one cold run, the second
    replays its ops' plans around the copy of the logits, which then runs alone, in another program's form. The
    third call compares with a warmed process.) Tensors that grow a step at a time (the ids, the
    positions, a dynamic key/value cache) are held padded (engine/pad.go), so the decoding steps inside one
    capacity run the same programs whatever their count. A static cache (cache="static") is made at the longer
    call's length for both calls, so that its own shapes do not change with max_new_tokens either.
    long_programs="first" lets the longer call compile as many programs as the first did, no more: beam search
    keeps its running sequences in tensors of the call's whole length, so a longer call has new shapes, but
    not a program per token."""
    from transformers import StaticCache

    torch.manual_seed(0)
    cpu_model = build().eval()
    model = _on_tpu(build, mode)
    length = prompt[0].shape[1] + long

    def cache_kw(on_cpu):
        if cache != "static":
            return {}
        extra = {"disable_compile": True} if on_cpu else {}
        return dict(cache=StaticCache(config=cpu_model.config, max_cache_len=length), **extra)

    compiled = []
    for n in [short] * warm + [long]:
        with torch.no_grad():
            want = cpu_model.generate(*prompt, max_new_tokens=n, min_new_tokens=n, do_sample=False, **kw,
                                      **cache_kw(True))
        got, metrics = _generate(model, prompt, mode, None, max_new_tokens=n, min_new_tokens=n, do_sample=False,
                                 **kw, **cache_kw(False))
        assert torch.equal(got, want), f"{n} tokens: tpu {got.tolist()} vs CPU {want.tolist()}"
        _no_fallbacks(metrics)
        compiled.append(metrics["graphs_compiled"])
    bound = compiled[0] if long_programs == "first" else long_programs
    assert compiled[0] > 0 and max(compiled[1:-1]) <= warm_programs and compiled[-1] <= bound, \
        f"programs compiled for {short} new tokens {warm} times, then for {long}: {compiled}"
