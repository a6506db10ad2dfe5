// A content worker thread: runs one task at a time for the pool (src/workers/pool.ts) and answers with its
// result, or with the error it raised, named so the server thread can tell the caller what was wrong.
import { parentPort, workerData } from 'node:worker_threads';
import type { ContentLimits } from './guards.ts';
import { contentTasks, type ContentTask } from './tasks.ts';
import { READY, serializeError } from '../workers/pool.ts';

const tasks = contentTasks((workerData as { limits: ContentLimits }).limits);

parentPort!.on('message', async ({ id, task, input }: { id: number; task: ContentTask; input: never }) => {
  try {
    const value = await (tasks[task] as (i: never) => Promise<unknown>)(input);
    parentPort!.postMessage({ id, value });
  } catch (err) {
    parentPort!.postMessage({ id, error: serializeError(err) });
  }
});

parentPort!.postMessage(READY);
