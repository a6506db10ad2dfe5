#!/usr/bin/env node
import './runtime-check.js';

const { main } = await import('../src/main.ts');
await main(process.argv.slice(2));
