import { z } from "zod";

/**
 * A request object (a body, a query string, or an object inside a body):
 * exactly these fields. The one definition every request schema of the API
 * is made with, so each is closed (`additionalProperties: false`) and a
 * field the shape does not define is refused naming it, as the library
 * refuses an unknown field of its input objects (`checkKnownFields`).
 */
export function requestObject<T extends z.ZodRawShape>(shape: T): z.ZodObject<T, z.core.$strict> {
  return z.strictObject(shape);
}
