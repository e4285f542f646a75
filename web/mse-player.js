// Plays kino's realtime stream (fragmented MP4, one WebSocket binary message at a time) in a <video>
// through MediaSource. The codec string comes from the init segment's avcC box; appends are queued and
// drained on `updateend`, since a SourceBuffer takes one append at a time.

const MediaSourceImpl = window.ManagedMediaSource ?? window.MediaSource;

/** Keep this many seconds behind the playhead; older media is removed so long sessions fit the quota. */
const KEEP_BEHIND_S = 20;

/** Walks ISO-BMFF boxes; returns the payload [start, end) of the first box of `type` under `path`. */
function findBox(bytes, path, start = 0, end = bytes.length) {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  // Bytes a container box holds before its children (stsd: version/flags + entry count; avc1: the
  // visual sample entry fields).
  const header = { stsd: 8, avc1: 78, avc3: 78 };
  let offset = start;
  while (offset + 8 <= end) {
    let size = view.getUint32(offset);
    const type = String.fromCharCode(...bytes.subarray(offset + 4, offset + 8));
    let body = offset + 8;
    if (size === 1) {
      size = Number(view.getBigUint64(offset + 8));
      body += 8;
    } else if (size === 0) size = end - offset;
    if (size < 8 || offset + size > end) return null;
    if (type === path[0]) {
      if (path.length === 1) return [body, offset + size];
      return findBox(bytes, path.slice(1), body + (header[type] ?? 0), offset + size);
    }
    offset += size;
  }
  return null;
}

const AVCC_PATH = ["moov", "trak", "mdia", "minf", "stbl", "stsd", "avc1", "avcC"];

/** `avc1.PPCCLL` from the init segment (profile, constraint flags, level of the avcC record), or null. */
export function codecFromInitSegment(bytes) {
  const avcC = findBox(bytes, AVCC_PATH) ?? findBox(bytes, AVCC_PATH.map((t) => (t === "avc1" ? "avc3" : t)));
  if (!avcC || avcC[1] - avcC[0] < 4) return null;
  const [, profile, compat, level] = bytes.subarray(avcC[0], avcC[0] + 4);
  const hex = (b) => b.toString(16).toUpperCase().padStart(2, "0");
  return `avc1.${hex(profile)}${hex(compat)}${hex(level)}`;
}

export const mseSupported = () => Boolean(MediaSourceImpl);

export class MsePlayer {
  /** @param {HTMLVideoElement} video  @param {(err: Error) => void} onError */
  constructor(video, onError = () => {}) {
    this.video = video;
    this.onError = onError;
    this.queue = [];
    this.sourceBuffer = null;
    this.ended = false;
    this.codec = null;
    this.bytes = 0;
    this.mediaSource = new MediaSourceImpl();
    this.opened = new Promise((resolve) => this.mediaSource.addEventListener("sourceopen", resolve, { once: true }));
    video.disableRemotePlayback = true; // ManagedMediaSource (Safari) requires it
    video.removeAttribute("src");
    video.srcObject = null;
    this.objectUrl = URL.createObjectURL(this.mediaSource);
    video.src = this.objectUrl;
  }

  /** Queues one binary message; the first one must start with the init segment. */
  append(buffer) {
    const bytes = new Uint8Array(buffer);
    this.bytes += bytes.byteLength;
    if (!this.codec) {
      this.codec = codecFromInitSegment(bytes);
      if (!this.codec) return this.fail(new Error("the stream does not start with an H.264 init segment"));
      this.setUp(`video/mp4; codecs="${this.codec}"`);
    }
    this.queue.push({ kind: "append", bytes });
    this.drain();
  }

  /** Ends the stream once everything queued is appended, so the video can reach `ended`. */
  end() {
    this.ended = true;
    this.drain();
  }

  /** Stops using the MediaSource (a new session gets a new player). */
  dispose() {
    this.queue = [];
    this.disposed = true;
    URL.revokeObjectURL(this.objectUrl);
  }

  async setUp(mime) {
    await this.opened;
    if (this.disposed) return;
    if (!MediaSourceImpl.isTypeSupported(mime)) return this.fail(new Error(`this browser cannot play ${mime}`));
    try {
      this.sourceBuffer = this.mediaSource.addSourceBuffer(mime);
    } catch (err) {
      return this.fail(err);
    }
    this.sourceBuffer.mode = "segments";
    this.sourceBuffer.addEventListener("updateend", () => this.drain());
    this.sourceBuffer.addEventListener("error", () => this.fail(new Error("SourceBuffer error")));
    this.drain();
  }

  drain() {
    const sb = this.sourceBuffer;
    if (this.disposed || !sb || sb.updating || this.mediaSource.readyState !== "open") return;
    const next = this.queue.shift();
    if (!next) {
      if (this.ended) this.mediaSource.endOfStream();
      return;
    }
    try {
      if (next.kind === "remove") sb.remove(next.start, next.end);
      else {
        sb.appendBuffer(next.bytes);
        this.trimBehind();
        // Autoplay (muted, playsinline) can be refused before data arrives; try again once frames exist.
        if (this.video.paused && !this.video.ended) this.video.play().catch(() => {});
      }
    } catch (err) {
      this.fail(err);
    }
  }

  trimBehind() {
    const { buffered, currentTime } = this.video;
    const removing = this.queue.some((op) => op.kind === "remove");
    if (!removing && buffered.length && currentTime - buffered.start(0) > KEEP_BEHIND_S * 1.5) {
      this.queue.push({ kind: "remove", start: 0, end: currentTime - KEEP_BEHIND_S });
    }
  }

  /** Seconds of media buffered ahead of the playhead. */
  get bufferedAhead() {
    const { buffered, currentTime } = this.video;
    return buffered.length ? Math.max(0, buffered.end(buffered.length - 1) - currentTime) : 0;
  }

  fail(err) {
    if (this.failed) return;
    this.failed = err;
    this.onError(err);
  }
}
