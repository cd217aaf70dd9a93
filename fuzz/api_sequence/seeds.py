#!/usr/bin/env python3
"""Writes the seed corpus of the api_sequence fuzz target (fuzz/corpus/api_sequence/).

Each seed is a sequence of operations of fuzz/api_sequence/mod.rs, encoded the way the
`arbitrary` crate (1.x) decodes them: integers little-endian, bool = byte & 1, Option = bool then
value, enum variant k of n = a u32 in bucket k of (u32 * n) >> 32, Vec = (1, item)* then 0.
Strings take their length from the end of the input: the trailing zeros make them empty.
Run: python3 fuzz/api_sequence/seeds.py  (rewrites the folder).
"""
import os
import struct
import sys

def u8(v): return bytes([v & 0xFF])
def u64(v): return struct.pack("<Q", v & (2**64 - 1))
def i64(v): return struct.pack("<q", v)
def i8(v): return struct.pack("<b", v)
def b(v): return u8(1 if v else 0)
def variant(k, n): return struct.pack("<I", ((2 * k + 1) << 32) // (2 * n))
def opt(x): return b(False) if x is None else b(True) + x
def vec(items): return b"".join(b(True) + i for i in items) + b(False)

OPS = ["Build", "DropSession", "Info", "Make", "Fit", "DropValue", "Read", "Sequence", "IntoOptional",
       "Run", "TakeOutput", "ReadOutputs", "DropOutputs", "Bind", "RunAsync", "Poll", "Wait",
       "DropFuture", "Options", "Terminate", "DropOptions", "Env", "GlobalEnv", "DropEnv", "RuntimeInfo"]
def op(name, *fields): return variant(OPS.index(name), len(OPS)) + b"".join(fields)

def name_in(i): return variant(0, 3) + u8(i)
def name_out(i): return variant(1, 3) + u8(i)
def name_text(): return variant(2, 3)  # empty text

def options(intra=None, level=3, config=(), provider=None, create=0, any_type=False, no_custom=False,
            async_threads=False, max_async=None, free_dim=None, parallel=False, arena=None, env=False,
            global_pools=False, log_level=None):
    return (opt(None if intra is None else u8(intra)) + opt(None) + u8(level) + b(parallel) + opt(None)
            + opt(None if arena is None else b(arena)) + vec([u8(c) for c in config])
            + opt(None if provider is None else u8(provider[0]) + vec([u8(o) for o in provider[1]]))
            + u8(create) + b(any_type) + b(no_custom) + b(False) + b(async_threads)
            + opt(None if max_async is None else u8(max_async))
            + opt(None if free_dim is None else u8(free_dim[0]) + i8(free_dim[1]))
            + b(global_pools) + b(env) + opt(None if log_level is None else u8(log_level)) + opt(None) + b(False))

def build(slot, model, **kw): return op("Build", u8(slot), u8(model), options(**kw))
def fitted(n=2, fill=5, skip=None, extra=None):
    return variant(1, 3) + u8(n) + u64(fill) + opt(None if skip is None else u8(skip)) + opt(extra)
def slots(pairs): return variant(0, 3) + vec([nm + u8(s) for nm, s in pairs])
def view(nm, rows=2, cols=3, step=0, n=2): return variant(2, 3) + nm + u8(rows) + u8(cols) + u8(step) + u8(n)
AFTER = ["Drop", "Read", "Keep", "Take", "First"]
def after(kind, *f): return variant(AFTER.index(kind), 5) + b"".join(f)
def run(session, inputs, outputs=(), options=None, kernel=0, aft=None):
    return op("Run", u8(session), inputs, vec(list(outputs)), opt(None if options is None else u8(options)),
              u8(kernel), aft if aft is not None else after("Read"))
MAKE = ["Tensor", "AnyShape", "Scalar", "Strings", "Array", "None", "EmptySequence"]
def make(slot, kind, *f): return op("Make", u8(slot), variant(MAKE.index(kind), 7) + b"".join(f))
def tensor(ty, dims, fill=3): return ("Tensor", u8(ty), vec([u8(d) for d in dims]), u64(fill))
STEPS = ["Input", "FittedInput", "Output", "OutputToCpu", "ClearInputs", "SyncInputs", "SyncOutputs", "Run", "Outputs"]
def step(kind, *f): return variant(STEPS.index(kind), 9) + b"".join(f)
def run_async(session, inputs, outputs=(), slot=0, tag=False, stop=False, kernel=0):
    return op("RunAsync", u8(session), inputs, vec(list(outputs)), u8(slot), opt(b"" if tag else None), b(stop), u8(kernel))

def program(order, ops): return u8(order) + vec(ops) + bytes(16)

MODELS = 28
seeds = {}
# Every model: build, run on fitting inputs, keep, read, take, drop the session before its outputs.
for m in range(MODELS):
    seeds[f"model-{m:02}"] = program(m, [
        build(0, m), op("Info", u8(0), name_in(0)), run(0, fitted(), aft=after("Keep", u8(0))),
        op("ReadOutputs", u8(0)), op("DropSession", u8(0)), op("TakeOutput", u8(0), name_out(0), u8(1)),
        op("Read", u8(1))])
# The custom op in every mode, f32 and any-type declarations, and failing create_kernel.
for k in range(11):
    seeds[f"kernel-{k:02}"] = program(k, [
        build(0, 1, any_type=k % 2 == 1, intra=1), run(0, fitted(n=3), kernel=k), run(0, fitted(n=1), kernel=k, aft=after("Keep", u8(1))),
        op("ReadOutputs", u8(1))])
for c in range(3):
    seeds[f"create-{c}"] = program(c, [build(0, 1, create=c), run(0, fitted(), kernel=0)])
# Repeated output names after a run that fills the output pool (KNOWN_ITEM_3's hole).
seeds["repeated-names"] = program(3, [
    build(0, 0, intra=1), run(0, fitted(fill=1)), run(0, fitted(fill=9), outputs=[name_out(0), name_out(0)]),
    build(1, 3), run(1, fitted(n=3), outputs=[name_out(1), name_out(1), name_out(0)])])
# Config entries and providers by name, threads and levels.
for c in range(22):
    seeds[f"config-{c:02}"] = program(c, [build(0, c % 4, config=[c], level=c % 4, intra=c % 4), run(0, fitted())])
for p in range(9):
    seeds[f"provider-{p}"] = program(p, [build(0, 0, provider=(p, [p, (p + 3) % 9])), run(0, fitted())])
seeds["free-dim"] = program(0, [build(0, 3, free_dim=(0, 3)), run(0, fitted(n=3)), build(1, 3, free_dim=(0, -1))])
# Values of every kind; sequences; optionals; wrong inputs.
vals = []
for ty in range(17):
    vals += [make(ty % 6, *tensor(ty, [2, 3], ty)), op("Read", u8(ty % 6))]
seeds["values-tensors"] = program(0, vals)
seeds["values-kinds"] = program(1, [
    make(0, "AnyShape", u8(0), vec([i64(-1), i64(3)]), u8(3), u64(1)), make(1, "Scalar", u8(6), u64(4)),
    make(2, "Strings", vec([b"", b""]), opt(None)), make(3, "Array", u8(3), u8(4), b(True)),
    make(4, "None", b(False), u8(0)), make(5, "EmptySequence", u8(0)),
    *[op("Read", u8(i)) for i in range(6)], make(0, *tensor(0, [2])), make(1, *tensor(0, [3])),
    op("Sequence", u8(2), vec([u8(0), u8(1)])), op("Read", u8(2)), op("IntoOptional", u8(4)), op("IntoOptional", u8(2))])
seeds["wrong-inputs"] = program(2, [
    build(0, 0), make(0, *tensor(0, [2, 3])), make(1, *tensor(1, [2, 3])), make(2, *tensor(0, [3, 2])),
    run(0, slots([(name_in(0), 0), (name_in(1), 1)])), run(0, slots([(name_in(0), 0), (name_in(1), 2)])),
    run(0, slots([(name_in(0), 0), (name_in(0), 0)])), run(0, slots([(name_in(0), 0), (name_text(), 0)])),
    run(0, slots([(name_in(0), 0), (name_in(1), 0)]), outputs=[name_text()]),
    run(0, slots([(name_in(0), 0), (name_in(1), 0)]), aft=after("Take", name_out(0), u8(3))), op("Read", u8(3))])
seeds["sequences"] = program(4, [
    build(0, 7), run(0, fitted(), aft=after("First", u8(0))), build(1, 8),
    run(1, slots([(name_in(0), 0)]), aft=after("Keep", u8(0))), op("ReadOutputs", u8(0)), build(2, 6),
    run(2, fitted(n=1)), build(2, 9), run(2, fitted(n=1), aft=after("Keep", u8(1))), op("DropSession", u8(2)), op("ReadOutputs", u8(1))])
seeds["view-input"] = program(5, [build(0, 4), run(0, view(name_in(0))), build(1, 0), run(1, view(name_in(1), 2, 3, 1))])
# IoBinding: bound values, fitted inputs, preallocated and CPU outputs, runs, clear.
seeds["binding"] = program(6, [
    build(0, 0), op("Fit", u8(0), u8(0), u8(0), u8(2), u64(1)), op("Fit", u8(1), u8(0), u8(1), u8(2), u64(2)),
    make(2, *tensor(0, [2, 3])),
    op("Bind", u8(0), vec([step("Input", name_in(0), u8(0)), step("Input", name_in(1), u8(1)),
                          step("Output", name_out(0), u8(2)), step("Run", opt(None), u8(0)), step("Outputs"),
                          step("ClearInputs"), step("FittedInput", u8(0)), step("FittedInput", u8(1)),
                          step("OutputToCpu", name_out(0)), step("SyncInputs"), step("Run", opt(None), u8(0)),
                          step("SyncOutputs"), step("Outputs")]), b(True)),
    op("Read", u8(2))])
seeds["binding-custom"] = program(7, [
    build(0, 1), op("Bind", u8(0), vec([step("FittedInput", u8(0)), step("OutputToCpu", name_out(0)),
                                       *[step("Run", opt(None), u8(k)) + step("Outputs") for k in range(1)],
                                       step("Run", opt(None), u8(3)), step("Outputs"), step("Run", opt(None), u8(5)), step("Outputs")]), b(False))])
# Async runs: polled, waited, dropped, the session dropped first, terminated.
seeds["async-wait"] = program(8, [
    build(0, 0, async_threads=True), run_async(0, fitted(), slot=0), op("Poll", u8(0)), op("Wait", u8(0), opt(u8(1))),
    op("ReadOutputs", u8(1)), build(1, 1, async_threads=True), run_async(1, fitted(), slot=1, kernel=2), op("Wait", u8(1), opt(u8(2)))])
seeds["async-drop"] = program(9, [
    build(0, 3, async_threads=True, max_async=1), run_async(0, fitted(n=3), slot=0), run_async(0, fitted(n=2), slot=1),
    op("DropSession", u8(0)), op("DropFuture", u8(0)), op("Wait", u8(1), opt(u8(0))), op("ReadOutputs", u8(0))])
seeds["async-stop"] = program(10, [
    build(0, 25, async_threads=True), run_async(0, fitted(), slot=0, tag=True, stop=True), op("Wait", u8(0), opt(None)),
    run_async(0, fitted(), slot=1, tag=True), op("DropFuture", u8(1)), run_async(0, fitted(), slot=2), op("DropSession", u8(0))])
seeds["async-one-thread"] = program(11, [build(0, 0, intra=1), run_async(0, fitted(), slot=0)])
# Run options (terminated, reset), environments, runtime info.
seeds["run-options"] = program(12, [
    build(0, 0), op("Options", u8(0), u8(2)), run(0, fitted(), options=0), op("Terminate", u8(0), b(False)),
    run(0, fitted(), options=0), op("Terminate", u8(0), b(True)), run(0, fitted(), options=0), op("DropOptions", u8(0))])
seeds["environment"] = program(13, [
    op("Env", u8(2), b(True), opt(u8(1) + u8(1))), build(0, 0, env=True, global_pools=True), run(0, fitted()),
    op("GlobalEnv"), op("DropEnv"), op("RuntimeInfo"), build(1, 4, env=True), run(1, fitted())])

out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "corpus", "api_sequence")
os.makedirs(out, exist_ok=True)
for f in os.listdir(out):
    os.remove(os.path.join(out, f))
for name, data in seeds.items():
    with open(os.path.join(out, name), "wb") as f:
        f.write(data)
print(f"{len(seeds)} seeds, {sum(map(len, seeds.values()))} bytes", file=sys.stderr)
