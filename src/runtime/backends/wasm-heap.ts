// The wasm backend's allocator: a first-fit free list over the WebAssembly memory above the C
// module's static data (__heap_base), growing the memory when no free block fits. Blocks are 64-byte
// aligned (a cache line, and more than any SIMD load needs). Tensors are few and large, so a sorted
// array of free blocks with coalescing is plenty.

const ALIGN = 64;
const PAGE = 65536;

interface Block {
  off: number;
  size: number;
}

export class WasmHeap {
  readonly #memory: WebAssembly.Memory;
  readonly #maxBytes: number;
  #free: Block[] = [];
  #sizes = new Map<number, number>();
  #top: number; // end of the region handed to the allocator so far
  inUse = 0;
  peak = 0;
  /** Blocks handed out, and times the memory grew, since the heap was made. */
  allocations = 0;
  grows = 0;

  constructor(memory: WebAssembly.Memory, heapBase: number, maxBytes: number) {
    this.#memory = memory;
    this.#maxBytes = maxBytes;
    const start = roundUp(heapBase, ALIGN);
    this.#top = memory.buffer.byteLength;
    if (this.#top > start) this.#free.push({ off: start, size: this.#top - start });
  }

  alloc(bytes: number): number {
    const size = roundUp(Math.max(bytes, 1), ALIGN);
    this.allocations++;
    let i = this.#free.findIndex((b) => b.size >= size);
    if (i < 0) i = this.#grow(size);
    const block = this.#free[i]!;
    const off = block.off;
    if (block.size === size) this.#free.splice(i, 1);
    else Object.assign(block, { off: block.off + size, size: block.size - size });
    this.#sizes.set(off, size);
    this.inUse += size;
    this.peak = Math.max(this.peak, this.inUse);
    return off;
  }

  free(off: number): void {
    const size = this.#sizes.get(off);
    if (size === undefined) throw new Error(`wasm heap: free of unknown block ${off}`);
    this.#sizes.delete(off);
    this.inUse -= size;
    let i = this.#free.findIndex((b) => b.off > off);
    if (i < 0) i = this.#free.length;
    this.#free.splice(i, 0, { off, size });
    // coalesce with the next block, then with the previous one
    const next = this.#free[i + 1];
    if (next && off + size === next.off) {
      this.#free[i]!.size += next.size;
      this.#free.splice(i + 1, 1);
    }
    const prev = this.#free[i - 1];
    if (prev && prev.off + prev.size === off) {
      prev.size += this.#free[i]!.size;
      this.#free.splice(i, 1);
    }
  }

  /** Grows the memory so that a block of `size` fits at the top; returns its free-list index. */
  #grow(size: number): number {
    const last = this.#free[this.#free.length - 1];
    const tail = last && last.off + last.size === this.#top ? last : null;
    const need = size - (tail?.size ?? 0);
    const pages = Math.ceil(need / PAGE);
    if (this.#top + pages * PAGE > this.#maxBytes) {
      throw new Error(
        `wasm backend: out of memory allocating ${fmtBytes(size)} (${fmtBytes(this.inUse)} in use, ` +
          `limit ${fmtBytes(this.#maxBytes)} for wasm32)`,
      );
    }
    this.#memory.grow(pages);
    this.grows++;
    const added = pages * PAGE;
    if (tail) tail.size += added;
    else this.#free.push({ off: this.#top, size: added });
    this.#top += added;
    return this.#free.length - 1;
  }
}

function roundUp(n: number, to: number): number {
  return Math.ceil(n / to) * to;
}

function fmtBytes(n: number): string {
  return n >= 1 << 30 ? `${(n / (1 << 30)).toFixed(2)} GiB` : `${(n / (1 << 20)).toFixed(1)} MiB`;
}
