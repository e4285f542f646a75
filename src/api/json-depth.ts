// How deep client JSON may nest. JSON.parse takes any depth, but what runs on the value afterwards —
// the null cleanup, schema validation, JSON.stringify, the structured clone to a worker — recurses
// and throws RangeError ("Maximum call stack size exceeded") somewhere past ten thousand levels, and
// parsing a body of brackets costs the event loop about 0.4 µs a level (10 s for a 60 MB body). No
// field of any request or realtime message nests more than a few levels, so anything deeper than
// MAX_JSON_DEPTH is refused: before parsing where kino parses the text, by a walk where the
// framework already did (WebSocket messages).

export const MAX_JSON_DEPTH = 32;

const QUOTE = 0x22, BACKSLASH = 0x5c, OPEN_OBJECT = 0x7b, OPEN_ARRAY = 0x5b, CLOSE_OBJECT = 0x7d, CLOSE_ARRAY = 0x5d;

/**
 * Scans JSON text for a container opened deeper than `max` levels without parsing it. Returns null
 * within the limit; otherwise the top-level key the deep value sits under (null where the text is
 * not an object, or the key cannot be read), so the error can name the field.
 */
export function jsonTooDeep(text: Uint8Array | string, max = MAX_JSON_DEPTH): { field: string | null } | null {
  const bytes = typeof text === "string" ? new TextEncoder().encode(text) : text;
  let depth = 0;
  let inString = false;
  let escaped = false;
  let stringStart = 0;
  let lastTopLevelString: [number, number] | null = null; // in a top-level object: the last key (or value) read
  let field: [number, number] | null = null; // the key of the top-level value being scanned
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
      if (depth > max) return { field: field && readKey(bytes, field) };
    } else if (c === CLOSE_OBJECT || c === CLOSE_ARRAY) {
      depth--;
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
