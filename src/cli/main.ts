#!/usr/bin/env bun
// kino's command line: `kino serve | generate | status | worker | --help | --version`.
import pkg from "../../package.json" with { type: "json" };
import { ConfigError, loadServeConfig } from "../config/load.ts";
import { runWorker } from "../worker/main.ts";
import { StartupError, startServer } from "../http/server.ts";
import { parseArgs, UsageError, type ParsedArgs } from "./args.ts";
import { generate } from "./generate.ts";
import { status } from "./status.ts";
import { ClusterUnavailable } from "../cluster/open.ts";
import { HELP, SERVE_HELP } from "./help.ts";

async function serve(args: ParsedArgs): Promise<void> {
  if (args.flags.help) return void console.log(SERVE_HELP);
  const unknown = Object.keys(args.flags).filter((f) => f !== "config");
  if (unknown.length) throw new UsageError(`Unknown option --${unknown[0]} for 'kino serve' (see kino serve --help)`);
  const configFile = typeof args.flags.config === "string" ? args.flags.config : undefined;
  const loaded = loadServeConfig({ configFile, overrides: args.overrides });
  for (const warning of loaded.warnings) console.warn(`kino: warning: ${warning}`);
  const server = await startServer(loaded);
  // The last line of defence: a failure nothing awaited is logged and the server goes on serving.
  process.on("unhandledRejection", (err) => console.error(`kino: unhandled error, still serving: ${(err as Error)?.stack ?? err}`));
  // The first SIGTERM (or Ctrl-C) drains: running jobs finish (up to server.drain_timeout_s), sessions
  // end with session.done, then the process exits 0. A second one exits at once.
  let draining = false;
  const shutdown = async (signal: NodeJS.Signals) => {
    if (draining) {
      console.error(`kino: ${signal} again: exiting now, without waiting for the drain`);
      process.exit(128 + (signal === "SIGINT" ? 2 : 15));
    }
    draining = true;
    try {
      await server.drain();
      await server.stop();
    } catch (err) {
      console.error(`kino: the shutdown failed: ${(err as Error)?.stack ?? err}`);
      process.exit(1);
    }
    process.exit(0);
  };
  process.on("SIGINT", shutdown);
  process.on("SIGTERM", shutdown);
}

async function main(argv: string[]): Promise<void> {
  const args = parseArgs(argv);
  if (args.flags.version) return void console.log(`kino ${pkg.version}`);
  switch (args.command) {
    case "serve":
      return serve(args);
    case "worker":
      return runWorker();
    case "status":
      return status(args, process.env);
    case "generate": {
      const configFile = typeof args.flags.config === "string" ? args.flags.config : undefined;
      return generate(args, loadServeConfig({ configFile, overrides: args.overrides }));
    }
    case null:
      if (args.flags.help) return void console.log(HELP);
      throw new UsageError("No command given (see kino --help)");
    default:
      throw new UsageError(`Unknown command '${args.command}' (see kino --help)`);
  }
}

main(process.argv.slice(2)).catch((err) => {
  if (err instanceof UsageError || err instanceof ConfigError) {
    console.error(`kino: ${err.message}`);
    process.exit(2);
  }
  if (err instanceof StartupError || err instanceof ClusterUnavailable) {
    console.error(`kino: ${err.message}`);
    process.exit(1);
  }
  console.error(`kino: ${err?.stack ?? err}`);
  process.exit(1);
});
