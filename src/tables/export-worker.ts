// A large table export in a worker thread: reads the table through a connection of its own and writes the file
// (src/tables/export-writer.ts), so the server thread's heap and event loop stay out of it. The server thread
// (src/tables/jobs.ts, through src/workers/job-worker.ts) moves the export between states and renames the file.
// Messages: start with workerData {store, exportId, tableId, format, file}; → done {count} |
// failed {message, canceled}; ← stop (the server is shutting down: stop after the current batch).
import { parentPort, workerData } from 'node:worker_threads';
import { openWorkerStore, type Store, type StoreConnection } from '../store/index.ts';
import { ExportStopped, writeTableExport } from './export-writer.ts';

export interface ExportWorkerData {
  /** The server's database, opened on a connection of this thread's own. */
  store: StoreConnection;
  exportId: string;
  tableId: string;
  format: 'csv' | 'json';
  /** Where the file is written (a temporary name the server thread renames once it is complete). */
  file: string;
}

const port = parentPort!;
const data = workerData as ExportWorkerData;
let stopping = false;
port.on('message', (m: { type: string }) => {
  if (m.type === 'stop') stopping = true;
});

async function main(): Promise<void> {
  let store: Store | null = null;
  try {
    store = openWorkerStore(data.store);
    const count = await writeTableExport(store, { id: data.exportId, tableId: data.tableId, format: data.format }, data.file, () => stopping);
    port.postMessage({ type: 'done', count });
  } catch (err) {
    const canceled = err instanceof ExportStopped && err.canceled;
    port.postMessage({ type: 'failed', message: err instanceof Error ? err.message : String(err), canceled });
  } finally {
    await store?.close();
    port.close();
  }
}

void main();
