// Handlers for the MCP Servers operations. The tag is large, so each part lives in its own module under
// ./mcp/; they are re-exported here one by one (the scaffolder looks for `export const <operationId>`).
import * as workflowServers from './mcp/workflow-servers.ts';
import * as serve from './mcp/serve.ts';
import * as externalServers from './mcp/external-servers.ts';

export const listWorkflowMcpServers = workflowServers.listWorkflowMcpServers;
export const createWorkflowMcpServer = workflowServers.createWorkflowMcpServer;
export const getWorkflowMcpServer = workflowServers.getWorkflowMcpServer;
export const updateWorkflowMcpServer = workflowServers.updateWorkflowMcpServer;
export const deleteWorkflowMcpServer = workflowServers.deleteWorkflowMcpServer;
export const listWorkflowMcpTools = workflowServers.listWorkflowMcpTools;
export const deployWorkflowMcpTool = workflowServers.deployWorkflowMcpTool;
export const undeployWorkflowMcpTool = workflowServers.undeployWorkflowMcpTool;

export const postMcpServeMessage = serve.postMcpServeMessage;
export const getMcpServeInfo = serve.getMcpServeInfo;
export const deleteMcpServeSession = serve.deleteMcpServeSession;
export const postMcpServeMessageAtMcpPath = serve.postMcpServeMessageAtMcpPath;
export const getMcpServeInfoAtMcpPath = serve.getMcpServeInfoAtMcpPath;
export const deleteMcpServeSessionAtMcpPath = serve.deleteMcpServeSessionAtMcpPath;

export const listMcpServers = externalServers.listMcpServers;
export const createMcpServer = externalServers.createMcpServer;
export const getMcpServer = externalServers.getMcpServer;
export const updateMcpServer = externalServers.updateMcpServer;
export const deleteMcpServer = externalServers.deleteMcpServer;
export const listMcpServerTools = externalServers.listMcpServerTools;
