// The console's entry point: draws the page the shell names (body data-page).
import { page, showError } from './core.js';
import { homePage, workspacesPage } from './home.js';
import { workflowPage } from './workflow.js';
import { runPage } from './run.js';
import { filePage, knowledgePage, tablePage } from './data.js';
import { operationsPage } from './ops.js';

const PAGES = { workspaces: workspacesPage, home: homePage, workflow: workflowPage, run: runPage, table: tablePage, knowledge: knowledgePage, file: filePage, operations: operationsPage };

(PAGES[page.page] ?? homePage)().catch((err) => showError(err));
