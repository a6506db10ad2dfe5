// Outgoing mail (one-time chat codes). SMTP in production through nodemailer; the `outbox` transport writes
// each message as a JSON file to a directory instead, for local use and for tests to read.
import fs from 'node:fs/promises';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import type { Transporter } from 'nodemailer';
import type { WebSettings } from '../config.ts';
import { SpanKind, inSpan } from '../ops/spans.ts';

export interface MailMessage {
  to: string;
  subject: string;
  text: string;
}

export interface Mailer {
  send(message: MailMessage): Promise<void>;
}

export class OutboxMailer implements Mailer {
  private readonly dir: string;
  private readonly from: string;
  constructor(dir: string, from: string) {
    this.dir = dir;
    this.from = from;
  }

  async send(message: MailMessage): Promise<void> {
    await fs.mkdir(this.dir, { recursive: true, mode: 0o700 });
    const name = `${Date.now()}-${randomBytes(4).toString('hex')}.json`;
    const tmp = path.join(this.dir, `.${name}.tmp`);
    await fs.writeFile(tmp, JSON.stringify({ from: this.from, ...message, sentAt: new Date().toISOString() }), { mode: 0o600 });
    await fs.rename(tmp, path.join(this.dir, name));
  }
}

export class SmtpMailer implements Mailer {
  private transport: Promise<Transporter> | null = null;
  private readonly url: string;
  private readonly from: string;
  constructor(url: string, from: string) {
    this.url = url;
    this.from = from;
  }

  async send(message: MailMessage): Promise<void> {
    // nodemailer (about 5 MB of heap) is loaded with the first message, not by every server at start.
    const transport = await (this.transport ??= import('nodemailer').then((m) => m.default.createTransport(this.url)));
    // A client span around the SMTP exchange (no addresses or subject on it: those are personal data).
    await inSpan('smtp send', { kind: SpanKind.CLIENT, attributes: { 'owa.mail.transport': 'smtp' } }, () =>
      transport.sendMail({ from: this.from, to: message.to, subject: message.subject, text: message.text }),
    );
  }
}

export function createMailer(settings: WebSettings['mail']): Mailer {
  return settings.transport === 'smtp' ? new SmtpMailer(settings.smtpUrl!, settings.from) : new OutboxMailer(settings.outboxDir, settings.from);
}
