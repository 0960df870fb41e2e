// A local webhook receiver for the shell tests: node receiver.mjs FILE [PORT]. Listens on 127.0.0.1 (PORT, or a free
// port; printed as the first line of stdout), answers every POST 200 and appends its path and body to FILE as one JSON line.
import { appendFileSync } from 'node:fs';
import { createServer } from 'node:http';

const file = process.argv[2];
if (!file) throw new Error('usage: node receiver.mjs FILE');
const server = createServer((req, res) => {
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    appendFileSync(file, `${JSON.stringify({ method: req.method, path: req.url, key: req.headers['idempotency-key'] ?? null, body: Buffer.concat(chunks).toString('utf8') })}\n`);
    res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}');
  });
});
server.listen(Number(process.argv[3] ?? 0), '127.0.0.1', () => process.stdout.write(`${server.address().port}\n`));
process.on('SIGTERM', () => server.close(() => process.exit(0)));
