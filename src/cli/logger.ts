import pino, { type Logger } from "pino";

/** JSON logs on stdout; level from CONVEYOR_LOG_LEVEL (default "info"). */
export function cliLogger(): Logger {
  return pino({ level: process.env.CONVEYOR_LOG_LEVEL ?? "info" });
}
