// The pipeline a loaded Wan checkpoint runs, from its DiT's kind (dit-kind.ts) and whether it is
// chunked causal: streaming or bidirectional text-to-video, Wan2.1 image-to-video, Wan2.2
// text-image-to-video.
import type { WanModel } from "../models/wan-model.ts";
import type { Pipeline } from "./pipeline.ts";
import { WanI2VPipeline } from "./wan-i2v.ts";
import { WanStreamingPipeline } from "./wan-streaming.ts";
import { WanT2VPipeline } from "./wan-t2v.ts";
import { WanTI2VPipeline } from "./wan-ti2v.ts";

export function createWanPipeline(model: WanModel): Pipeline {
  switch (model.checkpoint.dit.config.kind) {
    case "i2v":
      return new WanI2VPipeline(model);
    case "ti2v":
      return new WanTI2VPipeline(model);
    case "t2v":
      return model.checkpoint.kino.causal ? new WanStreamingPipeline(model) : new WanT2VPipeline(model);
  }
}
