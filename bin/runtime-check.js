// Plain JavaScript on purpose: it must run, and refuse, on an old Node that cannot load TypeScript.
// Every entry point imports this module first.
const REQUIRED_MAJOR = 24;
const major = Number(process.versions.node.split('.')[0]);
if (major < REQUIRED_MAJOR) {
  process.stderr.write(
    `Node ${process.versions.node} is too old for this project (it needs Node ${REQUIRED_MAJOR}); run it through the npm scripts (npm start, npm test, npm run ...), which use the Node that npm install brings.\n`,
  );
  process.exit(1);
}
