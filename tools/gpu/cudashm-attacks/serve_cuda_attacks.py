#!/usr/bin/env python3
"""Outside review of issue 45, on the GPU machine: attacks on serve's CUDA shared-memory
extension (REST) with real device memory of other processes.

usage: serve_cuda_attacks.py SERVE_BINARY HELPER_BINARY MODEL_ONNX
HELPER_BINARY is the cuda_ipc_attacks test binary (its `probe_entry` test, ONNXRT_PROBE_ROLE=
exporter, allocates device memory and exports handles, driven by stdin lines). SERVE_ARGS (env)
adds arguments to serve (e.g. "--provider cuda"). Every loop is bounded by counts. Each attack
prints `ATTACK name: outcome`; `<-- BROKEN` marks a finding; a SUMMARY line ends the run.
"""
import atexit, base64, http.client, json, os, random, shutil, socket, struct, subprocess, sys, tempfile, threading, time

SERVE, HELPER, MODEL = sys.argv[1], sys.argv[2], sys.argv[3]
# identity_f32.onnx next to the add model: a batched model whose requests wait in the batcher.
IDENTITY = os.path.join(os.path.dirname(MODEL), "identity_f32.onnx")
broken = []
helpers = []  # every helper process started, ended at exit
work = tempfile.mkdtemp(prefix="probe-cudashm-")


def attack(name, outcome, bad=False):
    line = f"ATTACK {name}: {outcome}"
    if bad:
        line += "  <-- BROKEN"
        broken.append(line)
    print(line[:700], flush=True)


class Exporter:
    """A process of the helper binary that owns device memory."""

    def __init__(self):
        env = dict(os.environ, ONNXRT_PROBE_ROLE="exporter")
        self.p = subprocess.Popen([HELPER, "--exact", "probe_entry", "--nocapture", "--test-threads", "1"], env=env,
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self.lock = threading.Lock()
        helpers.append(self.p)
        assert self._next().startswith("ready"), "helper did not start"

    def _next(self):
        while True:
            line = self.p.stdout.readline()
            if not line:
                raise RuntimeError(f"helper ended: {self.p.wait()}")
            if "@@ " in line:  # libtest may print "test probe_entry ... " first on the line
                return line[line.index("@@ ") + 3:].strip()

    def ask(self, command):
        with self.lock:
            self.p.stdin.write(command + "\n"); self.p.stdin.flush()
            return self._next()

    def alloc(self, size, seed=0):
        r = self.ask(f"alloc 0 {size} {seed}").split()
        assert r[0] == "ok", r
        return int(r[1]), base64.b64encode(bytes.fromhex(r[2])).decode()

    def write(self, mid, off, data):
        assert self.ask(f"write {mid} {off} {data.hex()}") == "ok"

    def read(self, mid, off, n):
        r = self.ask(f"read {mid} {off} {n}").split()
        return bytes.fromhex(r[1]) if r[0] == "ok" and len(r) > 1 else None

    def end(self, how="exit"):
        try:
            self.p.stdin.write(how + "\n"); self.p.stdin.flush()
        except BrokenPipeError:
            pass
        return self.p.wait(timeout=60)


def free_port():
    s = socket.socket(); s.bind(("127.0.0.1", 0)); p = s.getsockname()[1]; s.close(); return p


root = f"{work}/repo"
os.makedirs(f"{root}/add"); shutil.copy(MODEL, f"{root}/add/model.onnx")
os.makedirs(f"{root}/slow"); shutil.copy(IDENTITY, f"{root}/slow/model.onnx")
with open(f"{root}/slow/config.json", "w") as f:
    f.write('{"batching": true, "max_batch": 64, "max_delay_us": 1500000, "provider": "cpu"}')
port = free_port()
log = open(f"{work}/serve.log", "w")
server = subprocess.Popen([SERVE, "--model-repository", root, "--listen", f"127.0.0.1:{port}", "--grpc-listen", "off", "--cuda-shared-memory", "true"]
                          + os.environ.get("SERVE_ARGS", "").split(), stdout=log, stderr=subprocess.STDOUT)


@atexit.register
def cleanup():
    # Whatever happened (an exception included): no serve or helper process is left behind.
    for p in helpers + [server]:
        if p.poll() is None:
            p.kill()
            p.wait()


def request(method, path, body=None, timeout=60):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        c.request(method, path, body=json.dumps(body).encode() if body is not None else None,
                  headers={"Content-Type": "application/json"})
        r = c.getresponse()
        return r.status, r.read().decode(errors="replace")
    except Exception as e:
        return None, f"{type(e).__name__}: {e}"
    finally:
        c.close()


for _ in range(600):
    if request("GET", "/v2/health/ready", timeout=2)[0] == 200:
        break
    time.sleep(0.1)
else:
    sys.exit(f"serve did not start: {open(work + '/serve.log').read()[-2000:]}")


def alive():
    return server.poll() is None and request("GET", "/v2/health/live", timeout=10)[0] == 200


def register(name, handle, size, device=0):
    return request("POST", f"/v2/cudasharedmemory/region/{name}/register",
                   {"raw_handle": {"b64": handle}, "device_id": device, "byte_size": size})


def unregister(name=None):
    return request("POST", f"/v2/cudasharedmemory/region/{name}/unregister" if name else "/v2/cudasharedmemory/unregister", {})


def f32(xs):
    return struct.pack(f"<{len(xs)}f", *xs)


def place(region, off):
    return {"shared_memory_region": region, "shared_memory_byte_size": 24, "shared_memory_offset": off}


def infer(region, a_off, b_off, out_off, out_region=None):
    return request("POST", "/v2/models/add/infer", {
        "inputs": [{"name": "a", "shape": [2, 3], "datatype": "FP32", "parameters": place(region, a_off)},
                   {"name": "b", "shape": [2, 3], "datatype": "FP32", "parameters": place(region, b_off)}],
        "outputs": [{"name": "sum", "parameters": place(out_region or region, out_off)}]})


def counts():
    return len(os.listdir(f"/proc/{server.pid}/fd")), sum(1 for _ in open(f"/proc/{server.pid}/maps"))


A = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]
SUM = tuple(x + 0.5 for x in A)
ex = Exporter()
main_id, main_h = ex.alloc(1 << 20)
ex.write(main_id, 0, f32(A)); ex.write(main_id, 32, f32([0.5] * 6))
s, t = register("main", main_h, 1 << 20)
attack("register main (1 MiB)", f"{s} {t[:200]}", s != 200)
s, t = infer("main", 0, 32, 4096)
got = ex.read(main_id, 4096, 24)
attack("infer through main", f"{s} {t[:120]} out={struct.unpack('<6f', got) if got else None}",
       s != 200 or struct.unpack("<6f", got) != SUM)
c0 = counts()

# 1. Regions longer than the allocation; odd device ids; garbage handles of the right length.
for size in [(1 << 20) + 1, (1 << 20) + 4096, 1 << 22, 1 << 30, 2**63, 2**64 - 1]:
    s, t = register("long", main_h, size)
    attack(f"register byte_size {size} over a 1 MiB allocation", f"{s} {t[:200]}", s != 400)
small_id, small_h = ex.alloc(100)
for size in [100, 101, 512, 4096]:
    s, t = register(f"small{size}", small_h, size)
    attack(f"register byte_size {size} over a 100-byte allocation", f"{s} {t[:200]}", s not in (200, 400) or (size == 100 and s != 200))
for device in [-1, 1, 7, 2**31 - 1, 2**31, -2**63]:
    s, t = register("dev", main_h, 64, device)
    attack(f"register device_id {device}", f"{s} {t[:200]}", s != 400)
raw = bytearray(base64.b64decode(main_h))
for label, bad in [("zeros", bytes(64)), ("0xff", b"\xff" * 64), ("byte 0 flipped", bytes([raw[0] ^ 1]) + raw[1:]),
                   ("byte 63 flipped", raw[:63] + bytes([raw[63] ^ 0x80])), ("byte 20 flipped", raw[:20] + bytes([raw[20] ^ 0x10]) + raw[21:])]:
    s, t = register("garbage", base64.b64encode(bytes(bad)).decode(), 64)
    attack(f"register garbage handle ({label})", f"{s} {t[:200]}", s is None or s >= 500)
    if s == 200:
        unregister("garbage")
s, t = infer("main", 0, 32, 4096 + 64)
attack("main still infers after the refusals (no sticky CUDA error)", f"{s} {t[:120]}", s != 200)

# 2. One handle under 16 names, unregistered in odd orders while 4 clients infer.
names = [f"n{i}" for i in range(16)]
for n in names:
    register(n, main_h, 1 << 20)
tally = {"ok": 0, "wrong": 0, "gone": 0, "other": 0}
lock = threading.Lock()


def client(i, count, pick, tally):
    rnd = random.Random(i)
    for k in range(count):
        region = pick(rnd)
        out = 8192 + 256 * i
        s, t = infer(region, 0, 32, out)
        with lock:
            if s == 200:
                got = ex.read(main_id, out, 24)
                tally["ok" if got and struct.unpack("<6f", got) == SUM else "wrong"] += 1
            elif s == 400 and "no shared-memory region" in t:
                tally["gone"] += 1
            else:
                tally["other"] += 1
                tally.setdefault("samples", []).append(f"{s} {t[:150]}")


threads = [threading.Thread(target=client, args=(i, 120, lambda r: r.choice(names), tally)) for i in range(4)]
[t.start() for t in threads]
order = [0, 15, 7, 8, 3, 12, 1, 14, 5, 10, 2, 13, 6, 9, 4, 11]
for cycle in range(6):
    for j in order[cycle % 4:] + order[:cycle % 4]:
        unregister(names[j])
    for n in names:
        register(n, main_h, 1 << 20 if cycle % 2 else 4096)
[t.join() for t in threads]
attack("16 names of one handle, odd unregister orders, 4 clients", tally, tally["wrong"] or tally["other"])
s, t = infer("main", 0, 32, 4096)
attack("main after the churn", f"{s}", s != 200)

# 3. Freed then reallocated memory: a new handle must reach the new memory.
x_id, x_h = ex.alloc(4096, 1)
ex.write(x_id, 0, f32(A)); ex.write(x_id, 32, f32([0.5] * 6))
s, _ = register("x", x_h, 4096)
ex.ask(f"free {x_id}")
y_id, y_h = ex.alloc(4096, 2)
ex.write(y_id, 0, f32([10.0] * 6)); ex.write(y_id, 32, f32([0.5] * 6))
attack("realloc: new handle equals the freed one's", x_h == y_h)
s, t = register("y", y_h, 4096)
s2, t2 = infer("y", 0, 32, 512)
got = ex.read(y_id, 512, 24)
attack("realloc: infer through y writes y's memory", f"{s} / {s2} {t2[:120]} out={struct.unpack('<6f', got)}",
       s != 200 or s2 != 200 or struct.unpack("<6f", got) != (10.5,) * 6)
ex.write(y_id, 1024, bytes(24))
s, t = infer("x", 0, 32, 1024)
got = ex.read(y_id, 1024, 24)
attack("realloc: infer through the freed x", f"{s} {t[:160]}; y changed: {got != bytes(24)}", got != bytes(24) or s is None or s >= 500)
unregister("x"); unregister("y")

# 4. The owner process ends (cleanly, then by abort) while its region is registered.
for how in ["exit", "abort"]:
    other = Exporter()
    o_id, o_h = other.alloc(4096)
    other.write(o_id, 0, f32(A)); other.write(o_id, 32, f32([0.5] * 6))
    register("owned", o_h, 4096)
    s1, _ = infer("owned", 0, 32, 64)
    code = other.end(how)
    s, t = infer("owned", 0, 32, 128)
    attack(f"owner {how}s (code {code}), then infer through its region", f"before {s1}; after {s} {t[:200]}", s is None or s > 500 or not alive())
    s, t = unregister("owned")
    attack(f"unregister after the owner {how}", f"{s}", s != 200)
    s, t = infer("main", 0, 32, 4096)
    got = ex.read(main_id, 4096, 24)
    attack(f"main still right after an owner {how}", f"{s} {t[:120]}", s != 200 or struct.unpack("<6f", got) != SUM)
    s, t = register("after", o_h, 4096)
    attack(f"register the dead owner's handle ({how})", f"{s} {t[:200]}", s != 400)

# 5. Eight clients through their own regions while another registers and unregisters.
own = []
for i in range(8):
    mid, h = ex.alloc(4096, 10 + i)
    ex.write(mid, 0, f32([float(i)] * 6)); ex.write(mid, 32, f32([0.5] * 6))
    register(f"c{i}", h, 4096)
    own.append(mid)
tally8 = {"ok": 0, "wrong": 0, "other": 0}


def client8(i):
    for k in range(60):
        off = 256 + 32 * (k % 8)
        s, t = infer(f"c{i}", 0, 32, off)
        with lock:
            got = ex.read(own[i], off, 24) if s == 200 else None
        with lock:
            if s == 200 and got and struct.unpack("<6f", got) == (i + 0.5,) * 6:
                tally8["ok"] += 1
            elif s == 200:
                tally8["wrong"] += 1
            else:
                tally8["other"] += 1
                tally8.setdefault("samples", []).append(f"{s} {t[:150]}")


churn = {}


def churner():
    for k in range(150):
        for s, _ in [register(f"z{k % 5}", main_h, 4096), unregister(f"z{(k + 2) % 5}"), register("c0", main_h, 64),
                     request("GET", "/v2/cudasharedmemory/status")]:
            churn[s] = churn.get(s, 0) + 1


threads = [threading.Thread(target=client8, args=(i,)) for i in range(8)] + [threading.Thread(target=churner)]
[t.start() for t in threads]; [t.join() for t in threads]
attack("8 clients x 60 infers through own CUDA regions while another churns", f"{tally8} churn codes {churn}",
       tally8["wrong"] or tally8["other"] or any(c is None or c >= 500 for c in churn))

# 6. Mixed: CUDA inputs, output into a system region; names shared between the kinds.
key = f"probe-cudashm-{os.getpid()}"
with open(f"/dev/shm/{key}", "wb") as f:
    f.write(bytes(4096))
s, t = request("POST", "/v2/systemsharedmemory/region/sys/register", {"key": f"/{key}", "byte_size": 4096})
s2, t2 = infer("main", 0, 32, 100, out_region="sys")
got = open(f"/dev/shm/{key}", "rb").read()[100:124]
attack("CUDA inputs, output into a system region", f"{s}/{s2} {t2[:120]}", s2 != 200 or struct.unpack("<6f", got) != SUM)
s, t = register("sys", main_h, 64)
attack("CUDA register over a system name", f"{s} {t[:160]}", s != 400)
s, t = request("POST", "/v2/systemsharedmemory/region/main/register", {"key": f"/{key}", "byte_size": 64})
attack("system register over a CUDA name", f"{s} {t[:160]}", s != 400)
s, t = request("POST", "/v2/systemsharedmemory/region/main/unregister", {})
attack("system unregister of a CUDA name", f"{s} {t[:160]}", s != 400)
s, t = infer("main", 0, 32, 4096)
attack("main survives the other kind's unregister", f"{s}", s != 200)
request("POST", "/v2/systemsharedmemory/region/sys/unregister", {})
os.remove(f"/dev/shm/{key}")

# 7. Leaks: 300 register/unregister cycles of one handle, 200 allocations registered at once.
unregister()
c1 = counts()
for k in range(300):
    register("cycle", main_h, 1 << 20); unregister("cycle")
mids = []
for k in range(200):
    mid, h = ex.alloc(4096 + k, 50 + k)
    register(f"many{k}", h, 4096 + k)
    mids.append(mid)
s, t = request("GET", "/v2/cudasharedmemory/status")
listed = len(json.loads(t)) if s == 200 else None
unregister()
for mid in mids:
    ex.ask(f"free {mid}")
c2 = counts()
attack("fds and mapping lines: start / before cycles / after 300 cycles + 200 regions", f"{c0} / {c1} / {c2}; listed {listed}",
       c2[0] > c1[0] + 8 or c2[1] > c1[1] + 64 or listed != 200)

# 7b. An output region's name re-registered by another client while the request runs: the
# output must go to the memory named when the request was accepted (or be refused), never into
# the other client's memory (module docs: a region in use stays open until the request is done).
mine, theirs = Exporter(), Exporter()
m_id, m_h = mine.alloc(4096); t_id, t_h = theirs.alloc(4096)
mine.write(m_id, 0, f32([1, 2, 3, 4]))
register("in_a", m_h, 4096); register("out_a", m_h, 4096)
res = {}


def slow_infer():
    res["r"] = request("POST", "/v2/models/slow/infer", {
        "inputs": [{"name": "x", "shape": [1, 4], "datatype": "FP32", "parameters": {"shared_memory_region": "in_a", "shared_memory_byte_size": 16}}],
        "outputs": [{"name": "y", "parameters": {"shared_memory_region": "out_a", "shared_memory_byte_size": 16, "shared_memory_offset": 1024}}]})


th = threading.Thread(target=slow_infer); th.start(); time.sleep(0.4)
unregister("out_a"); s_re, _ = register("out_a", t_h, 4096); th.join()
in_theirs = theirs.read(t_id, 1024, 16) == f32([1, 2, 3, 4])
in_mine = mine.read(m_id, 1024, 16) == f32([1, 2, 3, 4])
attack("output region name re-registered by another process during the run",
       f"infer {res['r'][0]} {res['r'][1][:120]}; re-register {s_re}; output in the requester's memory {in_mine}; in the OTHER process's memory {in_theirs}",
       in_theirs)
unregister("in_a"); unregister("out_a"); mine.end(); theirs.end()

# 8. The region limit.
codes = {}
for k in range(1030):
    s, t = register(f"lim{k}", main_h, 64)
    codes[s] = codes.get(s, 0) + 1
attack("1030 names of one handle (limit 1024)", f"{codes}; last: {t[:160]}", None in codes or any(c >= 500 for c in codes if c))
unregister()
register("main", main_h, 1 << 20)
s, t = infer("main", 0, 32, 4096)
attack("main after everything", f"{s}", s != 200)
attack("server alive at the end", alive(), not alive())
ex.end()
server.terminate(); server.wait(timeout=60)
tail = open(f"{work}/serve.log").read()
for word in ["panicked", "SIGSEGV", "core dumped", "CUDA error"]:
    if word in tail:
        attack(f"serve log mentions {word!r}", tail[tail.index(word) - 200:tail.index(word) + 300].replace("\n", " | "), word != "CUDA error")
print(f"SUMMARY: {len(broken)} BROKEN (serve log: {work}/serve.log)")
for b in broken:
    print(b[:500])
