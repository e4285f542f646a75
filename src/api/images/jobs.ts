// Image generation through the same serialized engine as video; the files are kept (up to a cap)
// so `response_format: url` can point at GET /v1/images/{id}/content.
import { rm } from "node:fs/promises";
import { join } from "node:path";
import { IMAGE_MIME, type ImageFormat } from "../../media/images.ts";
import type { GenerationRequest } from "../../pipelines/pipeline.ts";
import type { Engine } from "../../engine/engine.ts";
import type { TaskResult } from "../../worker/ipc.ts";
import { removeReferences } from "../../media/references.ts";

export interface StoredImage {
  id: string;
  path: string;
  mime: string;
}

export class ImageJobs {
  private readonly images = new Map<string, StoredImage>();

  constructor(
    private readonly engine: Engine,
    private readonly outputDir: string,
    private readonly maxImages: number,
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
      for (const image of images) this.keep(image);
      return { images, result };
    } catch (err) {
      await Promise.all(images.map((i) => rm(i.path, { force: true })));
      throw err;
    } finally {
      await removeReferences(this.outputDir, request.request_id);
    }
  }

  get(id: string): StoredImage | undefined {
    return this.images.get(id);
  }

  private keep(image: StoredImage): void {
    this.images.set(image.id, image);
    if (this.images.size <= this.maxImages) return;
    const [oldest] = this.images.values();
    this.images.delete(oldest!.id);
    void rm(oldest!.path, { force: true });
  }
}
