// `import path from "x.wasm" with { type: "file" }` gives the file's path (embedded in a compiled
// executable by `bun build --compile`).
declare module "*.wasm" {
  const path: string;
  export default path;
}
