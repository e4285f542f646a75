// `kino serve` as a child process for the end-to-end bench: the single executable (dist/kino) when it
// has been built, else the sources through bun. Started on a free port (port 0; the URL is read from
// its "serving … at http://…" line, which it prints once the model is loaded) and stopped the way an
// operator stops it, with SIGTERM (it drains, then exits 0).
import { existsSync } from "node:fs";
import { join, resolve } from "node:path";

const ROOT = resolve(import.meta.dir, "../..");

export interface KinoCommand {
  argv: string[];
  /** How it is described in the bench's output. */
  label: string;
}

/**
 * `choice`: a path to a kino executable, "source" (bun src/cli/main.ts), or undefined: dist/kino when
 * it exists, else the sources.
 */
export function kinoCommand(choice?: string): KinoCommand {
  if (choice && choice !== "source") return { argv: [resolve(choice)], label: choice };
  const dist = join(ROOT, "dist/kino");
  if (!choice && existsSync(dist)) return { argv: [dist], label: "dist/kino (the single executable)" };
  return { argv: [process.execPath, join(ROOT, "src/cli/main.ts")], label: "bun src/cli/main.ts" };
}

/** Whether process `pid` is still running (signal 0 only asks). */
export function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

export interface RunningKino {
  url: string;
  pid: number;
  /** The served model's card name and the backend it runs on, from the ready line. */
  backend: string;
  /** Seconds from spawn to the ready line (worker started, model loaded). */
  readyS: number;
  output(): string;
  /** SIGTERM, then waits up to `timeoutMs` for the exit (SIGKILL after that): the exit code, or null if it had to be killed. */
  stop(timeoutMs?: number): Promise<{ exitCode: number | null; stopS: number }>;
}

export async function startKino(cmd: KinoCommand, args: string[], readyTimeoutMs: number): Promise<RunningKino> {
  const env: Record<string, string | undefined> = { ...process.env };
  // A compiled kino run as bun by this bench's runner (BUN_BE_BUN=1) would pass that on and the
  // server would start as bun too; the sources, run through that same binary, need it kept.
  if (cmd.argv.length === 1) delete env.BUN_BE_BUN;
  const started = performance.now();
  const proc = Bun.spawn([...cmd.argv, "serve", "--server.host", "127.0.0.1", "--server.port", "0", ...args], { stdout: "pipe", stderr: "pipe", env });
  let text = "";
  const collect = async (stream: ReadableStream<Uint8Array>) => {
    const decoder = new TextDecoder();
    for await (const chunk of stream) text += decoder.decode(chunk, { stream: true });
  };
  const drained = Promise.all([collect(proc.stdout), collect(proc.stderr)]);
  const deadline = Date.now() + readyTimeoutMs;
  let ready: RegExpExecArray | null = null;
  while (!ready && Date.now() < deadline && proc.exitCode === null) {
    await Bun.sleep(50);
    ready = /serving '[^']*' \((.*)\) at (http:\/\/127\.0\.0\.1:\d+)/.exec(text);
  }
  if (!ready) {
    proc.kill(9);
    await proc.exited;
    const why = proc.signalCode === "SIGKILL" ? `was not ready within ${readyTimeoutMs / 1000} s` : `exited (${proc.exitCode}) before it was ready`;
    throw new Error(`kino serve ${why}; its output:\n${text.trim().split("\n").slice(-30).join("\n")}`);
  }
  const readyS = (performance.now() - started) / 1000;
  return {
    url: ready[2]!,
    pid: proc.pid,
    backend: ready[1]!,
    readyS,
    output: () => text,
    async stop(timeoutMs = 60_000) {
      const stopping = performance.now();
      proc.kill("SIGTERM");
      let timer: Timer | undefined;
      const exited = await Promise.race([proc.exited.then(() => true), new Promise<boolean>((done) => (timer = setTimeout(done, timeoutMs, false)))]);
      clearTimeout(timer); // a pending timer would keep the bench's process alive
      if (!exited) {
        proc.kill(9);
        await proc.exited;
      }
      await drained;
      return { exitCode: exited ? proc.exitCode : null, stopS: (performance.now() - stopping) / 1000 };
    },
  };
}
