// The umT5 encoder as Wan runs it (wan/modules/t5.py T5Encoder): token embedding, pre-norm blocks of
// self-attention with a learned relative position bias (one table per layer for umT5, shared for T5)
// and a gated-GELU FFN, then a final RMSNorm. T5 conventions: RMSNorm without mean or bias, no
// biases anywhere, and no 1/√d scaling of the attention logits. Only real tokens are run: with Wan's
// key mask the pad positions never change a real token's output (goldens: bit-identical).
import type { Backend } from "../runtime/backend.ts";
import type { Tensor } from "../runtime/tensor.ts";
import type { T5Config } from "./configs.ts";
import type { WeightReader } from "./weights.ts";

/** Called with intermediate results (tests compare them with the goldens). */
export type Tap = (name: string, t: Tensor) => Promise<void> | void;

interface T5Layer {
  norm1: Tensor; q: Tensor; k: Tensor; v: Tensor; o: Tensor;
  norm2: Tensor; gate: Tensor; fc1: Tensor; fc2: Tensor;
  /** [numBuckets, heads]; null when the layer uses layer 0's (T5) */
  posBias: Tensor | null;
}

export class UMT5Encoder {
  private constructor(
    readonly backend: Backend,
    readonly config: T5Config,
    private readonly embedding: Tensor,
    private readonly layers: T5Layer[],
    private readonly norm: Tensor,
  ) {}

  static async load(reader: WeightReader, cfg: T5Config): Promise<UMT5Encoder> {
    const { dim, dimAttn, dimFfn, numHeads, numBuckets } = cfg;
    const layers: T5Layer[] = [];
    for (let i = 0; i < cfg.numLayers; i++) {
      const p = `blocks.${i}.`;
      layers.push({
        norm1: await reader.vector(`${p}norm1.weight`, [dim]),
        q: await reader.matrix(`${p}attn.q.weight`, [dimAttn, dim]),
        k: await reader.matrix(`${p}attn.k.weight`, [dimAttn, dim]),
        v: await reader.matrix(`${p}attn.v.weight`, [dimAttn, dim]),
        o: await reader.matrix(`${p}attn.o.weight`, [dim, dimAttn]),
        norm2: await reader.vector(`${p}norm2.weight`, [dim]),
        gate: await reader.matrix(`${p}ffn.gate.0.weight`, [dimFfn, dim]),
        fc1: await reader.matrix(`${p}ffn.fc1.weight`, [dimFfn, dim]),
        fc2: await reader.matrix(`${p}ffn.fc2.weight`, [dim, dimFfn]),
        posBias: !cfg.sharedPos || i === 0 ? await reader.vector(`${p}pos_embedding.embedding.weight`, [numBuckets, numHeads]) : null,
      });
    }
    const embedding = await reader.matrix("token_embedding.weight", [cfg.vocab, dim]);
    const norm = await reader.vector("norm.weight", [dim]);
    return new UMT5Encoder(reader.backend, cfg, embedding, layers, norm);
  }

  /** Encoder output [1, L, dim] for L ≥ 1 token ids (the caller frees it). */
  async encode(ids: Int32Array, tap?: Tap): Promise<Tensor> {
    const b = this.backend;
    const { dim, dimAttn, dimFfn, numHeads, eps } = this.config;
    const L = ids.length;
    for (const id of ids) if (id < 0 || id >= this.config.vocab) throw new Error(`token id ${id} outside the vocabulary (${this.config.vocab})`);
    const x = b.alloc([1, L, dim]);
    b.embedding(x.reshape([L, dim]), this.embedding, ids);
    await tap?.("embed", x);
    const h = b.alloc([1, L, dim]);
    const q = b.alloc([1, L, dimAttn]), k = b.alloc([1, L, dimAttn]), v = b.alloc([1, L, dimAttn]), att = b.alloc([1, L, dimAttn]);
    const g = b.alloc([1, L, dimFfn]), f = b.alloc([1, L, dimFfn]);
    const bias = b.alloc([numHeads, L, L]);
    const heads = (t: Tensor) => t.reshape([1, L, numHeads, dimAttn / numHeads]);
    const biasOpts = { numBuckets: this.config.numBuckets, maxDistance: this.config.maxDistance, bidirectional: true };
    try {
      for (const [i, layer] of this.layers.entries()) {
        if (layer.posBias) b.t5RelativeBias(bias, layer.posBias, biasOpts);
        await tap?.(`block${i}_pos_bias`, bias);
        b.rmsNorm(h, x, eps, layer.norm1);
        b.gemm(q, h, layer.q);
        b.gemm(k, h, layer.k);
        b.gemm(v, h, layer.v);
        b.attention(heads(att), heads(q), heads(k), heads(v), { scale: 1, bias });
        b.gemm(h, att, layer.o);
        b.axpby(x, x, h, 1, 1);
        b.rmsNorm(h, x, eps, layer.norm2);
        b.gemm(g, h, layer.gate);
        b.gelu(g, g);
        b.gemm(f, h, layer.fc1);
        b.mul(g, g, f);
        b.gemm(h, g, layer.fc2);
        b.axpby(x, x, h, 1, 1);
        await tap?.(`block${i}_out`, x);
      }
      b.rmsNorm(x, x, eps, this.norm);
      return x;
    } catch (err) {
      b.free(x);
      throw err;
    } finally {
      b.free(h, q, k, v, att, g, f, bias);
    }
  }

  /** encode, downloaded: [L · dim] floats. */
  async encodeToHost(ids: Int32Array): Promise<Float32Array> {
    const t = await this.encode(ids);
    try {
      return await this.backend.download(t);
    } finally {
      this.backend.free(t);
    }
  }

  free(): void {
    const ts = [this.embedding, this.norm];
    for (const l of this.layers) ts.push(l.norm1, l.q, l.k, l.v, l.o, l.norm2, l.gate, l.fc1, l.fc2, ...(l.posBias ? [l.posBias] : []));
    this.backend.free(...ts);
  }
}
