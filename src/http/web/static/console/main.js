// The console's entry point: draws the page the shell names (body data-page).
import { page, showError, whenLoaded } from './core.js';
import { homePage, workspacesPage } from './home.js';
import { workflowPage } from './workflow.js';
import { runPage } from './run.js';
import { filePage, knowledgePage, tablePage } from './data.js';
import { operationsPage } from './ops.js';

const PAGES = { workspaces: workspacesPage, home: homePage, workflow: workflowPage, run: runPage, table: tablePage, knowledge: knowledgePage, file: filePage, operations: operationsPage };

// Once the page's first data is drawn and painted, the body gets data-loaded and the Performance API a mark
// (`console-loaded`, milliseconds since navigation start): what tests wait on and the bench measures.
(PAGES[page.page] ?? homePage)()
  .catch((err) => showError(err))
  .then(whenLoaded)
  .then(() =>
    requestAnimationFrame(() =>
      setTimeout(() => {
        performance.mark('console-loaded');
        document.body.dataset.loaded = 'true';
      }),
    ),
  );
