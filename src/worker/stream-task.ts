// The worker side of a realtime session: runs the pipeline chunk by chunk, resolves prompt updates at
// chunk boundaries, encodes each chunk as one fMP4 fragment starting with an IDR, and reports it with
// its event bookkeeping. Runs inside the worker process; the server only relays the bytes.
import type { FromWorker, InteractionMessage, StreamChunk, TaskResult } from "./ipc.ts";
import { InlineFragmenter, type ChunkFragmenter } from "../media/stream/fragmenter.ts";
import { ThreadedFragmenter } from "../media/stream/threaded-fragmenter.ts";
import { ChunkSender } from "./chunk-sender.ts";
import { streamOverlap } from "./stream-overlap.ts";
import { DEFAULT_VIDEO_QP } from "./write-outputs.ts";
import type { GenerationRequest, Pipeline } from "../pipelines/pipeline.ts";
import { TransitionScheduler, type ChunkPlan } from "./transitions.ts";

/** Raised by the interaction runner for event fields this model does not handle. */
class NotImplementedError extends Error {}

export class StreamTask {
  private schedulerReady: Promise<TransitionScheduler> | null = null;
  /** Interactions are applied strictly in arrival order, even though encoding a prompt is async. */
  private interactions: Promise<void> = Promise.resolve();

  constructor(
    private readonly pipeline: Pipeline,
    private readonly taskId: string,
    private readonly request: GenerationRequest,
    private readonly pacing: { leadChunks: number } | null,
    private readonly send: (message: FromWorker) => void,
    /** Whether the encoder runs on its own thread (stream-overlap.ts); by default as the environment says. */
    private readonly overlap = streamOverlap("cpu"),
  ) {}

  /**
   * The one entry point for interaction events: `prompt` goes to the prompt-transition handler, any
   * other field is NotImplemented. Failures are reported per event; generation goes on.
   */
  interact(message: InteractionMessage): void {
    this.interactions = this.interactions.then(async () => {
      try {
        const { card } = this.pipeline;
        if (!card.supports_prompt_updates || !this.pipeline.encodePrompt) {
          throw new NotImplementedError("The active model does not support prompt updates");
        }
        const unsupported = Object.keys(message.event).filter((field) => field !== "prompt");
        if (unsupported.length) {
          throw new NotImplementedError(`NotImplemented: interaction field(s) ${unsupported.join(", ")} are not supported by this model`);
        }
        await this.promptTransition(String(message.event.prompt), message);
      } catch (err) {
        this.send({ type: "interaction_failed", taskId: this.taskId, eventId: message.eventId, message: (err as Error).message });
      }
    });
  }

  private async promptTransition(prompt: string, message: InteractionMessage): Promise<void> {
    const target = await this.pipeline.encodePrompt!(prompt, this.request.negative_prompt);
    const chunks = message.transitionChunks ?? this.pipeline.card.default_transition_chunks;
    (await this.scheduler()).enqueue(message.eventId, target, chunks);
  }

  /** The scheduler starts from the session prompt's conditioning, encoded once. */
  private scheduler(): Promise<TransitionScheduler> {
    this.schedulerReady ??= this.pipeline
      .encodePrompt!(this.request.prompt, this.request.negative_prompt)
      .then((initial) => new TransitionScheduler(initial));
    return this.schedulerReady;
  }

  /**
   * Streams until the pipeline ends or `signal` aborts (session.stop / disconnect): both end with the
   * trailer, after every chunk already generated has been sent. Without `overlap` generate → encode →
   * send run in sequence on this thread; with it the encoder runs on its own thread and chunk i ≥ 1 is
   * encoded while chunk i + 1 is generated. Both send the same bytes.
   */
  async run(signal: AbortSignal, onProgress: (fraction: number) => void): Promise<TaskResult> {
    const { pipeline, request } = this;
    if (!pipeline.stream || !pipeline.encodePrompt) throw new Error("The served model cannot stream");
    const overlap = this.overlap;
    const input = pipeline.streamFormat ?? "rgb24";
    const options = { width: request.width, height: request.height, fps: request.fps, qp: DEFAULT_VIDEO_QP, input };
    // the thread starts while the prompt is encoded and the first chunk generated
    const fragmenter: ChunkFragmenter = overlap ? await ThreadedFragmenter.start(options) : await InlineFragmenter.create(options);
    // generation stops on the session's abort, or when the encoder fails
    const generation = new AbortController();
    const stop = () => generation.abort(signal.reason);
    signal.addEventListener("abort", stop, { once: true });
    if (signal.aborted) stop();
    const sender = new ChunkSender(fragmenter, (err) => generation.abort(err));
    const started = performance.now();
    let plan: ChunkPlan | null = null;
    let generated = 0, sent = 0;
    const firstSent = Promise.withResolvers<number>();
    try {
      const scheduler = await this.scheduler();
      const stream = pipeline.stream(request, {
        signal: generation.signal,
        onProgress: (p) => onProgress(p.fraction),
        conditioningFor: () => {
          plan = scheduler.resolve();
          return plan.conditioning;
        },
        // a one-chunk transition (a hard update) reaches its target in its first chunk
        promptCut: () => plan?.progress?.n === 1,
      });
      try {
        for await (const chunk of stream) {
          // taken now: generating the next chunk resolves the next plan while this one is encoded
          const chunkPlan = plan!, numFrames = chunk.frames.length;
          if (chunk.format !== input) throw new Error(`The pipeline streamed a chunk of ${chunk.format} frames; its stream was opened for ${input}`);
          sender.submit(chunk.frames, (bytes) => {
            this.send({ type: "chunk", taskId: this.taskId, chunk: describe(chunk.generation_chunk_index, numFrames, bytes, chunkPlan) });
            if (sent++ === 0) firstSent.resolve(performance.now());
          });
          generated++;
          // the first chunk is sent before the second starts: its fragment would otherwise wait for the
          // main thread's next yield, inside the next chunk, and a session's start is what a viewer waits on
          await sender.waitUntilAtMost(overlap && generated > 1 ? ENCODE_AHEAD_CHUNKS : 0);
          if (this.pacing) {
            const idle = (waiting: boolean) => this.send({ type: "idle", taskId: this.taskId, idle: waiting });
            await paceToMediaTime(firstSent.promise, generated, request.fps, numFrames, this.pacing.leadChunks, generation.signal, idle);
          }
        }
      } catch (err) {
        if (!generation.signal.aborted) {
          // what was generated before the failure still reaches the client, as in sequence
          await sender.drain().catch(() => {});
          throw err;
        }
      }
      await sender.drain();
      return {
        files: [],
        inference_time_s: (performance.now() - started) / 1000,
        stage_durations: {},
        peak_memory_mb: Math.round(process.memoryUsage().rss / 2 ** 20),
        stream: { trailer: await fragmenter.finish(), stopped: signal.aborted, chunks: sent },
      };
    } finally {
      signal.removeEventListener("abort", stop);
      fragmenter.close();
    }
  }
}

/** Chunks that may wait for the encoder thread while the next one is generated. */
const ENCODE_AHEAD_CHUNKS = 1;

function describe(index: number, numFrames: number, bytes: Uint8Array, plan: ChunkPlan): StreamChunk {
  return {
    generation_chunk_index: index,
    num_frames: numFrames,
    bytes,
    started_event_ids: plan.started_event_ids,
    active_event_ids: plan.active_event_ids,
    completed_event_ids: plan.completed_event_ids,
    superseded_event_ids: plan.superseded_event_ids,
    transition: plan.progress,
  };
}

/**
 * Keeps generation at most `leadChunks` chunks ahead of what a viewer who started playing at the first
 * chunk is watching, so a prompt update lands within about a chunk of the screen: chunk k (after
 * `chunksGenerated` = k) starts once playback is k − leadChunks chunks in. `idle` is told when the wait
 * for playback starts and ends: the device does nothing meanwhile (the engine's stall guard pauses).
 */
async function paceToMediaTime(firstSent: Promise<number>, chunksGenerated: number, fps: number, framesPerChunk: number, leadChunks: number, signal: AbortSignal,
  idle: (waiting: boolean) => void): Promise<void> {
  const mediaAheadS = ((chunksGenerated - leadChunks) * framesPerChunk) / fps;
  if (mediaAheadS <= 0) return;
  const firstSentAt = await untilAborted(firstSent, signal);
  const waitMs = mediaAheadS * 1000 - (performance.now() - firstSentAt);
  if (waitMs <= 0) return;
  let timer: ReturnType<typeof setTimeout> | undefined;
  idle(true);
  try {
    await untilAborted(new Promise<void>((resolve) => (timer = setTimeout(resolve, waitMs))), signal);
  } finally {
    clearTimeout(timer);
    idle(false);
  }
}

/** `promise`'s value, or the abort's error if `signal` aborts first. */
async function untilAborted<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  signal.throwIfAborted();
  let onAbort!: () => void;
  const aborted = new Promise<never>((_, reject) => {
    onAbort = () => reject(signal.reason);
    signal.addEventListener("abort", onAbort, { once: true });
  });
  try {
    return await Promise.race([promise, aborted]);
  } finally {
    signal.removeEventListener("abort", onAbort);
  }
}
