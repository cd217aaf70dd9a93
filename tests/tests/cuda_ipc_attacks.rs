//! Outside review of issue 45 (attacker's view, safe public API only): CUDA IPC device memory
//! (`onnxrt::providers::cuda`) across real processes. Placed at tests/tests/ and run on the GPU
//! machine:
//!
//! ```text
//! cp probe/cuda_ipc_attacks.rs tests/tests/
//! cargo test -p onnxrt-tests --features gpu-tests --test cuda_ipc_attacks -- --test-threads 1 --nocapture
//! ```
//! Every attack prints `ATTACK name: outcome`. A crash (signal), a hang, a panic in a child, or
//! wrong bytes fails the test. The same binary is the "other process": `probe_entry` with
//! `ONNXRT_PROBE_ROLE=mapper` (maps handles it is sent on stdin) or `exporter` (allocates and
//! exports; used by probe/serve_cuda_attacks.sh). Replies are stdout lines starting with `@@ `.
#![cfg(feature = "gpu-tests")]

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use onnxrt::providers::cuda::{device_count, CudaIpcHandle, MappedDeviceMemory, SharedDeviceMemory};
use onnxrt::Error;

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn unhex(text: &str) -> Vec<u8> {
    (0..text.len() / 2).map(|i| u8::from_str_radix(&text[2 * i..2 * i + 2], 16).unwrap_or(0)).collect()
}

/// Bytes of pattern `seed`: byte i is (i * 7 + seed * 31 + 3) mod 256.
fn pattern(seed: usize, len: usize) -> Vec<u8> {
    (0..len).map(|i| (i.wrapping_mul(7).wrapping_add(seed * 31 + 3)) as u8).collect()
}

fn kind(e: &Error) -> String {
    match e {
        Error::InvalidArgument { .. } => "InvalidArgument",
        Error::Ort { .. } => "Ort",
        Error::ProviderLoad { .. } => "ProviderLoad",
        Error::OutOfMemory { .. } => "OutOfMemory",
        Error::NoSuchDevice { .. } => "NoSuchDevice",
        Error::GpuLibrary { .. } => "GpuLibrary",
        _ => "OtherError",
    }
    .to_owned()
}

fn err_line(e: &Error) -> String {
    format!("err {} {}", kind(e), e.to_string().replace('\n', " "))
}

// ---------------------------------------------------------------------------------------------
// The other process.

/// Does nothing unless started as a helper by `Peer::start` or the serve script.
#[test]
fn probe_entry() {
    let Ok(role) = std::env::var("ONNXRT_PROBE_ROLE") else { return };
    let stdin = std::io::stdin();
    let mut maps: Vec<Option<Arc<MappedDeviceMemory>>> = Vec::new();
    let mut owned: Vec<Option<SharedDeviceMemory>> = Vec::new();
    let mut spin: Option<std::thread::JoinHandle<String>> = None;
    let reply = |line: String| {
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "@@ {line}");
        let _ = out.flush();
    };
    reply(format!("ready {role}"));
    for line in stdin.lock().lines() {
        let Ok(line) = line else { break };
        let w: Vec<&str> = line.split_whitespace().collect();
        let n = |i: usize| w.get(i).and_then(|s| s.parse::<usize>().ok()).unwrap_or(0);
        let i = |i: usize| w.get(i).and_then(|s| s.parse::<i64>().ok()).unwrap_or(0);
        let answer = match (role.as_str(), w.first().copied().unwrap_or("")) {
            (_, "exit") => break,
            (_, "abort") => std::process::abort(),
            // Exporter: alloc DEVICE LEN SEED -> ok ID HANDLEHEX
            ("exporter", "alloc") => match SharedDeviceMemory::new(i(1) as i32, n(2)) {
                Ok(m) => {
                    let _ = m.write(0, &pattern(n(3), m.len()));
                    match m.ipc_handle() {
                        Ok(h) => {
                            owned.push(Some(m));
                            format!("ok {} {}", owned.len() - 1, hex(h.as_bytes()))
                        }
                        Err(e) => err_line(&e),
                    }
                }
                Err(e) => err_line(&e),
            },
            ("exporter", "free") => {
                if let Some(slot) = owned.get_mut(n(1)) {
                    *slot = None;
                }
                "ok".into()
            }
            ("exporter", "write") => match owned.get(n(1)).and_then(Option::as_ref) {
                Some(m) => {
                    m.write(n(2), &unhex(w.get(3).unwrap_or(&""))).map_or_else(|e| err_line(&e), |()| "ok".into())
                }
                None => "err NoSuchId".into(),
            },
            ("exporter", "read") => match owned.get(n(1)).and_then(Option::as_ref) {
                Some(m) => {
                    let mut into = vec![0u8; n(3)];
                    m.read(n(2), &mut into).map_or_else(|e| err_line(&e), |()| format!("ok {}", hex(&into)))
                }
                None => "err NoSuchId".into(),
            },
            // Mapper: open HEX DEVICE LEN -> ok ID
            ("mapper", "open") => match CudaIpcHandle::from_bytes(&unhex(w.get(1).unwrap_or(&""))) {
                Ok(h) => match MappedDeviceMemory::open(&h, i(2) as i32, n(3)) {
                    Ok(m) => {
                        maps.push(Some(Arc::new(m)));
                        format!("ok {}", maps.len() - 1)
                    }
                    Err(e) => err_line(&e),
                },
                Err(e) => err_line(&e),
            },
            ("mapper", "drop") => {
                if let Some(slot) = maps.get_mut(n(1)) {
                    *slot = None;
                }
                "ok".into()
            }
            ("mapper", "read") => match maps.get(n(1)).and_then(Option::as_ref) {
                Some(m) => {
                    let mut into = vec![0u8; n(3)];
                    m.read(n(2), &mut into).map_or_else(|e| err_line(&e), |()| format!("ok {}", hex(&into)))
                }
                None => "err NoSuchId".into(),
            },
            ("mapper", "readat") => match maps.get(n(1)).and_then(Option::as_ref) {
                // readat ID OFFSET(usize, may be huge) LEN
                Some(m) => {
                    let offset = w.get(2).and_then(|s| s.parse::<usize>().ok()).unwrap_or(usize::MAX);
                    let mut into = vec![0u8; n(3)];
                    m.read(offset, &mut into).map_or_else(|e| err_line(&e), |()| format!("ok {}", hex(&into)))
                }
                None => "err NoSuchId".into(),
            },
            ("mapper", "write") => match maps.get(n(1)).and_then(Option::as_ref) {
                Some(m) => {
                    let offset = w.get(2).and_then(|s| s.parse::<usize>().ok()).unwrap_or(usize::MAX);
                    m.write(offset, &unhex(w.get(3).unwrap_or(&""))).map_or_else(|e| err_line(&e), |()| "ok".into())
                }
                None => "err NoSuchId".into(),
            },
            // Own memory still works (no sticky CUDA error in this process).
            ("mapper", "own") => match SharedDeviceMemory::new(0, 64) {
                Ok(m) => {
                    let mut into = [0u8; 64];
                    match m.write(0, &pattern(9, 64)).and_then(|()| m.read(0, &mut into)) {
                        Ok(()) if into[..] == pattern(9, 64)[..] => "ok".into(),
                        Ok(()) => "err WrongBytes".into(),
                        Err(e) => err_line(&e),
                    }
                }
                Err(e) => err_line(&e),
            },
            // hammer HEX LEN SEED THREADS ITERS: threads open/read/drop the handle at once while
            // one long-lived mapping reads; counts of (right, wrong, errors).
            ("mapper", "hammer") => hammer(&unhex(w.get(1).unwrap_or(&"")), n(2), n(3), n(4), n(5)),
            // spin ID SEED COUNT: reads in a thread; spinwait gives (pattern, zero, other, err).
            ("mapper", "spin") => match maps.get(n(1)).and_then(Option::as_ref) {
                Some(m) => {
                    let (m, seed, count) = (Arc::clone(m), n(2), n(3));
                    spin = Some(std::thread::spawn(move || {
                        let want = pattern(seed, m.len());
                        let (mut right, mut zero, mut other, mut err) = (0, 0, 0, 0);
                        let mut last_err = String::new();
                        let mut into = vec![0u8; m.len()];
                        for _ in 0..count {
                            match m.read(0, &mut into) {
                                Ok(()) if into == want => right += 1,
                                Ok(()) if into.iter().all(|&b| b == 0) => zero += 1,
                                Ok(()) => other += 1,
                                Err(e) => {
                                    err += 1;
                                    last_err = err_line(&e);
                                }
                            }
                        }
                        format!("ok right={right} zero={zero} other={other} err={err} last=[{last_err}]")
                    }));
                    "ok".into()
                }
                None => "err NoSuchId".into(),
            },
            ("mapper", "spinwait") => match spin.take() {
                Some(t) => t.join().unwrap_or_else(|_| "err SpinPanicked".into()),
                None => "err NoSpin".into(),
            },
            (r, c) => format!("err UnknownCommand {r} {c}"),
        };
        reply(answer);
    }
}

fn hammer(handle: &[u8], len: usize, seed: usize, threads: usize, iters: usize) -> String {
    let Ok(h) = CudaIpcHandle::from_bytes(handle) else { return "err BadHandle".into() };
    let long = match MappedDeviceMemory::open(&h, 0, len) {
        Ok(m) => m,
        Err(e) => return err_line(&e),
    };
    let want = pattern(seed, len);
    let (right, wrong, errs) = (AtomicUsize::new(0), AtomicUsize::new(0), AtomicUsize::new(0));
    let last = std::sync::Mutex::new(String::new());
    std::thread::scope(|s| {
        for t in 0..threads {
            let (want, right, wrong, errs, last, long) = (&want, &right, &wrong, &errs, &last, &long);
            s.spawn(move || {
                let mut held: Vec<MappedDeviceMemory> = Vec::new();
                for k in 0..iters {
                    let l = 1 + (k * 131 + t * 17) % len;
                    match MappedDeviceMemory::open(&h, 0, l) {
                        Ok(m) => {
                            let mut into = vec![0u8; l];
                            match m.read(0, &mut into) {
                                Ok(()) if into[..] == want[..l] => right.fetch_add(1, Ordering::Relaxed),
                                Ok(()) => wrong.fetch_add(1, Ordering::Relaxed),
                                Err(e) => {
                                    *last.lock().expect("lock") = err_line(&e);
                                    errs.fetch_add(1, Ordering::Relaxed)
                                }
                            };
                            // Odd drop orders: keep some, drop the oldest, or all.
                            held.push(m);
                            match k % 5 {
                                0 => drop(held.pop()),
                                1 if !held.is_empty() => drop(held.remove(0)),
                                3 => held.clear(),
                                _ => {}
                            }
                        }
                        Err(e) => {
                            *last.lock().expect("lock") = err_line(&e);
                            errs.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                    let mut into = vec![0u8; len];
                    match long.read(0, &mut into) {
                        Ok(()) if into == *want => right.fetch_add(1, Ordering::Relaxed),
                        Ok(()) => wrong.fetch_add(1, Ordering::Relaxed),
                        Err(_) => errs.fetch_add(1, Ordering::Relaxed),
                    };
                }
            });
        }
    });
    let last = last.lock().expect("lock").clone();
    format!("ok right={} wrong={} err={} last=[{last}]", right.into_inner(), wrong.into_inner(), errs.into_inner())
}

// ---------------------------------------------------------------------------------------------
// The test process's side.

/// A helper process of this binary, driven by lines.
struct Peer {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
}

impl Peer {
    fn start(role: &str) -> Peer {
        let mut child = Command::new(std::env::current_exe().expect("test binary"))
            .args(["--exact", "probe_entry", "--nocapture", "--test-threads", "1"])
            .env("ONNXRT_PROBE_ROLE", role)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("helper starts");
        let stdin = child.stdin.take().expect("stdin");
        let stdout = BufReader::new(child.stdout.take().expect("stdout"));
        let mut peer = Peer { child, stdin, stdout };
        let hello = peer.next();
        assert!(hello.starts_with("ready"), "{hello}");
        peer
    }

    fn next(&mut self) -> String {
        let mut line = String::new();
        loop {
            line.clear();
            let read = self.stdout.read_line(&mut line).expect("reads the helper");
            if read == 0 {
                let status = self.child.wait().expect("wait");
                panic!("BROKEN: the helper process ended without answering: {status:?}");
            }
            // libtest may print "test probe_entry ... " before the first reply on its line.
            if let Some(at) = line.find("@@ ") {
                return line[at + 3..].trim_end().to_owned();
            }
        }
    }

    fn ask(&mut self, command: &str) -> String {
        writeln!(self.stdin, "{command}").expect("writes the helper");
        self.stdin.flush().expect("flush");
        self.next()
    }

    fn finish(mut self) {
        let _ = writeln!(self.stdin, "exit");
        let status = self.child.wait().expect("wait");
        assert!(status.success() || status.code().is_some(), "BROKEN: the helper ended by a signal: {status:?}");
    }
}

fn attack(name: &str, outcome: impl std::fmt::Display) {
    println!("ATTACK {name}: {outcome}");
}

fn exported(len: usize, seed: usize) -> (SharedDeviceMemory, String) {
    let m = SharedDeviceMemory::new(0, len).expect("device memory");
    m.write(0, &pattern(seed, len)).expect("writes");
    let h = hex(m.ipc_handle().expect("exports").as_bytes());
    (m, h)
}

fn bytes_of(reply: &str) -> Option<Vec<u8>> {
    reply.strip_prefix("ok ").map(unhex)
}

/// Never a GPU: the refusals that need no device (also runs, skipping the no-CUDA part, on a GPU).
#[test]
fn refusals_that_need_no_gpu() {
    for len in [0usize, 1, 63, 65, 128, 1 << 20] {
        let r = CudaIpcHandle::from_bytes(&vec![7u8; len]);
        attack(&format!("from_bytes len={len}"), format!("{:?}", r.as_ref().map(|_| ()).map_err(kind)));
        assert!(matches!(r, Err(Error::InvalidArgument { .. })), "BROKEN: {len} bytes accepted");
    }
    let h = CudaIpcHandle::from_bytes(&[0x5a; 64]).expect("64 bytes");
    assert!(!format!("{h:?}").contains("5a") && !format!("{h:?}").contains("90"), "BROKEN: Debug shows the bytes");
    assert!(matches!(SharedDeviceMemory::new(0, 0), Err(Error::InvalidArgument { .. })));
    assert!(matches!(MappedDeviceMemory::open(&h, 0, 0), Err(Error::InvalidArgument { .. })));
    let count = device_count();
    attack("device_count", format!("{:?}", count.as_ref().map_err(kind)));
    if count.map_or(true, |c| c == 0) {
        for (device, len) in [(0, 16usize), (-1, 16), (i32::MAX, 16), (i32::MIN, 1), (0, usize::MAX)] {
            let r = SharedDeviceMemory::new(device, len);
            attack(
                &format!("no-gpu SharedDeviceMemory::new({device},{len})"),
                format!("{:?}", r.as_ref().map(|_| ()).map_err(|e| e.to_string())),
            );
            assert!(r.is_err(), "BROKEN: memory without a GPU");
            let r = MappedDeviceMemory::open(&h, device, len);
            attack(
                &format!("no-gpu MappedDeviceMemory::open({device},{len})"),
                format!("{:?}", r.as_ref().map(|_| ()).map_err(|e| e.to_string())),
            );
            assert!(r.is_err(), "BROKEN: a mapping without a GPU");
        }
    }
}

/// The helper protocol itself (no GPU needed): a garbage handle is refused by a typed error line.
#[test]
fn helper_answers_every_command() {
    let mut p = Peer::start("mapper");
    let r = p.ask(&format!("open {} 0 16", hex(&[0u8; 64])));
    attack("mapper: all-zero handle", &r);
    assert!(r.starts_with("err "), "BROKEN: an all-zero handle mapped: {r}");
    assert!(p.ask("read 99 0 4").starts_with("err NoSuchId"));
    assert!(p.ask("bogus").starts_with("err UnknownCommand"));
    p.finish();
}

#[test]
fn exporter_refusals_on_the_gpu() {
    let count = device_count().expect("CUDA");
    assert!(count > 0, "run on the GPU machine");
    for (device, len) in [(-1, 16usize), (count, 16), (i32::MAX, 16), (i32::MIN, 16), (0, usize::MAX), (0, 1 << 50)] {
        let r = SharedDeviceMemory::new(device, len);
        attack(
            &format!("SharedDeviceMemory::new({device},{len})"),
            format!("{:?}", r.as_ref().map(|_| ()).map_err(err_line)),
        );
        assert!(r.is_err(), "BROKEN: accepted");
    }
    let (m, h) = exported(4096, 1);
    let handle = CudaIpcHandle::from_bytes(&unhex(&h)).expect("64");
    let again = m.ipc_handle().expect("exports twice");
    attack("ipc_handle twice", if again == handle { "same bytes" } else { "different bytes" });
    let own = MappedDeviceMemory::open(&handle, 0, 16);
    attack("open own handle", format!("{:?}", own.as_ref().map(|_| ()).map_err(err_line)));
    assert!(own.is_err(), "BROKEN: own handle mapped");
    let mut one = [0u8; 1];
    for offset in [4096usize, 4097, usize::MAX, usize::MAX - 1] {
        assert!(matches!(m.read(offset, &mut one), Err(Error::InvalidArgument { .. })), "BROKEN: read at {offset}");
        assert!(matches!(m.write(offset, &[1]), Err(Error::InvalidArgument { .. })), "BROKEN: write at {offset}");
    }
    // An empty copy at the end is in bounds: Ok, or CUDA's typed refusal of a 0-byte copy.
    attack("exporter: empty read at the end", format!("{:?}", m.read(4096, &mut []).map_err(|e| err_line(&e))));
    let mut all = vec![0u8; 4096];
    m.read(0, &mut all).expect("reads");
    assert_eq!(all, pattern(1, 4096), "BROKEN: own bytes changed by the refusals");
}

#[test]
fn mapper_bounds_lengths_and_device_ids() {
    let (_m, h) = exported(4096, 2);
    let mut p = Peer::start("mapper");
    for (device, len, ok) in [
        (0i64, 0usize, false),
        (0, usize::MAX, false),
        (0, 4097, false),
        (0, 1 << 40, false),
        (-1, 16, false),
        (1 << 20, 16, false),
        (i32::MAX as i64, 16, false),
        (i32::MIN as i64, 16, false),
        (0, 4096, true),
        (0, 1, true),
    ] {
        let r = p.ask(&format!("open {h} {device} {len}"));
        attack(&format!("open device={device} len={len}"), &r);
        assert_eq!(r.starts_with("ok"), ok, "BROKEN: open device={device} len={len}: {r}");
    }
    // Ids: the 4096 mapping is the first ok (0), the 1-byte one is 1.
    for (id, offset, len, ok) in [
        (0, 0usize, 4096usize, true),
        (0, 4096, 0, true),
        (0, 4096, 1, false),
        (0, 4097, 0, false),
        (0, usize::MAX, 1, false),
        (0, usize::MAX, 0, false),
        (0, usize::MAX - 4095, 4096, false),
        (1, 0, 1, true),
        (1, 0, 2, false),
        (1, 1, 0, true),
    ] {
        let r = p.ask(&format!("readat {id} {offset} {len}"));
        attack(&format!("read id={id} offset={offset} len={len}"), if r.len() > 80 { &r[..80] } else { &r });
        // In-bounds empty copies may get CUDA's typed refusal; anything out of bounds must be refused.
        let lenient = ok && len == 0 && r.starts_with("err");
        assert!(lenient || r.starts_with("ok") == ok, "BROKEN: read id={id} offset={offset} len={len}: {r}");
        if ok && len > 0 {
            assert_eq!(bytes_of(&r).expect("bytes"), pattern(2, 4096)[offset..offset + len], "BROKEN: wrong bytes");
        }
        // The same bytes written back where in bounds (nothing changes), 0xEE elsewhere.
        let body = if ok { pattern(2, 4096)[offset..offset + len].to_vec() } else { vec![0xEE; len.min(4096)] };
        let w = p.ask(&format!("write {id} {offset} {}", hex(&body)));
        assert!(lenient || w.starts_with("ok") == ok, "BROKEN: write id={id} offset={offset} len={len}: {w}");
    }
    assert_eq!(p.ask("own"), "ok", "BROKEN: the mapper's own CUDA work fails after the refusals");
    p.finish();
}

#[test]
fn allocation_slack_never_reaches_a_neighbour() {
    // Past a small allocation lies the driver's rounding; past that, perhaps another allocation
    // of the exporter. A mapping longer than asked must never show a neighbour's bytes.
    let mut p = Peer::start("mapper");
    for size in [1usize, 100, 513, 4097, (1 << 21) + 1] {
        let (m, h) = exported(size, 3);
        let neighbours: Vec<SharedDeviceMemory> = (0..4)
            .map(|_| {
                let n = SharedDeviceMemory::new(0, 4096).expect("neighbour");
                n.write(0, &[0xA5; 4096]).expect("secret");
                n
            })
            .collect();
        let (mut lo, mut hi) = (size, 1usize << 32);
        assert!(p.ask(&format!("open {h} 0 {size}")).starts_with("ok"), "BROKEN: its own size refused");
        while lo + 1 < hi {
            let mid = lo + (hi - lo) / 2;
            let r = p.ask(&format!("open {h} 0 {mid}"));
            if r.starts_with("ok") {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        let mut leak = false;
        if lo > size {
            let r = p.ask(&format!("open {h} 0 {lo}"));
            let id: usize = r.strip_prefix("ok ").and_then(|s| s.parse().ok()).expect("reopen");
            let bytes = bytes_of(&p.ask(&format!("read {id} 0 {}", lo.min(size + (1 << 22))))).unwrap_or_default();
            leak = bytes.len() > size && bytes[size..].windows(64).any(|w| w.iter().all(|&b| b == 0xA5));
        }
        attack(
            &format!("slack size={size}"),
            format!("open accepts up to {lo} bytes; neighbour's secret visible: {leak}"),
        );
        assert!(!leak, "BROKEN: a mapping of {size} bytes reads another allocation");
        drop((m, neighbours));
    }
    p.finish();
}

#[test]
fn freed_then_reallocated_memory_is_never_read_through_a_stale_mapping() {
    let mut p = Peer::start("mapper");
    let mut kept = Vec::new();
    let mut handles = Vec::new();
    for round in 0..20usize {
        let (m, h) = exported(4096, 100 + round);
        let dup = handles.iter().position(|old: &String| *old == h);
        let r = p.ask(&format!("open {h} 0 4096"));
        let id: Option<usize> = r.strip_prefix("ok ").and_then(|s| s.parse().ok());
        let seen = id.and_then(|id| bytes_of(&p.ask(&format!("read {id} 0 4096"))));
        let right = seen.as_deref() == Some(&pattern(100 + round, 4096)[..]);
        let stale = dup.is_some_and(|d| seen.as_deref() == Some(&pattern(100 + d, 4096)[..]));
        attack(
            &format!("realloc round {round}"),
            format!("handle equals round {dup:?}'s; open {r}; right bytes {right}; stale {stale}"),
        );
        assert!(!stale, "BROKEN: round {round} reads round {dup:?}'s freed memory through the cached mapping");
        assert!(right, "BROKEN: round {round}: {r}, bytes {:?}", seen.map(|s| s[..8].to_vec()));
        // Old mappings are kept open in the child; what do they read now?
        for (old_round, old_id) in kept.iter() {
            let r = p.ask(&format!("read {old_id} 0 4096"));
            let b = bytes_of(&r);
            let verdict = match &b {
                None => format!("error ({r})"),
                Some(b) if *b == pattern(100 + old_round, 4096) => "its own old bytes".into(),
                Some(b) if *b == pattern(100 + round, 4096) => "THE NEW ALLOCATION's bytes".into(),
                Some(_) => "other bytes".into(),
            };
            if round == 19 || verdict.contains("NEW") {
                attack(&format!("realloc stale mapping of round {old_round} at round {round}"), &verdict);
            }
            assert!(
                !verdict.contains("NEW"),
                "BROKEN: a mapping of freed memory aliases the exporter's new allocation"
            );
        }
        if let Some(id) = id {
            kept.push((round, id));
        }
        handles.push(h);
        drop(m); // freed while the child still maps it
    }
    // Reopening a freed handle: an error, never a new allocation's bytes.
    let (_m, _h) = exported(4096, 999);
    let r = p.ask(&format!("open {} 0 4096", handles[0]));
    attack("reopen freed handle of round 0 (child still maps it)", &r);
    assert_eq!(p.ask("own"), "ok", "BROKEN: the mapper's own CUDA work fails afterwards");
    p.finish();
}

#[test]
fn many_threads_open_read_and_drop_one_handle() {
    let (_m, h) = exported(65536, 4);
    let mut p = Peer::start("mapper");
    let r = p.ask(&format!("hammer {h} 65536 4 8 200"));
    attack("hammer 8 threads x 200 opens", &r);
    assert!(r.starts_with("ok") && r.contains(" wrong=0 ") && r.contains(" err=0 "), "BROKEN: {r}");
    assert_eq!(p.ask("own"), "ok");
    p.finish();
}

#[test]
fn many_allocations_mapped_and_dropped_in_odd_orders() {
    let sizes: Vec<usize> = (0..32).map(|i| 1 + i * 997 % 20000).collect();
    let memories: Vec<(SharedDeviceMemory, String)> =
        sizes.iter().enumerate().map(|(i, &s)| exported(s, 200 + i)).collect();
    let mut p = Peer::start("mapper");
    let mut ids: Vec<Option<usize>> = Vec::new();
    for (i, (_, h)) in memories.iter().enumerate() {
        // Every third twice (a second user of the same mapping).
        let r = p.ask(&format!("open {h} 0 {}", sizes[i]));
        ids.push(r.strip_prefix("ok ").and_then(|s| s.parse().ok()));
        assert!(ids[i].is_some(), "BROKEN: open {i}: {r}");
    }
    let twice: Vec<(usize, usize)> = (0..32)
        .step_by(3)
        .map(|i| {
            (
                i,
                p.ask(&format!("open {} 0 1", memories[i].1))
                    .strip_prefix("ok ")
                    .and_then(|s| s.parse().ok())
                    .expect("twice"),
            )
        })
        .collect();
    let order: Vec<usize> = (0..32).map(|k| (k * 13 + 5) % 32).collect();
    let mut wrong = 0;
    for (step, &gone) in order.iter().enumerate() {
        p.ask(&format!("drop {}", ids[gone].take().expect("live")));
        if let Some(&(_, second)) = twice.iter().find(|(i, _)| *i == gone) {
            let r = p.ask(&format!("read {second} 0 1"));
            if bytes_of(&r).as_deref() != Some(&pattern(200 + gone, 1)[..]) {
                wrong += 1;
                attack(&format!("second user of {gone} after the first dropped"), &r);
            }
        }
        for (i, id) in ids.iter().enumerate() {
            let Some(id) = id else { continue };
            let r = p.ask(&format!("read {id} 0 {}", sizes[i]));
            if bytes_of(&r).as_deref() != Some(&pattern(200 + i, sizes[i])[..]) {
                wrong += 1;
                attack(&format!("mapping {i} after {step} drops"), &r[..r.len().min(80)]);
            }
        }
        if step % 4 == 0 {
            // Reopen one dropped earlier: a new mapping, right bytes.
            let again = order[step / 2];
            if ids[again].is_none() {
                let r = p.ask(&format!("open {} 0 {}", memories[again].1, sizes[again]));
                ids[again] = r.strip_prefix("ok ").and_then(|s| s.parse().ok());
                if ids[again].is_none() {
                    wrong += 1;
                    attack(&format!("reopen {again}"), &r);
                }
            }
        }
    }
    attack("32 allocations, odd drop orders", format!("{wrong} wrong answers"));
    assert_eq!(wrong, 0, "BROKEN");
    assert_eq!(p.ask("own"), "ok");
    p.finish();
}

#[test]
fn the_exporter_frees_or_dies_while_the_child_copies() {
    // The test process frees while the child reads in a loop.
    let (m, h) = exported(1 << 20, 5);
    let mut p = Peer::start("mapper");
    let r = p.ask(&format!("open {h} 0 {}", 1 << 20));
    assert!(r.starts_with("ok"), "{r}");
    assert_eq!(p.ask("spin 0 5 3000"), "ok");
    std::thread::sleep(std::time::Duration::from_millis(20));
    drop(m);
    // Reuse of the freed memory by new allocations of the exporter.
    let refill: Vec<SharedDeviceMemory> = (0..8)
        .map(|_| {
            let n = SharedDeviceMemory::new(0, 1 << 20).expect("refill");
            n.write(0, &[0x3C; 1 << 20]).expect("fill");
            n
        })
        .collect();
    let r = p.ask("spinwait");
    attack("exporter frees while child reads (then reallocates)", &r);
    assert!(r.starts_with("ok") && r.contains(" other=0 "), "BROKEN: the child read bytes of another allocation: {r}");
    assert_eq!(p.ask("own"), "ok", "BROKEN: the child's own CUDA work fails after its mapping's memory was freed");
    p.finish();
    drop(refill);

    // An exporter process that aborts (no clean exit) while the child maps its memory.
    for how in ["exit", "abort"] {
        let mut e = Peer::start("exporter");
        let r = e.ask("alloc 0 1048576 6");
        let h = r.split_whitespace().nth(2).expect("handle").to_owned();
        let mut p = Peer::start("mapper");
        assert!(p.ask(&format!("open {h} 0 1048576")).starts_with("ok"));
        assert_eq!(p.ask("spin 0 6 3000"), "ok");
        let _ = writeln!(e.stdin, "{how}");
        let _ = e.child.wait();
        let r = p.ask("spinwait");
        attack(&format!("exporter process {how}s while child reads"), &r);
        assert!(r.starts_with("ok") && r.contains(" other=0 "), "BROKEN: {r}");
        let r = p.ask("read 0 0 16");
        attack(&format!("read after exporter {how}"), &r);
        let r = p.ask(&format!("open {h} 0 16"));
        attack(&format!("reopen after exporter {how}"), &r);
        assert_eq!(p.ask("own"), "ok", "BROKEN: the child's own CUDA work fails after the exporter {how}");
        p.finish();
    }
}

#[test]
fn garbage_and_flipped_handles_leave_the_mapper_usable() {
    let (_m, h) = exported(4096, 7);
    let good = unhex(&h);
    let mut p = Peer::start("mapper");
    let mut outcomes = std::collections::BTreeMap::<String, usize>::new();
    let mut candidates = vec![vec![0u8; 64], vec![0xFF; 64]];
    for i in 0..64 {
        let mut b = good.clone();
        b[i] ^= 0x01;
        candidates.push(b);
        let mut b = good.clone();
        b[i] ^= 0x80;
        candidates.push(b);
    }
    for bytes in candidates {
        let r = p.ask(&format!("open {} 0 16", hex(&bytes)));
        let verdict = match r.strip_prefix("ok ").and_then(|s| s.parse::<usize>().ok()) {
            Some(id) => {
                let b = bytes_of(&p.ask(&format!("read {id} 0 16")));
                p.ask(&format!("drop {id}"));
                if b.as_deref() == Some(&pattern(7, 16)[..]) {
                    "opened, right bytes".into()
                } else {
                    format!("opened, OTHER bytes {b:?}")
                }
            }
            None => r.split_whitespace().take(2).collect::<Vec<_>>().join(" "),
        };
        *outcomes.entry(verdict).or_default() += 1;
    }
    attack("130 garbage/flipped handles", format!("{outcomes:?}"));
    let r = p.ask(&format!("open {h} 0 4096"));
    assert!(r.starts_with("ok"), "BROKEN: the true handle no longer opens after garbage: {r}");
    assert_eq!(p.ask("own"), "ok", "BROKEN: garbage handles left a sticky CUDA error");
    p.finish();
}
