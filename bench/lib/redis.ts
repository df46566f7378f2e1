import { connect } from "node:net";

/** Every Redis the bench uses listens here: the machine's on REDIS_PORT, the one it starts on a free port. */
export const REDIS_HOST = "127.0.0.1";
/** The machine's Redis. */
export const REDIS_PORT = 6379;

/** Null when a Redis answers PING on 127.0.0.1:`port` within the timeout, else why not. */
export function redisUnavailable(port: number, timeoutMs = 1_000): Promise<string | null> {
  return new Promise((resolve) => {
    const socket = connect({ host: REDIS_HOST, port });
    const done = (reason: string | null) => {
      socket.destroy();
      resolve(reason);
    };
    socket.setTimeout(timeoutMs, () => done(`no Redis answered on ${REDIS_HOST}:${port} within ${timeoutMs} ms`));
    socket.on("error", (error) => done(`no Redis on ${REDIS_HOST}:${port} (${error.message})`));
    socket.on("connect", () => socket.write("PING\r\n"));
    socket.on("data", (data) => done(data.toString().startsWith("+PONG") ? null : `Redis on ${REDIS_HOST}:${port} answered ${JSON.stringify(data.toString().trim())}`));
  });
}

/**
 * The persistence settings of the Redis on 127.0.0.1:`port`, as it reports
 * them (CONFIG GET), for the report: RDB snapshots, AOF, and with AOF on,
 * how often it fsyncs.
 */
export function redisPersistence(port: number, timeoutMs = 1_000): Promise<string> {
  return new Promise((resolve) => {
    const socket = connect({ host: REDIS_HOST, port });
    let text = "";
    const value = (name: string) => new RegExp(`${name}\\r\\n\\$\\d+\\r\\n([^\\r]*)\\r\\n`).exec(text)?.[1];
    const finish = () => {
      socket.destroy();
      const [save, aof, fsync] = [value("save"), value("appendonly"), value("appendfsync")];
      if (save === undefined && aof === undefined) return resolve("unknown");
      resolve(`RDB save "${save ?? "?"}", appendonly ${aof ?? "?"}${aof === "yes" ? `, appendfsync ${fsync ?? "?"}` : ""}`);
    };
    socket.setTimeout(timeoutMs, finish);
    socket.on("error", finish);
    socket.on("connect", () => socket.write("CONFIG GET save\r\nCONFIG GET appendonly\r\nCONFIG GET appendfsync\r\n"));
    socket.on("data", (data) => {
      text += data.toString();
      if (value("appendfsync") !== undefined) finish();
    });
  });
}
