// The console's entry point: loads and draws only the page the shell names (body data-page), so a page parses
// and runs its own module (and core.js), not every page's.
import { page, showError, whenLoaded } from './core.js';

const PAGES = {
  workspaces: () => import('./home.js').then((m) => m.workspacesPage),
  home: () => import('./home.js').then((m) => m.homePage),
  workflow: () => import('./workflow.js').then((m) => m.workflowPage),
  run: () => import('./run.js').then((m) => m.runPage),
  table: () => import('./data.js').then((m) => m.tablePage),
  knowledge: () => import('./data.js').then((m) => m.knowledgePage),
  file: () => import('./data.js').then((m) => m.filePage),
  operations: () => import('./ops.js').then((m) => m.operationsPage),
};

// Once the page's first data is drawn and painted, the body gets data-loaded and the Performance API a mark
// (`console-loaded`, milliseconds since navigation start): what tests wait on and the bench measures.
(PAGES[page.page] ?? PAGES.home)()
  .then((draw) => draw())
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
