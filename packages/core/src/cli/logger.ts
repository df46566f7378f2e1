import pino, { type Logger } from "pino";

/**
 * JSON logs, level from CONVEYOR_LOG_LEVEL (default "info"), on stdout.
 * `quiet` is for commands whose stdout is their result (tables, JSON):
 * logs go to stderr, at "warn" unless CONVEYOR_LOG_LEVEL says otherwise.
 */
export function cliLogger(options: { quiet?: boolean } = {}): Logger {
  if (options.quiet) return pino({ level: process.env.CONVEYOR_LOG_LEVEL ?? "warn" }, process.stderr);
  return pino({ level: process.env.CONVEYOR_LOG_LEVEL ?? "info" });
}
