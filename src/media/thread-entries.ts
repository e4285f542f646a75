// The worker threads' modules, as paths from the project root. build.ts bundles each as an entrypoint
// of its own (importing only this file, since the threads' imports need built kernels), and their
// hosts find them there in a compiled executable.
export const ENCODER_THREAD_ENTRY = "src/media/stream/encoder-thread.ts";
/** The reference-image thread (image-thread-host.ts). */
export const IMAGE_THREAD_ENTRY = "src/media/image-thread.ts";
