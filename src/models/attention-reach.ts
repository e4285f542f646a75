// Self-attention held to the spatial reach a model was trained with (kino.self_attention_reach).
//
// A DiT trained on one token grid has only ever seen pairs of tokens a few rows and columns apart. On a
// wider grid its fastest RoPE pair turns past a full circle between the edges, so a token at one edge
// reads as the neighbour of the token at the other: kino-tiny, trained at 4×4 tokens and rendering
// 16:9 at 7×4, copied an object near one edge onto the far edge within two chunks. Limiting each
// query to the keys within the trained reach (any frame, at most `reach` rows and columns away) keeps
// every pair the model attends to inside what it learned — the neighbourhood attention with which
// diffusion models are commonly run past their training size — while slowing the fast pairs instead
// (position interpolation) stretched every object sideways. The first chunk of a stream attends across
// the whole grid: it lays out the scene from noise, and within the reach alone, regions too far apart
// to see each other each drew an object of their own; the chunks after it continue that scene. On a
// grid the reach covers, nothing is masked and the forward is unchanged.

/** The farthest a query attends: token rows and columns. */
export type AttentionReach = readonly [rows: number, columns: number];

/** Logit added to a key out of reach: far enough below any real logit that its weight is exactly 0,
 *  and finite, so a kernel tile whose keys are all out of reach for a row rescales away cleanly. */
const OUT_OF_REACH = -1e9;

/** The most values a bias may hold (256 MiB of f32). */
const MAX_BIAS_VALUES = 2 ** 26;

/** Whether a grid of `rows` × `columns` tokens per frame has a pair of tokens farther apart than the reach. */
export function reachMasks(reach: AttentionReach | null, rows: number, columns: number): boolean {
  return reach !== null && (rows - 1 > reach[0] || columns - 1 > reach[1]);
}

/**
 * Additive logits [heads, queries, keys] (AttentionOptions.bias): 0 where the key lies within reach of
 * the query, OUT_OF_REACH elsewhere; the first `unmasked` queries see every key (the first chunk's, in
 * a pass over several chunks). Tokens are laid out frame by frame in raster order (token l of a frame:
 * row ⌊l / columns⌋, column l mod columns), and queries and keys both start at a frame boundary, so a
 * token's place in its frame is its index modulo the frame's tokens.
 */
export function reachBias(reach: AttentionReach, heads: number, rows: number, columns: number, queries: number, keys: number, unmasked = 0): Float32Array {
  const perFrame = rows * columns;
  if (queries % perFrame || keys % perFrame) throw new Error(`${queries} queries and ${keys} keys are not whole frames of ${rows}x${columns} tokens`);
  // the bias is dense: made for small models' grids, it would take gigabytes at a large model's
  if (heads * queries * keys > MAX_BIAS_VALUES) {
    throw new Error(`kino.self_attention_reach: a ${rows}x${columns}-token grid needs a ${Math.round((heads * queries * keys * 4) / 2 ** 20)} MiB attention bias, more than the ${(MAX_BIAS_VALUES * 4) / 2 ** 20} MiB allowed`);
  }
  const one = new Float32Array(queries * keys);
  for (let i = unmasked; i < queries; i++) {
    const qi = i % perFrame, qRow = Math.floor(qi / columns), qColumn = qi % columns;
    for (let j = 0; j < keys; j++) {
      const kj = j % perFrame;
      const far = Math.abs(Math.floor(kj / columns) - qRow) > reach[0] || Math.abs((kj % columns) - qColumn) > reach[1];
      if (far) one[i * keys + j] = OUT_OF_REACH;
    }
  }
  const all = new Float32Array(heads * one.length);
  for (let h = 0; h < heads; h++) all.set(one, h * one.length);
  return all;
}
