import type { Routine } from "./routine.js";

/**
 * UUIDv7 made in the database, for rows created inside a statement (execution
 * ids on claim, dead-letter ids): 48 bits of Unix milliseconds over a random
 * v4 UUID, with the version nibble turned from 4 (0100) into 7 (0111).
 */
export const uuidV7: Routine = {
  name: "uuid_v7",
  sql: `
CREATE OR REPLACE FUNCTION {{schema}}.uuid_v7() RETURNS uuid LANGUAGE sql VOLATILE AS $$
  SELECT encode(
    set_bit(set_bit(
      overlay(uuid_send(gen_random_uuid())
        PLACING substring(int8send((extract(epoch FROM clock_timestamp()) * 1000)::bigint) FROM 3)
        FROM 1 FOR 6),
      52, 1), 53, 1),
    'hex')::uuid
$$;`,
};
