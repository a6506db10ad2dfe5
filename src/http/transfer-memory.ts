// Node reads a request body into a fresh 64 KB buffer per socket read. Those buffers live outside the JS heap, so
// they add almost nothing to it and no young-generation collection comes along to free them: they stay resident
// until V8's external-memory threshold (64 MB more than after the last collection) forces one. A large upload
// therefore leaves tens of MB of dead buffers behind. After a large part has been written, one minor collection
// (a few ms) frees them while they are still young. (Downloads read files in 1 MB chunks, which the allocator
// returns to the system when freed; measured, a collection after them changes nothing.) The collector is reached through a private VM context: the
// flag only exposes `gc` to contexts created after it is set, so the server's own global scope never gets one.
import v8 from 'node:v8';
import vm from 'node:vm';

/** Parts smaller than this leave too little behind to be worth a collection. */
const LARGE_TRANSFER_BYTES = 1024 * 1024;

type Collector = (options: { type: 'minor' | 'major' }) => void;
let collector: Collector | null | undefined;

function minorCollector(): Collector | null {
  if (collector === undefined) {
    try {
      v8.setFlagsFromString('--expose-gc');
      collector = vm.runInNewContext('gc') as Collector;
    } catch {
      collector = null;
    }
  }
  return collector;
}

/** Frees the socket buffers of a transfer of `bytes` that has just been written (large transfers only). */
export function releaseTransferBuffers(bytes: number): void {
  if (bytes >= LARGE_TRANSFER_BYTES) minorCollector()?.({ type: 'minor' });
}
