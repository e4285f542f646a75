// How to start this same program again (worker processes, CLI tests): the compiled executable runs
// itself; in development Bun runs src/cli/main.ts.

/** True inside a `bun build --compile` executable, whose modules live in Bun's virtual /$bunfs/. */
export const isCompiled = import.meta.url.includes("$bunfs");

export function selfCommand(...args: string[]): string[] {
  if (isCompiled) return [process.execPath, ...args];
  return [process.execPath, new URL("../cli/main.ts", import.meta.url).pathname, ...args];
}
