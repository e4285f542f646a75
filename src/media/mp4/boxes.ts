// A small writer for ISO base media file format boxes (ISO/IEC 14496-12): big-endian integers,
// fixed-point numbers, four-character codes, and nested boxes whose 32-bit size is patched in once
// their body is written. Every integer write is range-checked, so a value that needs a wider field
// (a chunk offset past 4 GiB in `stco`, say) fails loudly instead of wrapping into a corrupt file.

const textEncoder = new TextEncoder();

export class BoxWriter {
  private buf: Uint8Array;
  private view: DataView;
  private pos = 0;

  constructor(initialCapacity = 1024) {
    this.buf = new Uint8Array(initialCapacity);
    this.view = new DataView(this.buf.buffer);
  }

  /** Bytes written so far. */
  get length(): number {
    return this.pos;
  }

  u8(v: number): this {
    checkRange(v, 0, 0xff, "u8");
    this.reserve(1);
    this.view.setUint8(this.pos, v);
    this.pos += 1;
    return this;
  }

  u16(v: number): this {
    checkRange(v, 0, 0xffff, "u16");
    this.reserve(2);
    this.view.setUint16(this.pos, v);
    this.pos += 2;
    return this;
  }

  i16(v: number): this {
    checkRange(v, -0x8000, 0x7fff, "i16");
    this.reserve(2);
    this.view.setInt16(this.pos, v);
    this.pos += 2;
    return this;
  }

  u32(v: number): this {
    checkRange(v, 0, 0xffffffff, "u32");
    this.reserve(4);
    this.view.setUint32(this.pos, v);
    this.pos += 4;
    return this;
  }

  i32(v: number): this {
    checkRange(v, -0x80000000, 0x7fffffff, "i32");
    this.reserve(4);
    this.view.setInt32(this.pos, v);
    this.pos += 4;
    return this;
  }

  /** 64-bit unsigned; JS numbers are exact up to 2^53, far beyond any real file offset or duration. */
  u64(v: number): this {
    checkRange(v, 0, Number.MAX_SAFE_INTEGER, "u64");
    this.reserve(8);
    this.view.setUint32(this.pos, Math.floor(v / 0x100000000));
    this.view.setUint32(this.pos + 4, v % 0x100000000);
    this.pos += 8;
    return this;
  }

  /** Unsigned 16.16 fixed point (tkhd width/height, matrix entries, mvhd rate). */
  fixed16_16(v: number): this {
    return this.u32(Math.round(v * 0x10000));
  }

  /** Signed 8.8 fixed point (mvhd/tkhd volume). */
  fixed8_8(v: number): this {
    return this.i16(Math.round(v * 0x100));
  }

  /** A four-character code such as "moov" or "avc1". */
  fourcc(code: string): this {
    if (code.length !== 4 || !/^[\x20-\x7e]{4}$/.test(code)) {
      throw new Error(`box type must be four printable ASCII characters, got ${JSON.stringify(code)}`);
    }
    for (let i = 0; i < 4; i++) this.u8(code.charCodeAt(i));
    return this;
  }

  bytes(b: Uint8Array): this {
    this.reserve(b.length);
    this.buf.set(b, this.pos);
    this.pos += b.length;
    return this;
  }

  zeros(n: number): this {
    this.reserve(n);
    this.buf.fill(0, this.pos, this.pos + n);
    this.pos += n;
    return this;
  }

  /** A UTF-8 string followed by a NUL byte (hdlr name). */
  cstring(s: string): this {
    return this.bytes(textEncoder.encode(s)).u8(0);
  }

  /** A plain box: 32-bit size, type, then whatever `body` writes. */
  box(type: string, body: (w: this) => void): this {
    const start = this.pos;
    this.u32(0).fourcc(type);
    body(this);
    const size = this.pos - start;
    checkRange(size, 8, 0xffffffff, `size of '${type}' box`);
    this.view.setUint32(start, size);
    return this;
  }

  /** A FullBox: a box whose body starts with an 8-bit version and 24-bit flags. */
  fullBox(type: string, version: number, flags: number, body: (w: this) => void): this {
    checkRange(flags, 0, 0xffffff, "fullbox flags");
    return this.box(type, (w) => {
      w.u8(version).u8(flags >>> 16).u16(flags & 0xffff);
      body(w);
    });
  }

  /** The 3x3 transformation matrix every mvhd/tkhd carries; identity means "display as stored". */
  identityMatrix(): this {
    return this.u32(0x00010000).u32(0).u32(0).u32(0).u32(0x00010000).u32(0).u32(0).u32(0).u32(0x40000000);
  }

  /** The written bytes (a view onto the writer's buffer; do not keep writing afterwards). */
  finish(): Uint8Array {
    return this.buf.subarray(0, this.pos);
  }

  private reserve(n: number): void {
    if (this.pos + n <= this.buf.length) return;
    let capacity = this.buf.length * 2;
    while (capacity < this.pos + n) capacity *= 2;
    const next = new Uint8Array(capacity);
    next.set(this.buf.subarray(0, this.pos));
    this.buf = next;
    this.view = new DataView(next.buffer);
  }
}

/**
 * The header of an `mdat` box holding `payloadBytes` of sample data. A payload that does not fit a
 * 32-bit size gets the 64-bit form (size field 1, then a 64-bit "largesize").
 */
export function mdatHeader(payloadBytes: number): Uint8Array {
  const w = new BoxWriter(16);
  if (payloadBytes + 8 <= 0xffffffff) {
    w.u32(payloadBytes + 8).fourcc("mdat");
  } else {
    w.u32(1).fourcc("mdat").u64(payloadBytes + 16);
  }
  return w.finish();
}

function checkRange(v: number, min: number, max: number, what: string): void {
  if (!Number.isInteger(v) || v < min || v > max) {
    throw new RangeError(`${what} out of range: ${v} (allowed ${min}..${max})`);
  }
}
