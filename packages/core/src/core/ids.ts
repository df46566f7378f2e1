import { randomFillSync } from "node:crypto";

let lastMs = 0;
let sequence = 0;

// Random bytes are drawn from the system in blocks and handed out from a
// pool: a system call per id was a visible share of a large enqueueMany's
// client time. 4 KiB serve at least 409 ids (8 random bytes each, 2 more per
// new millisecond) per refill.
const POOL_BYTES = 4096;
const pool = Buffer.allocUnsafe(POOL_BYTES);
let poolOffset = POOL_BYTES;
const scratch = Buffer.allocUnsafe(16);

/** The offset of `count` fresh random bytes in `pool`. */
function takeRandom(count: number): number {
  if (poolOffset + count > POOL_BYTES) {
    randomFillSync(pool);
    poolOffset = 0;
  }
  const at = poolOffset;
  poolOffset += count;
  return at;
}

/** ASCII codes of the hex digits, and where the canonical form's dashes fall between the 16 bytes. */
const HEX_DIGITS = Buffer.from("0123456789abcdef", "latin1");
const DASH = 0x2d;
const UUID_CHARS = 36;
const text = Buffer.allocUnsafe(UUID_CHARS);

/**
 * The next UUIDv7's 16 bytes, in `scratch`. Within one millisecond a 12-bit
 * counter keeps ids from one process monotonic; a wrapped counter borrows
 * the next millisecond.
 */
function nextBytes(now: number): void {
  if (now <= lastMs) {
    sequence = (sequence + 1) & 0xfff;
    if (sequence === 0) lastMs += 1; // counter wrapped: borrow the next millisecond
    now = lastMs;
  } else {
    lastMs = now;
    sequence = pool.readUInt16BE(takeRandom(2)) & 0x7ff; // leave headroom to count up
  }
  // Bytes 0-5 time, 6-7 version and sequence, 8-15 random under the variant bits.
  const at = takeRandom(8);
  pool.copy(scratch, 8, at, at + 8);
  scratch.writeUIntBE(now, 0, 6);
  scratch[6] = 0x70 | (sequence >> 8);
  scratch[7] = sequence & 0xff;
  scratch[8] = 0x80 | (scratch[8]! & 0x3f);
}

/** Write `scratch` as a canonical lower-case UUID (36 ASCII characters) into `out` at `offset`. */
function writeCanonical(out: Buffer, offset: number): void {
  let o = offset;
  for (let i = 0; i < 16; i++) {
    if (i === 4 || i === 6 || i === 8 || i === 10) out[o++] = DASH;
    const byte = scratch[i]!;
    out[o++] = HEX_DIGITS[byte >> 4]!;
    out[o++] = HEX_DIGITS[byte & 0xf]!;
  }
}

/**
 * A UUIDv7 (RFC 9562): 48 bits of Unix milliseconds, then random bits.
 * Time-ordered ids keep inserts on the right edge of the primary-key B-tree,
 * so a busy jobs table does not scatter writes across the whole index.
 * Within one millisecond a 12-bit counter keeps ids from one process
 * monotonic, which makes `ORDER BY id` a stable "newest first".
 */
export function uuidv7(now: number = Date.now()): string {
  nextBytes(now);
  writeCanonical(text, 0);
  return text.toString("latin1", 0, UUID_CHARS);
}

/**
 * `count` fresh UUIDv7s made at `now`, as the text of a uuid[] literal
 * (`{id,id,…}`): the same ids, in the same order, as `count` calls of
 * uuidv7, written into one buffer and read out as one string.
 */
export function uuidv7ArrayLiteral(count: number, now: number): string {
  if (count <= 0) return "{}";
  const out = Buffer.allocUnsafe(1 + count * (UUID_CHARS + 1));
  out[0] = 0x7b; // {
  let offset = 1;
  for (let i = 0; i < count; i++) {
    nextBytes(now);
    writeCanonical(out, offset);
    offset += UUID_CHARS;
    out[offset++] = i === count - 1 ? 0x7d : 0x2c; // } after the last, a comma between
  }
  return out.toString("latin1", 0, offset);
}

const UUID_PATTERN = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** True for any canonical UUID string (any version). */
export function isUuid(value: string): boolean {
  return UUID_PATTERN.test(value);
}
