"""Walk tools/train/recipe.toml: run each phase that is needed and not yet done, in order.

  python3 tools/train/recipe.py [--dry-run] [--build DIR] [--out DIR] [--docs DIR] [--threads N]
                                [--scale N] [--plain-shards N] [--switch-shards N] [--per-shard N]
                                [--phases NAME,...] [--no-eval] [--from-export]

Every phase resumes from its own checkpoint, so a run can be stopped (SIGTERM reaches the running
stage, which saves) and started again; a phase whose artifact is done is skipped. --dry-run prints
every phase with its state (done, run, not needed) and the commands it runs. --phases runs only the
named phases (still skipping done ones). --from-export rebuilds, when the build lacks it, what a
continuation past the export needs from models/kino-tiny (import_model.py): the exported DiT at its
step, as the artifact the export phase takes, and the VAE the export decodes with.
"""
import argparse
import datetime
import os
import re
import signal
import subprocess
import sys
import tomllib

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
STEP_KEYS = ("steps", "warmup", "decay-start", "decay-end", "schedule-from")
THREADED = ("train_vae.py", "train_dit.py", "sample.py", "encode_data.py")
BUILD_PATH = re.compile(r"\{build\}/([\w./-]+?)(?:/ckpt\.pt)?$")


def load_recipe(path):
    """The recipe's phases with each DiT phase's args merged over the previous one's."""
    with open(path, "rb") as f:
        recipe = tomllib.load(f)
    last = {}
    for ph in recipe["phase"]:
        key = (ph["run"], ph.get("makes"))
        if ph["run"] == "train_dit.py":  # a DiT phase keeps the previous one's flags
            ph["args"] = {**last.get(key, {}), **ph.get("args", {})}
        last[key] = ph["args"] = ph.get("args", {})
    return recipe


def scaled(args, scale):
    return {k: max(1, v // scale) if k in STEP_KEYS else v for k, v in args.items()}


def flags(args, paths):
    out = []
    for k, v in args.items():
        if v is True:
            out.append(f"--{k}")
        elif v is not False:
            out += [f"--{k}", str(v).format(**paths)]
    return out


def needs(phase, made_before):
    """The artifacts a phase reads: its paths under {build} (but --out), `needs`, its own if made before."""
    names = set(phase.get("needs", []))
    names |= {m.group(1) for k, v in phase["args"].items() if k != "out" and isinstance(v, str)
              for m in [BUILD_PATH.match(v)] if m}
    if phase.get("makes") in made_before:
        names.add(phase["makes"])
    return names


def shard_sets(recipe, phase, opts):
    """[(first shard, count, extra flags, clips per shard)] of an encode phase, scaled by the phase's
    shares; clips per shard: --per-shard, else the kind's `per_shard`, the phase's, [data]'s."""
    data, out = recipe["data"], []
    for kind, share in phase["shards"].items():
        total = getattr(opts, f"{kind}_shards", None) or data[kind]["shards"]
        per_shard = opts.per_shard or data[kind].get("per_shard") or phase.get("per_shard") or data["per_shard"]
        out.append((data[kind]["first"], max(1, round(share * total)), data[kind].get("args", {}), per_shard))
    return out


def is_done(phase, recipe, opts, paths):
    """Whether a phase's artifact is complete (None: cannot tell without torch)."""
    if "makes" not in phase:
        return False
    where = os.path.join(paths["build"], phase["makes"])
    if phase["run"] == "encode_data.py":
        return all(os.path.exists(f"{where}/shard_{first + i:03d}.pt")
                   for first, count, _, _ in shard_sets(recipe, phase, opts) for i in range(count))
    if "steps" not in phase["args"]:  # made in one go (blend.py): done once written
        return os.path.exists(f"{where}/ckpt.pt")
    ck = checkpoint_state(f"{where}/ckpt.pt")
    if ck is None:
        return None if os.path.exists(f"{where}/ckpt.pt") else False
    step, finished = ck
    return step >= scaled(phase["args"], opts.scale)["steps"] and (phase["run"] != "train_vae.py" or finished)


_states = {}


def checkpoint_state(path):
    """-> (step, has latent statistics) of a checkpoint, None when absent or torch is missing."""
    try:
        key = (path, os.path.getmtime(path))
        import torch
    except (OSError, ImportError):
        return None
    if key not in _states:
        ck = torch.load(path, map_location="cpu")
        _states[key] = ck["step"], "latents_mean" in ck
    return _states[key]


def plan(recipe, opts, paths):
    """-> [(phase, state)], state "done" | "run" | "not needed", walking back from the final phases."""
    phases = recipe["phase"]
    made, need = set(), []
    for ph in phases:
        need.append(needs(ph, made) & made)
        if "makes" in ph:
            made.add(ph["makes"])
    wanted, states = set(), [None] * len(phases)
    chosen = set(opts.phases.split(",")) if opts.phases else None
    for i in reversed(range(len(phases))):
        ph = phases[i]
        done = is_done(ph, recipe, opts, paths)
        if chosen is not None:
            run = ph["name"] in chosen and not done
        else:
            run = not done and (ph.get("final") or ph.get("makes") in wanted)
        states[i] = "run" if run else "done" if done else "unknown" if done is None else "not needed"
        if run:
            wanted |= need[i]
    return list(zip(phases, states))


def commands(phase, recipe, opts, paths):
    """The command lines of a phase; an encode phase's pairs run side by side."""
    py, script = sys.executable, os.path.join("tools", "train", phase["run"])
    args = flags(scaled(phase["args"], opts.scale), paths)
    threads = ["--threads", str(opts.threads)] if phase["run"] in THREADED else []
    if phase["run"] == "encode_data.py":  # two 1-thread encoders: the rendering is single-threaded numpy
        each = ["--threads", str(max(1, opts.threads // 2))]
        out = []
        for first, count, extra, per_shard in shard_sets(recipe, phase, opts):
            each_here = each + ["--per-shard", str(per_shard)]
            halves = [(first, count // 2), (first + count // 2, count - count // 2)]
            out.append([[py, script, *args, *flags(extra, paths), *each_here, "--first", str(f), "--shards", str(n)]
                        for f, n in halves if n])
        return out
    out = [[[py, script, *args, *threads]]]
    if phase["run"] == "train_dit.py" and not opts.no_eval:
        after = recipe["after_dit"]
        vae = {"vae": phase["args"]["vae"]}
        if "out" in phase["args"]:  # a DiT of its own (a branch): evaluate that one
            vae["ckpt"] = phase["args"]["out"] + "/ckpt.pt"
        out.append([[py, os.path.join("tools", "train", after["run"]), *flags({**after["args"], **vae}, paths),
                     "--threads", str(opts.threads)]])
    return out


def run_together(cmds):
    """Run command lines side by side; SIGTERM reaches them (the stages save and exit)."""
    procs = [subprocess.Popen(c) for c in cmds]
    signal.signal(signal.SIGTERM, lambda *_: [p.send_signal(signal.SIGTERM) for p in procs])
    codes = [p.wait() for p in procs]
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    if any(codes):
        sys.exit(f"failed ({codes}): " + " | ".join(" ".join(c) for c in cmds))


def from_export(recipe, opts, paths):
    """The exported DiT (into the artifact the export phase's --ckpt names) and the export's VAE rebuilt
    from models/kino-tiny when the build has neither."""
    export = next(ph for ph in recipe["phase"] if ph["run"] == "export.py")
    dit = BUILD_PATH.match(export["args"].get("ckpt", "{build}/dit/ckpt.pt")).group(1)
    if os.path.exists(os.path.join(paths["build"], dit, "ckpt.pt")):
        return
    vae = BUILD_PATH.match(export["args"]["vae"]).group(1)
    vae_step = max(ph["args"]["steps"] for ph in recipe["phase"] if ph.get("makes") == vae)
    subprocess.run([sys.executable, os.path.join("tools", "train", "import_model.py"),
                    "--model", os.path.join(ROOT, "models", "kino-tiny"),
                    "--dit", os.path.join(paths["build"], dit, "ckpt.pt"),
                    "--vae-out", os.path.join(paths["build"], vae, "ckpt.pt"), "--vae-step", str(vae_step)],
                   check=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--recipe", default=os.path.join(HERE, "recipe.toml"))
    ap.add_argument("--build", default=os.environ.get("KINO_TRAIN_BUILD") or "build/train",
                    help="checkpoints, data and logs (outside git; default $KINO_TRAIN_BUILD or build/train)")
    ap.add_argument("--out", default="models/kino-tiny", help="where the export goes")
    ap.add_argument("--docs", default="docs", help="where the contact sheet and the loss curve go")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--scale", type=int, default=1, help="divide every step count by this (smoke runs)")
    ap.add_argument("--plain-shards", type=int, default=None)
    ap.add_argument("--switch-shards", type=int, default=None)
    ap.add_argument("--per-shard", type=int, default=None)
    ap.add_argument("--phases", default=None, help="run only these phases (comma-separated names)")
    ap.add_argument("--no-eval", action="store_true",
                    help="skip the held-out evaluation after each DiT phase (smoke runs: it outlasts their training)")
    ap.add_argument("--from-export", action="store_true", help="rebuild the DiT and its VAE from models/kino-tiny first")
    ap.add_argument("--dry-run", action="store_true", help="print the plan and its commands; run nothing")
    opts = ap.parse_args()
    os.chdir(ROOT)
    paths = {"build": os.path.abspath(opts.build), "out": opts.out, "docs": opts.docs}
    os.environ["KINO_TRAIN_BUILD"] = paths["build"]  # common.BUILD of every stage
    recipe = load_recipe(opts.recipe)
    if not opts.dry_run:
        os.makedirs(paths["build"], exist_ok=True)
        if opts.from_export:
            from_export(recipe, opts, paths)
    for phase, state in plan(recipe, opts, paths):
        cmds = commands(phase, recipe, opts, paths)
        if opts.dry_run:
            print(f"# {phase['name']} [{state}]: {phase.get('about', '')}")
            for group in cmds:
                print("\n".join(("  & " if k < len(group) - 1 else "  ") + " ".join(c) for k, c in enumerate(group)))
            continue
        if state != "run":
            continue
        print(f"== {datetime.datetime.utcnow():%Y-%m-%dT%H:%M:%SZ} {phase['name']}: {phase.get('about', '')}", flush=True)
        for group in cmds:
            run_together(group)
            if group is cmds[0] and phase["run"] in ("train_vae.py", "train_dit.py") \
                    and is_done(phase, recipe, opts, paths) is False:
                sys.exit(f"{phase['name']} stopped before its last step")  # (SIGTERM): run again to resume
    if not opts.dry_run:
        print(f"== {datetime.datetime.utcnow():%Y-%m-%dT%H:%M:%SZ} done", flush=True)


if __name__ == "__main__":
    main()
