#!/usr/bin/env node
import './runtime-check.js';

const { main } = await import('../bench/auth-server.ts');
await main(process.argv.slice(2));
