// `import path from "…/web/app.js" with { type: "file" }` yields the embedded file's path.
declare module "*.js" {
  const path: string;
  export default path;
}
declare module "*.css" {
  const path: string;
  export default path;
}
