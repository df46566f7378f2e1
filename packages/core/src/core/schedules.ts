/**
 * Cron schedules on a job definition: the `cron` option of `defineJob`,
 * validated (naming the field) into frozen schedules, and the payload check
 * against the kind's schema.
 */
import type { StandardSchemaV1 } from "@standard-schema/spec";
import { type CronMissedPolicy, parseCron } from "./cron.js";
import {
  DEFAULT_CRON_CATCH_UP_LIMIT,
  DEFAULT_CRON_MISSED_POLICY,
  DEFAULT_CRON_TIMEZONE,
  DEFAULT_TENANT,
  MAX_CRON_CATCH_UP_LIMIT,
} from "./defaults.js";
import { ConfigError, ValidationError } from "./errors.js";
import { encodeJson } from "./json.js";
import { checkKnownFields, checkName, checkPriority, checkTenant, type KnownFields, validatePayload } from "./validate.js";

const SCHEDULE_FIELDS: KnownFields<CronSchedule> = {
  name: true,
  cron: true,
  timezone: true,
  payload: true,
  tenant: true,
  queue: true,
  priority: true,
  missed: true,
};

/** What to do with ticks missed while no worker ran the schedule (after downtime). */
export interface CronMissed {
  /**
   * `skip`: enqueue only the most recent missed tick. `catch-up`: enqueue the
   * most recent `limit` missed ticks, each with its own tick time.
   * @defaultValue `DEFAULT_CRON_MISSED_POLICY` ("skip")
   */
  policy: CronMissedPolicy;
  /**
   * For `catch-up`: most ticks enqueued at once, 1..1000.
   * @defaultValue `DEFAULT_CRON_CATCH_UP_LIMIT` (10)
   */
  limit?: number;
}

/** One periodic schedule of a job kind. `P` is the kind's payload input type. */
export interface CronSchedule<P = unknown> {
  /** Unique across all kinds. Default: the kind, or `<kind>:<index>` for an entry of a list. */
  name?: string;
  /** 5 fields (`m h dom mon dow`) or 6 with seconds first (`s m h dom mon dow`). */
  cron: string;
  /**
   * IANA time zone the fields are read in.
   * @defaultValue `DEFAULT_CRON_TIMEZONE` ("UTC")
   */
  timezone?: string;
  /** Payload of every tick's job, validated by the kind's schema. Default `{}`. */
  payload?: P;
  /** Default `"default"`. */
  tenant?: string;
  /** Default: the definition's queue. */
  queue?: string;
  /** Default: the definition's priority. */
  priority?: number;
  /** Default `{ policy: "skip" }`. */
  missed?: CronMissed;
}

/** The `cron` option of `defineJob`: an expression, a schedule, or a list of schedules. */
export type CronOption<P = unknown> = string | CronSchedule<P> | readonly CronSchedule<P>[];

/** A validated schedule, frozen on its job definition. */
export interface ResolvedCronSchedule {
  /** The schedule's name (unique per tenant). */
  readonly name: string;
  /** The job kind it enqueues. */
  readonly kind: string;
  /** The cron expression. */
  readonly cron: string;
  /** The time zone its fields are read in (default `DEFAULT_CRON_TIMEZONE`, UTC). */
  readonly timezone: string;
  /** The tenant its jobs belong to. */
  readonly tenant: string;
  /** The queue its jobs go to. */
  readonly queue: string;
  /** Its jobs' priority. */
  readonly priority: number;
  /** The payload as given; `schedulePayload` validates it and returns what is stored. */
  readonly payload: unknown;
  /** What happens to ticks missed while no worker ran it (default skip). */
  readonly missed: Readonly<Required<CronMissed>>;
  /** The stored payload (JSON text) when the schema validated it synchronously at definition time. */
  readonly payloadJson: string | null;
}

/** Defaults and limits a schedule inherits from its job definition. */
interface DefinitionContext {
  kind: string;
  schema: StandardSchemaV1;
  queue: string;
  priority: number;
}

/** Validate the `cron` option of a definition; throws a ConfigError naming the field. */
export function resolveSchedules(option: CronOption | undefined, context: DefinitionContext): readonly ResolvedCronSchedule[] {
  if (option === undefined) return Object.freeze([]);
  const where = `job "${context.kind}"`;
  const list = Array.isArray(option);
  const entries: unknown[] = list ? [...(option as readonly unknown[])] : [typeof option === "string" ? { cron: option } : option];
  const schedules = entries.map((entry, index) =>
    resolveOne(entry, context, list ? `${where}: cron[${index}]` : `${where}: cron`, list ? `${context.kind}:${index}` : context.kind, typeof option === "string"),
  );
  const seen = new Set<string>();
  for (const schedule of schedules) {
    if (seen.has(schedule.name)) throw new ConfigError(`${where}: cron: schedule name "${schedule.name}" is used twice`);
    seen.add(schedule.name);
  }
  return Object.freeze(schedules);
}

function resolveOne(entry: unknown, context: DefinitionContext, field: string, defaultName: string, bare: boolean): ResolvedCronSchedule {
  if (entry === null || typeof entry !== "object" || Array.isArray(entry)) {
    throw new ConfigError(`${field} must be a cron expression, a schedule { cron, … } or a list of schedules`);
  }
  const input = entry as CronSchedule;
  checkKnownFields(input, SCHEDULE_FIELDS, "a field of a cron schedule", { path: field, ErrorType: ConfigError });
  const name = input.name ?? defaultName;
  checkName(name, `${field}.name`, ConfigError);
  // A bare string names the expression itself; a schedule object names its `cron` field.
  const cronField = bare ? field : `${field}.cron`;
  const timezone = input.timezone ?? DEFAULT_CRON_TIMEZONE;
  parseCron(input.cron, timezone, cronField, `${field}.timezone`);
  const tenant = input.tenant ?? DEFAULT_TENANT;
  try {
    checkTenant(tenant, `${field}.tenant`);
  } catch (error) {
    throw new ConfigError((error as Error).message);
  }
  const queue = input.queue ?? context.queue;
  checkName(queue, `${field}.queue`, ConfigError);
  const priority = input.priority ?? context.priority;
  checkPriority(priority, `${field}.priority`, ConfigError);
  const missed = resolveMissed(input.missed, `${field}.missed`);
  const payload = input.payload ?? {};
  const schedule = { name, kind: context.kind, cron: input.cron, timezone, tenant, queue, priority, payload, missed, payloadJson: null };
  return Object.freeze({ ...schedule, payloadJson: checkPayloadNow(context.schema, schedule, field) });
}

function resolveMissed(input: CronMissed | undefined, field: string): Readonly<Required<CronMissed>> {
  if (input === undefined) return Object.freeze({ policy: DEFAULT_CRON_MISSED_POLICY, limit: DEFAULT_CRON_CATCH_UP_LIMIT });
  if (input === null || typeof input !== "object") throw new ConfigError(`${field} must be { policy: "skip" | "catch-up", limit? }`);
  checkKnownFields(input, { policy: true, limit: true }, "a field of missed", { path: field, ErrorType: ConfigError });
  if (input.policy !== "skip" && input.policy !== "catch-up") {
    throw new ConfigError(`${field}.policy must be "skip" or "catch-up", got ${JSON.stringify(input.policy)}`);
  }
  const limit = input.limit ?? DEFAULT_CRON_CATCH_UP_LIMIT;
  if (!Number.isInteger(limit) || limit < 1 || limit > MAX_CRON_CATCH_UP_LIMIT) {
    throw new ConfigError(`${field}.limit must be an integer from 1 to ${MAX_CRON_CATCH_UP_LIMIT}, got ${String(limit)}`);
  }
  return Object.freeze({ policy: input.policy, limit });
}

/** Validate the payload now when the schema answers synchronously; null when it is async (checked at worker start). */
function checkPayloadNow(schema: StandardSchemaV1, schedule: Omit<ResolvedCronSchedule, "payloadJson">, field: string): string | null {
  const result = schema["~standard"].validate(schedule.payload);
  if (result instanceof Promise) {
    result.catch(() => {}); // settled again, and reported, by schedulePayload at worker start
    return null;
  }
  if (result.issues) {
    const summary = result.issues
      .map((issue) => `${["payload", ...(issue.path ?? []).map((p) => String(typeof p === "object" ? p.key : p))].join(".")}: ${issue.message}`)
      .join("; ");
    throw new ConfigError(`${field} (schedule "${schedule.name}"): invalid payload: ${summary}`);
  }
  return encodePayload(result.value, schedule.name, field);
}

/** The stored payload of a schedule (JSON text), validating it against the kind's schema if not done yet. */
export async function schedulePayload(schema: StandardSchemaV1, schedule: ResolvedCronSchedule): Promise<string> {
  if (schedule.payloadJson !== null) return schedule.payloadJson;
  const field = `job "${schedule.kind}": schedule "${schedule.name}"`;
  try {
    return encodePayload(await validatePayload(schema, schedule.payload, schedule.kind), schedule.name, field);
  } catch (error) {
    if (error instanceof ValidationError) throw new ConfigError(`${field}: ${error.message}`);
    throw error;
  }
}

function encodePayload(value: unknown, name: string, field: string): string {
  try {
    return encodeJson(value);
  } catch (error) {
    throw new ConfigError(`${field} (schedule "${name}"): ${(error as Error).message}`);
  }
}

/** Every schedule of these definitions; throws a ConfigError when two kinds use one schedule name. */
export function collectSchedules(definitions: Iterable<{ kind: string; schedules?: readonly ResolvedCronSchedule[] }>): ResolvedCronSchedule[] {
  const byName = new Map<string, ResolvedCronSchedule>();
  for (const definition of definitions) {
    for (const schedule of definition.schedules ?? []) {
      const other = byName.get(schedule.name);
      if (other) throw new ConfigError(`jobs: cron schedule name "${schedule.name}" is used by kinds "${other.kind}" and "${schedule.kind}"`);
      byName.set(schedule.name, schedule);
    }
  }
  return [...byName.values()];
}
