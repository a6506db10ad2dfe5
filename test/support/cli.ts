// Runs the official `sim` CLI (npm package `sim`) against a test server.
import { spawn } from 'node:child_process';
import path from 'node:path';
import fs from 'node:fs';
import os from 'node:os';

const CLI = path.resolve(import.meta.dirname, '../../node_modules/sim/dist/index.js');

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
  json: any;
}

export function runCli(args: string[], env: { endpoint: string; apiKey: string; workspace?: string }, stdin?: string): Promise<CliResult> {
  const configDir = fs.mkdtempSync(path.join(os.tmpdir(), 'owa-cli-'));
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CLI, ...args], {
      env: {
        PATH: process.env.PATH,
        HOME: configDir,
        SIM_CONFIG_DIR: configDir,
        SIM_ENDPOINT: env.endpoint,
        SIM_API_KEY: env.apiKey,
        ...(env.workspace ? { SIM_WORKSPACE: env.workspace } : {}),
        SIM_NO_UPDATE_CHECK: '1',
        SIM_TELEMETRY_DISABLED: '1',
        NO_COLOR: '1',
      },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c) => (stdout += c));
    child.stderr.on('data', (c) => (stderr += c));
    child.on('error', reject);
    child.on('close', (code) => {
      fs.rmSync(configDir, { recursive: true, force: true });
      let json: any;
      try {
        json = JSON.parse(stdout);
      } catch {
        json = undefined;
      }
      resolve({ code: code ?? -1, stdout, stderr, json });
    });
    child.stdin.end(stdin ?? '');
  });
}
