// After a large upload part, the dead socket buffers of its body are freed at once instead of when V8's
// external-memory threshold (64 MB) forces a collection. Simulated with 64 KB buffers like the ones Node reads
// a request body into; the files bench and the tables import bench measure it on a real server.
import { describe, expect, it } from 'vitest';
import { releaseTransferBuffers } from '../src/http/transfer-memory.ts';

const MB = 1024 * 1024;

function leaveDeadBuffers(total: number): void {
  let sink = 0;
  for (let i = 0; i < total / 65536; i++) sink += Buffer.allocUnsafeSlow(65536).length;
  expect(sink).toBe(total);
}

describe('releaseTransferBuffers', () => {
  it('frees the dead buffers of a large transfer, and leaves small transfers alone', () => {
    leaveDeadBuffers(32 * MB);
    const before = process.memoryUsage().arrayBuffers;
    expect(before).toBeGreaterThan(30 * MB);
    releaseTransferBuffers(100 * 1024);
    expect(process.memoryUsage().arrayBuffers).toBeGreaterThan(30 * MB);
    releaseTransferBuffers(8 * MB);
    expect(process.memoryUsage().arrayBuffers).toBeLessThan(before - 28 * MB);
  });
});
