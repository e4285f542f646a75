/** 32 random hex digits, the id style of vLLM-Omni (`video_stream-<32 hex>`) and FastVideo. */
export function randomHex(): string {
  return Buffer.from(crypto.getRandomValues(new Uint8Array(16))).toString("hex");
}

export const newVideoJobId = () => `video_gen_${randomHex()}`;
export const newSyncRequestId = () => `video_sync-${randomHex()}`;
export const newImageRequestId = () => `img_${randomHex()}`;
export const newStreamRequestId = () => `video_stream-${randomHex()}`;
