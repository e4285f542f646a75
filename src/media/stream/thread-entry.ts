// The stream encoder thread's module, as a path from the project root. build.ts bundles it as an
// entrypoint of its own (importing only this file, since the thread's imports need built kernels), and
// threaded-fragmenter.ts finds it there in a compiled executable.
export const ENCODER_THREAD_ENTRY = "src/media/stream/encoder-thread.ts";
