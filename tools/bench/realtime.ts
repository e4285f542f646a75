// npm run bench:realtime — realtime interaction latency against a live in-process server.
//  1. Acknowledgement: 20 concurrent sessions each send prompt updates; time from send to
//     session.interaction.queued (p50/p99).
//  2. Update lag, with and without pace_to_media_time: how far ahead of the viewer's playback the
//     first affected chunk is, in chunks and in media seconds (a viewer plays from the first chunk).
//  3. Encode overlap (realtime-overlap.ts): chunk interval and real-time factor with the H.264 encode
//     on its own thread against the sequential path, at 64x64 and 480x272.
//  4. Frame readback (frame-readback.ts): per chunk, VAE decode → resample → conversion → readback →
//     H.264 encode with frames handed on as I420 made on the backend against RGB24 made in the worker,
//     at 64x64, 480x272 and 832x480.
// Flags: --overlap-only / --readback-only run part 3 / part 4 alone; --runs N (default 3) sizes both,
// --seconds S (default 6) part 3, --chunks N (default 6) part 4.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { loadServeConfig } from "../../src/config/load.ts";
import { startServer } from "../../src/http/server.ts";
import { compareFrameReadback } from "./frame-readback.ts";
import { compareEncodeOverlap } from "./realtime-overlap.ts";

const args = process.argv.slice(2);
const arg = (name: string, fallback: string) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? args[i + 1]! : fallback;
};
const overlapOptions = { sizes: ["64x64", "480x272"], seconds: Number(arg("seconds", "6")), runs: Number(arg("runs", "3")), fps: 16 };
const readbackOptions = { sizes: ["64x64", "480x272", "832x480"], chunks: Number(arg("chunks", "6")), runs: Number(arg("runs", "3")) };
if (args.includes("--overlap-only")) {
  console.log((await compareEncodeOverlap(overlapOptions)).join("\n"));
  process.exit(0);
}
if (args.includes("--readback-only")) {
  console.log((await compareFrameReadback(readbackOptions)).join("\n"));
  process.exit(0);
}

const SESSIONS = 20;
const UPDATES_PER_SESSION = 10;

const outputDir = mkdtempSync(join(tmpdir(), "kino-bench-rt-"));
const server = await startServer(
  loadServeConfig({
    overrides: {
      "server.port": "0",
      "server.host": "127.0.0.1",
      "server.output_dir": outputDir,
      "server.realtime.max_sessions": String(SESSIONS),
      "generator.engine.num_workers": "2",
    },
  }),
  () => {},
);
const wsUrl = `${server.url.replace("http", "ws")}/v1/realtime/video`;

interface Session {
  ws: WebSocket;
  onJson: (m: any) => void;
}

async function open(start: object, onJson: (m: any) => void): Promise<Session> {
  const ws = new WebSocket(wsUrl);
  ws.binaryType = "arraybuffer";
  const session = { ws, onJson };
  ws.onmessage = (e) => typeof e.data === "string" && session.onJson(JSON.parse(e.data));
  await new Promise((resolve) => (ws.onopen = resolve));
  const started = new Promise<void>((resolve) => {
    session.onJson = (m) => (m.type === "video.start" ? resolve() : undefined, onJson(m));
  });
  ws.send(JSON.stringify({ type: "session.start", ...start }));
  await started;
  return session;
}

const percentile = (values: number[], p: number) => [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.floor((p / 100) * values.length))]!;

async function ackLatency(): Promise<number[]> {
  const sent = new Map<string, number>();
  const latencies: number[] = [];
  const sessions = await Promise.all(
    Array.from({ length: SESSIONS }, () =>
      open({ prompt: "a red circle moving right", size: "128x128", seconds: 30, extra_params: { pace_to_media_time: true } }, (m) => {
        if (m.type === "session.interaction.queued") latencies.push(performance.now() - sent.get(m.event_id)!);
      }),
    ),
  );
  for (let round = 0; round < UPDATES_PER_SESSION; round++) {
    sessions.forEach((s, i) => {
      const id = `s${i}-u${round}`;
      sent.set(id, performance.now());
      s.ws.send(JSON.stringify({ type: "session.interaction", interaction: { event_id: id, event: { prompt: `a ${round % 2 ? "blue" : "green"} square` } } }));
    });
    await Bun.sleep(100);
  }
  while (latencies.length < SESSIONS * UPDATES_PER_SESSION) await Bun.sleep(10);
  for (const s of sessions) s.ws.close();
  return latencies;
}

/** Sends an update every 0.6 s of a 12 s stream and reports how far ahead of playback it lands. */
async function updateLag(pace: boolean): Promise<{ chunks: number[]; seconds: number[] }> {
  const fps = 16, framesPerChunk = server.ctx.engine.card.frames_per_chunk;
  let firstChunkAt = 0, lastIndex = -1;
  const sentAt = new Map<string, { time: number; lastIndex: number }>();
  const chunks: number[] = [], seconds: number[] = [];
  let done!: () => void;
  const finished = new Promise<void>((resolve) => (done = resolve));
  const session = await open({ prompt: "a red circle moving right", size: "256x256", fps, seconds: 12, extra_params: { pace_to_media_time: pace } }, (m) => {
    if (m.type === "session.done") return done();
    if (m.type !== "video.chunk_metadata" || m.kind !== "media") return;
    if (firstChunkAt === 0) firstChunkAt = performance.now();
    lastIndex = m.generation_chunk_index;
    for (const id of m.started_event_ids) {
      const s = sentAt.get(id)!;
      chunks.push(m.generation_chunk_index - s.lastIndex);
      // Media time where the affected chunk starts, minus what the viewer was watching at send time.
      seconds.push((m.generation_chunk_index * framesPerChunk) / fps - (s.time - firstChunkAt) / 1000);
    }
  });
  for (let i = 0; i < 15; i++) {
    await Bun.sleep(600);
    const id = `u${i}`;
    if (firstChunkAt === 0) continue;
    sentAt.set(id, { time: performance.now(), lastIndex });
    session.ws.send(JSON.stringify({ type: "session.interaction", interaction: { event_id: id, event: { prompt: `a ${i % 2 ? "blue" : "green"} circle moving right` }, transition_chunks: 0 } }));
  }
  await finished;
  return { chunks, seconds };
}

const acks = await ackLatency();
const paced = await updateLag(true);
const unpaced = await updateLag(false);
const fmt = (v: number) => v.toFixed(2);
console.log(`kino bench:realtime (${server.ctx.engine.card.name}, ${SESSIONS} sessions × ${UPDATES_PER_SESSION} updates, 2 workers)`);
console.log(`queued ack latency: p50 ${fmt(percentile(acks, 50))} ms, p99 ${fmt(percentile(acks, 99))} ms, max ${fmt(Math.max(...acks))} ms (n=${acks.length})`);
for (const [name, lag] of [["paced (lead 1 chunk)", paced], ["unpaced", unpaced]] as const) {
  if (!lag.chunks.length) {
    console.log(`${name}: no update landed before the stream ended`);
    continue;
  }
  console.log(
    `${name}: first affected chunk p50 ${percentile(lag.chunks, 50)} / max ${Math.max(...lag.chunks)} chunks after the last one received; ` +
      `lands p50 ${fmt(percentile(lag.seconds, 50))} s / max ${fmt(Math.max(...lag.seconds))} s of media ahead of playback (n=${lag.chunks.length})`,
  );
}
await server.stop();
rmSync(outputDir, { recursive: true, force: true });
console.log((await compareEncodeOverlap(overlapOptions)).join("\n"));
console.log((await compareFrameReadback(readbackOptions)).join("\n"));
