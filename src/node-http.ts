/**
 * node:http as the daemon loads it: through require, never an ES `import` of 'node:http'.
 *
 * Why: an ES import of a built-in makes Node build its ES facade, which reads every export once. On Node 22 node:http
 * exports `WebSocket` (and its events) as lazy getters that load undici, whose HTTP parser is WebAssembly; under the
 * unit's --lite-mode there is no WebAssembly, undici's start-up rejects, and the daemon dies of an unhandled rejection
 * before its first log line. require() returns the module object and touches no getter. Node 24 loads undici the same
 * way without dying (memory for nothing: the daemon uses neither fetch nor WebSocket); Node 20's node:http has no
 * WebSocket export.
 *
 * Contract: `http` is the node:http module object. Import types from 'node:http' with `import type` only (erased at
 * compile time); test/systemd/run-process.test.ts runs the daemon under the unit's flags on the Node it is given.
 */
import { createRequire } from 'node:module';

export const http = createRequire(import.meta.url)('node:http') as typeof import('node:http');
