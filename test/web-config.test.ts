// Configuration of the browser-facing parts: where chat pages live, mail transport, OAuth on or off.
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../src/config.ts';
import { startTestServer } from './support/server.ts';
import { apiBlock, buildWorkflow } from './support/api-workflow.ts';

describe('web configuration', () => {
  it('refuses bad values with a message naming the variable', () => {
    expect(() => loadConfig({ CHAT_URL: 'ftp://chat.example.com' })).toThrow(ConfigError);
    expect(() => loadConfig({ CHAT_URL: 'not a url' })).toThrow(/CHAT_URL/);
    expect(() => loadConfig({ MAIL_TRANSPORT: 'pigeon' })).toThrow(/MAIL_TRANSPORT/);
    expect(() => loadConfig({ MAIL_TRANSPORT: 'smtp' })).toThrow(/SMTP_URL/);
    expect(() => loadConfig({ AUTH_ATTEMPTS_PER_MINUTE: '0' })).toThrow(/AUTH_ATTEMPTS_PER_MINUTE/);
    expect(loadConfig({ SMTP_URL: 'smtp://localhost:2525' }).web.mail.transport).toBe('smtp');
    expect(loadConfig({}).web).toMatchObject({ chatUrl: null, oauthEnabled: true, mail: { transport: 'outbox' } });
  });

  it('reports chat URLs on CHAT_URL and serves the pages under its path', async () => {
    const s = await startTestServer({ CHAT_URL: 'https://chat.example.com/talk/' });
    try {
      const w = await buildWorkflow(s, 'Hosted elsewhere', [apiBlock('start_trigger', 'Start')], []);
      const r = await s.call('PUT', `/api/v2/workflows/${w.id}/deployments/chat`, { identifier: 'elsewhere', title: 'Elsewhere' });
      expect(r.body.data.url).toBe('https://chat.example.com/talk/elsewhere');
      expect((await fetch(`${s.url}/talk/elsewhere`)).status).toBe(200);
      expect((await fetch(`${s.url}/chat/elsewhere`)).status).toBe(404);
    } finally {
      await s.stop();
    }
  });
});
