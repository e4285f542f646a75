#!/usr/bin/env python3
# The multi-GPU step of tools/gpu-check.sh: python3 tools/gpu-check-multi.py GPUS MODEL DEVICE KINO...
# (KINO: the command that runs kino, e.g. `bun src/cli/main.ts` or `dist/kino`). Run it with no
# CUDA_VISIBLE_DEVICES in the environment, so the server pins its workers to GPUs 0..GPUS-1.
#   GPUS ≥ 2: `kino serve` with num_gpus GPUS; every worker must report CUDA, GPU slot = its index,
#             CUDA_VISIBLE_DEVICES = its index, and a PCI bus id — distinct, and together the GPUs
#             nvidia-smi lists; nvidia-smi must show each worker pid on the GPU it reported.
#   GPUS = 1: num_gpus 2 must be refused, worker 1 (CUDA_VISIBLE_DEVICES=1) seeing no GPU: each worker
#             process really sees only the GPU it was given.
import json, os, re, signal, subprocess, sys, tempfile, time, urllib.request

gpus, model, device, kino = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4:]

def bus(text):  # "00000000:19:00.0" (nvidia-smi) and "0000:19:00.0" (CUDA) name the same device
    dom, b, rest = text.strip().lower().split(":")
    dev, fn = rest.split(".")
    return (int(dom, 16), int(b, 16), int(dev, 16), int(fn, 16))

def smi(*query):
    out = subprocess.run(["nvidia-smi", *query, "--format=csv,noheader"], capture_output=True, text=True).stdout
    return [[f.strip() for f in line.split(",")] for line in out.splitlines() if line.strip()]

def serve(n, out_dir):
    args = [*kino, "serve", "--generator.model_path", model, "--generator.engine.device", device,
            "--generator.engine.num_gpus", str(n), "--server.port", "0", "--server.host", "127.0.0.1", "--server.output_dir", out_dir]
    return subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)

def until_url(proc, deadline):
    lines = []
    while time.time() < deadline:
        line = proc.stdout.readline()
        if not line:
            return None, lines
        lines.append(line.rstrip())
        m = re.search(r"at (http://127\.0\.0\.1:\d+)", line)
        if m: return m.group(1), lines
    return None, lines

started = time.time()
with tempfile.TemporaryDirectory() as out_dir:
    if gpus < 2:
        # One GPU: worker 1 gets CUDA_VISIBLE_DEVICES=1, which names no GPU here, so the start must fail on it.
        proc = serve(2, out_dir)
        url, lines = until_url(proc, started + 30)
        if url:
            proc.send_signal(signal.SIGTERM); proc.wait()
            sys.exit("FAIL multi-GPU: num_gpus 2 started on a 1-GPU machine; worker 1 must not see GPU 0")
        proc.wait()
        why = [l for l in lines if "could not load the model" in l]
        ok = any("CUDA_VISIBLE_DEVICES=1" in l and "no GPU answers as CUDA_VISIBLE_DEVICES=1" in l for l in why)
        print(f"  {'ok  ' if ok else 'FAIL'} num_gpus 2 on 1 GPU refused, worker 1 sees no GPU ({time.time() - started:.1f} s): {why[0] if why else lines[-3:]}")
        sys.exit(0 if ok else 1)
    proc = serve(gpus, out_dir)
    try:
        url, lines = until_url(proc, started + 30)
        if not url: sys.exit("FAIL multi-GPU: kino serve did not start:\n" + "\n".join(lines[-10:]))
        for l in lines:
            if "kino: worker" in l: print("  " + l)
        health = json.load(urllib.request.urlopen(url + "/health", timeout=10))
        workers = health["workers"]
        fails = []
        if len(workers) != gpus: fails.append(f"{len(workers)} workers for {gpus} GPUs")
        for w in workers:
            d = w["device"] or {}
            if not str(d.get("backend", "")).startswith("CUDA") or w["gpu"] != w["index"] or d.get("cuda_visible_devices") != str(w["index"]) or not d.get("pci_bus_id"):
                fails.append(f"worker {w['index']}: {w}")
        reported = {w["pid"]: bus(w["device"]["pci_bus_id"]) for w in workers if w["device"] and w["device"].get("pci_bus_id")}
        physical = {bus(b) for (b,) in smi("--query-gpu=pci.bus_id")}
        if len(set(reported.values())) != gpus or set(reported.values()) != physical:
            fails.append(f"workers on {sorted(set(reported.values()))}, GPUs here {sorted(physical)}")
        apps = [(int(pid), bus(b)) for pid, b in smi("--query-compute-apps=pid,gpu_bus_id")]
        ours = [(pid, b) for pid, b in apps if pid in reported]
        if ours:
            per_gpu = {b: [pid for pid, bb in ours if bb == b] for b in physical}
            if any(len(p) != 1 for p in per_gpu.values()) or any(reported[pid] != b for pid, b in ours):
                fails.append(f"nvidia-smi processes per GPU: {per_gpu}")
            smi_note = "one kino process per GPU in nvidia-smi"
        else:  # a PID namespace (container) hides our pids from nvidia-smi: count processes per GPU instead
            per_gpu = {b: sum(1 for _, bb in apps if bb == b) for b in physical}
            if any(n < 1 for n in per_gpu.values()): fails.append(f"nvidia-smi shows a GPU with no process: {per_gpu}")
            smi_note = f"nvidia-smi hides our pids (container?); processes per GPU {list(per_gpu.values())}"
        for f in fails: print(f"  FAIL {f}")
        if not fails:
            print(f"  ok   {gpus} workers on {gpus} distinct GPUs, {smi_note} ({time.time() - started:.1f} s)")
        sys.exit(1 if fails else 0)
    finally:
        proc.send_signal(signal.SIGTERM)
        try: proc.wait(timeout=10)
        except subprocess.TimeoutExpired: proc.kill()
