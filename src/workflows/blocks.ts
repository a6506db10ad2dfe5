// The block registry: every block type this server can run, with its inputs (sub-blocks) and outputs.
// It is the single description the block catalog endpoint, the state linter and the executor read, so a
// block type exists for all three or for none. No HTTP here.

export type SubBlockType =
  | 'short-input'
  | 'long-input'
  | 'code'
  | 'dropdown'
  | 'switch'
  | 'slider'
  | 'table'
  | 'input-format'
  | 'response-format'
  | 'condition-input'
  | 'router-input'
  | 'variables-input'
  | 'workflow-selector'
  | 'messages-input'
  | 'tool-input'
  | 'skill-input';

export interface SubBlockDefinition {
  id: string;
  type: SubBlockType;
  title: string;
  required?: boolean;
  description?: string;
  placeholder?: string;
  options?: { id: string; label: string }[];
  min?: number;
  max?: number;
  integer?: boolean;
  language?: string;
  defaultValue?: string | number | boolean | Record<string, unknown> | unknown[];
}

export interface OutputDefinition {
  type: 'string' | 'number' | 'boolean' | 'json' | 'array' | 'any';
  description: string;
}

export type BlockCategory = 'blocks' | 'tools' | 'triggers';

export interface BlockDefinition {
  id: string;
  name: string;
  description: string;
  category: BlockCategory;
  /** Can start a workflow. */
  triggerAllowed: boolean;
  /** A loop or parallel: holds other blocks through their `data.parentId`. */
  container?: 'loop' | 'parallel';
  /** How many may exist in one workflow (start blocks: one). */
  singleInstance?: boolean;
  /**
   * Branching blocks route through named source handles (one per condition or route); edges from other
   * handles are invalid.
   */
  branching?: 'condition' | 'router';
  tags: string[];
  inputs: SubBlockDefinition[];
  /**
   * What a run of the block produces, by name. `any` and `json` outputs are open-ended (any JSON), so paths
   * below them cannot be checked; an `array` can be indexed.
   */
  outputs: Record<string, OutputDefinition>;
  /**
   * Each field its `inputFormat` declares is an output too, under the field's name (a start block's run input,
   * a human step's answer). Without declared fields, any name may be.
   */
  inputFieldOutputs?: boolean;
}

const HTTP_METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'HEAD'].map((m) => ({ id: m, label: m }));

const DEFINITIONS: BlockDefinition[] = [
  {
    id: 'start_trigger',
    name: 'Start',
    description: 'Where a run begins: receives the input the workflow is executed with.',
    category: 'triggers',
    triggerAllowed: true,
    singleInstance: true,
    tags: ['trigger', 'api'],
    inputs: [
      {
        id: 'inputFormat',
        type: 'input-format',
        title: 'Inputs',
        description: 'Fields the workflow accepts: a list of {name, type, description}.',
        defaultValue: [],
      },
    ],
    inputFieldOutputs: true,
    outputs: {
      input: { type: 'json', description: 'The whole input the run received (in a hosted chat run: the message).' },
      conversationId: { type: 'string', description: 'In a hosted chat run: the conversation\'s id.' },
      files: { type: 'array', description: 'In a hosted chat run: the message\'s attachments.' },
    },
  },
  {
    id: 'api_trigger',
    name: 'API',
    description: 'Starts the workflow from an API execution, with typed input fields.',
    category: 'triggers',
    triggerAllowed: true,
    singleInstance: true,
    tags: ['trigger', 'api'],
    inputs: [{ id: 'inputFormat', type: 'input-format', title: 'Inputs', defaultValue: [] }],
    inputFieldOutputs: true,
    outputs: {
      input: { type: 'json', description: 'The whole input the run received (in a hosted chat run: the message).' },
      conversationId: { type: 'string', description: 'In a hosted chat run: the conversation\'s id.' },
      files: { type: 'array', description: 'In a hosted chat run: the message\'s attachments.' },
    },
  },
  {
    id: 'function',
    name: 'Function',
    description: 'Runs JavaScript code and returns its result.',
    category: 'blocks',
    triggerAllowed: false,
    tags: ['code'],
    inputs: [
      { id: 'code', type: 'code', title: 'Code', required: true, language: 'javascript' },
      { id: 'sandboxId', type: 'short-input', title: 'Sandbox', description: 'A built JavaScript sandbox (id or name) whose npm packages the code may require().' },
      { id: 'timeout', type: 'short-input', title: 'Timeout (ms)', placeholder: '10000' },
    ],
    outputs: {
      result: { type: 'any', description: 'What the code returned.' },
      stdout: { type: 'string', description: 'What the code logged.' },
    },
  },
  {
    id: 'condition',
    name: 'Condition',
    description: 'Chooses one branch by evaluating conditions in order; the first true one wins.',
    category: 'blocks',
    triggerAllowed: false,
    branching: 'condition',
    tags: ['control-flow'],
    inputs: [
      {
        id: 'conditions',
        type: 'condition-input',
        title: 'Conditions',
        required: true,
        description: 'A list of {id, title: "if"|"else if"|"else", value: expression}.',
      },
    ],
    outputs: {
      conditionResult: { type: 'boolean', description: 'Whether a condition matched.' },
      selectedPath: { type: 'json', description: 'The block the run continued to.' },
      selectedConditionId: { type: 'string', description: 'Id of the condition that matched.' },
      selectedOption: { type: 'string', description: 'Title of the condition that matched ("if", "else if", "else").' },
    },
  },
  {
    id: 'router',
    name: 'Router',
    description: 'Sends the run down one of several routes, chosen by matching the route descriptions.',
    category: 'blocks',
    triggerAllowed: false,
    branching: 'router',
    tags: ['control-flow'],
    inputs: [
      { id: 'prompt', type: 'long-input', title: 'Context', required: true },
      { id: 'routes', type: 'router-input', title: 'Routes', required: true, description: 'A list of {id, title, value}.' },
    ],
    outputs: {
      selectedRoute: { type: 'string', description: 'Id of the chosen route.' },
      selectedRouteTitle: { type: 'string', description: 'Title of the chosen route.' },
      selectedPath: { type: 'json', description: 'The block the run continued to.' },
    },
  },
  {
    id: 'variables',
    name: 'Variables',
    description: 'Sets workflow variables for the blocks after it.',
    category: 'blocks',
    triggerAllowed: false,
    tags: ['data'],
    inputs: [{ id: 'variables', type: 'variables-input', title: 'Assignments', required: true, description: 'A list of {variableName, value}.' }],
    outputs: { assignments: { type: 'json', description: 'The values assigned.' } },
  },
  {
    id: 'response',
    name: 'Response',
    description: 'Ends the run and shapes what the API execution returns.',
    category: 'blocks',
    triggerAllowed: false,
    tags: ['output', 'api'],
    inputs: [
      { id: 'data', type: 'code', title: 'Response data', language: 'json' },
      { id: 'status', type: 'short-input', title: 'Status code', placeholder: '200' },
      { id: 'headers', type: 'table', title: 'Headers' },
    ],
    outputs: {
      data: { type: 'json', description: 'The response body.' },
      status: { type: 'number', description: 'The HTTP status.' },
      headers: { type: 'json', description: 'The response headers.' },
    },
  },
  {
    id: 'wait',
    name: 'Wait',
    description: 'Pauses the run for a while before continuing.',
    category: 'blocks',
    triggerAllowed: false,
    tags: ['control-flow'],
    inputs: [
      { id: 'timeValue', type: 'short-input', title: 'Duration', required: true, placeholder: '10' },
      {
        id: 'timeUnit',
        type: 'dropdown',
        title: 'Unit',
        options: [
          { id: 'seconds', label: 'Seconds' },
          { id: 'minutes', label: 'Minutes' },
        ],
        defaultValue: 'seconds',
      },
    ],
    outputs: { waitDuration: { type: 'number', description: 'How long the run waited, in milliseconds.' } },
  },
  {
    id: 'human_in_the_loop',
    name: 'Human in the loop',
    description: 'Pauses the run until a person approves or answers; the run resumes with their input.',
    category: 'blocks',
    triggerAllowed: false,
    tags: ['control-flow', 'approval'],
    inputs: [
      { id: 'message', type: 'long-input', title: 'Message to the reviewer', required: true },
      { id: 'inputFormat', type: 'input-format', title: 'Fields to collect', defaultValue: [] },
    ],
    inputFieldOutputs: true,
    outputs: {
      approved: { type: 'boolean', description: 'Whether the reviewer approved.' },
      input: { type: 'json', description: 'What the reviewer submitted.' },
      resumedAt: { type: 'string', description: 'When the run resumed.' },
    },
  },
  {
    id: 'api',
    name: 'API request',
    description: 'Sends an HTTP request and returns the response.',
    category: 'blocks',
    triggerAllowed: false,
    tags: ['http', 'integration'],
    inputs: [
      { id: 'url', type: 'short-input', title: 'URL', required: true, placeholder: 'https://example.com/api' },
      { id: 'method', type: 'dropdown', title: 'Method', required: true, options: HTTP_METHODS, defaultValue: 'GET' },
      { id: 'params', type: 'table', title: 'Query parameters' },
      { id: 'headers', type: 'table', title: 'Headers' },
      { id: 'body', type: 'code', title: 'Body', language: 'json' },
      { id: 'credentialId', type: 'short-input', title: 'Credential', description: 'An OAuth credential of the workspace; its fresh access token is sent as Authorization: Bearer.' },
    ],
    outputs: {
      data: { type: 'any', description: 'The response body (parsed when it is JSON).' },
      status: { type: 'number', description: 'The HTTP status.' },
      headers: { type: 'json', description: 'The response headers.' },
    },
  },
  {
    id: 'workflow',
    name: 'Child workflow',
    description: 'Runs another workflow of the workspace and returns its result.',
    category: 'blocks',
    triggerAllowed: false,
    tags: ['composition'],
    inputs: [
      { id: 'workflowId', type: 'workflow-selector', title: 'Workflow', required: true },
      { id: 'input', type: 'code', title: 'Input', language: 'json' },
    ],
    outputs: {
      success: { type: 'boolean', description: 'Whether the child run completed.' },
      childWorkflowName: { type: 'string', description: 'Name of the child workflow.' },
      childRunId: { type: 'string', description: 'Id of the child run.' },
      result: { type: 'any', description: 'The child run\'s output.' },
    },
  },
  {
    id: 'agent',
    name: 'Agent',
    description: 'Calls a language model with a system and user prompt, optionally with tools.',
    category: 'blocks',
    triggerAllowed: false,
    tags: ['ai'],
    inputs: [
      { id: 'systemPrompt', type: 'long-input', title: 'System prompt' },
      { id: 'userPrompt', type: 'long-input', title: 'User prompt', required: true },
      { id: 'model', type: 'dropdown', title: 'Model', required: true, options: [], defaultValue: 'gpt-4o' },
      { id: 'temperature', type: 'slider', title: 'Temperature', min: 0, max: 2, defaultValue: 0.7 },
      { id: 'tools', type: 'tool-input', title: 'Tools' },
      { id: 'skills', type: 'skill-input', title: 'Skills', description: 'Skills (ids or names) whose instructions are added to the system prompt.' },
      { id: 'responseFormat', type: 'response-format', title: 'Response format' },
    ],
    outputs: {
      content: { type: 'string', description: 'The model\'s answer.' },
      model: { type: 'string', description: 'The model that answered.' },
      tokens: { type: 'json', description: 'Token usage.' },
      toolCalls: { type: 'json', description: 'Tool calls made.' },
    },
  },
  {
    id: 'mcp',
    name: 'MCP tool',
    description: 'Calls a tool of an MCP server registered in the workspace (see /api/v2/mcp-servers).',
    category: 'tools',
    triggerAllowed: false,
    tags: ['mcp', 'integration'],
    inputs: [
      { id: 'server', type: 'short-input', title: 'MCP server id', required: true },
      { id: 'tool', type: 'short-input', title: 'Tool name', required: true },
      { id: 'arguments', type: 'code', title: 'Arguments', language: 'json', description: 'A JSON object matching the tool\'s input schema.' },
    ],
    outputs: {
      result: { type: 'any', description: 'The structured result, else the text parsed as JSON when it is JSON, else the text.' },
      text: { type: 'string', description: 'The text content of the answer.' },
      content: { type: 'array', description: 'The answer\'s content items as the server sent them.' },
    },
  },
  {
    id: 'loop',
    name: 'Loop',
    description: 'Runs the blocks inside it repeatedly: a fixed count, over a collection, or while a condition holds.',
    category: 'blocks',
    triggerAllowed: false,
    container: 'loop',
    tags: ['control-flow', 'container'],
    inputs: [],
    outputs: { results: { type: 'array', description: 'The result of each iteration.' } },
  },
  {
    id: 'parallel',
    name: 'Parallel',
    description: 'Runs the blocks inside it several times at once: a fixed count or one per collection item.',
    category: 'blocks',
    triggerAllowed: false,
    container: 'parallel',
    tags: ['control-flow', 'container'],
    inputs: [],
    outputs: { results: { type: 'array', description: 'The result of each branch.' } },
  },
];

const BY_ID = new Map(DEFINITIONS.map((d) => [d.id, d]));

/** Every block type, in registry order. */
export function listBlockDefinitions(): readonly BlockDefinition[] {
  return DEFINITIONS;
}

export function getBlockDefinition(type: string): BlockDefinition | undefined {
  return BY_ID.get(type);
}

/** Block types that start a run. */
export function isTriggerType(type: string): boolean {
  return BY_ID.get(type)?.triggerAllowed === true;
}

/** The type a new workflow's seeded start block has. */
export const START_BLOCK_TYPE = 'start_trigger';
