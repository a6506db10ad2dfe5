// The credential provider registry: OAuth providers (endpoints known here, client id and secret configured on the
// server) and service-account providers (the fields a key consists of). No HTTP here.

export interface OAuthProviderConfig {
  clientId: string;
  clientSecret: string;
  authorizationUrl?: string;
  tokenUrl?: string;
  scopes?: string[];
}

export interface OAuthProvider {
  id: string;
  name: string;
  family: string;
  authorizationUrl: string;
  tokenUrl: string;
  scopes: string[];
  /** Extra query parameters of the authorization request (e.g. offline access for Google). */
  extraAuthParams?: Record<string, string>;
}

const google = (id: string, name: string, scopes: string[]): OAuthProvider => ({
  id,
  name,
  family: 'google',
  authorizationUrl: 'https://accounts.google.com/o/oauth2/v2/auth',
  tokenUrl: 'https://oauth2.googleapis.com/token',
  scopes: ['openid', 'email', ...scopes],
  extraAuthParams: { access_type: 'offline', prompt: 'consent' },
});
const microsoft = (id: string, name: string, scopes: string[]): OAuthProvider => ({
  id,
  name,
  family: 'microsoft',
  authorizationUrl: 'https://login.microsoftonline.com/common/oauth2/v2.0/authorize',
  tokenUrl: 'https://login.microsoftonline.com/common/oauth2/v2.0/token',
  scopes: ['offline_access', ...scopes],
});
const simple = (id: string, name: string, family: string, authorizationUrl: string, tokenUrl: string, scopes: string[] = []): OAuthProvider => ({ id, name, family, authorizationUrl, tokenUrl, scopes });
const atlassian = (id: string, name: string, scopes: string[]): OAuthProvider => ({
  ...simple(id, name, 'atlassian', 'https://auth.atlassian.com/authorize', 'https://auth.atlassian.com/oauth/token', ['offline_access', ...scopes]),
  extraAuthParams: { audience: 'api.atlassian.com', prompt: 'consent' },
});

/** Every OAuth provider id the API accepts, with its endpoints. */
export const OAUTH_PROVIDERS: readonly OAuthProvider[] = [
  simple('github-repositories', 'GitHub', 'github', 'https://github.com/login/oauth/authorize', 'https://github.com/login/oauth/access_token', ['repo', 'read:user']),
  google('google-email', 'Gmail', ['https://www.googleapis.com/auth/gmail.modify']),
  google('google-drive', 'Google Drive', ['https://www.googleapis.com/auth/drive.file']),
  google('google-docs', 'Google Docs', ['https://www.googleapis.com/auth/documents']),
  google('google-sheets', 'Google Sheets', ['https://www.googleapis.com/auth/spreadsheets']),
  google('google-forms', 'Google Forms', ['https://www.googleapis.com/auth/forms.body']),
  google('google-calendar', 'Google Calendar', ['https://www.googleapis.com/auth/calendar']),
  google('google-contacts', 'Google Contacts', ['https://www.googleapis.com/auth/contacts']),
  google('google-ads', 'Google Ads', ['https://www.googleapis.com/auth/adwords']),
  google('google-bigquery', 'BigQuery', ['https://www.googleapis.com/auth/bigquery']),
  google('google-tasks', 'Google Tasks', ['https://www.googleapis.com/auth/tasks']),
  google('google-vault', 'Google Vault', ['https://www.googleapis.com/auth/ediscovery']),
  google('google-groups', 'Google Groups', ['https://www.googleapis.com/auth/admin.directory.group']),
  google('google-chat', 'Google Chat', ['https://www.googleapis.com/auth/chat.messages']),
  google('google-meet', 'Google Meet', ['https://www.googleapis.com/auth/meetings.space.created']),
  google('vertex-ai', 'Vertex AI', ['https://www.googleapis.com/auth/cloud-platform']),
  microsoft('microsoft-ad', 'Microsoft Entra ID', ['User.Read.All']),
  microsoft('microsoft-dataverse', 'Dataverse', ['https://globaldisco.crm.dynamics.com/user_impersonation']),
  microsoft('microsoft-excel', 'Microsoft Excel', ['Files.ReadWrite']),
  microsoft('microsoft-planner', 'Microsoft Planner', ['Tasks.ReadWrite']),
  microsoft('microsoft-teams', 'Microsoft Teams', ['ChannelMessage.Send', 'Chat.ReadWrite']),
  microsoft('microsoft-word', 'Microsoft Word', ['Files.ReadWrite']),
  microsoft('outlook', 'Outlook', ['Mail.ReadWrite', 'Mail.Send']),
  microsoft('onedrive', 'OneDrive', ['Files.ReadWrite']),
  microsoft('sharepoint', 'SharePoint', ['Sites.ReadWrite.All']),
  simple('x', 'X', 'x', 'https://x.com/i/oauth2/authorize', 'https://api.x.com/2/oauth2/token', ['tweet.read', 'tweet.write', 'users.read', 'offline.access']),
  simple('tiktok', 'TikTok', 'tiktok', 'https://www.tiktok.com/v2/auth/authorize/', 'https://open.tiktokapis.com/v2/oauth/token/', ['user.info.basic']),
  atlassian('confluence', 'Confluence', ['read:confluence-content.all', 'write:confluence-content']),
  atlassian('jira', 'Jira', ['read:jira-work', 'write:jira-work']),
  simple('airtable', 'Airtable', 'airtable', 'https://airtable.com/oauth2/v1/authorize', 'https://airtable.com/oauth2/v1/token', ['data.records:read', 'data.records:write']),
  simple('bitbucket', 'Bitbucket', 'atlassian', 'https://bitbucket.org/site/oauth2/authorize', 'https://bitbucket.org/site/oauth2/access_token'),
  simple('notion', 'Notion', 'notion', 'https://api.notion.com/v1/oauth/authorize', 'https://api.notion.com/v1/oauth/token'),
  simple('clickup', 'ClickUp', 'clickup', 'https://app.clickup.com/api', 'https://api.clickup.com/api/v2/oauth/token'),
  simple('linear', 'Linear', 'linear', 'https://linear.app/oauth/authorize', 'https://api.linear.app/oauth/token', ['read', 'write']),
  simple('manageengine-sdp', 'ManageEngine ServiceDesk Plus', 'manageengine', 'https://accounts.zoho.com/oauth/v2/auth', 'https://accounts.zoho.com/oauth/v2/token'),
  simple('monday', 'monday.com', 'monday', 'https://auth.monday.com/oauth2/authorize', 'https://auth.monday.com/oauth2/token'),
  simple('box', 'Box', 'box', 'https://account.box.com/api/oauth2/authorize', 'https://api.box.com/oauth2/token'),
  simple('dropbox', 'Dropbox', 'dropbox', 'https://www.dropbox.com/oauth2/authorize', 'https://api.dropboxapi.com/oauth2/token'),
  simple('shopify', 'Shopify', 'shopify', 'https://accounts.shopify.com/oauth/authorize', 'https://accounts.shopify.com/oauth/token'),
  simple('slack', 'Slack', 'slack', 'https://slack.com/oauth/v2/authorize', 'https://slack.com/api/oauth.v2.access', ['chat:write', 'channels:read']),
  simple('reddit', 'Reddit', 'reddit', 'https://www.reddit.com/api/v1/authorize', 'https://www.reddit.com/api/v1/access_token', ['identity', 'read', 'submit']),
  simple('wealthbox', 'Wealthbox', 'wealthbox', 'https://app.crmworkspace.com/oauth/authorize', 'https://app.crmworkspace.com/oauth/token', ['login', 'data']),
  simple('webflow', 'Webflow', 'webflow', 'https://webflow.com/oauth/authorize', 'https://api.webflow.com/oauth/access_token', ['sites:read', 'cms:read', 'cms:write']),
  simple('trello', 'Trello', 'trello', 'https://trello.com/1/OAuthAuthorizeToken', 'https://trello.com/1/OAuthGetAccessToken'),
  simple('asana', 'Asana', 'asana', 'https://app.asana.com/-/oauth_authorize', 'https://app.asana.com/-/oauth_token'),
  simple('attio', 'Attio', 'attio', 'https://app.attio.com/authorize', 'https://app.attio.com/oauth/token'),
  simple('calcom', 'Cal.com', 'calcom', 'https://app.cal.com/auth/oauth2/authorize', 'https://app.cal.com/api/auth/oauth/token'),
  simple('docusign', 'DocuSign', 'docusign', 'https://account.docusign.com/oauth/auth', 'https://account.docusign.com/oauth/token', ['signature']),
  simple('pipedrive', 'Pipedrive', 'pipedrive', 'https://oauth.pipedrive.com/oauth/authorize', 'https://oauth.pipedrive.com/oauth/token'),
  simple('hubspot', 'HubSpot', 'hubspot', 'https://app.hubspot.com/oauth/authorize', 'https://api.hubapi.com/oauth/v1/token', ['crm.objects.contacts.read']),
  simple('linkedin', 'LinkedIn', 'linkedin', 'https://www.linkedin.com/oauth/v2/authorization', 'https://www.linkedin.com/oauth/v2/accessToken', ['openid', 'profile', 'w_member_social']),
  simple('instagram', 'Instagram', 'meta', 'https://www.instagram.com/oauth/authorize', 'https://api.instagram.com/oauth/access_token', ['instagram_business_basic']),
  simple('salesforce', 'Salesforce', 'salesforce', 'https://login.salesforce.com/services/oauth2/authorize', 'https://login.salesforce.com/services/oauth2/token', ['api', 'refresh_token']),
  simple('salesforce-sandbox', 'Salesforce (sandbox)', 'salesforce', 'https://test.salesforce.com/services/oauth2/authorize', 'https://test.salesforce.com/services/oauth2/token', ['api', 'refresh_token']),
  simple('zoho-desk', 'Zoho Desk', 'zoho', 'https://accounts.zoho.com/oauth/v2/auth', 'https://accounts.zoho.com/oauth/v2/token', ['Desk.tickets.ALL']),
  simple('zoom', 'Zoom', 'zoom', 'https://zoom.us/oauth/authorize', 'https://zoom.us/oauth/token'),
  simple('wordpress', 'WordPress.com', 'wordpress', 'https://public-api.wordpress.com/oauth2/authorize', 'https://public-api.wordpress.com/oauth2/token', ['global']),
  simple('spotify', 'Spotify', 'spotify', 'https://accounts.spotify.com/authorize', 'https://accounts.spotify.com/api/token', ['user-read-email']),
  simple('quickbooks', 'QuickBooks', 'intuit', 'https://appcenter.intuit.com/connect/oauth2', 'https://oauth.platform.intuit.com/oauth2/v1/tokens/bearer', ['com.intuit.quickbooks.accounting']),
];

export const oauthProvider = (id: string) => OAUTH_PROVIDERS.find((p) => p.id === id);

/** Environment prefix of a provider's settings: OAUTH_GITHUB_REPOSITORIES_CLIENT_ID, or the family's (OAUTH_GOOGLE_…). */
export const envKeyOf = (id: string) => id.toUpperCase().replace(/[^A-Z0-9]+/g, '_');

/**
 * What an operator does to configure a provider: the settings to set (the provider's own, or its family's, which
 * every provider of the family shares), for error messages that name them.
 */
export function howToConfigure(id: string): string {
  const pair = (key: string) => `OAUTH_${key}_CLIENT_ID and OAUTH_${key}_CLIENT_SECRET`;
  const family = oauthProvider(id)?.family;
  const shared = family && envKeyOf(family) !== envKeyOf(id) ? ` (or ${pair(envKeyOf(family))} for every ${family} provider)` : '';
  return `set ${pair(envKeyOf(id))}${shared} in the server's environment and restart it`;
}

/** The provider with the server's configuration applied, or null when no client id and secret are configured. */
export function configuredProvider(id: string, configs: Record<string, OAuthProviderConfig>): (OAuthProvider & { clientId: string; clientSecret: string }) | null {
  const base = oauthProvider(id);
  if (!base) return null;
  const cfg = configs[id] ?? configs[base.family];
  if (!cfg) return null;
  return {
    ...base,
    clientId: cfg.clientId,
    clientSecret: cfg.clientSecret,
    authorizationUrl: cfg.authorizationUrl ?? base.authorizationUrl,
    tokenUrl: cfg.tokenUrl ?? base.tokenUrl,
    scopes: cfg.scopes ?? base.scopes,
  };
}

export interface ProviderField {
  id: string;
  label: string;
  placeholder: string;
  required: boolean;
  secret: boolean;
  multiline: boolean;
  options?: { value: string; label: string }[];
  hint?: string;
}

export interface ServiceAccountProvider {
  providerId: string;
  name: string;
  description: string;
  family: string;
  docsUrl: string;
  fields: ProviderField[];
  /** The field that names the account (shown as accountId and the default display name). */
  accountField?: string;
}

const field = (id: string, label: string, opts: Partial<ProviderField> = {}): ProviderField => ({ id, label, placeholder: '', required: true, secret: false, multiline: false, ...opts });

export const SERVICE_ACCOUNT_PROVIDERS: readonly ServiceAccountProvider[] = [
  {
    providerId: 'google-service-account',
    name: 'Google service account',
    description: 'A Google Cloud service-account key (JSON) for Google APIs.',
    family: 'google',
    docsUrl: 'https://cloud.google.com/iam/docs/keys-create-delete',
    fields: [field('serviceAccountJson', 'Service account key (JSON)', { secret: true, multiline: true, placeholder: '{"type":"service_account",...}' })],
    accountField: 'client_email',
  },
  {
    providerId: 'atlassian-api-token',
    name: 'Atlassian API token',
    description: 'An API token for Jira or Confluence Cloud.',
    family: 'atlassian',
    docsUrl: 'https://support.atlassian.com/atlassian-account/docs/manage-api-tokens-for-your-atlassian-account/',
    fields: [
      field('domain', 'Site domain', { placeholder: 'your-team.atlassian.net' }),
      field('username', 'Account e-mail'),
      field('apiToken', 'API token', { secret: true }),
      field('atlassianProduct', 'Product', { options: [{ value: 'jira', label: 'Jira' }, { value: 'confluence', label: 'Confluence' }] }),
    ],
    accountField: 'username',
  },
  {
    providerId: 'slack-custom-bot',
    name: 'Slack custom bot',
    description: 'A bot token and signing secret of your own Slack app.',
    family: 'slack',
    docsUrl: 'https://api.slack.com/authentication/token-types#bot',
    fields: [field('botToken', 'Bot token', { secret: true, placeholder: 'xoxb-…' }), field('signingSecret', 'Signing secret', { secret: true })],
  },
];

export const serviceAccountProvider = (id: string) => SERVICE_ACCOUNT_PROVIDERS.find((p) => p.providerId === id);
