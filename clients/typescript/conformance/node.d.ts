// The few Node APIs the driver and the tests use. Debian has no @types/node and this machine no
// npm registry, so they are declared here, by hand, as Node 20 documents them.
declare const process: { env: Record<string, string | undefined>; argv: string[]; exitCode?: number };
declare module "node:fs" {
  export function readFileSync(path: string, encoding: "utf8"): string;
}
declare module "node:child_process" {
  export function execSync(command: string, options?: { stdio?: "inherit" | "ignore" }): unknown;
}
declare module "node:test" {
  export function test(name: string, fn: () => void | Promise<void>): Promise<void>;
}
declare module "node:assert/strict" {
  const assert: {
    equal(actual: unknown, expected: unknown, message?: string): void;
    deepEqual(actual: unknown, expected: unknown, message?: string): void;
    ok(value: unknown, message?: string): void;
    rejects(fn: Promise<unknown> | (() => Promise<unknown>), expected?: unknown, message?: string): Promise<void>;
    throws(fn: () => unknown, expected?: unknown, message?: string): void;
  };
  export default assert;
}
declare module "node:http" {
  interface IncomingMessage { on(event: "data" | "end", listener: (chunk?: unknown) => void): void }
  interface ServerResponse { destroy(): void }
  interface Server {
    listen(port: number, host: string, callback: () => void): void;
    address(): { port: number };
    close(): void;
    closeAllConnections(): void;
  }
  export function createServer(handler: (request: IncomingMessage, response: ServerResponse) => void): Server;
}
