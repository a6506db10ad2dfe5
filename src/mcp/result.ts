// What a workflow sees of an MCP tool's answer: its text, the structured (or JSON-parsed) result and the raw
// content. Shared by the MCP tool block and the tool provider agents use, so both read answers the same way.

export interface McpAnswer {
  content: unknown[];
  structuredContent?: Record<string, unknown>;
  isError?: boolean;
}

export interface McpOutput {
  content: unknown[];
  text: string;
  result: unknown;
}

export class McpToolReportedError extends Error {}

/** The output of an answer; an answer flagged `isError` throws with its text. */
export function mcpOutput(answer: McpAnswer, toolName: string): McpOutput {
  const texts = answer.content
    .filter((c): c is { type: 'text'; text: string } => typeof c === 'object' && c !== null && (c as { type?: unknown }).type === 'text' && typeof (c as { text?: unknown }).text === 'string')
    .map((c) => c.text);
  const text = texts.join('\n');
  if (answer.isError) throw new McpToolReportedError(`MCP tool ${toolName} reported an error: ${text || 'no details'}`);
  let parsed: unknown = text;
  if (texts.length === 1) {
    try {
      parsed = JSON.parse(text);
    } catch {
      /* plain text */
    }
  }
  return { content: answer.content, text, result: answer.structuredContent ?? parsed };
}
