#!/usr/bin/env node
import './runtime-check.js';

const { main } = await import('../generator/generate.ts');
await main(process.argv.slice(2));
