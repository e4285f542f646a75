// Image generation through the same serialized engine as video; the files are kept (up to a cap, in the
// job store) so `response_format: url` can point at GET /v1/images/{id}/content.
import { join } from "node:path";
import type { Engine } from "../../engine/engine.ts";
import type { JobStore, StoredImage } from "../../engine/job-store.ts";
import { IMAGE_MIME, type ImageFormat } from "../../media/images.ts";
import type { GenerationRequest } from "../../pipelines/pipeline.ts";
import type { TaskResult } from "../../worker/ipc.ts";
import { cleanUp, cleanUpReferences } from "../cleanup.ts";
import type { NodeMetrics } from "../metrics/node-metrics.ts";

export class ImageJobs {
  constructor(
    private readonly engine: Engine,
    private readonly store: JobStore,
    private readonly metrics: NodeMetrics,
    private readonly outputDir: string,
    private readonly log: (line: string) => void,
  ) {}

  /** Renders request.num_frames images; their ids are `<request_id>-<i>` (so one request's images sort together). */
  async generate(request: GenerationRequest, format: ImageFormat, quality: number): Promise<{ images: StoredImage[]; result: TaskResult }> {
    const images = Array.from({ length: request.num_frames }, (_, i) => {
      const id = `${request.request_id}-${i}`;
      return { id, path: join(this.outputDir, "images", `${id}.${format === "jpeg" ? "jpg" : format}`), mime: IMAGE_MIME[format] };
    });
    try {
      const result = await this.engine.run({
        id: request.request_id,
        request,
        output: { kind: "images", paths: images.map((i) => i.path), format, quality },
      });
      for (const image of images) {
        for (const evicted of await this.store.addImage(image)) void cleanUp(this.log, evicted.path);
      }
      this.metrics.imagesKept(result.files.reduce((sum, file) => sum + file.bytes, 0));
      return { images, result };
    } catch (err) {
      void cleanUp(this.log, ...images.map((i) => i.path));
      throw err;
    } finally {
      void cleanUpReferences(this.log, this.outputDir, request.request_id);
    }
  }

  get(id: string): Promise<StoredImage | undefined> {
    return this.store.getImage(id);
  }
}
