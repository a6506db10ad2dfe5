// A tiny cookie-keeping HTTP client that plays the browser in sign-in tests: it follows nothing by itself, so
// each redirect can be checked, and it reads the CSRF field out of the forms it is shown.
export class FakeBrowser {
  readonly cookies = new Map<string, string>();
  readonly base: string;
  constructor(base: string) {
    this.base = base;
  }

  private remember(res: Response) {
    for (const c of res.headers.getSetCookie()) {
      const [pair, ...attrs] = c.split(';');
      const eq = pair!.indexOf('=');
      const name = pair!.slice(0, eq).trim();
      const value = pair!.slice(eq + 1).trim();
      if (attrs.some((a) => /max-age=0/i.test(a.trim())) || value === '') this.cookies.delete(name);
      else this.cookies.set(name, value);
    }
  }

  private headers(extra: Record<string, string> = {}): Record<string, string> {
    const cookie = [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; ');
    return { ...(cookie ? { cookie } : {}), ...extra };
  }

  async get(url: string): Promise<{ status: number; location: string | null; text: string; res: Response }> {
    const res = await fetch(new URL(url, this.base), { redirect: 'manual', headers: this.headers() });
    this.remember(res);
    return { status: res.status, location: res.headers.get('location'), text: await res.text(), res };
  }

  async post(url: string, form: Record<string, string>, extra: Record<string, string> = {}) {
    const res = await fetch(new URL(url, this.base), {
      method: 'POST',
      redirect: 'manual',
      headers: this.headers({ 'content-type': 'application/x-www-form-urlencoded', ...extra }),
      body: new URLSearchParams(form).toString(),
    });
    this.remember(res);
    return { status: res.status, location: res.headers.get('location'), text: await res.text(), res };
  }

  /** The hidden fields of the form whose action is `action` (the first one, or the one with `decision`). */
  static fields(html: string, action: string, decision?: string): Record<string, string> {
    const forms = [...html.matchAll(/<form method="post" action="([^"]+)">([\s\S]*?)<\/form>/g)].filter((m) => m[1] === action);
    const form = forms.find((m) => !decision || m[2]!.includes(`name="decision" value="${decision}"`));
    if (!form) throw new Error(`no form posting to ${action} in:\n${html}`);
    const out: Record<string, string> = {};
    for (const m of form[2]!.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)">/g)) out[m[1]!] = decode(m[2]!);
    return out;
  }

  /** Signs in on /login with e-mail and password; returns where the server sends the browser next. */
  async signIn(email: string, password: string, next?: string): Promise<{ status: number; location: string | null; text: string }> {
    const page = await this.get(next ? `/login?next=${encodeURIComponent(next)}` : '/login');
    return this.post('/login', { ...FakeBrowser.fields(page.text, '/login'), email, password });
  }
}

const decode = (s: string) => s.replace(/&quot;/g, '"').replace(/&#39;/g, "'").replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&amp;/g, '&');
