import type { TSchema, Static } from "@sinclair/typebox";
import { TypeCompiler, type TypeCheck } from "@sinclair/typebox/compiler";
import { ValueErrorType } from "@sinclair/typebox/value";
import { badRequest } from "./errors.ts";

const compiled = new WeakMap<TSchema, TypeCheck<TSchema>>();

/** JSON pointer "/video_params/fps" → "video_params.fps"; array indices as "[0]". */
export function pointerToPath(pointer: string): string {
  return pointer
    .split("/")
    .slice(1)
    .map((part) => part.replace(/~1/g, "/").replace(/~0/g, "~"))
    .reduce((path, part) => (/^\d+$/.test(part) ? `${path}[${part}]` : path ? `${path}.${part}` : part), "");
}

/**
 * Validates `value` against `schema` or throws a 400 naming the first offending field.
 * Unknown fields get their own message because that is the most common client mistake.
 */
export function validateOrThrow<T extends TSchema>(schema: T, value: unknown, what = "request"): Static<T> {
  let check = compiled.get(schema);
  if (!check) {
    check = TypeCompiler.Compile(schema);
    compiled.set(schema, check);
  }
  if (check.Check(value)) return value as Static<T>;
  // Prefer the most specific error: an unknown property, else the deepest path.
  const errors = [...check.Errors(value)];
  const unknown = errors.find((e) => e.type === ValueErrorType.ObjectAdditionalProperties);
  if (unknown) {
    // TypeBox reports an unexpected property at its own path.
    const path = pointerToPath(unknown.path);
    const name = unknown.path.split("/").pop()!.replace(/~1/g, "/").replace(/~0/g, "~");
    const near = similarField(name, Object.keys((unknown.schema as { properties?: object }).properties ?? {}));
    throw badRequest(`Unknown field '${path}' in ${what}${near ? ` (did you mean '${near}'?)` : ""}`, path);
  }
  const first = errors.sort((a, b) => b.path.length - a.path.length)[0]!;
  const path = pointerToPath(first.path);
  if (!path) throw badRequest(`The ${what} body must be a JSON object`, null);
  const got = valueAt(value, first.path);
  if (got === undefined) throw badRequest(`Missing required field '${path}'`, path);
  // A field may say in words what it accepts (`errorMessage`), where TypeBox's own message would not.
  const message = first.schema.errorMessage ?? first.message;
  throw badRequest(`Invalid '${path}': ${message} (got ${describeValue(got)})`, path);
}

/** A value as the message shows it: JSON, except numbers JSON cannot write (1e400 parses to Infinity). */
function describeValue(value: unknown): string {
  if (typeof value === "number" && !Number.isFinite(value)) return `${value}, a number out of range`;
  return JSON.stringify(value)?.slice(0, 80) ?? String(value);
}

/** The known field a client most likely meant: the same name in another case or with '-' for '_'. */
export function similarField(name: string, known: readonly string[]): string | undefined {
  const normal = (s: string) => s.toLowerCase().replace(/-/g, "_");
  return known.find((k) => k !== name && normal(k) === normal(name));
}

function valueAt(value: unknown, pointer: string): any {
  return pointer
    .split("/")
    .slice(1)
    .map((part) => part.replace(/~1/g, "/").replace(/~0/g, "~"))
    .reduce((v: any, part) => (v != null && typeof v === "object" && Object.hasOwn(v, part) ? v[part] : undefined), value);
}
