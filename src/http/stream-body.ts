// The body of an operation whose success response is not JSON (a file, a zip): the pipeline streams it to
// the client instead of serializing it, so large content never sits in memory. Status and headers
// (Content-Type, Content-Length, Content-Disposition, Content-Range) come with the handler's result.
import type { Readable } from 'node:stream';

export class StreamBody {
  readonly stream: Readable;
  constructor(stream: Readable) {
    this.stream = stream;
  }
}
