// A failure with one of the run error codes of the API, carrying the block it happened in.
import type { ErrorCode, RunError } from './types.ts';

export class ExecutionError extends Error {
  readonly code: ErrorCode;
  blockId?: string;
  blockName?: string;
  blockType?: string;

  constructor(code: ErrorCode, message: string, block?: { id: string; name: string; type: string }) {
    super(message);
    this.code = code;
    if (block) this.setBlock(block);
  }

  /** The innermost block keeps the blame: a loop does not overwrite the block that failed inside it. */
  setBlock(block: { id: string; name: string; type: string }): this {
    if (this.blockId === undefined) {
      this.blockId = block.id;
      this.blockName = block.name;
      this.blockType = block.type;
    }
    return this;
  }

  toRunError(): RunError {
    const out: RunError = { code: this.code, message: this.message };
    if (this.blockId !== undefined) {
      out.blockId = this.blockId;
      out.blockName = this.blockName!;
      out.blockType = this.blockType!;
    }
    return out;
  }
}

/** Resume input that does not fit the paused block: the run stays paused (an HTTP layer answers 400). */
export class ResumeError extends Error {
  readonly code = 'INVALID_INPUT' as const;
}
