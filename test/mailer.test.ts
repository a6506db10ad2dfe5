// The SMTP transport delivers through a real SMTP conversation (a minimal server the test runs on loopback).
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SmtpMailer } from '../src/mail/mailer.ts';

let server: net.Server;
let port = 0;
const received: { from: string; to: string[]; data: string }[] = [];

beforeAll(async () => {
  server = net.createServer((socket) => {
    let buffer = '';
    let inData = false;
    let current = { from: '', to: [] as string[], data: '' };
    socket.write('220 test ESMTP\r\n');
    socket.on('data', (chunk) => {
      buffer += chunk.toString('utf8');
      for (;;) {
        if (inData) {
          const end = buffer.indexOf('\r\n.\r\n');
          if (end < 0) return;
          current.data = buffer.slice(0, end);
          buffer = buffer.slice(end + 5);
          inData = false;
          received.push(current);
          current = { from: '', to: [], data: '' };
          socket.write('250 queued\r\n');
          continue;
        }
        const nl = buffer.indexOf('\r\n');
        if (nl < 0) return;
        const line = buffer.slice(0, nl);
        buffer = buffer.slice(nl + 2);
        const verb = line.slice(0, 4).toUpperCase();
        if (verb === 'EHLO' || verb === 'HELO') socket.write('250 test\r\n');
        else if (verb === 'MAIL') (current.from = line), socket.write('250 ok\r\n');
        else if (verb === 'RCPT') current.to.push(line), socket.write('250 ok\r\n');
        else if (verb === 'DATA') (inData = true), socket.write('354 go\r\n');
        else if (verb === 'QUIT') socket.end('221 bye\r\n');
        else socket.write('250 ok\r\n');
      }
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  port = (server.address() as net.AddressInfo).port;
});
afterAll(() => new Promise<void>((r) => server.close(() => r())));

describe('SMTP mail transport', () => {
  it('sends a chat code through SMTP', async () => {
    const mailer = new SmtpMailer(`smtp://127.0.0.1:${port}?ignoreTLS=true`, 'chat@example.com');
    await mailer.send({ to: 'ada@example.com', subject: 'Your code', text: 'Your one-time code is 123456.' });
    expect(received).toHaveLength(1);
    expect(received[0]!.from).toContain('chat@example.com');
    expect(received[0]!.to[0]).toContain('ada@example.com');
    expect(received[0]!.data).toContain('Subject: Your code');
    expect(received[0]!.data).toContain('123456');
  });
});
