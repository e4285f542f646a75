// The worker side of a realtime session: runs the pipeline chunk by chunk, resolves prompt updates at
// chunk boundaries, encodes each chunk as one fMP4 fragment starting with an IDR, and reports it with
// its event bookkeeping. Runs inside the worker process; the server only relays the bytes.
import type { FromWorker, InteractionMessage, StreamChunk, TaskResult } from "./ipc.ts";
import { H264Encoder } from "../media/h264/encoder.ts";
import { FragmentedMp4Writer } from "../media/mp4/index.ts";
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

  /** Streams until the pipeline ends or `signal` aborts (session.stop / disconnect): both end with the trailer. */
  async run(signal: AbortSignal, onProgress: (fraction: number) => void): Promise<TaskResult> {
    const { pipeline, request } = this;
    if (!pipeline.stream || !pipeline.encodePrompt) throw new Error("The served model cannot stream");
    const scheduler = await this.scheduler();
    const started = performance.now();
    const encoder = await H264Encoder.create({ width: request.width, height: request.height, fps: request.fps, qp: DEFAULT_VIDEO_QP });
    const writer = new FragmentedMp4Writer({ width: request.width, height: request.height, fps: request.fps, sps: encoder.sps, pps: encoder.pps });
    let plan: ChunkPlan | null = null;
    let chunks = 0;
    let firstSentAt = 0;
    try {
      const stream = pipeline.stream(request, {
        signal,
        onProgress: (p) => onProgress(p.fraction),
        conditioningFor: () => {
          plan = scheduler.resolve();
          return plan.conditioning;
        },
        // a one-chunk transition (a hard update) reaches its target in its first chunk
        promptCut: () => plan?.progress?.n === 1,
      });
      for await (const chunk of stream) {
        const samples = chunk.frames.map((frame, i) => encoder.encode(frame, { forceIdr: i === 0 }));
        const fragment = writer.fragment(samples);
        const bytes = chunks === 0 ? concat(writer.initSegment(), fragment) : fragment;
        this.send({ type: "chunk", taskId: this.taskId, chunk: describe(chunk.generation_chunk_index, chunk.frames.length, bytes, plan!) });
        if (chunks++ === 0) firstSentAt = performance.now();
        if (this.pacing) await paceToMediaTime(firstSentAt, chunks, request.fps, chunk.frames.length, this.pacing.leadChunks, signal);
      }
    } catch (err) {
      if (!signal.aborted) throw err;
    } finally {
      encoder.close();
    }
    return {
      files: [],
      inference_time_s: (performance.now() - started) / 1000,
      stage_durations: {},
      peak_memory_mb: Math.round(process.memoryUsage().rss / 2 ** 20),
      stream: { trailer: writer.close(), stopped: signal.aborted, chunks },
    };
  }
}

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
 * chunk is watching, so a prompt update lands within about a chunk of the screen.
 */
async function paceToMediaTime(firstSentAt: number, chunksSent: number, fps: number, framesPerChunk: number, leadChunks: number, signal: AbortSignal): Promise<void> {
  const mediaAheadS = ((chunksSent - leadChunks) * framesPerChunk) / fps;
  const waitMs = mediaAheadS * 1000 - (performance.now() - firstSentAt);
  if (waitMs <= 0) return;
  await new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, waitMs);
    signal.addEventListener("abort", () => (clearTimeout(timer), resolve()), { once: true });
  });
  signal.throwIfAborted();
}

function concat(a: Uint8Array, b: Uint8Array): Uint8Array {
  const out = new Uint8Array(a.length + b.length);
  out.set(a);
  out.set(b, a.length);
  return out;
}
