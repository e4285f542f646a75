// How deep client JSON may nest, and how many members it may have. JSON.parse takes any depth, but
// what runs on the value afterwards — the null cleanup, schema validation, JSON.stringify, the
// structured clone to a worker — recurses and throws RangeError ("Maximum call stack size exceeded")
// somewhere past ten thousand levels, and parsing a body of brackets costs the event loop about
// 0.4 µs a level (10 s for a 60 MB body). No field of any request or realtime message nests more
// than a few levels, so anything deeper than MAX_JSON_DEPTH is refused: before parsing where kino
// parses the text, by a walk where the framework already did (WebSocket messages). Many small
// members cost the parse too — 2 million keys in 25 MB, inside the body limit a data-URL image
// needs, held the event loop 5–7 s — and no request has more than a few dozen, so the same scan
// refuses a body with more than MAX_JSON_MEMBERS.

export const MAX_JSON_DEPTH = 32;
/** Object members at every depth, counted by their separators outside strings (a colon each, and the
 *  commas between them), so arrays may hold up to twice as many items. */
export const MAX_JSON_MEMBERS = 10_000;

const QUOTE = 0x22, BACKSLASH = 0x5c, OPEN_OBJECT = 0x7b, OPEN_ARRAY = 0x5b, CLOSE_OBJECT = 0x7d, CLOSE_ARRAY = 0x5d;
const COMMA = 0x2c, COLON = 0x3a;

/** Which limit JSON text is over, and the top-level key it is over it in (null where the text is not
 *  an object, or the key cannot be read), so the error can name the field. */
export interface JsonOverLimit {
  limit: "depth" | "members";
  field: string | null;
}

/**
 * Scans JSON text, without parsing it, for a container opened deeper than `max` levels or more than
 * `maxMembers` members and items in all. Returns null within the limits.
 */
export function jsonOverLimits(text: Uint8Array | string, max = MAX_JSON_DEPTH, maxMembers = MAX_JSON_MEMBERS): JsonOverLimit | null {
  const bytes = typeof text === "string" ? new TextEncoder().encode(text) : text;
  let depth = 0;
  let inString = false;
  let escaped = false;
  let stringStart = 0;
  let lastTopLevelString: [number, number] | null = null; // in a top-level object: the last key (or value) read
  let field: [number, number] | null = null; // the key of the top-level value being scanned
  let members = 0; // separators: a colon per object member, a comma between items or members
  const topLevelObject = firstNonSpace(bytes) === OPEN_OBJECT;
  for (let i = 0; i < bytes.length; i++) {
    const c = bytes[i]!;
    if (inString) {
      if (escaped) escaped = false;
      else if (c === BACKSLASH) escaped = true;
      else if (c === QUOTE) {
        inString = false;
        if (depth === 1) lastTopLevelString = [stringStart, i + 1];
      }
      continue;
    }
    if (c === QUOTE) {
      inString = true;
      stringStart = i;
    } else if (c === OPEN_OBJECT || c === OPEN_ARRAY) {
      depth++;
      // A container that opens at the second level is a top-level value: its key was the last string.
      if (depth === 2) field = topLevelObject ? lastTopLevelString : null;
      if (depth > max) return { limit: "depth", field: field && readKey(bytes, field) };
    } else if (c === CLOSE_OBJECT || c === CLOSE_ARRAY) {
      depth--;
    } else if ((c === COLON || c === COMMA) && ++members > 2 * maxMembers) {
      return { limit: "members", field: depth > 1 ? field && readKey(bytes, field) : null };
    }
  }
  return null;
}

/** The first byte that is neither JSON whitespace nor part of a UTF-8 byte order mark. */
function firstNonSpace(bytes: Uint8Array): number | undefined {
  const skipped = new Set([0x20, 0x09, 0x0a, 0x0d, 0xef, 0xbb, 0xbf]);
  return bytes.find((c) => !skipped.has(c));
}

function readKey(bytes: Uint8Array, [start, end]: [number, number]): string | null {
  try {
    const key = JSON.parse(new TextDecoder().decode(bytes.subarray(start, end)));
    return typeof key === "string" ? key : null;
  } catch {
    return null;
  }
}

/** Whether an already-parsed value nests deeper than `max` levels (an explicit stack: no recursion). */
export function valueTooDeep(value: unknown, max = MAX_JSON_DEPTH): boolean {
  const stack: [unknown, number][] = [[value, 0]];
  while (stack.length > 0) {
    const [node, depth] = stack.pop()!;
    if (node === null || typeof node !== "object") continue;
    if (depth + 1 > max) return true;
    for (const child of Array.isArray(node) ? node : Object.values(node)) {
      if (child !== null && typeof child === "object") stack.push([child, depth + 1]);
    }
  }
  return false;
}
