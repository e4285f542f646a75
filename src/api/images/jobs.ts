// Image generation through the same serialized engine as video; the files are kept (up to a cap, in the
// job store, their bytes in the artifact store) so `response_format: url` can point at
// GET /v1/images/{id}/content on any node.
import { join } from "node:path";
import type { Engine } from "../../engine/engine.ts";
import { imageKey, type ArtifactStore, type StoredArtifact } from "../../engine/artifact-store.ts";
import type { JobStore, StoredImage } from "../../engine/job-store.ts";
import { IMAGE_MIME, type ImageFormat } from "../../media/images.ts";
import type { GenerationRequest } from "../../pipelines/pipeline.ts";
import type { TaskResult } from "../../worker/ipc.ts";
import { cleanUp, cleanUpReferences } from "../cleanup.ts";
import type { NodeMetrics } from "../metrics/node-metrics.ts";

/** A kept image and, when the response carries it inline, its bytes. */
export interface GeneratedImage extends StoredImage {
  bytes?: Uint8Array;
}

export class ImageJobs {
  constructor(
    private readonly engine: Engine,
    private readonly store: JobStore,
    private readonly artifacts: ArtifactStore,
    private readonly metrics: NodeMetrics,
    private readonly outputDir: string,
    private readonly log: (line: string) => void,
  ) {}

  /**
   * Renders request.num_frames images; their ids are `<request_id>-<i>` (so one request's images sort
   * together). `inline`: also return each image's bytes (b64_json responses).
   */
  async generate(request: GenerationRequest, format: ImageFormat, quality: number, inline: boolean): Promise<{ images: GeneratedImage[]; result: TaskResult }> {
    const images = Array.from({ length: request.num_frames }, (_, i) => {
      const id = `${request.request_id}-${i}`;
      const key = imageKey(id, format === "jpeg" ? "jpg" : format);
      return { id, key, mime: IMAGE_MIME[format], path: join(this.outputDir, key) };
    });
    const stored = new Set<string>();
    try {
      const result = await this.engine.run({
        id: request.request_id,
        request,
        output: { kind: "images", paths: images.map((i) => i.path), format, quality },
      });
      const kept: GeneratedImage[] = [];
      for (const { path, ...image } of images) {
        const bytes = inline ? await Bun.file(path).bytes() : undefined;
        await this.artifacts.put(image.key, path);
        stored.add(image.key);
        kept.push({ ...image, bytes });
      }
      // Listed only once every file is stored: a url never points at a file that failed to store.
      for (const { bytes: _, ...image } of kept) {
        for (const evicted of await this.store.addImage(image)) void this.remove(evicted.key);
      }
      this.metrics.imagesKept(result.files.reduce((sum, file) => sum + file.bytes, 0));
      return { images: kept, result };
    } catch (err) {
      void cleanUp(this.log, ...images.map((i) => i.path));
      for (const key of stored) void this.remove(key);
      throw err;
    } finally {
      void cleanUpReferences(this.log, this.outputDir, request.request_id);
    }
  }

  get(id: string): Promise<StoredImage | undefined> {
    return this.store.getImage(id);
  }

  open(image: StoredImage): Promise<StoredArtifact | undefined> {
    return this.artifacts.open(image.key);
  }

  private async remove(key: string): Promise<void> {
    const failed = await this.artifacts.remove(key);
    if (failed) this.log(failed.message);
  }
}
