import { it } from 'vitest';
import { PGlite } from '@electric-sql/pglite';
import { vector } from '@electric-sql/pglite-pgvector';
import { PGLiteSocketServer } from '@electric-sql/pglite-socket';
import { openPostgresStore } from '../src/store/index.ts';
it('probe', async () => {
  let t = Date.now();
  const db = await PGlite.create({ extensions: { vector } });
  console.log('pglite up', Date.now() - t);
  const server = new PGLiteSocketServer({ db, port: 0, host: '127.0.0.1', maxConnections: 20 });
  await server.start();
  console.log('conn', server.getServerConn());
  t = Date.now();
  const store = await openPostgresStore(`postgres://postgres@${server.getServerConn()}/postgres`);
  console.log('migrated', Date.now() - t, !!store.pgvector);
  await store.close();
  await server.stop();
  await db.close();
}, 600_000);
