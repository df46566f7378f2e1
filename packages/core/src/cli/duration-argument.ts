import { InvalidArgumentError } from "commander";
import { parseDuration } from "../core/duration.js";
import { ValidationError } from "../core/errors.js";

/**
 * A duration argument (7d, 12h, 30m, 45s, 500ms or plain ms), in ms.
 * Commander turns the refusal into one line naming the option, and exit 1.
 */
export function durationArgument(value: string): number {
  try {
    return parseDuration(value, "the duration");
  } catch (error) {
    if (error instanceof ValidationError) throw new InvalidArgumentError("expected a duration like 7d, 12h, 30m, 45s, 500ms or a number of ms");
    throw error;
  }
}
