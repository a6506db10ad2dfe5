// The provider selectors answered from a catalog rather than code: each entry says which OAuth connections serve it,
// which documented REST call lists the options, where they are in the answer and how the provider pages. rest.ts
// turns an entry into a selector source; the test suite runs every entry against a local fake, so a new entry is a
// new test case. Only calls whose shape is documented by the provider belong here; a key left out answers 400 with
// the reason in UNAVAILABLE_SELECTORS.

/** How a provider continues a list. Paths are dotted paths into the JSON answer. */
export type Paging =
  | { kind: 'none' }
  /**
   * An opaque token: sent back as `param` (in the query, or at a dotted path of the JSON body), read from `next` in
   * the answer; with `more`, only while that path is true (GraphQL `pageInfo.hasNextPage`); with `fromLink`, `next`
   * is a (relative) link whose `param` query parameter is the token (Confluence `_links.next`).
   */
  | { kind: 'token'; param: string; next: string; in?: 'query' | 'body'; more?: string; fromLink?: boolean }
  /** A full URL of the next page (Microsoft Graph `@odata.nextLink`, Bitbucket `next`), only followed on the same origin. */
  | { kind: 'link'; next: string }
  /** A zero-based item offset in `param`; a full page means there may be more. */
  | { kind: 'offset'; param: string; in?: 'query' | 'body' }
  /** A one-based page number in `param`; a full page means there may be more. */
  | { kind: 'page'; param: string; in?: 'query' | 'body' };

export interface CatalogEntry {
  /** OAuth provider ids (src/credentials/providers.ts) whose connections serve this selector. */
  providers: string[];
  /** The provider's API root; `OAUTH_<PROVIDER>_API_BASE_URL` replaces it (a proxy or a test double). */
  api: string;
  method?: 'GET' | 'POST';
  /** Appended to the root; `{name}` is context.name, URL-encoded. */
  path: string;
  /** Fixed query parameters (`{name}` substituted, as for the path). */
  query?: Record<string, string>;
  /** JSON body of a POST (`{name}` in its strings substituted, e.g. GraphQL variables). */
  body?: Record<string, unknown>;
  /** Extra request headers (`{name}` substituted, not encoded). */
  headers?: Record<string, string>;
  /** How the token is presented: `Bearer` (default), Zoho's `Zoho-oauthtoken`, or '' for the bare token. */
  authScheme?: string;
  /** Context keys the call needs besides `oauthCredential`. */
  requires?: string[];
  /**
   * `atlassian`: the call names the site by its cloud id; `{cloudId}` is resolved from context.domain through the
   * connection's accessible resources (GET <root>/oauth/token/accessible-resources) before the call.
   */
  site?: 'atlassian';
  /** Where a GraphQL answer lists its errors (a non-empty list is a failure). */
  errors?: string;
  /** Where the array of items is. */
  items: string;
  /** Keep only items where this path is present (e.g. OneDrive folders). */
  only?: string;
  id: string;
  /** The label: the first path with a non-empty value; `a[].b` joins the `b` of each element of array `a`. */
  label: string[];
  meta?: Record<string, string>;
  paging: Paging;
  /** The page-size parameter and the provider's maximum (the request's limit is clamped to it). */
  size?: { param: string; max: number; in?: 'query' | 'body' };
  /** What the options are, for the README and error messages. */
  describe: string;
}

const GRAPH = 'https://graph.microsoft.com/v1.0';
const graphLink: Paging = { kind: 'link', next: '@odata.nextLink' };
const googleToken: Paging = { kind: 'token', param: 'pageToken', next: 'nextPageToken' };
const DRIVE = 'https://www.googleapis.com/drive/v3';
const BIGQUERY = 'https://bigquery.googleapis.com/bigquery/v2';
const CLICKUP = 'https://api.clickup.com/api/v2';
const HUBSPOT = 'https://api.hubapi.com';
const hubspotAfter: Paging = { kind: 'token', param: 'after', next: 'paging.next.after' };
const WEBFLOW = 'https://api.webflow.com/v2';
const ZOHO_DESK = 'https://desk.zoho.com/api/v1';
const ATTIO = 'https://api.attio.com/v2';
const ATLASSIAN = 'https://api.atlassian.com';
const confluenceCursor: Paging = { kind: 'token', param: 'cursor', next: '_links.next', fromLink: true };

export const SELECTOR_CATALOG: Record<string, CatalogEntry> = {
  // Google
  'gmail.labels': { providers: ['google-email'], api: 'https://gmail.googleapis.com/gmail/v1', path: '/users/me/labels', items: 'labels', id: 'id', label: ['name'], meta: { type: 'type' }, paging: { kind: 'none' }, describe: 'the mailbox labels' },
  'google.calendar': { providers: ['google-calendar'], api: 'https://www.googleapis.com/calendar/v3', path: '/users/me/calendarList', items: 'items', id: 'id', label: ['summaryOverride', 'summary'], meta: { accessRole: 'accessRole' }, paging: googleToken, size: { param: 'maxResults', max: 250 }, describe: 'the calendars of the calendar list' },
  'google.tasks.lists': { providers: ['google-tasks'], api: 'https://tasks.googleapis.com/tasks/v1', path: '/users/@me/lists', items: 'items', id: 'id', label: ['title'], paging: googleToken, size: { param: 'maxResults', max: 100 }, describe: 'the task lists' },
  'google.drive': { providers: ['google-drive'], api: DRIVE, path: '/files', query: { q: 'trashed = false', fields: 'nextPageToken,files(id,name,mimeType)' }, items: 'files', id: 'id', label: ['name'], meta: { mimeType: 'mimeType' }, paging: googleToken, size: { param: 'pageSize', max: 1000 }, describe: 'the Drive files the connection can see' },
  'google.sheets': { providers: ['google-sheets', 'google-drive'], api: DRIVE, path: '/files', query: { q: "mimeType = 'application/vnd.google-apps.spreadsheet' and trashed = false", fields: 'nextPageToken,files(id,name)' }, items: 'files', id: 'id', label: ['name'], paging: googleToken, size: { param: 'pageSize', max: 1000 }, describe: 'the spreadsheets (from Drive)' },
  'bigquery.datasets': { providers: ['google-bigquery'], api: BIGQUERY, path: '/projects/{projectId}/datasets', requires: ['projectId'], items: 'datasets', id: 'datasetReference.datasetId', label: ['friendlyName', 'datasetReference.datasetId'], meta: { location: 'location' }, paging: googleToken, size: { param: 'maxResults', max: 1000 }, describe: 'the datasets of a project' },
  'bigquery.tables': { providers: ['google-bigquery'], api: BIGQUERY, path: '/projects/{projectId}/datasets/{datasetId}/tables', requires: ['projectId', 'datasetId'], items: 'tables', id: 'tableReference.tableId', label: ['friendlyName', 'tableReference.tableId'], meta: { type: 'type' }, paging: googleToken, size: { param: 'maxResults', max: 1000 }, describe: 'the tables of a dataset' },

  // Microsoft Graph
  'outlook.folders': { providers: ['outlook'], api: GRAPH, path: '/me/mailFolders', items: 'value', id: 'id', label: ['displayName'], paging: graphLink, size: { param: '$top', max: 100 }, describe: 'the top-level mail folders' },
  'outlook.calendars': { providers: ['outlook'], api: GRAPH, path: '/me/calendars', items: 'value', id: 'id', label: ['name'], paging: graphLink, size: { param: '$top', max: 100 }, describe: 'the calendars' },
  'microsoft.teams': { providers: ['microsoft-teams'], api: GRAPH, path: '/me/joinedTeams', items: 'value', id: 'id', label: ['displayName'], paging: graphLink, describe: 'the teams the user is a member of' },
  'microsoft.chats': { providers: ['microsoft-teams'], api: GRAPH, path: '/me/chats', items: 'value', id: 'id', label: ['topic', 'chatType', 'id'], meta: { chatType: 'chatType' }, paging: graphLink, size: { param: '$top', max: 50 }, describe: 'the chats (labelled by topic)' },
  'microsoft.channels': { providers: ['microsoft-teams'], api: GRAPH, path: '/teams/{teamId}/channels', requires: ['teamId'], items: 'value', id: 'id', label: ['displayName'], meta: { membershipType: 'membershipType' }, paging: graphLink, describe: 'the channels of a team' },
  'microsoft.planner.plans': { providers: ['microsoft-planner'], api: GRAPH, path: '/me/planner/plans', items: 'value', id: 'id', label: ['title'], paging: graphLink, describe: 'the plans the user belongs to' },
  'microsoft.planner': { providers: ['microsoft-planner'], api: GRAPH, path: '/planner/plans/{planId}/tasks', requires: ['planId'], items: 'value', id: 'id', label: ['title'], paging: graphLink, describe: 'the tasks of a plan' },
  'onedrive.files': { providers: ['onedrive'], api: GRAPH, path: '/me/drive/root/children', items: 'value', id: 'id', label: ['name'], paging: graphLink, size: { param: '$top', max: 200 }, describe: 'the items in the root of the drive' },
  'onedrive.folders': { providers: ['onedrive'], api: GRAPH, path: '/me/drive/root/children', items: 'value', only: 'folder', id: 'id', label: ['name'], paging: graphLink, size: { param: '$top', max: 200 }, describe: 'the folders in the root of the drive' },
  'sharepoint.sites': { providers: ['sharepoint'], api: GRAPH, path: '/sites', query: { search: '*' }, items: 'value', id: 'id', label: ['displayName', 'name'], meta: { webUrl: 'webUrl' }, paging: graphLink, describe: 'the sites the connection can find' },
  'sharepoint.lists': { providers: ['sharepoint'], api: GRAPH, path: '/sites/{siteId}/lists', requires: ['siteId'], items: 'value', id: 'id', label: ['displayName', 'name'], paging: graphLink, describe: 'the lists of a site' },
  'microsoft.excel': { providers: ['microsoft-excel', 'onedrive'], api: GRAPH, path: "/me/drive/root/search(q='.xlsx')", items: 'value', only: 'file', id: 'id', label: ['name'], meta: { webUrl: 'webUrl' }, paging: graphLink, size: { param: '$top', max: 200 }, describe: 'the workbooks a drive search for .xlsx finds' },
  'microsoft.word': { providers: ['microsoft-word', 'onedrive'], api: GRAPH, path: "/me/drive/root/search(q='.docx')", items: 'value', only: 'file', id: 'id', label: ['name'], meta: { webUrl: 'webUrl' }, paging: graphLink, size: { param: '$top', max: 200 }, describe: 'the documents a drive search for .docx finds' },
  'microsoft.excel.drives': { providers: ['microsoft-excel', 'sharepoint'], api: GRAPH, path: '/sites/{siteId}/drives', requires: ['siteId'], items: 'value', id: 'id', label: ['name'], meta: { driveType: 'driveType' }, paging: graphLink, describe: 'the document libraries of a site' },

  // Airtable (Web API metadata)
  'airtable.bases': { providers: ['airtable'], api: 'https://api.airtable.com/v0', path: '/meta/bases', items: 'bases', id: 'id', label: ['name'], meta: { permissionLevel: 'permissionLevel' }, paging: { kind: 'token', param: 'offset', next: 'offset' }, describe: 'the bases' },
  'airtable.tables': { providers: ['airtable'], api: 'https://api.airtable.com/v0', path: '/meta/bases/{baseId}/tables', requires: ['baseId'], items: 'tables', id: 'id', label: ['name'], paging: { kind: 'none' }, describe: 'the tables of a base' },

  // Asana
  'asana.workspaces': { providers: ['asana'], api: 'https://app.asana.com/api/1.0', path: '/workspaces', items: 'data', id: 'gid', label: ['name'], paging: { kind: 'token', param: 'offset', next: 'next_page.offset' }, size: { param: 'limit', max: 100 }, describe: 'the workspaces' },

  // Attio
  'attio.objects': { providers: ['attio'], api: ATTIO, path: '/objects', items: 'data', id: 'api_slug', label: ['plural_noun', 'api_slug'], paging: { kind: 'none' }, describe: 'the objects (id = api slug)' },
  'attio.lists': { providers: ['attio'], api: ATTIO, path: '/lists', items: 'data', id: 'api_slug', label: ['name', 'api_slug'], paging: { kind: 'none' }, describe: 'the lists (id = api slug)' },

  // Bitbucket Cloud
  'bitbucket.workspaces': { providers: ['bitbucket'], api: 'https://api.bitbucket.org/2.0', path: '/user/permissions/workspaces', items: 'values', id: 'workspace.slug', label: ['workspace.name', 'workspace.slug'], meta: { permission: 'permission' }, paging: { kind: 'link', next: 'next' }, size: { param: 'pagelen', max: 100 }, describe: 'the workspaces the user can access (id = slug)' },

  'bitbucket.repositories': { providers: ['bitbucket'], api: 'https://api.bitbucket.org/2.0', path: '/repositories/{workspace}', requires: ['workspace'], items: 'values', id: 'slug', label: ['full_name', 'name'], meta: { private: 'is_private' }, paging: { kind: 'link', next: 'next' }, size: { param: 'pagelen', max: 100 }, describe: 'the repositories of a workspace (id = slug)' },

  // ClickUp (a "team" in API v2 is a workspace)
  'clickup.workspaces': { providers: ['clickup'], api: CLICKUP, authScheme: '', path: '/team', items: 'teams', id: 'id', label: ['name'], paging: { kind: 'none' }, describe: 'the workspaces' },
  'clickup.spaces': { providers: ['clickup'], api: CLICKUP, authScheme: '', path: '/team/{teamId}/space', requires: ['teamId'], items: 'spaces', id: 'id', label: ['name'], paging: { kind: 'none' }, describe: 'the spaces of a workspace' },
  'clickup.folders': { providers: ['clickup'], api: CLICKUP, authScheme: '', path: '/space/{spaceId}/folder', requires: ['spaceId'], items: 'folders', id: 'id', label: ['name'], paging: { kind: 'none' }, describe: 'the folders of a space' },
  'clickup.lists': { providers: ['clickup'], api: CLICKUP, authScheme: '', path: '/folder/{folderId}/list', requires: ['folderId'], items: 'lists', id: 'id', label: ['name'], paging: { kind: 'none' }, describe: 'the lists of a folder' },

  // HubSpot CRM v3
  'hubspot.owners': { providers: ['hubspot'], api: HUBSPOT, path: '/crm/v3/owners', items: 'results', id: 'id', label: ['email', 'lastName'], meta: { firstName: 'firstName', lastName: 'lastName' }, paging: hubspotAfter, size: { param: 'limit', max: 100 }, describe: 'the owners (labelled by e-mail)' },
  'hubspot.pipelines': { providers: ['hubspot'], api: HUBSPOT, path: '/crm/v3/pipelines/{objectType}', requires: ['objectType'], items: 'results', id: 'id', label: ['label'], paging: { kind: 'none' }, describe: 'the pipelines of an object type (e.g. deals)' },
  'hubspot.pipelineStages': { providers: ['hubspot'], api: HUBSPOT, path: '/crm/v3/pipelines/{objectType}/{pipelineId}/stages', requires: ['objectType', 'pipelineId'], items: 'results', id: 'id', label: ['label'], paging: { kind: 'none' }, describe: 'the stages of a pipeline' },
  'hubspot.properties': { providers: ['hubspot'], api: HUBSPOT, path: '/crm/v3/properties/{objectType}', requires: ['objectType'], items: 'results', id: 'name', label: ['label', 'name'], meta: { type: 'type' }, paging: { kind: 'none' }, describe: 'the properties of an object type (id = internal name)' },

  // Notion (search, filtered to databases; API version pinned because the shape of answers depends on it)
  'notion.databases': { providers: ['notion'], api: 'https://api.notion.com/v1', method: 'POST', path: '/search', body: { filter: { property: 'object', value: 'database' } }, headers: { 'Notion-Version': '2022-06-28' }, items: 'results', id: 'id', label: ['title[].plain_text', 'id'], meta: { url: 'url' }, paging: { kind: 'token', param: 'start_cursor', next: 'next_cursor', in: 'body' }, size: { param: 'page_size', max: 100, in: 'body' }, describe: 'the databases shared with the integration' },

  // Webflow Data API v2
  'webflow.sites': { providers: ['webflow'], api: WEBFLOW, path: '/sites', items: 'sites', id: 'id', label: ['displayName', 'shortName'], paging: { kind: 'none' }, describe: 'the sites' },
  'webflow.collections': { providers: ['webflow'], api: WEBFLOW, path: '/sites/{siteId}/collections', requires: ['siteId'], items: 'collections', id: 'id', label: ['displayName', 'slug'], paging: { kind: 'none' }, describe: 'the CMS collections of a site' },
  'webflow.items': { providers: ['webflow'], api: WEBFLOW, path: '/collections/{collectionId}/items', requires: ['collectionId'], items: 'items', id: 'id', label: ['fieldData.name', 'fieldData.slug', 'id'], paging: { kind: 'offset', param: 'offset' }, size: { param: 'limit', max: 100 }, describe: 'the items of a collection' },

  // Linear (GraphQL, Relay-style connections)
  'linear.teams': { providers: ['linear'], api: 'https://api.linear.app', method: 'POST', path: '/graphql', body: { query: 'query Teams($first: Int, $after: String) { teams(first: $first, after: $after) { nodes { id name key } pageInfo { hasNextPage endCursor } } }', variables: {} }, errors: 'errors', items: 'data.teams.nodes', id: 'id', label: ['name'], meta: { key: 'key' }, paging: { kind: 'token', param: 'variables.after', next: 'data.teams.pageInfo.endCursor', more: 'data.teams.pageInfo.hasNextPage', in: 'body' }, size: { param: 'variables.first', max: 100, in: 'body' }, describe: 'the teams' },
  'linear.projects': { providers: ['linear'], api: 'https://api.linear.app', method: 'POST', path: '/graphql', body: { query: 'query Projects($first: Int, $after: String) { projects(first: $first, after: $after) { nodes { id name state } pageInfo { hasNextPage endCursor } } }', variables: {} }, errors: 'errors', items: 'data.projects.nodes', id: 'id', label: ['name'], meta: { state: 'state' }, paging: { kind: 'token', param: 'variables.after', next: 'data.projects.pageInfo.endCursor', more: 'data.projects.pageInfo.hasNextPage', in: 'body' }, size: { param: 'variables.first', max: 100, in: 'body' }, describe: 'the projects' },

  // monday.com (GraphQL; the token goes bare in Authorization)
  'monday.boards': { providers: ['monday'], api: 'https://api.monday.com', method: 'POST', path: '/v2', authScheme: '', body: { query: 'query Boards($limit: Int, $page: Int) { boards(limit: $limit, page: $page) { id name } }', variables: {} }, errors: 'errors', items: 'data.boards', id: 'id', label: ['name'], paging: { kind: 'page', param: 'variables.page', in: 'body' }, size: { param: 'variables.limit', max: 100, in: 'body' }, describe: 'the boards' },
  'monday.groups': { providers: ['monday'], api: 'https://api.monday.com', method: 'POST', path: '/v2', authScheme: '', body: { query: 'query Groups($boardId: ID!) { boards(ids: [$boardId]) { groups { id title } } }', variables: { boardId: '{boardId}' } }, requires: ['boardId'], errors: 'errors', items: 'data.boards.0.groups', id: 'id', label: ['title'], paging: { kind: 'none' }, describe: 'the groups of a board' },

  // Atlassian Cloud through the OAuth (3LO) gateway: the site is named by the `domain` of context
  'jira.projects': { providers: ['jira'], api: ATLASSIAN, site: 'atlassian', path: '/ex/jira/{cloudId}/rest/api/3/project/search', requires: ['domain'], items: 'values', id: 'id', label: ['name'], meta: { key: 'key' }, paging: { kind: 'offset', param: 'startAt' }, size: { param: 'maxResults', max: 50 }, describe: 'the projects of the site' },
  'jira.projectKeys': { providers: ['jira'], api: ATLASSIAN, site: 'atlassian', path: '/ex/jira/{cloudId}/rest/api/3/project/search', requires: ['domain'], items: 'values', id: 'key', label: ['name', 'key'], meta: { projectId: 'id' }, paging: { kind: 'offset', param: 'startAt' }, size: { param: 'maxResults', max: 50 }, describe: 'the project keys of the site' },
  'jsm.serviceDesks': { providers: ['jira'], api: ATLASSIAN, site: 'atlassian', path: '/ex/jira/{cloudId}/rest/servicedeskapi/servicedesk', requires: ['domain'], items: 'values', id: 'id', label: ['projectName', 'projectKey'], meta: { projectKey: 'projectKey' }, paging: { kind: 'offset', param: 'start' }, size: { param: 'limit', max: 50 }, describe: 'the service desks of the site' },
  'jsm.requestTypes': { providers: ['jira'], api: ATLASSIAN, site: 'atlassian', path: '/ex/jira/{cloudId}/rest/servicedeskapi/servicedesk/{serviceDeskId}/requesttype', requires: ['domain', 'serviceDeskId'], items: 'values', id: 'id', label: ['name'], paging: { kind: 'offset', param: 'start' }, size: { param: 'limit', max: 50 }, describe: 'the request types of a service desk' },
  'confluence.spaces': { providers: ['confluence'], api: ATLASSIAN, site: 'atlassian', path: '/ex/confluence/{cloudId}/wiki/api/v2/spaces', requires: ['domain'], items: 'results', id: 'key', label: ['name', 'key'], meta: { type: 'type' }, paging: confluenceCursor, size: { param: 'limit', max: 250 }, describe: 'the spaces of the site (id = space key)' },
  'confluence.spacesById': { providers: ['confluence'], api: ATLASSIAN, site: 'atlassian', path: '/ex/confluence/{cloudId}/wiki/api/v2/spaces', requires: ['domain'], items: 'results', id: 'id', label: ['name', 'key'], meta: { key: 'key' }, paging: confluenceCursor, size: { param: 'limit', max: 250 }, describe: 'the spaces of the site (id = space id)' },
  'confluence.pages': { providers: ['confluence'], api: ATLASSIAN, site: 'atlassian', path: '/ex/confluence/{cloudId}/wiki/api/v2/pages', query: { 'space-id': '{spaceId}' }, requires: ['domain', 'spaceId'], items: 'results', id: 'id', label: ['title'], meta: { status: 'status' }, paging: confluenceCursor, size: { param: 'limit', max: 250 }, describe: 'the pages of a space (by space id)' },

  // Zoom
  'zoom.meetings': { providers: ['zoom'], api: 'https://api.zoom.us/v2', path: '/users/me/meetings', items: 'meetings', id: 'id', label: ['topic'], meta: { startTime: 'start_time' }, paging: { kind: 'token', param: 'next_page_token', next: 'next_page_token' }, size: { param: 'page_size', max: 300 }, describe: "the user's meetings" },

  // Zoho Desk (every call but organizations names the organization in the orgId header)
  'zoho_desk.organizations': { providers: ['zoho-desk'], api: ZOHO_DESK, path: '/organizations', authScheme: 'Zoho-oauthtoken', items: 'data', id: 'id', label: ['companyName', 'portalName'], paging: { kind: 'none' }, describe: 'the help desk organizations' },
  'zoho_desk.departments': { providers: ['zoho-desk'], api: ZOHO_DESK, path: '/departments', headers: { orgId: '{orgId}' }, requires: ['orgId'], authScheme: 'Zoho-oauthtoken', items: 'data', id: 'id', label: ['name'], paging: { kind: 'none' }, describe: 'the departments of an organization' },
  'zoho_desk.agents': { providers: ['zoho-desk'], api: ZOHO_DESK, path: '/agents', headers: { orgId: '{orgId}' }, requires: ['orgId'], authScheme: 'Zoho-oauthtoken', items: 'data', id: 'id', label: ['name', 'emailId'], meta: { email: 'emailId' }, paging: { kind: 'none' }, describe: 'the agents of an organization' },
};

/**
 * Keys of the CLI's list this server does not answer, and why (the 400 says it). The internal keys and Slack are
 * served elsewhere (index.ts, slack.ts); a key in neither list gets the generic "not available" answer.
 */
export const UNAVAILABLE_SELECTORS: Record<string, string> = {
  ...Object.fromEntries(
    ['snowflake.databases', 'snowflake.schemas', 'snowflake.tables', 'snowflake.warehouses', 'snowflake.roles', 'snowflake.fileFormats', 'snowflake.procedures'].map((k) => [k, 'Snowflake connects with a key pair, and this server has no Snowflake credential provider']),
  ),
  ...Object.fromEntries(['netsuite.recordTypes', 'netsuite.asyncTasks'].map((k) => [k, 'NetSuite authenticates with token-based or key-pair auth, and this server has no NetSuite credential provider'])),
  ...Object.fromEntries(
    ['coda.docs', 'coda.pages', 'coda.tables', 'coda.columns', 'coda.rows', 'coda.formulas', 'coda.controls', 'coda.folders', 'coda.permissions'].map((k) => [k, 'Coda uses API tokens, and this server has no Coda credential provider']),
  ),
  'harmonic.savedSearches': 'Harmonic uses an API key, and this server has no Harmonic credential provider',
  'cloudwatch.logGroups': 'CloudWatch signs requests with AWS keys (SigV4), and this server has no AWS credential provider',
  'cloudwatch.logStreams': 'CloudWatch signs requests with AWS keys (SigV4), and this server has no AWS credential provider',
  'imap.mailboxes': 'IMAP is not an HTTP API, and this server has no IMAP credential provider',
  ...Object.fromEntries(
    ['managedAgent.agents', 'managedAgent.environments', 'managedAgent.vaults', 'managedAgent.memoryStores'].map((k) => [k, 'managed agents use a model provider API key, and this server has no credential provider for them']),
  ),
  'providers.ollamaEmbeddingModels': 'this server configures no Ollama embedding endpoint to list models from',
  'providers.openrouterEmbeddingModels': 'this server configures no OpenRouter embedding endpoint to list models from',
  ...Object.fromEntries(
    ['jira.issues'].map((k) => [k, 'listing issues needs a JQL search whose scope is not settled; not catalogued yet']),
  ),
  'trello.boards': 'Trello authorizes with OAuth 1.0a (key and token in the query), which this server’s OAuth 2 connections do not carry',
  'pipedrive.pipelines': 'Pipedrive OAuth calls go to the company API domain the token answer names, which connections do not keep yet',
  'wealthbox.contacts': 'not catalogued yet (the paging of its contacts list is not confirmed)',
  'calcom.eventTypes': 'Cal.com API v2 needs a pinned cal-api-version per endpoint; not catalogued yet',
  'calcom.schedules': 'Cal.com API v2 needs a pinned cal-api-version per endpoint; not catalogued yet',
  'notion.pages': "a Notion page's title lives in a property whose name varies per database; not catalogued yet",
  'hubspot.lists': 'HubSpot lists are listed by a search (POST) call; not catalogued yet',
  'microsoft.excel.sheets': 'not catalogued yet (needs the workbook drive item)',
};
