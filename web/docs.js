// Renders /openapi.json: operations grouped by tag, each with its request fields and responses.
const doc = await (await fetch("/openapi.json")).json();
const root = document.getElementById("docs");
root.textContent = "";

const el = (tag, attrs = {}, ...children) => {
  const node = Object.assign(document.createElement(tag), attrs);
  node.append(...children.filter((c) => c !== null && c !== undefined));
  return node;
};

/** A schema's type in a few characters: "string", "integer ≥ 1", "a | b", "object". */
function typeOf(schema) {
  if (!schema) return "";
  if (schema.const !== undefined) return JSON.stringify(schema.const);
  if (schema.anyOf) return schema.anyOf.map(typeOf).join(" | ");
  let type = schema.type === "array" ? `${typeOf(schema.items)}[]` : schema.type ?? "any";
  if (schema.minimum !== undefined) type += ` ≥ ${schema.minimum}`;
  if (schema.maximum !== undefined) type += ` ≤ ${schema.maximum}`;
  if (schema.pattern) type += ` /${schema.pattern}/`;
  return type;
}

function fieldTable(schema) {
  const props = schema?.properties;
  if (!props) return null;
  const required = new Set(schema.required ?? []);
  return el("table", { className: "fields" }, ...Object.entries(props).map(([name, s]) =>
    el("tr", {}, el("td", {}, name, required.has(name) ? el("span", { className: "req", textContent: "required" }) : null),
      el("td", { textContent: typeOf(s) }), el("td", { className: "muted", textContent: s.description ?? "" }))));
}

const byTag = new Map();
for (const [path, methods] of Object.entries(doc.paths)) {
  for (const [method, op] of Object.entries(methods)) {
    const tag = op.tags?.[0] ?? "other";
    if (!byTag.has(tag)) byTag.set(tag, []);
    byTag.get(tag).push({ path, method, op });
  }
}
root.append(el("p", { textContent: doc.info.description }));
for (const [tag, ops] of byTag) {
  root.append(el("section", {}, el("h2", { textContent: tag })));
  for (const { path, method, op } of ops) {
    const body = op.requestBody?.content?.["application/json"]?.schema;
    const responses = Object.entries(op.responses ?? {}).map(([status, r]) => el("div", {}, el("span", { className: "status", textContent: status }), r.description ?? ""));
    root.append(el("details", { className: "op" },
      el("summary", {}, el("span", { className: `method ${method}`, textContent: method.toUpperCase() }), el("span", { className: "path", textContent: path }), el("span", { className: "muted", textContent: op.summary ?? "" })),
      body ? el("p", { textContent: "Body (JSON or multipart/form-data):" }) : null, fieldTable(body), ...responses));
  }
}
root.append(el("section", {}, el("h2", { textContent: "realtime" }),
  el("p", { textContent: "WebSocket /v1/realtime/video: session.start (the video request + format \"m4s\"), session.interaction, session.stop, session.ping. Message schemas:" }),
  ...Object.entries(doc.components?.schemas ?? {}).filter(([n]) => n.startsWith("Realtime")).map(([name, s]) => el("details", { className: "op" }, el("summary", {}, el("span", { className: "path", textContent: name })), fieldTable(s)))));
