// Command-line parsing for `kino <command> [options]`. Deliberately small and schema-free: dotted
// keys are config overrides (validated by src/config/load.ts), everything else is a flag the command
// interprets itself.

export interface ParsedArgs {
  /** The first positional argument (`serve`, `generate`, ...), or null. */
  command: string | null;
  /** `--name value`, `--name=value`, `-o value`; a flag with no value is `true`. Last one wins. */
  flags: Record<string, string | true>;
  /** Dotted keys (`--server.port 8123`) → raw text; the config loader types them. Last one wins. */
  overrides: Record<string, string>;
  /** Positional arguments after the command, including everything after `--`. */
  positionals: string[];
}

export class UsageError extends Error {
  override name = "UsageError";
}

const NAME = /^[A-Za-z_][\w-]*(\.[A-Za-z_][\w-]*)*$/;

/** True for `--name` and `-x`; false for values such as `-1` or a lone `-` (stdin). */
function isOption(token: string): boolean {
  return token.startsWith("--") || /^-[A-Za-z]/.test(token);
}

/**
 * Parses argv after the program name. `--key value` takes the next token as its value unless it is
 * another option (so `--seed -1` works); `--key=value` always takes the text after the first `=`.
 * `--` ends options.
 */
export function parseArgs(argv: string[]): ParsedArgs {
  const parsed: ParsedArgs = { command: null, flags: {}, overrides: {}, positionals: [] };
  const positional = (token: string) => {
    if (parsed.command === null) parsed.command = token;
    else parsed.positionals.push(token);
  };

  for (let i = 0; i < argv.length; i++) {
    const token = argv[i]!;
    if (token === "--") {
      argv.slice(i + 1).forEach(positional);
      break;
    }
    if (!isOption(token)) {
      positional(token);
      continue;
    }

    const body = token.replace(/^--?/, "");
    const eq = body.indexOf("=");
    const name = eq === -1 ? body : body.slice(0, eq);
    if (!NAME.test(name) || (!token.startsWith("--") && name.length !== 1)) {
      throw new UsageError(`malformed option ${JSON.stringify(token)}`);
    }
    let value: string | true = eq === -1 ? true : body.slice(eq + 1);
    if (value === true && i + 1 < argv.length && !isOption(argv[i + 1]!)) value = argv[++i]!;

    if (!name.includes(".")) {
      parsed.flags[name] = value;
    } else if (value === true) {
      // A bare dotted key would silently become "true" for string fields; make the operator say it.
      throw new UsageError(`--${name} needs a value (--${name} VALUE or --${name}=VALUE)`);
    } else {
      parsed.overrides[name] = value;
    }
  }
  return parsed;
}
