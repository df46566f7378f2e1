import { ValidationError } from "../core/errors.js";
import { parseStrictJson } from "../wire/strict-json.js";

/**
 * A JSON argument (`jobs enqueue`'s payload, `events send --payload`),
 * read as strictly as the HTTP API reads a body, so a value sent either way
 * is stored exactly or refused with the same words. Throws a
 * ValidationError naming `what`, which the CLI prints as one line; an empty
 * text is undefined.
 */
export function parseJsonArgument(text: string, what: string): unknown {
  try {
    return parseStrictJson(Buffer.from(text, "utf8"));
  } catch (error) {
    const message = (error as Error).message;
    throw new ValidationError(message.startsWith("request body ") ? `${what} ${message.slice("request body ".length)}` : `${what}: ${message}`);
  }
}
