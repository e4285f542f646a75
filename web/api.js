// kino's REST and WebSocket endpoints as the page uses them. When the server has an API key, a 401
// asks the user for it once (the prompt is main.js's dialog); the key lives in localStorage and goes out
// as `Authorization: Bearer` on REST and `?api_key=` on the WebSocket (browsers cannot set its headers).

const KEY_STORAGE = "kino.api_key";
let askForKey = async () => null;
let pendingAsk = null;

export const apiKey = () => localStorage.getItem(KEY_STORAGE) ?? "";

export function setApiKey(key) {
  if (key) localStorage.setItem(KEY_STORAGE, key);
  else localStorage.removeItem(KEY_STORAGE);
}

/** fn(reason) → Promise<string|null>: shows the key prompt; null means the user gave up. */
export function setKeyPrompt(fn) {
  askForKey = fn;
}

/** An error from the OpenAI envelope ({error: {message, type, param, code}}). */
export class ApiError extends Error {
  constructor(status, message, param = null) {
    super(message);
    this.status = status;
    this.param = param;
  }
}

function authHeaders() {
  const key = apiKey();
  return key ? { Authorization: `Bearer ${key}` } : {};
}

/** One prompt at a time, however many requests hit 401 together. */
function promptForKey(reason) {
  pendingAsk ??= askForKey(reason).then((key) => {
    pendingAsk = null;
    if (key) setApiKey(key);
    return key;
  });
  return pendingAsk;
}

/** fetch with the key; on 401 asks for a key and retries. Returns the Response (ok) or throws ApiError. */
async function send(method, path, body) {
  for (;;) {
    const headers = authHeaders();
    if (body !== undefined) headers["Content-Type"] = "application/json";
    const res = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
    if (res.ok) return res;
    const envelope = await res.json().catch(() => null);
    const message = envelope?.error?.message ?? `${method} ${path}: HTTP ${res.status}`;
    if (res.status === 401 && (await promptForKey(message))) continue;
    throw new ApiError(res.status, message, envelope?.error?.param ?? null);
  }
}

export const get = async (path) => (await send("GET", path)).json();
export const post = async (path, body) => (await send("POST", path, body)).json();
export const del = async (path) => (await send("DELETE", path)).json();

/** Model ids may hold slashes (a checkpoint path): encode each segment, keep the slashes. */
export const modelPath = (id) => `/v1/models/${id.split("/").map(encodeURIComponent).join("/")}`;

/**
 * A URL a <video> element can load. Without a key it is the route itself (range requests, streaming);
 * with one, the bytes are fetched with the header and handed over as a blob URL.
 */
const blobUrls = new Map();
export async function mediaUrl(path) {
  if (!apiKey()) return path;
  if (!blobUrls.has(path)) {
    const request = send("GET", path).then(async (res) => URL.createObjectURL(await res.blob()));
    blobUrls.set(path, request);
    request.catch(() => blobUrls.delete(path));
  }
  return blobUrls.get(path);
}

export function forgetMedia(path) {
  const url = blobUrls.get(path);
  blobUrls.delete(path);
  url?.then((u) => URL.revokeObjectURL(u)).catch(() => {});
}

export function webSocketUrl(path) {
  const url = new URL(path, location.href);
  url.protocol = location.protocol === "https:" ? "wss:" : "ws:";
  const key = apiKey();
  if (key) url.searchParams.set("api_key", key);
  return url.href;
}
