// The baseline: a bare Express route that returns the same JSON as GET /api/v2/workspaces, with no auth,
// validation or database. Prints its URL the way the real server logs it.
import express from 'express';
import type { AddressInfo } from 'node:net';

export async function main(): Promise<void> {
  const body = JSON.parse(process.env.BARE_BODY ?? '{"data":[],"nextCursor":null}');
  const app = express();
  app.get('/api/v2/workspaces', (_req, res) => {
    res.json(body);
  });
  const server = app.listen(0, '127.0.0.1', () => {
    console.log(`Listening on http://127.0.0.1:${(server.address() as AddressInfo).port}`);
  });
  process.on('SIGTERM', () => server.close(() => process.exit(0)));
}
