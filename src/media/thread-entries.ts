// The worker threads' modules, as paths from the project root. build.ts bundles each as an entrypoint
// of its own (importing only this file, since the threads' imports need built kernels), and their
// hosts find them there in a compiled executable.
export const ENCODER_THREAD_ENTRY = "src/media/stream/encoder-thread.ts";
/** The reference-image thread (image-thread-host.ts). */
export const IMAGE_THREAD_ENTRY = "src/media/image-thread.ts";

/**
 * Where a thread's module is, for `new Worker`. In a `bun build --compile` executable (modules under
 * Bun's /$bunfs/, built with --root at the project root) a relative specifier names an embedded
 * entrypoint by its path from that root; run from source, the file itself (this file is two folders
 * below the root).
 */
export function threadModuleUrl(entry: string): URL | string {
  return import.meta.url.includes("$bunfs") ? `./${entry}` : new URL(`../../${entry}`, import.meta.url);
}
