import { connect } from "node:net";

export const REDIS_HOST = "127.0.0.1";
export const REDIS_PORT = 6379;

/** Null when a Redis answers PING on 127.0.0.1:6379 within the timeout, else why not. */
export function redisUnavailable(timeoutMs = 1_000): Promise<string | null> {
  return new Promise((resolve) => {
    const socket = connect({ host: REDIS_HOST, port: REDIS_PORT });
    const done = (reason: string | null) => {
      socket.destroy();
      resolve(reason);
    };
    socket.setTimeout(timeoutMs, () => done(`no Redis answered on ${REDIS_HOST}:${REDIS_PORT} within ${timeoutMs} ms`));
    socket.on("error", (error) => done(`no Redis on ${REDIS_HOST}:${REDIS_PORT} (${error.message})`));
    socket.on("connect", () => socket.write("PING\r\n"));
    socket.on("data", (data) => done(data.toString().startsWith("+PONG") ? null : `Redis on ${REDIS_HOST}:${REDIS_PORT} answered ${JSON.stringify(data.toString().trim())}`));
  });
}

/** Redis persistence settings, for the report (RDB snapshots, AOF). */
export function redisPersistence(timeoutMs = 1_000): Promise<string> {
  return new Promise((resolve) => {
    const socket = connect({ host: REDIS_HOST, port: REDIS_PORT });
    let text = "";
    const finish = () => {
      socket.destroy();
      const save = /save\r\n\$\d+\r\n([^\r]*)\r\n/.exec(text)?.[1];
      const aof = /appendonly\r\n\$\d+\r\n([^\r]*)\r\n/.exec(text)?.[1];
      resolve(save === undefined && aof === undefined ? "unknown" : `RDB save "${save ?? "?"}", appendonly ${aof ?? "?"}`);
    };
    socket.setTimeout(timeoutMs, finish);
    socket.on("error", finish);
    socket.on("connect", () => socket.write("CONFIG GET save\r\nCONFIG GET appendonly\r\n"));
    socket.on("data", (data) => {
      text += data.toString();
      if (/appendonly\r\n\$\d+\r\n[^\r]*\r\n/.test(text)) finish();
    });
  });
}
