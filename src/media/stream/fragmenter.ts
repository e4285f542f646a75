// A realtime stream's media: each chunk of frames (RGB24 or I420, one format per stream) becomes one fMP4 fragment (H.264, the chunk's
// first frame an IDR so a client can start at any chunk), the first one preceded by the init segment,
// and the end of the stream is the mfra trailer. The encoder and the writer keep state from chunk to
// chunk (frame numbers, decode times, fragment offsets), so a stream's chunks go through one
// fragmenter in order. ChunkFragmenter is the asynchronous face shared by the fragmenter run inline
// and the one on its own thread (threaded-fragmenter.ts): both give the same bytes.
import { H264Encoder } from "../h264/encoder.ts";
import { FragmentedMp4Writer } from "../mp4/index.ts";

export interface FragmenterOptions {
  width: number;
  height: number;
  fps: number;
  /** Constant QP of P pictures (IDRs 3 below). */
  qp: number;
  /** The frames' layout (the pipeline's FrameFormat): the encoder takes I420 planes as they are. */
  input: "rgb24" | "i420";
}

/** What a stream task encodes through: fragments come back in the order the chunks were given. */
export interface ChunkFragmenter {
  /** The chunk's frames (in the stream's input format) as one fMP4 fragment; the first chunk's bytes start with the init segment. */
  fragment(frames: Uint8Array[]): Promise<Uint8Array>;
  /** Ends the stream: its mfra trailer. No fragment may follow. */
  finish(): Promise<Uint8Array>;
  /** Frees the encoder (and its thread); pending work is refused. Safe to call more than once. */
  close(): void;
}

export class StreamFragmenter {
  #fragments = 0;

  private constructor(
    private readonly encoder: H264Encoder,
    private readonly writer: FragmentedMp4Writer,
  ) {}

  static async create(options: FragmenterOptions): Promise<StreamFragmenter> {
    const { width, height, fps, qp, input } = options;
    const encoder = await H264Encoder.create({ width, height, fps, qp, input });
    try {
      return new StreamFragmenter(encoder, new FragmentedMp4Writer({ width, height, fps, sps: encoder.sps, pps: encoder.pps }));
    } catch (err) {
      encoder.close();
      throw err;
    }
  }

  /** Which build of the encoder runs: the native library or the WebAssembly module. */
  get backend(): "wasm" | "native" {
    return this.encoder.backend;
  }

  fragment(frames: Uint8Array[]): Uint8Array {
    const samples = frames.map((frame, i) => this.encoder.encode(frame, { forceIdr: i === 0 }));
    const fragment = this.writer.fragment(samples);
    if (this.#fragments++ > 0) return fragment;
    const init = this.writer.initSegment();
    const out = new Uint8Array(init.length + fragment.length);
    out.set(init);
    out.set(fragment, init.length);
    return out;
  }

  trailer(): Uint8Array {
    return this.writer.close();
  }

  close(): void {
    this.encoder.close();
  }
}

/** The fragmenter on the calling thread: each call does its work before it returns. */
export class InlineFragmenter implements ChunkFragmenter {
  private constructor(private readonly inner: StreamFragmenter) {}

  static async create(options: FragmenterOptions): Promise<InlineFragmenter> {
    return new InlineFragmenter(await StreamFragmenter.create(options));
  }

  async fragment(frames: Uint8Array[]): Promise<Uint8Array> {
    return this.inner.fragment(frames);
  }

  async finish(): Promise<Uint8Array> {
    return this.inner.trailer();
  }

  close(): void {
    this.inner.close();
  }
}
